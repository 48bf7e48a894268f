package main

import (
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/usdt"
)

// The programs keep what they build on their stack, below the scratch
// bytes usdt.Args uses (r10-usdt.Scratch to r10): an event's record, or a
// key of -count. Their stack stays under 64 bytes where the arguments
// allow (two or three numbers): from Linux 6.13 a kprobe program with 64
// bytes or more of stack runs on a per-CPU stack of its own, which costs
// each run more than the whole of what a count does.

// eventProgram is usdt's program without -count: at each firing, an
// eventHeader and the arguments l lays out, one record in the perf event
// array events.
func eventProgram(l argLayout, events *mapfd.Map) usdt.Builder {
	size := headerSize + l.size
	rec := int16(-usdt.Scratch - size)
	at := func(fieldOffset uintptr) int16 { return rec + int16(fieldOffset) }
	var h eventHeader
	return func(a *usdt.Args) ([]insn.Item, error) {
		items := []insn.Item{
			// The context, in r6 across the calls.
			insn.Mov64Reg(insn.R6, insn.R1),
			// The time first, the nearest to the firing.
			insn.Call(insn.BPF_FUNC_ktime_get_ns),
			insn.StoreMem(insn.BPF_DW, insn.R10, at(unsafe.Offsetof(h.Time)), insn.R0),
			// The process: pid_tgid's upper half, stored in 8 bytes that
			// zero the padding after it.
			insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
			insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
			insn.StoreMem(insn.BPF_DW, insn.R10, at(unsafe.Offsetof(h.PID)), insn.R0),
			// The thread's name: the helper writes all 16 bytes, padded.
			insn.Mov64Reg(insn.R1, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(at(unsafe.Offsetof(h.Comm)))),
			insn.Mov64Imm(insn.R2, int32(len(h.Comm))),
			insn.Call(insn.BPF_FUNC_get_current_comm),
		}
		args, err := loadArgs(a, l, rec+int16(headerSize))
		if err != nil {
			return nil, err
		}
		items = append(items, args...)
		return append(items,
			// The record, to this CPU's ring.
			insn.Mov64Reg(insn.R1, insn.R6),
			insn.LoadMapFD(insn.R2, events),
			insn.LoadImm64(insn.R3, insn.BPF_F_CURRENT_CPU),
			insn.Mov64Reg(insn.R4, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R4, int32(rec)),
			insn.Mov64Imm(insn.R5, int32(size)),
			insn.Call(insn.BPF_FUNC_perf_event_output),
			insn.Mov64Imm(insn.R0, 0),
			insn.Exit(),
		), nil
	}
}

// countProgram is usdt's program with -count: at each firing, one more
// firing counted with the key of the arguments l lays out, by c.
func countProgram(l argLayout, c counter) usdt.Builder {
	key := int16(-usdt.Scratch - l.keySize())
	return func(a *usdt.Args) ([]insn.Item, error) {
		items := []insn.Item{insn.Mov64Reg(insn.R6, insn.R1)} // the context, for loadArgs
		if len(l.fields) == 0 {
			// No argument chosen: a key of zero counts every firing.
			items = append(items, insn.StoreImm(insn.BPF_DW, insn.R10, key, 0))
		}
		args, err := loadArgs(a, l, key)
		if err != nil {
			return nil, err
		}
		items = append(items, args...)
		items = append(items, c.count(key)...)
		return append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit()), nil
	}
}

// loadArgs reads each argument l lays out into its place from r10+at, the
// context in r6: a number stored whole (8 bytes), a string copied with
// its NUL into strSize bytes that are zeroed first. Every byte of the
// layout is written.
func loadArgs(a *usdt.Args, l argLayout, at int16) ([]insn.Item, error) {
	var items []insn.Item
	for _, f := range l.fields {
		off := at + int16(f.Off)
		if f.Str {
			str, err := a.String(insn.R6, f.N, off, strSize)
			if err != nil {
				return nil, err
			}
			items = append(items, str...)
			continue
		}
		load, err := a.Load(insn.R7, insn.R6, f.N)
		if err != nil {
			return nil, err
		}
		items = append(items, load...)
		items = append(items, insn.StoreMem(insn.BPF_DW, insn.R10, off, insn.R7))
	}
	return items, nil
}

// count is the hash map's instructions that count one firing with the
// key at r10+key. They clobber r0 to r5 and r9, and end at the label
// count_done.
func (h *hashCounts) count(key int16) []insn.Item {
	lookup := []insn.Item{
		insn.LoadMapFD(insn.R1, h.counts),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(key)),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
	}
	items := append([]insn.Item{}, lookup...)
	items = append(items,
		// The key's count there: add one.
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_insert"),
		insn.Mov64Reg(insn.R9, insn.R0),
		insn.Ja("count_add"),
		// Not there: insert it with a count of one.
		insn.Label("count_insert"),
		insn.StoreImm(insn.BPF_DW, insn.R10, -8, 1),
		insn.LoadMapFD(insn.R1, h.counts),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(key)),
		insn.Mov64Reg(insn.R3, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, -8),
		insn.Mov64Imm(insn.R4, insn.BPF_NOEXIST),
		insn.Call(insn.BPF_FUNC_map_update_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_done"))
	// Refused: another CPU inserted it first (add one to theirs), or the
	// map is full (not counted).
	items = append(items, lookup...)
	return append(items,
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_done"),
		insn.Mov64Reg(insn.R9, insn.R0),
		insn.Label("count_add"),
		insn.Mov64Imm(insn.R1, 1),
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R9, insn.R1, 0),
		insn.Label("count_done"))
}
