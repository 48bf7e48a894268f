package main

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/records"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// TestRecordLayouts: each program writes every byte of the struct the
// tool reads back, and hands the helpers the struct's address and size.
func TestRecordLayouts(t *testing.T) {
	key, count := unsafe.Sizeof(dropKey{}), unsafe.Sizeof(dropCount{})
	event := unsafe.Sizeof(dropEvent{})
	if key != 16 || count != 8 || event != 48 {
		t.Errorf("dropKey %d, dropCount %d, dropEvent %d bytes: padding crept in",
			key, count, event)
	}
	for _, c := range []struct {
		name      string
		hasReason bool
		stacks    insn.MapFD
		f         filter
	}{
		{"plain", false, nil, filter{}},
		{"reasons", true, nil, filter{pid: 7, reasons: []uint32{2, 3}}},
		{"stacks", true, records.FakeMap(2), filter{}},
	} {
		insns := records.Assemble(t, countProgram(records.FakeMap(1), c.stacks, c.hasReason, c.f))
		records.CheckWritten(t, insns, c.name+": dropKey", keyAt, unsafe.Sizeof(dropKey{}))
		records.CheckArg(t, insns, insn.BPF_FUNC_map_lookup_elem, 2, true, int64(keyAt))
	}
	k := kfreeSkb{
		location: tracefs.Field{Name: "location", Offset: 16, Size: 8},
		protocol: tracefs.Field{Name: "protocol", Offset: 32, Size: 2},
	}
	for _, reason := range []*tracefs.Field{nil, {Name: "reason", Offset: 36, Size: 4}} {
		k.reason = reason
		items, err := eventProgram(records.FakeMap(1), &k, filter{pid: 7})
		if err != nil {
			t.Fatal(err)
		}
		insns := records.Assemble(t, items)
		records.CheckWritten(t, insns, "dropEvent", eventAt, unsafe.Sizeof(dropEvent{}))
		records.CheckArg(t, insns, insn.BPF_FUNC_perf_event_output, 4, true, int64(eventAt))
		records.CheckArg(t, insns, insn.BPF_FUNC_perf_event_output, 5, false, int64(event))
	}
}

// TestCountProgram runs the counting program in the kernel
// (BPF_PROG_TEST_RUN of a raw tracepoint, 5.10+) on made-up arguments
// (skb, location, reason), and reads what it counted: the key as dropKey
// decodes it, only for the drops the filter lets through.
func TestCountProgram(t *testing.T) {
	testutil.RequireRoot(t)
	me := uint32(os.Getpid())
	first := dropKey{Location: 0xffff1000, Reason: 3}
	second := dropKey{Location: 0xffff2000, Reason: 5}
	for _, c := range []struct {
		name string
		f    filter
		want map[dropKey]uint64
	}{
		{"all", filter{}, map[dropKey]uint64{first: 2, second: 1}},
		{"this process", filter{pid: me}, map[dropKey]uint64{first: 2, second: 1}},
		{"another process", filter{pid: me + 1}, map[dropKey]uint64{}},
		{"reason 5", filter{reasons: []uint32{5}}, map[dropKey]uint64{second: 1}},
		{"reasons 3 and 9", filter{reasons: []uint32{9, 3}}, map[dropKey]uint64{first: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := mapfd.Spec{Type: mapfd.Hash, MaxEntries: 16}
			drops, err := mapfd.CreateTyped[dropKey, dropCount](spec)
			if err != nil {
				t.Fatal(err)
			}
			defer drops.Close()
			insns := countProgram(drops, nil, true, c.f)
			p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, License: "GPL", Insns: insns})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			// (skb, location, reason): first twice, second once
			for _, args := range [][3]uint64{
				{0, first.Location, uint64(first.Reason)},
				{0, first.Location, uint64(first.Reason)},
				{0, second.Location, uint64(second.Reason)},
			} {
				ctx := binary.NativeEndian.AppendUint64(nil, args[0])
				ctx = binary.NativeEndian.AppendUint64(ctx, args[1])
				ctx = binary.NativeEndian.AppendUint64(ctx, args[2])
				if _, err := p.TestRun(prog.RunOptions{Ctx: ctx}); err != nil {
					t.Fatal(err)
				}
			}
			got := map[dropKey]uint64{}
			for k, v := range drops.All(&err) {
				got[k] = v.Drops
			}
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("counted %v (%v), want %v", got, err, c.want)
			}
			for k, n := range c.want {
				if got[k] != n {
					t.Fatalf("counted %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestStackNames: the tracing machinery's frames are left out, the rest
// kept; a stack without frames says why.
func TestStackNames(t *testing.T) {
	frames := []string{
		"bpf_prog_a8cd9068c28e7c3b_dropmon+0x48",
		"bpf_trace_run2+0x6c",
		"__bpf_trace_kfree_skb+0x9",
		"kfree_skb_reason+0x90",
		"__udp4_lib_rcv+0x4bc",
	}
	if got := stackNames(frames); len(got) != 2 || got[0] != "kfree_skb_reason+0x90" {
		t.Errorf("stackNames = %q", got)
	}
	if got := stackNames(nil); len(got) != 1 || got[0] != "(no stack: the stack map was full)" {
		t.Errorf("stackNames(nil) = %q", got)
	}
}
