package main

import (
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/records"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// countField is sys_enter_write's count as the format of 6.x has it.
var countField = tracefs.Field{Name: "count", Offset: 32, Size: 8}

// TestRecordLayouts: each program writes every byte of the key it builds
// and hands the map helpers its address.
func TestRecordLayouts(t *testing.T) {
	key, slot := unsafe.Sizeof(freedKey{}), unsafe.Sizeof(sizeSlot{})
	freedValue, sizeValue := unsafe.Sizeof(freedCount{}), unsafe.Sizeof(sizeCount{})
	if key != 8 || slot != 4 || freedValue != 8 || sizeValue != 16 {
		t.Errorf("freedKey %d, sizeSlot %d, freedCount %d, sizeCount %d bytes",
			key, slot, freedValue, sizeValue)
	}
	freed := records.Assemble(t, freedProgram(records.FakeMap(1)))
	records.CheckWritten(t, freed, "freedKey", freedKeyAt, unsafe.Sizeof(freedKey{}))
	records.CheckArg(t, freed, insn.BPF_FUNC_map_lookup_elem, 2, true, int64(freedKeyAt))
	for _, pid := range []uint32{0, 7} {
		items, err := writeProgram(records.FakeMap(1), countField, pid)
		if err != nil {
			t.Fatal(err)
		}
		write := records.Assemble(t, items)
		records.CheckWritten(t, write, "sizeSlot", sizeSlotAt, unsafe.Sizeof(sizeSlot{}))
		records.CheckArg(t, write, insn.BPF_FUNC_map_lookup_elem, 2, true, int64(sizeSlotAt))
	}
}

// TestFreedProgram runs the kfree_skb program in the kernel
// (BPF_PROG_TEST_RUN of a raw tracepoint) on made-up arguments (skb,
// location) and reads what it counted, the key as freedKey decodes it.
func TestFreedProgram(t *testing.T) {
	testutil.RequireRoot(t)
	spec := mapfd.Spec{Type: mapfd.Hash, MaxEntries: 16}
	freed, err := mapfd.CreateTyped[freedKey, freedCount](spec)
	if err != nil {
		t.Fatal(err)
	}
	defer freed.Close()
	insns := freedProgram(freed)
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, License: "GPL", Insns: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, loc := range []uint64{0xffff1000, 0xffff2000, 0xffff1000} {
		ctx := make([]byte, 16)
		*(*uint64)(unsafe.Pointer(&ctx[8])) = loc
		if _, err := p.TestRun(prog.RunOptions{Ctx: ctx}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[freedKey]uint64{}
	for k, v := range freed.All(&err) {
		got[k] = v.Packets
	}
	first, second := got[freedKey{0xffff1000}], got[freedKey{0xffff2000}]
	if err != nil || len(got) != 2 || first != 2 || second != 1 {
		t.Fatalf("counted %v (%v), want 2 at 0xffff1000 and 1 at 0xffff2000", got, err)
	}
}
