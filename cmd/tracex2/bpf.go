package main

import (
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/tracefs"
)

// freedKey is the key of the freed map: where the kernel freed packets.
type freedKey struct {
	Location uint64 // kfree_skb's caller: the tracepoint's location argument
}

// freedCount is the value of the freed map.
type freedCount struct {
	Packets uint64
}

// sizeSlot is the key of the write_sizes per-CPU array: a log2 slot as
// bcc numbers them, 1 for sizes 0 and 1, n+1 for 2^n to 2^(n+1)-1.
type sizeSlot struct {
	Slot uint32
}

// sizeCount is the value of the write_sizes array, on one CPU: the writes
// of the slot and the bytes they asked for, the sum Prometheus's
// histograms carry.
type sizeCount struct {
	Writes uint64
	Bytes  uint64
}

// slots is the number of log2 slots of a 64-bit size, with slot 0 unused.
const slots = 65

// The programs' stack frames: the keys, MapIncrement's scratch slot, and
// the keys' fields.
const (
	freedKeyAt   = -int16(unsafe.Sizeof(freedKey{}))
	freedCountAt = freedKeyAt - int16(unsafe.Sizeof(freedCount{}))
	sizeSlotAt   = -int16(unsafe.Sizeof(sizeSlot{}))

	freedLocation = freedKeyAt + int16(unsafe.Offsetof(freedKey{}.Location))
	sizeSlotSlot  = sizeSlotAt + int16(unsafe.Offsetof(sizeSlot{}.Slot))
)

// argLocation is where kfree_skb's location is in a raw tracepoint
// program's context, u64 args[] in the order of its TP_PROTO: (skb,
// location, ...) on every kernel.
const argLocation = 1 * 8

// freedProgram is the raw tracepoint program on kfree_skb that counts the
// packets freed at each location. A raw tracepoint builds no perf record
// and its program's return value filters nothing: other tracers of
// kfree_skb see every packet.
func freedProgram(freed insn.MapFD) tool.Program {
	var p tool.Program
	// the key: the location, args[1]
	p.Add(insn.LoadMem(insn.BPF_DW, insn.R2, insn.R1, argLocation),
		insn.StoreMem(insn.BPF_DW, insn.R10, freedLocation, insn.R2))
	// freed[key]++, atomically: packets are freed on every CPU at once
	p.Add(insn.MapIncrement(freed, freedKeyAt, freedCountAt)...)
	p.Add(insn.Mov64Imm(insn.R0, 0), insn.Exit())
	return p
}

// writeProgram is the program on the syscalls:sys_enter_write perf
// tracepoint that counts write(2) sizes, for process pid only if not 0,
// in log2 slots on this CPU. The record holds the size (count) where the
// format says, on every architecture, and the kernel leaves out the
// system calls of 32-bit processes on a 64-bit kernel, whose numbers are
// another table's. It returns 1 on every path: 0 would drop the record
// for every perf user of sys_enter_write, not only for this one.
func writeProgram(sizes insn.MapFD, count tracefs.Field, pid uint32) (tool.Program, error) {
	loadCount, err := tool.LoadField(insn.R6, insn.R1, count)
	if err != nil {
		return nil, err
	}
	var p tool.Program
	// r6 = the size asked for, from the record; r9 keeps it (Log2 eats r6)
	p.Add(loadCount, insn.Mov64Reg(insn.R9, insn.R6))
	if pid != 0 {
		// only the writes of process pid, the upper half of pid_tgid
		p.Add(insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
			insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
			insn.JumpImm(insn.BPF_JNE, insn.R0, int32(pid), "out"))
	}

	// the slot: log2(size) + 1, as bcc's bpf_log2l
	p.Add(insn.Log2(insn.R7, insn.R6, insn.R8)...)
	p.Add(insn.ALU64Imm(insn.BPF_ADD, insn.R7, 1),
		insn.StoreMem(insn.BPF_W, insn.R10, sizeSlotSlot, insn.R7))

	// sizes[slot] on this CPU: no other CPU writes it, no atomic needed
	var c sizeCount
	p.Add(insn.LoadMapFD(insn.R1, sizes),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(sizeSlotAt)),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"))
	// .Writes++
	p.Add(insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, int16(unsafe.Offsetof(c.Writes))),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, int16(unsafe.Offsetof(c.Writes)), insn.R1))
	// .Bytes += size
	p.Add(insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, int16(unsafe.Offsetof(c.Bytes))),
		insn.ALU64Reg(insn.BPF_ADD, insn.R1, insn.R9),
		insn.StoreMem(insn.BPF_DW, insn.R0, int16(unsafe.Offsetof(c.Bytes)), insn.R1))

	// return 1: the record goes on to perf's other users
	p.Add(insn.Label("out"), insn.Mov64Imm(insn.R0, 1), insn.Exit())
	return p, nil
}
