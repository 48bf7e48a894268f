package main

import (
	"encoding/binary"
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// The record's fields tracex1 reads, by their names in the format of
// net:netif_receive_skb.
type recordFields struct {
	name   tracefs.Field // the device's name, a __data_loc string
	length tracefs.Field // the packet's length
}

// devFilter returns instructions that fall through when the record at r1
// is of a packet of dev, with r6 = the record, and jump to "other" when it
// is not.
func devFilter(f recordFields, dev string) ([]insn.Item, error) {
	if !f.name.DataLoc {
		return nil, fmt.Errorf("netif_receive_skb's name is %s, not a __data_loc string", f.name.Type)
	}
	var want [16]byte
	copy(want[:], dev)
	items := []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1),
		// The name's __data_loc: where it lies in the record (the low 16
		// bits) and its length with the NUL (the high 16). Another length
		// is another device.
		insn.LoadMem(insn.BPF_W, insn.R3, insn.R6, int16(f.name.Offset)),
		insn.Mov64Reg(insn.R4, insn.R3),
		insn.ALU64Imm(insn.BPF_RSH, insn.R4, 16),
		insn.JumpImm(insn.BPF_JNE, insn.R4, int32(len(dev)+1), "other"),
		// A tracepoint program may not read its record at a variable
		// offset: copy the name's 16 bytes to fp-16.
		insn.ALU64Imm(insn.BPF_AND, insn.R3, 0xffff),
		insn.ALU64Reg(insn.BPF_ADD, insn.R3, insn.R6),
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, -16),
		insn.Mov64Imm(insn.R2, 16),
		insn.Call(insn.BPF_FUNC_probe_read_kernel),
		insn.JumpImm(insn.BPF_JNE, insn.R0, 0, "other"),
	}
	// Compare it with dev, 8 bytes at a time, masked to dev and its NUL.
	for w := range 2 {
		var mask [8]byte
		for i := range mask {
			if w*8+i <= len(dev) {
				mask[i] = 0xff
			}
		}
		items = append(items,
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R10, int16(-16+8*w)),
			insn.LoadImm64(insn.R2, int64(binary.NativeEndian.Uint64(mask[:]))),
			insn.ALU64Reg(insn.BPF_AND, insn.R1, insn.R2),
			insn.LoadImm64(insn.R2, int64(binary.NativeEndian.Uint64(want[8*w:]))),
			insn.JumpReg(insn.BPF_JNE, insn.R1, insn.R2, "other"))
	}
	return items, nil
}

// filterProgram is the kernel sample's program: the filter of the perf
// events on net:netif_receive_skb. The kernel keeps the tracepoint's
// record, for every perf event on it (tracex1's and any other perf
// user's), only when it returns non-zero: for dev's packets.
func filterProgram(f recordFields, dev string) (*prog.Program, error) {
	items, err := devFilter(f, dev)
	if err != nil {
		return nil, err
	}
	items = append(items,
		insn.Mov64Imm(insn.R0, 1), // dev's: keep the record
		insn.Exit(),
		insn.Label("other"),
		insn.Mov64Imm(insn.R0, 0), // another device's: drop it, for every perf user
		insn.Exit(),
	)
	return prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "tracex1", License: "GPL", Insns: items})
}

// printkFormat is what the -printk program writes for each of dev's
// packets with bpf_trace_printk: the time (bpf_ktime_get_ns) and the
// length.
func printkFormat(dev string) string { return "tracex1: dev " + dev + " ns %llu len %u\n" }

// printkProgram writes a line with bpf_trace_printk for each of dev's
// packets, and returns 1: it is attached on its own, and the record stays
// for other perf users.
func printkProgram(f recordFields, dev string) (*prog.Program, error) {
	items, err := devFilter(f, dev)
	if err != nil {
		return nil, err
	}
	loadLen, err := tool.LoadField(insn.R4, insn.R6, f.length)
	if err != nil {
		return nil, err
	}
	// The format on the stack, with its NUL, 8 bytes at a time.
	format := printkFormat(dev)
	b := make([]byte, (len(format)+1+7)&^7)
	copy(b, format)
	for i := 0; i < len(b); i += 8 {
		items = append(items,
			insn.LoadImm64(insn.R1, int64(binary.NativeEndian.Uint64(b[i:]))),
			insn.StoreMem(insn.BPF_DW, insn.R10, int16(-len(b)+i), insn.R1))
	}
	items = append(items,
		// bpf_trace_printk(format, its size, now, length)
		insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.Mov64Reg(insn.R3, insn.R0),
		loadLen,
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(-len(b))),
		insn.Mov64Imm(insn.R2, int32(len(format)+1)),
		insn.Call(insn.BPF_FUNC_trace_printk),
		insn.Label("other"),
		insn.Mov64Imm(insn.R0, 1),
		insn.Exit(),
	)
	return prog.Load(prog.Spec{
		Type:    prog.Tracepoint,
		Name:    "tracex1_printk",
		License: "GPL",
		Insns:   items,
	})
}
