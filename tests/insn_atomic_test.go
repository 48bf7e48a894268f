package tests

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The operands of every atomic case: the memory's value before, the
// source register (its upper half garbage for 4-byte operations), and
// cmpxchg's r0, equal to the memory in its low 4 bytes or in all 8, or not.
const (
	atomicMem      = 0x0123_4567_89ab_cdef
	atomicSrc      = 0xfedc_ba98_7654_3210
	atomicCmpEqLow = 0xffff_ffff_89ab_cdef
	atomicCmpNe    = atomicMem ^ 1
)

// atomicCase is one atomic instruction: its size, operation, and for
// cmpxchg the word of the value r0 is loaded from (the operands' index).
type atomicCase struct {
	size Size
	op   AtomicOp
	cmp  int
}

func (c atomicCase) String() string {
	name := map[AtomicOp]string{BPF_ADD.Atomic(): "add", BPF_AND.Atomic(): "and",
		BPF_OR.Atomic(): "or", BPF_XOR.Atomic(): "xor", BPF_XCHG: "xchg", BPF_CMPXCHG: "cmpxchg",
	}[c.op&^BPF_FETCH]
	if c.op&BPF_FETCH != 0 && c.op != BPF_XCHG && c.op != BPF_CMPXCHG {
		name = "fetch_" + name
	}
	if c.op == BPF_CMPXCHG {
		name += map[int]string{2: "(equal low half)", 3: "(equal)", 4: "(not equal)"}[c.cmp]
	}
	return fmt.Sprintf("%s %d bytes", name, map[Size]int{BPF_W: 4, BPF_DW: 8}[c.size])
}

// model is the memory after c, and the register c leaves: the source,
// unchanged without BPF_FETCH, else the old value (cmpxchg's r0), both
// zero-extended from 4 bytes for BPF_W. The memory is 8 bytes in the
// host's order, of which a 4-byte operation changes the first 4.
func (c atomicCase) model(cmp uint64) (mem, reg uint64) {
	n := map[Size]int{BPF_W: 4, BPF_DW: 8}[c.size]
	trunc := func(v uint64) uint64 { return v & (^uint64(0) >> (64 - 8*n)) }
	b := binary.NativeEndian.AppendUint64(nil, atomicMem)
	old := trunc(binary.NativeEndian.Uint64(append(b[:n:n], make([]byte, 8-n)...)))
	src, v := trunc(atomicSrc), old
	switch c.op &^ BPF_FETCH {
	case BPF_ADD.Atomic():
		v = old + src
	case BPF_AND.Atomic():
		v = old & src
	case BPF_OR.Atomic():
		v = old | src
	case BPF_XOR.Atomic():
		v = old ^ src
	case BPF_XCHG &^ BPF_FETCH:
		v = src
	case BPF_CMPXCHG &^ BPF_FETCH:
		if trunc(cmp) == old {
			v = src
		}
	}
	copy(b, binary.NativeEndian.AppendUint64(nil, v)[:n])
	reg = atomicSrc
	if c.op&BPF_FETCH != 0 {
		reg = old
	}
	return binary.NativeEndian.Uint64(b), reg
}

// TestExecAtomics runs every atomic operation package insn builds on a map
// value, at 4 and 8 bytes, and checks the memory and the register against
// the model: add (BPF_XADD, every kernel), then and, or, xor, the fetching
// forms, xchg and cmpxchg (5.12), which older kernels refuse: they skip,
// quoting the verifier. 32-bit kernels run them too; each program's JIT
// state is logged (jitState).
func TestExecAtomics(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	enableJIT(t)
	for _, size := range []Size{BPF_W, BPF_DW} {
		bytes := map[Size]int{BPF_W: 4, BPF_DW: 8}[size]
		xadd := []atomicCase{{size, BPF_ADD.Atomic(), 0}}
		var others []atomicCase
		alu := []AtomicOp{BPF_ADD.Atomic(), BPF_AND.Atomic(), BPF_OR.Atomic(), BPF_XOR.Atomic()}
		for _, op := range alu {
			if op != BPF_ADD.Atomic() {
				others = append(others, atomicCase{size, op, 0})
			}
			others = append(others, atomicCase{size, op | BPF_FETCH, 0})
		}
		others = append(others, atomicCase{size, BPF_XCHG, 0})
		for _, cmp := range []int{2, 3, 4} {
			others = append(others, atomicCase{size, BPF_CMPXCHG, cmp})
		}
		// One program per kind and size, whose JIT state is logged.
		for name, cases := range map[string][]atomicCase{"xadd": xadd, "atomics": others} {
			name := fmt.Sprintf("%s_%d", name, bytes)
			t.Run(name, func(t *testing.T) { runAtomics(t, name, cases) })
		}
	}
}

