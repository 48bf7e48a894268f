package main

import (
	"fmt"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/usdt"
)

// The programs keep what they build on their stack, below the scratch
// bytes usdt.Args uses (r10-usdt.Scratch to r10): an event's record, or a
// key of -count. -count's stack stays within 48 bytes where the arguments
// allow (up to four numbers): from Linux 6.13 a kprobe program with more
// (64 bytes once the verifier rounds it to 16) runs on a per-CPU stack of
// its own, which costs each run more than the whole of what a count does.

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

// count is the table's instructions that count one firing with the key at
// r10+key, keySize bytes, in slots: an open-addressing hash table in an
// array map, with linear probing. The array's lookups are inlined by the
// verifier, where a hash map's lookup hashes and compares in a call; the
// first slot a key tries is nearly always its own. They clobber r0 to r9
// and end at the label count_done.
func (t *table) count(key int16) []insn.Item {
	// The key's hash, a word at a time: h = (h ^ word) * hashPrime.
	prime := hashPrime // a variable: its conversion keeps the bits
	items := []insn.Item{
		insn.Mov64Imm(insn.R6, 0),
		insn.LoadImm64(insn.R7, int64(prime)),
	}
	for w := range int16(t.keySize / 8) {
		items = append(items,
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R10, key+8*w),
			insn.ALU64Reg(insn.BPF_XOR, insn.R6, insn.R1),
			insn.ALU64Reg(insn.BPF_MUL, insn.R6, insn.R7))
	}
	items = append(items,
		// Its first slot, the hash's top bits, in r7; the state of a slot
		// that holds the key, the hash with its lowest bit set, in r6.
		insn.Mov64Reg(insn.R7, insn.R6),
		insn.ALU64Imm(insn.BPF_RSH, insn.R7, 64-tableBits),
		insn.ALU64Imm(insn.BPF_OR, insn.R6, 1))
	for i := range maxProbes {
		items = append(items, t.probe(key, i)...)
	}
	var slot countSlot
	return append(items, countTail(t.missedCount, int16(unsafe.Offsetof(slot.Count)))...)
}

// probe is the instructions of the i-th slot a key tries, first+i: the
// slot's address in r9, then its state. A slot holding the key's hash has
// its key compared; an empty one is claimed, the key written into it and
// then its hash published; any other (another key's, or one that another
// CPU is writing) sends the key on to the next slot. Two CPUs claiming
// slots for one key at once may each get one: the reader adds them up.
func (t *table) probe(key int16, i int) []insn.Item {
	label := func(what string, i int) string { return fmt.Sprintf("count_%s_%d", what, i) }
	next := label("probe", i+1)
	if i+1 == maxProbes {
		next = "count_missed"
	}
	var slot countSlot
	state := int16(unsafe.Offsetof(slot.State))
	keyAt := int16(unsafe.Sizeof(slot))
	items := []insn.Item{
		insn.Label(label("probe", i)),
		insn.Mov64Reg(insn.R1, insn.R7),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(i)),
		insn.ALU64Imm(insn.BPF_AND, insn.R1, tableSlots-1),
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R1),
		insn.LoadMapFD(insn.R1, t.slots),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_missed"), // never: the index is in range
		insn.Mov64Reg(insn.R9, insn.R0),
		// The key's hash: compare the keys. Another's, or busy: next.
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R9, state),
		insn.JumpReg(insn.BPF_JEQ, insn.R1, insn.R6, label("keys", i)),
		insn.JumpImm(insn.BPF_JNE, insn.R1, slotEmpty, next),
		// Empty: claim it, unless another CPU claims it first.
		insn.Mov64Imm(insn.R0, slotEmpty),
		insn.Mov64Imm(insn.R1, slotBusy),
		insn.Atomic(insn.BPF_DW, insn.BPF_CMPXCHG, insn.R9, insn.R1, state),
		insn.JumpReg(insn.BPF_JEQ, insn.R0, insn.R6, label("keys", i)),
		insn.JumpImm(insn.BPF_JNE, insn.R0, slotEmpty, next),
	}
	// Claimed: the key, then its hash, exchanged atomically, which orders
	// the key's stores before it for every CPU that reads the hash.
	for w := range int16(t.keySize / 8) {
		items = append(items,
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R10, key+8*w),
			insn.StoreMem(insn.BPF_DW, insn.R9, keyAt+8*w, insn.R1))
	}
	items = append(items,
		insn.Mov64Reg(insn.R1, insn.R6),
		insn.Atomic(insn.BPF_DW, insn.BPF_XCHG, insn.R9, insn.R1, state),
		insn.Ja("count_add"),
		insn.Label(label("keys", i)))
	for w := range int16(t.keySize / 8) {
		items = append(items,
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R9, keyAt+8*w),
			insn.LoadMem(insn.BPF_DW, insn.R2, insn.R10, key+8*w),
			insn.JumpReg(insn.BPF_JNE, insn.R1, insn.R2, next))
	}
	return append(items, insn.Ja("count_add"))
}

// count is the hash map's instructions that count one firing with the
// key at r10+key, for kernels without compare-exchange (before 5.12),
// which the table needs. They clobber r0 to r5 and r9, and end at the
// label count_done.
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
	// map is full (missed).
	items = append(items, lookup...)
	items = append(items,
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_missed"),
		insn.Mov64Reg(insn.R9, insn.R0))
	return append(items, countTail(h.missedCount, 0)...)
}

// countTail is the labels the counting jumps to: count_add adds one to the
// count at r9+countOff; count_missed adds one to missed's count of
// firings that found no room; both end at count_done.
func countTail(missed *mapfd.Map, countOff int16) []insn.Item {
	return []insn.Item{
		insn.Label("count_add"),
		insn.Mov64Imm(insn.R1, 1),
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R9, insn.R1, countOff),
		insn.Ja("count_done"),
		insn.Label("count_missed"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
		insn.LoadMapFD(insn.R1, missed),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "count_done"),
		insn.Mov64Imm(insn.R1, 1),
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R0, insn.R1, 0),
		insn.Label("count_done"),
	}
}
