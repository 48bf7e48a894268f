package main

import (
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// slots is the size of each histogram: bcc's log2 slots of a u64, 1 to
// 64 (slot 0 stays empty).
const slots = 65

// The histograms share one per-CPU array of counts, key histAsked+i for
// slot i of the sizes asked for, histWritten+i for those written; and the
// sizes' sums, for Prometheus's _sum.
const (
	histAsked   = 0
	histWritten = slots
	sumAsked    = 2 * slots
	sumWritten  = sumAsked + 1
	entries     = sumWritten + 1
)

// counts is the histograms' per-CPU array: a slot's key, its count.
type counts = mapfd.Typed[uint32, uint64]

const (
	fn  = "vfs_write"
	arg = 2 // vfs_write(file, buf, count, pos)
)

// program counts, in this CPU's slot of the histogram at key base, the
// log2 slot of the size that load reads into r6 from the pt_regs at r1:
// the count asked for (kprobe), or the return value (kretprobe, its
// errors skipped); and adds the size to its sum, at key sum. With pid set
// it counts that process's writes only.
//
// A kprobe's program runs from the kprobe's own perf event, made by
// tracex4 (a perf_kprobe PMU event, or a tracefs probe event in bpfkit's
// group): its return value, 0, filters that event's samples only, which
// no one reads. Other tracers' kprobes on vfs_write are probes of their
// own, and see every call.
func program(hist *counts, load insn.Item, base, sum int32, pid uint32) []insn.Item {
	items := []insn.Item{load}
	if pid != 0 {
		// Another process's write: not counted.
		items = append(items,
			insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
			insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
			insn.JumpImm(insn.BPF_JNE, insn.R0, int32(pid), "out"))
	}
	if base == histWritten {
		// A return value below 0 is an error, no size.
		items = append(items, insn.JumpImm(insn.BPF_JSLT, insn.R6, 0, "out"))
	}
	// r7 = the size's slot, bcc's bpf_log2l: log2 + 1; r9 = the size.
	items = append(items, insn.Mov64Reg(insn.R9, insn.R6))
	items = append(items, insn.Log2(insn.R7, insn.R6, insn.R8)...)
	items = append(items, insn.ALU64Imm(insn.BPF_ADD, insn.R7, 1+base))
	// This CPU's count of that slot, one more, and its sum, the size
	// more: a per-CPU array needs no atomic add.
	items = append(items, addItems(hist, insn.R7, insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1))...)
	items = append(items, insn.Mov64Imm(insn.R7, sum))
	items = append(items, addItems(hist, insn.R7, insn.ALU64Reg(insn.BPF_ADD, insn.R1, insn.R9))...)
	return append(items,
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	)
}

// addItems applies add to r1, this CPU's value of key r in hist, through
// fp-4; it clobbers r0-r5.
func addItems(hist *counts, r insn.Register, add insn.Item) []insn.Item {
	return []insn.Item{
		insn.StoreMem(insn.BPF_W, insn.R10, -4, r),
		insn.LoadMapFD(insn.R1, hist),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		add,
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
	}
}

// attach loads the two programs, the kprobe's and the kretprobe's, and
// attaches them to vfs_write; closing the links and programs is the
// caller's, even on an error.
func attach(hist *counts, pid uint32) ([]*prog.Link, []*prog.Program, error) {
	regs, err := prog.KernelPtRegs()
	if err != nil {
		return nil, nil, err
	}
	loadCount, err := regs.Arg(insn.R6, insn.R1, arg)
	if err != nil {
		return nil, nil, err
	}
	var links []*prog.Link
	var progs []*prog.Program
	for _, ret := range []bool{false, true} {
		items := program(hist, loadCount, histAsked, sumAsked, pid)
		if ret {
			items = program(hist, regs.Return(insn.R6, insn.R1), histWritten, sumWritten, pid)
		}
		p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: "tracex4", License: "GPL", Insns: items})
		if err != nil {
			return links, progs, err
		}
		progs = append(progs, p)
		l, err := prog.AttachKprobe(p, fn, prog.KprobeOptions{Return: ret})
		if err != nil {
			return links, progs, err
		}
		links = append(links, l)
	}
	return links, progs, nil
}