func runAtomics(t *testing.T, name string, cases []atomicCase) {
	operands := []uint64{atomicMem, atomicSrc, atomicCmpEqLow, atomicMem, atomicCmpNe}
	size := uint32(8 * (len(operands) + 2*len(cases)))
	spec := mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: size, MaxEntries: 1, Name: name}
	m, err := mapfd.Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	value := make([]byte, size)
	for i, v := range operands {
		binary.NativeEndian.PutUint64(value[8*i:], v)
	}
	if err := m.Update(make([]byte, 4), value, 0); err != nil {
		t.Fatal(err)
	}
	// Case i's memory is the word len(operands)+2i, its register the next.
	items := []Item{LoadMapValue(R6, m, 0)}
	for i, c := range cases {
		at := int16(8 * (len(operands) + 2*i))
		reg := R2
		items = append(items, LoadMem(BPF_DW, R1, R6, 0), StoreMem(BPF_DW, R6, at, R1),
			LoadMem(BPF_DW, R2, R6, 8))
		if c.op == BPF_CMPXCHG {
			reg = R0
			items = append(items, LoadMem(BPF_DW, R0, R6, int16(8*c.cmp)))
		}
		items = append(items, Atomic(c.size, c.op, R6, R2, at), StoreMem(BPF_DW, R6, at+8, reg))
	}
	items = append(items, Mov64Imm(R0, 0), Exit())
	pspec := prog.Spec{Type: prog.SocketFilter, Name: name, License: "GPL", Insns: items}
	p, err := loadInterpretedIfNeeded(t, pspec)
	ve, ok := errors.AsType[*prog.VerifierError](err)
	unknown := ok && (strings.Contains(ve.Log, "BPF_STX uses reserved fields") ||
		strings.Contains(ve.Log, "invalid atomic"))
	if unknown && errors.Is(err, unix.EINVAL) && len(cases) > 1 {
		t.Skipf("this kernel predates the atomics beyond add (5.12): %q", lastLine(ve.Log))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("%s: %s", name, jitState(t, p))
	runRet(t, p)
	got := make([]byte, size)
	if err := m.Lookup(make([]byte, 4), got); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		at := 8 * (len(operands) + 2*i)
		mem, reg := binary.NativeEndian.Uint64(got[at:]), binary.NativeEndian.Uint64(got[at+8:])
		wantMem, wantReg := c.model(operands[c.cmp])
		if mem != wantMem || reg != wantReg {
			t.Errorf("%v: memory %#x, register %#x; want %#x, %#x", c, mem, reg, wantMem, wantReg)
		}
	}
}

// lastLine is the last line of a verifier log that says something.
func lastLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		l := lines[i]
		if !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification ") {
			return lines[i]
		}
	}
	return lines[0]
}

// jitState says whether the kernel runs p JIT-compiled (and how many bytes
// of machine code) or in its interpreter, which a kernel without
// CONFIG_BPF_JIT_ALWAYS_ON falls back to when its JIT cannot compile a
// program.
func jitState(t *testing.T, p *prog.Program) string {
	t.Helper()
	var info sys.ProgInfo
	if err := sys.InfoByFD(p.FD(), &info); err != nil {
		t.Fatal(err)
	}
	if info.JitedProgLen == 0 {
		return "interpreted (no JIT code)"
	}
	return fmt.Sprintf("JIT-compiled, %d bytes", info.JitedProgLen)
}

// jitEnable is the sysctl that turns the BPF JIT on (1) and off (0).
const jitEnable = "/proc/sys/net/core/bpf_jit_enable"

// enableJIT turns the BPF JIT on for the test in a VM, where it may be off
// by default (Debian's armhf kernels: arm does not want it on by default),
// so that the tests show what the JIT does and what it leaves to the
// interpreter. The machine's own setting is left alone.
func enableJIT(t *testing.T) {
	t.Helper()
	was, err := os.ReadFile(jitEnable)
	if err != nil || os.Getenv("BPFKIT_VM") == "" || strings.TrimSpace(string(was)) != "0" {
		return
	}
	if err := os.WriteFile(jitEnable, []byte("1"), 0); err != nil {
		t.Fatalf("turning the BPF JIT on: %v", err)
	}
	t.Log("bpf_jit_enable was 0: on for this test")
	t.Cleanup(func() { os.WriteFile(jitEnable, was, 0) })
}

// loadInterpretedIfNeeded loads spec; where the JIT cannot compile it and
// the kernel will not fall back to the interpreter with the JIT on
// (ENOTSUPP: Debian's armhf 6.1), it logs so and loads it with the JIT off
// for a moment, in a VM.
func loadInterpretedIfNeeded(t *testing.T, spec prog.Spec) (*prog.Program, error) {
	t.Helper()
	p, err := prog.Load(spec)
	if !errors.Is(err, sys.ENOTSUPP) || os.Getenv("BPFKIT_VM") == "" {
		return p, err
	}
	t.Logf("%s: refused with the JIT on, which cannot compile it, and no fallback to the "+
		"interpreter: %v", spec.Name, err)
	was, _ := os.ReadFile(jitEnable)
	if err := os.WriteFile(jitEnable, []byte("0"), 0); err != nil {
		t.Fatalf("turning the BPF JIT off: %v", err)
	}
	defer os.WriteFile(jitEnable, was, 0)
	return prog.Load(spec)
}
