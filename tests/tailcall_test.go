package tests

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// stage loads a socket filter that does acc = acc*10 + id in slot 0 of
// state, then tail-calls jumps[next] (when next >= 0), and returns ret if the
// tail call falls through.
func stage(t *testing.T, state, jumps *mapfd.Map, id int32, next int32, ret int32) *prog.Program {
	t.Helper()
	items := []Item{
		Mov64Reg(R6, R1),
		StoreImm(BPF_W, R10, -4, 0),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, state),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		LoadMem(BPF_DW, R1, R0, 0),
		ALU64Imm(BPF_MUL, R1, 10),
		ALU64Imm(BPF_ADD, R1, id),
		StoreMem(BPF_DW, R0, 0, R1),
	}
	if next >= 0 {
		items = append(items,
			Mov64Reg(R1, R6),
			LoadMapFD(R2, jumps),
			Mov64Imm(R3, next),
			Call(BPF_FUNC_tail_call),
		)
	}
	items = append(items, Label("out"), Mov64Imm(R0, ret), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "stage", License: "GPL", Insns: items})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func tailMaps(t *testing.T) (*mapfd.Map, *mapfd.Typed[uint32, uint64], *mapfd.Map) {
	state, tm := newArray(t, 1)
	jumps, err := mapfd.Create(mapfd.Spec{Type: mapfd.ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 8, Name: "jumps"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jumps.Close() })
	return state, tm, jumps
}

func run(t *testing.T, p *prog.Program) uint32 {
	t.Helper()
	r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	return r.Retval
}

// TestTailCallChain: 1 -> 2 -> 3 runs in that order; an empty slot falls
// through to the caller's next instruction. With the JIT on (enableJIT),
// whose state it logs; the other tail-call tests run as the kernel is.
func TestTailCallChain(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	enableJIT(t)
	state, tm, jumps := tailMaps(t)
	first := stage(t, state, jumps, 1, 1, 100)
	t.Logf("stage: %s", jitState(t, first))
	second := stage(t, state, jumps, 2, 2, 200)
	third := stage(t, state, jumps, 3, -1, 3)
	jumps.SetFD(1, second.FD())
	jumps.SetFD(2, third.FD())
	if r := run(t, first); r != 3 {
		t.Fatalf("chain returned %d, want 3 from the last stage", r)
	}
	expectCounts(t, tm, map[uint32]uint64{0: 123})
	// Empty slot 2: the second stage falls through and returns 200.
	if err := jumps.ClearFD(2); err != nil {
		t.Fatal(err)
	}
	tm.Update(0, 0, mapfd.BPF_ANY)
	if r := run(t, first); r != 200 {
		t.Fatalf("tail call into an empty slot returned %d, want the caller's 200", r)
	}
	expectCounts(t, tm, map[uint32]uint64{0: 12})
}

// TestTailCallLimit: a program calling itself runs 1 + MAX_TAIL_CALL_CNT
// times: 33 tail calls since 5.17 (commit ebf7f6f0a6cd), which the stable
// kernels took too (Debian's 5.10.262 has 33; unpatched older ones 32).
func TestTailCallLimit(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	state, tm, jumps := tailMaps(t)
	// acc = acc*10 + 0 would stay 0: count with id 1 and read the digits.
	self := stage(t, state, jumps, 1, 0, 7)
	jumps.SetFD(0, self.FD())
	if r := run(t, self); r != 7 {
		t.Fatalf("returned %d, want 7 when the limit stops the chain", r)
	}
	acc, _ := tm.Lookup(0)
	// acc is 111...1 with one digit per run, modulo 2^64: count runs by
	// replaying the arithmetic.
	runs := 0
	for x := uint64(0); x != acc && runs < 100; runs++ {
		x = x*10 + 1
	}
	if runs-1 != 33 {
		t.Fatalf("%d tail calls, want 33", runs-1)
	}
}

// TestTailCallReplace: replacing slot 0 switches what the caller runs,
// without reloading it, and while test runs go on in parallel every run
// sees the old or the new program, never an empty slot.
func TestTailCallReplace(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	state, _, jumps := tailMaps(t)
	caller := stage(t, state, jumps, 0, 0, 99)
	a := stage(t, state, jumps, 0, -1, 2)
	b := stage(t, state, jumps, 0, -1, 3)
	jumps.SetFD(0, a.FD())
	if r := run(t, caller); r != 2 {
		t.Fatalf("slot 0 = a: returned %d, want 2", r)
	}
	jumps.SetFD(0, b.FD())
	if r := run(t, caller); r != 3 {
		t.Fatalf("slot 0 = b: returned %d, want 3", r)
	}
	var stop atomic.Bool
	var wrong atomic.Int64
	var firstWrong atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if r, err := caller.TestRun(prog.RunOptions{Data: make([]byte, 64), Repeat: 50}); err != nil || r.Retval != 2 && r.Retval != 3 {
				wrong.Add(1)
				firstWrong.CompareAndSwap(nil, fmt.Sprintf("retval %d, error %v", r.Retval, err))
			}
		}
	}()
	for i := range 2000 {
		next := a
		if i%2 == 1 {
			next = b
		}
		if err := jumps.SetFD(0, next.FD()); err != nil {
			t.Error(err)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d runs saw neither program while the slot was replaced; the first: %v", wrong.Load(), firstWrong.Load())
	}
}
