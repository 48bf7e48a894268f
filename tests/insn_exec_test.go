package tests

// Execution in the kernel: every ALU, ALU64, JMP and JMP32 operation that
// package insn can encode runs inside a real program through
// BPF_PROG_TEST_RUN, and its result must equal Go's arithmetic on the same
// inputs, written down from the eBPF instruction set specification
// (Documentation/bpf/standardization/instruction-set.rst). The kernel is
// the oracle for our encoding.
//
// Many cases share one program. Every program starts by taking the address
// of the value of a one-element array map (BPF_PSEUDO_MAP_VALUE) into r6.
// The value holds the operands in its first execInWords words and one result
// word per case after them. A case loads its register operands from the
// value, so that the verifier cannot know them (it would fold constants and
// prune the branches not taken), runs the instruction under test, and stores
// the whole 64-bit register into its result word, which Go reads back.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

const (
	execInWords  = 256                        // operand words at the start of the value
	execOutWords = 3800                       // result words after them
	execWords    = execInWords + execOutWords // 32448 bytes: every offset fits the 16-bit off
	execMarker   = 0x600d                     // r0 of a program that ran to its end
	execSentinel = 0x5e47_1e00_0000_0000      // result words before the run, plus their index
	execPrologue = 2                          // slots of the LoadMapValue that starts a program
	execMaxErrs  = 10                         // failing cases reported per program
	execMaxLines = 4000                       // listing lines printed per failing program
)

type execValue [execWords]uint64

// execHostLE: BPF_TO_LE and BPF_TO_BE convert from the host's byte order.
var execHostLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// execRegs are the registers a case may use; r6 holds the value's address
// and r10 is the frame pointer. Cases rotate through them so that every
// register number is encoded as a destination and as a source.
var execRegs = []insn.Register{insn.R0, insn.R1, insn.R2, insn.R3, insn.R4, insn.R5, insn.R7, insn.R8, insn.R9}

// Operands. vals64 are register values (destinations and sources); their
// upper halves are often garbage so that 32-bit operations must ignore them.
// vals32 are immediates.
var (
	execVals64 []uint64
	execVals32 []int32
	// Register shift amounts: in range, and out of range, which the
	// specification masks (& 63, & 31); the verifier cannot know them.
	execShifts64 = []uint64{0, 1, 7, 31, 32, 33, 63, 64, 65, 127, 0xffffffff, 0x1_0000_0001, math.MaxUint64}
	execShifts32 = []uint64{0, 1, 7, 15, 16, 31, 32, 33, 63, 0xffffffff, 0x1_0000_0003, 0xffffffff_0000001f, math.MaxUint64}
)

func init() {
	rng := rand.New(rand.NewPCG(0xb9f, 0x6b17))
	execVals64 = []uint64{
		0, 1, 2, 3, 7, 0x10,
		math.MaxUint64, math.MaxUint64 - 1, -7 & math.MaxUint64, // -1, -2, -7
		math.MaxInt32, 0x80000000, 0xffffffff, 0x1_0000_0000,
		0xffffffff_80000000, // INT32_MIN sign-extended
		math.MaxInt64, 1 << 63, 1<<63 | 1,
		0xffffffff_00000001, 0x00000001_ffffffff, 0x7fffffff_80000000, 0x80000000_7fffffff,
		0xdeadbeef_cafebabe, 0x01234567_89abcdef,
	}
	execVals64 = append(execVals64,
		rng.Uint64(), rng.Uint64(), rng.Uint64()>>rng.IntN(64),
		uint64(int64(int32(rng.Uint32()))), uint64(rng.Uint32()))

	execVals32 = []int32{
		0, 1, 2, 3, 7, -1, -2, -7,
		math.MaxInt32, math.MinInt32, math.MinInt32 + 1,
		0x7fff, 0x8000, 0xffff, 0x10000, 0x12345678,
		int32(-0x21524111), // 0xdeadbeef
	}
	for range 3 {
		execVals32 = append(execVals32, int32(rng.Uint32()))
	}
}

// execCheck is one case of the program being built.
type execCheck struct {
	what       string
	out        int    // result word
	want       uint64 // Go's result
	first, end int    // the case's instruction slots in the assembled program
}

// execRunner batches cases into programs, runs them and compares.
type execRunner struct {
	t      *testing.T
	m      *mapfd.Map
	tm     *mapfd.Typed[uint32, execValue]
	name   string // of the program being built
	items  []insn.Item
	slots  int
	in     map[uint64]int // operand value -> word
	val    execValue
	checks []execCheck
	seq    int  // cases so far, for register rotation
	listed bool // a failing program's whole listing was printed

	progs, cases int
}

func newExecRunner(t *testing.T) *execRunner {
	t.Helper()
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: execWords * 8,
		MaxEntries: 1, Name: "insn_exec"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tm, err := mapfd.NewTyped[uint32, execValue](m)
	if err != nil {
		t.Fatal(err)
	}
	return &execRunner{t: t, m: m, tm: tm, in: map[uint64]int{}}
}

// execCase is what a case's body builds its instructions with. rd, rs and
// rr are three distinct registers for it.
type execCase struct {
	r          *execRunner
	out        int
	rd, rs, rr insn.Register
}

// load is rd = *(u64 *)(r6 + off) for a word that holds v.
func (c *execCase) load(dst insn.Register, v uint64) insn.Item {
	i, ok := c.r.in[v]
	if !ok {
		i = len(c.r.in)
		c.r.in[v] = i
		c.r.val[i] = v
	}
	return insn.LoadMem(insn.BPF_DW, dst, insn.R6, int16(8*i))
}

// store writes all 64 bits of src into the case's result word.
func (c *execCase) store(src insn.Register) insn.Item {
	return insn.StoreMem(insn.BPF_DW, insn.R6, int16(8*(execInWords+c.out)), src)
}

// label makes a label name private to the case.
func (c *execCase) label(s string) string { return "c" + strconv.Itoa(c.out) + "." + s }

// begin ends the program being built and starts one named name.
func (r *execRunner) begin(name string) {
	r.t.Helper()
	r.flush()
	r.name = name
}

// add appends a case: body computes a value and stores it with c.store;
// want is what Go says it must be.
func (r *execRunner) add(what string, want uint64, body func(c *execCase) []insn.Item) {
	r.t.Helper()
	if len(r.in)+3 > execInWords || len(r.checks) >= execOutWords {
		r.flush()
	}
	d := r.seq % len(execRegs)
	s := (d + 1 + (r.seq/len(execRegs))%(len(execRegs)-1)) % len(execRegs)
	x := (s + 1) % len(execRegs)
	if x == d {
		x = (x + 1) % len(execRegs)
	}
	r.seq++
	c := &execCase{r: r, out: len(r.checks), rd: execRegs[d], rs: execRegs[s], rr: execRegs[x]}
	items := body(c)
	asm, err := insn.Assemble(items)
	if err != nil {
		r.t.Fatalf("%s: %s: assemble: %v", r.name, what, err)
	}
	first := execPrologue + r.slots
	r.checks = append(r.checks, execCheck{what: what, out: c.out, want: want, first: first, end: first + len(asm)})
	r.slots += len(asm)
	r.items = append(r.items, items...)
}

// flush loads, runs and checks the program built so far.
func (r *execRunner) flush() {
	t := r.t
	t.Helper()
	if len(r.checks) == 0 {
		return
	}
	defer func() {
		r.items, r.slots, r.checks = nil, 0, nil
		clear(r.in)
		r.val = execValue{}
	}()

	items := make([]insn.Item, 0, len(r.items)+3)
	items = append(items, insn.LoadMapValue(insn.R6, r.m, 0))
	items = append(items, r.items...)
	items = append(items, insn.Mov64Imm(insn.R0, execMarker), insn.Exit())
	asm, err := insn.Assemble(items)
	if err != nil {
		t.Fatalf("%s: assemble: %v", r.name, err)
	}
	listing := insn.Disassemble(asm)
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL",
		Name: execProgName(r.name), Instructions: asm})
	if err != nil {
		t.Fatalf("%s: load: %v\nprogram:\n%s", r.name, err, execLines(listing, 0, len(asm), execMaxLines))
	}
	defer p.Close()

	for i := range execOutWords {
		r.val[execInWords+i] = execSentinel + uint64(i)
	}
	if err := r.tm.Update(0, r.val, mapfd.BPF_ANY); err != nil {
		t.Fatalf("%s: map update: %v", r.name, err)
	}
	res, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	if res.Retval != execMarker {
		t.Errorf("%s: program returned %#x, want %#x", r.name, res.Retval, execMarker)
	}
	got, err := r.tm.Lookup(0)
	if err != nil {
		t.Fatalf("%s: map lookup: %v", r.name, err)
	}
	for i := range len(r.in) {
		if got[i] != r.val[i] {
			t.Errorf("%s: operand word %d changed from %#x to %#x", r.name, i, r.val[i], got[i])
		}
	}
	bad := 0
	for _, c := range r.checks {
		k := got[execInWords+c.out]
		if k == c.want {
			continue
		}
		if bad++; bad <= execMaxErrs {
			t.Errorf("%s: %s:\n\tkernel 0x%016x\n\tGo     0x%016x\n%s", r.name, c.what, k, c.want,
				execLines(listing, c.first, c.end, 40))
		}
	}
	switch {
	case bad > 0 && !r.listed:
		r.listed = true
		t.Errorf("%s: %d of %d cases differ; the program:\n%s", r.name, bad, len(r.checks),
			execLines(listing, 0, len(asm), execMaxLines))
	case bad > 0:
		t.Errorf("%s: %d of %d cases differ (the listing of the first failing program is above)",
			r.name, bad, len(r.checks))
	}
	r.progs++
	r.cases += len(r.checks)
}

// done runs what is left and reports the counts.
func (r *execRunner) done() {
	r.t.Helper()
	r.flush()
	r.t.Logf("%d cases in %d programs", r.cases, r.progs)
}

// execProgName turns a case group's name into a valid object name.
func execProgName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 15)])
}

// execLines returns the lines of a Disassemble listing for slots
// [first, end), at most max of them.
func execLines(listing string, first, end, max int) string {
	var sel []string
	for _, l := range strings.Split(strings.TrimRight(listing, "\n"), "\n") {
		f, _, _ := strings.Cut(strings.TrimSpace(l), ":")
		if n, err := strconv.Atoi(f); err == nil && n >= first && n < end {
			sel = append(sel, "\t"+l)
		}
	}
	if len(sel) > max {
		n := len(sel) - max
		sel = append(append(sel[:max/2:max/2], fmt.Sprintf("\t... %d lines left out ...", n)), sel[len(sel)-max/2:]...)
	}
	return strings.Join(sel, "\n")
}

// ALU operations.

type execALUOp struct {
	name   string
	op     insn.ALUOp
	signed bool // off 1: SDIV, SMOD
}

var execALUOps = []execALUOp{
	{"ADD", insn.BPF_ADD, false}, {"SUB", insn.BPF_SUB, false}, {"MUL", insn.BPF_MUL, false},
	{"DIV", insn.BPF_DIV, false}, {"OR", insn.BPF_OR, false}, {"AND", insn.BPF_AND, false},
	{"LSH", insn.BPF_LSH, false}, {"RSH", insn.BPF_RSH, false}, {"NEG", insn.BPF_NEG, false},
	{"MOD", insn.BPF_MOD, false}, {"XOR", insn.BPF_XOR, false}, {"MOV", insn.BPF_MOV, false},
	{"ARSH", insn.BPF_ARSH, false},
	{"SDIV", insn.BPF_DIV, true}, {"SMOD", insn.BPF_MOD, true},
}

// execALU64 is the specification's BPF_ALU64 operation on dst and src; for
// BPF_K, src is the immediate sign-extended to 64 bits.
func execALU64(op insn.ALUOp, signed bool, dst, src uint64) uint64 {
	sd, ss := int64(dst), int64(src)
	switch op {
	case insn.BPF_ADD:
		return dst + src
	case insn.BPF_SUB:
		return dst - src
	case insn.BPF_MUL:
		return dst * src
	case insn.BPF_DIV:
		switch {
		case src == 0:
			return 0
		case !signed:
			return dst / src
		case sd == math.MinInt64 && ss == -1:
			return dst // overflow: LLONG_MIN
		default:
			return uint64(sd / ss)
		}
	case insn.BPF_MOD:
		switch {
		case src == 0:
			return dst // unchanged
		case !signed:
			return dst % src
		case ss == -1:
			return 0
		default:
			return uint64(sd % ss) // the sign of the dividend
		}
	case insn.BPF_OR:
		return dst | src
	case insn.BPF_AND:
		return dst & src
	case insn.BPF_XOR:
		return dst ^ src
	case insn.BPF_LSH:
		return dst << (src & 63)
	case insn.BPF_RSH:
		return dst >> (src & 63)
	case insn.BPF_ARSH:
		return uint64(sd >> (src & 63))
	case insn.BPF_NEG:
		return -dst
	case insn.BPF_MOV:
		return src
	}
	panic(fmt.Sprintf("ALU64 op %#x", op))
}

// execALU32 is the specification's BPF_ALU operation on the low halves;
// the result is zero-extended into the 64-bit register.
func execALU32(op insn.ALUOp, signed bool, dst64, src64 uint64) uint64 {
	dst, src := uint32(dst64), uint32(src64)
	sd, ss := int32(dst), int32(src)
	var r uint32
	switch op {
	case insn.BPF_ADD:
		r = dst + src
	case insn.BPF_SUB:
		r = dst - src
	case insn.BPF_MUL:
		r = dst * src
	case insn.BPF_DIV:
		switch {
		case src == 0:
			r = 0
		case !signed:
			r = dst / src
		case sd == math.MinInt32 && ss == -1:
			r = dst
		default:
			r = uint32(sd / ss)
		}
	case insn.BPF_MOD:
		switch {
		case src == 0:
			r = dst // the low half unchanged, the upper half zeroed
		case !signed:
			r = dst % src
		case ss == -1:
			r = 0
		default:
			r = uint32(sd % ss)
		}
	case insn.BPF_OR:
		r = dst | src
	case insn.BPF_AND:
		r = dst & src
	case insn.BPF_XOR:
		r = dst ^ src
	case insn.BPF_LSH:
		r = dst << (src & 31)
	case insn.BPF_RSH:
		r = dst >> (src & 31)
	case insn.BPF_ARSH:
		r = uint32(sd >> (src & 31))
	case insn.BPF_NEG:
		r = -dst
	case insn.BPF_MOV:
		r = src
	default:
		panic(fmt.Sprintf("ALU op %#x", op))
	}
	return uint64(r)
}

// execALUInsn builds the instruction, with the named builders where insn
// has one.
func execALUInsn(wide bool, o execALUOp, reg bool, dst, src insn.Register, imm int32) insn.Item {
	op := o.op
	switch {
	case o.op == insn.BPF_NEG && wide:
		return insn.Neg64(dst)
	case o.op == insn.BPF_NEG:
		return insn.Neg32(dst)
	case o.signed && o.op == insn.BPF_DIV:
		switch {
		case wide && reg:
			return insn.SDiv64Reg(dst, src)
		case wide:
			return insn.SDiv64Imm(dst, imm)
		case reg:
			return insn.SDiv32Reg(dst, src)
		default:
			return insn.SDiv32Imm(dst, imm)
		}
	case o.signed:
		switch {
		case wide && reg:
			return insn.SMod64Reg(dst, src)
		case wide:
			return insn.SMod64Imm(dst, imm)
		case reg:
			return insn.SMod32Reg(dst, src)
		default:
			return insn.SMod32Imm(dst, imm)
		}
	case o.op == insn.BPF_MOV:
		switch {
		case wide && reg:
			return insn.Mov64Reg(dst, src)
		case wide:
			return insn.Mov64Imm(dst, imm)
		case reg:
			return insn.Mov32Reg(dst, src)
		default:
			return insn.Mov32Imm(dst, imm)
		}
	case wide && reg:
		return insn.ALU64Reg(op, dst, src)
	case wide:
		return insn.ALU64Imm(op, dst, imm)
	case reg:
		return insn.ALU32Reg(op, dst, src)
	default:
		return insn.ALU32Imm(op, dst, imm)
	}
}

// execImms are the immediates the verifier accepts for o: no constant
// division by zero, shifts in range, NEG only with 0.
func execImms(o execALUOp, width int) []int32 {
	switch o.op {
	case insn.BPF_LSH, insn.BPF_RSH, insn.BPF_ARSH:
		var s []int32
		for i := range width {
			s = append(s, int32(i))
		}
		return s
	case insn.BPF_NEG:
		return []int32{0}
	case insn.BPF_DIV, insn.BPF_MOD:
		var s []int32
		for _, v := range execVals32 {
			if v != 0 {
				s = append(s, v)
			}
		}
		return s
	}
	return execVals32
}

// haveV4 reports whether this kernel runs ISA v4 instructions, and fails
// the test if the probe says no on 6.6 or later, which have them.
func haveV4(t *testing.T) bool {
	t.Helper()
	ok, err := prog.HaveISAv4()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := prog.KernelVersion(); !ok && v >= 6<<16|6<<8 {
		t.Fatalf("HaveISAv4 says no on %d.%d, which has ISA v4", v>>16, v>>8&0xff)
	}
	if !ok {
		t.Log("this kernel predates ISA v4 (6.6): its instructions are not run")
	}
	return ok
}

// TestExecALU runs every ALU64 and ALU32 operation, signed division and
// modulo included, with an immediate and with a register source. There is
// no register form of NEG: the kernel rejects BPF_NEG|BPF_X as an unknown
// opcode (0x8f, 0x8c), and BPF_NEG|BPF_K only with imm 0.
func TestExecALU(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	v4 := haveV4(t)
	r := newExecRunner(t)
	for _, wide := range []bool{true, false} {
		class, width, model := "ALU64", 64, execALU64
		shifts := execShifts64
		if !wide {
			class, width, model = "ALU32", 32, execALU32
			shifts = execShifts32
		}
		for _, o := range execALUOps {
			if o.signed && !v4 {
				continue
			}
			name := class + " " + o.name + " K"
			r.begin(name)
			for _, dst := range execVals64 {
				for _, imm := range execImms(o, width) {
					// The immediate is sign-extended to 64 bits; the
					// 32-bit model only looks at its low half.
					want := model(o.op, o.signed, dst, uint64(int64(imm)))
					r.add(fmt.Sprintf("dst=%#x imm=%#x", dst, uint32(imm)), want, func(c *execCase) []insn.Item {
						return []insn.Item{c.load(c.rd, dst), execALUInsn(wide, o, false, c.rd, 0, imm), c.store(c.rd)}
					})
				}
			}
			if o.op == insn.BPF_NEG {
				continue
			}
			name = class + " " + o.name + " X"
			r.begin(name)
			srcs := execVals64
			if o.op == insn.BPF_LSH || o.op == insn.BPF_RSH || o.op == insn.BPF_ARSH {
				srcs = shifts
			}
			for _, dst := range execVals64 {
				for _, src := range srcs {
					want := model(o.op, o.signed, dst, src)
					r.add(fmt.Sprintf("dst=%#x src=%#x", dst, src), want, func(c *execCase) []insn.Item {
						return []insn.Item{c.load(c.rd, dst), c.load(c.rs, src),
							execALUInsn(wide, o, true, c.rd, c.rs, 0), c.store(c.rd)}
					})
				}
			}
		}
	}
	r.done()
}

// TestExecMovsx runs the sign-extending moves of ISA v4.
func TestExecMovsx(t *testing.T) {
	testutil.RequireRoot(t)
	if !haveV4(t) {
		t.Skip("no ISA v4 on this kernel")
	}
	testutil.CheckNoLeaks(t)
	srcs := append([]uint64{0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x1_8080, 0xffff_7f80,
		0x7fff_ffff, 0x8000_8000, 0x1234_5678_9abc_def0}, execVals64...)
	r := newExecRunner(t)
	for _, bitsN := range []int16{8, 16, 32} {
		name := fmt.Sprintf("MOVSX64 s%d", bitsN)
		r.begin(name)
		for i, src := range srcs {
			var want uint64
			switch bitsN {
			case 8:
				want = uint64(int64(int8(src)))
			case 16:
				want = uint64(int64(int16(src)))
			case 32:
				want = uint64(int64(int32(src)))
			}
			dst := execVals64[i%len(execVals64)] // overwritten
			r.add(fmt.Sprintf("src=%#x (dst was %#x)", src, dst), want, func(c *execCase) []insn.Item {
				return []insn.Item{c.load(c.rd, dst), c.load(c.rs, src), insn.Movsx64Reg(c.rd, c.rs, bitsN), c.store(c.rd)}
			})
		}
	}
	for _, bitsN := range []int16{8, 16} {
		name := fmt.Sprintf("MOVSX32 s%d", bitsN)
		r.begin(name)
		for i, src := range srcs {
			var want uint64
			switch bitsN {
			case 8:
				want = uint64(uint32(int32(int8(src))))
			case 16:
				want = uint64(uint32(int32(int16(src))))
			}
			dst := execVals64[(i+5)%len(execVals64)]
			r.add(fmt.Sprintf("src=%#x (dst was %#x)", src, dst), want, func(c *execCase) []insn.Item {
				return []insn.Item{c.load(c.rd, dst), c.load(c.rs, src), insn.Movsx32Reg(c.rd, c.rs, bitsN), c.store(c.rd)}
			})
		}
	}
	r.done()
}

// execSwap reverses the low n bits' bytes of v; the result is zero-extended.
func execSwap(v uint64, n int32) uint64 {
	switch n {
	case 16:
		return uint64(bits.ReverseBytes16(uint16(v)))
	case 32:
		return uint64(bits.ReverseBytes32(uint32(v)))
	}
	return bits.ReverseBytes64(v)
}

// execTrunc keeps the low n bits of v.
func execTrunc(v uint64, n int32) uint64 {
	if n == 64 {
		return v
	}
	return v & (1<<n - 1)
}

// TestExecEndian runs the byte order conversions (BPF_ALU|BPF_END) and the
// unconditional byte swaps of ISA v4 (BPF_ALU64|BPF_END).
func TestExecEndian(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	vals := append([]uint64{0x0102_0304_0506_0708, 0x8182_8384_8586_8788, 0xff00, 0x00ff}, execVals64...)
	kinds := []string{"TO_LE", "TO_BE"}
	if haveV4(t) {
		kinds = append(kinds, "BSWAP")
	}
	r := newExecRunner(t)
	for _, n := range []int32{16, 32, 64} {
		for _, kind := range kinds {
			name := fmt.Sprintf("%s %d", kind, n)
			r.begin(name)
			for _, v := range vals {
				var want uint64
				var build func(insn.Register, int32) insn.Item
				switch kind {
				case "TO_LE":
					want, build = execTrunc(v, n), insn.ToLE
					if !execHostLE {
						want = execSwap(v, n)
					}
				case "TO_BE":
					want, build = execSwap(v, n), insn.ToBE
					if !execHostLE {
						want = execTrunc(v, n)
					}
				case "BSWAP":
					want, build = execSwap(v, n), insn.Bswap
				}
				r.add(fmt.Sprintf("dst=%#x", v), want, func(c *execCase) []insn.Item {
					return []insn.Item{c.load(c.rd, v), build(c.rd, n), c.store(c.rd)}
				})
			}
		}
	}
	r.done()
}

// TestExecLoadImm64 loads full 64-bit immediates (two slots) into every
// register.
func TestExecLoadImm64(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	rng := rand.New(rand.NewPCG(64, 64))
	vals := append([]uint64(nil), execVals64...)
	for i := range 64 {
		vals = append(vals, 1<<i, ^uint64(1<<i), rng.Uint64())
	}
	r := newExecRunner(t)
	r.begin("LD_IMM64")
	for _, v := range vals {
		r.add(fmt.Sprintf("imm=%#x", v), v, func(c *execCase) []insn.Item {
			// rd holds something else first, so that a half not written shows.
			return []insn.Item{c.load(c.rd, ^v), insn.LoadImm64(c.rd, int64(v)), c.store(c.rd)}
		})
	}
	r.done()
}

// Jumps.

type execJumpOp struct {
	name, sym string
	op        insn.JumpOp
}

var execJumpOps = []execJumpOp{
	{"JEQ", "==", insn.BPF_JEQ}, {"JGT", ">", insn.BPF_JGT}, {"JGE", ">=", insn.BPF_JGE},
	{"JSET", "&", insn.BPF_JSET}, {"JNE", "!=", insn.BPF_JNE}, {"JSGT", "s>", insn.BPF_JSGT},
	{"JSGE", "s>=", insn.BPF_JSGE}, {"JLT", "<", insn.BPF_JLT}, {"JLE", "<=", insn.BPF_JLE},
	{"JSLT", "s<", insn.BPF_JSLT}, {"JSLE", "s<=", insn.BPF_JSLE},
}

// execJump is the specification's condition: JMP compares 64-bit registers
// (an immediate sign-extended), JMP32 their low halves.
func execJump(op insn.JumpOp, w32 bool, a, b uint64) bool {
	sa, sb := int64(a), int64(b)
	if w32 {
		a, b = uint64(uint32(a)), uint64(uint32(b))
		sa, sb = int64(int32(a)), int64(int32(b))
	}
	switch op {
	case insn.BPF_JEQ:
		return a == b
	case insn.BPF_JGT:
		return a > b
	case insn.BPF_JGE:
		return a >= b
	case insn.BPF_JSET:
		return a&b != 0
	case insn.BPF_JNE:
		return a != b
	case insn.BPF_JSGT:
		return sa > sb
	case insn.BPF_JSGE:
		return sa >= sb
	case insn.BPF_JLT:
		return a < b
	case insn.BPF_JLE:
		return a <= b
	case insn.BPF_JSLT:
		return sa < sb
	case insn.BPF_JSLE:
		return sa <= sb
	}
	panic(fmt.Sprintf("jump op %#x", op))
}

// TestExecJump runs every conditional jump of JMP and JMP32, with an
// immediate and with a register, each case twice: jumping forward and
// jumping backward. A case stores 1 if the jump was taken, else 0.
func TestExecJump(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	r := newExecRunner(t)
	for _, w32 := range []bool{false, true} {
		class := "JMP"
		if w32 {
			class = "JMP32"
		}
		for _, o := range execJumpOps {
			for _, reg := range []bool{false, true} {
				name := class + " " + o.name + " K"
				if reg {
					name = class + " " + o.name + " X"
				}
				r.begin(name)
				for _, a := range execVals64 {
					var srcs []uint64
					if reg {
						srcs = execVals64
					} else {
						for _, imm := range execVals32 {
							srcs = append(srcs, uint64(int64(imm)))
						}
					}
					for _, b := range srcs {
						var cond func(c *execCase, label string) insn.Item
						var what string
						switch {
						case reg && w32:
							what = fmt.Sprintf("if w(%#x) %s w(%#x)", a, o.sym, b)
							cond = func(c *execCase, l string) insn.Item { return insn.Jump32Reg(o.op, c.rd, c.rs, l) }
						case reg:
							what = fmt.Sprintf("if %#x %s %#x", a, o.sym, b)
							cond = func(c *execCase, l string) insn.Item { return insn.JumpReg(o.op, c.rd, c.rs, l) }
						case w32:
							what = fmt.Sprintf("if w(%#x) %s imm %#x", a, o.sym, uint32(b))
							cond = func(c *execCase, l string) insn.Item {
								return insn.Jump32Imm(o.op, c.rd, int32(b), l)
							}
						default:
							what = fmt.Sprintf("if %#x %s imm %#x", a, o.sym, uint32(b))
							cond = func(c *execCase, l string) insn.Item {
								return insn.JumpImm(o.op, c.rd, int32(b), l)
							}
						}
						var want uint64
						if execJump(o.op, w32, a, b) {
							want = 1
						}
						operands := func(c *execCase) []insn.Item {
							if reg {
								return []insn.Item{c.load(c.rd, a), c.load(c.rs, b)}
							}
							return []insn.Item{c.load(c.rd, a)}
						}
						r.add("forward: "+what, want, func(c *execCase) []insn.Item {
							return append(operands(c),
								insn.Mov64Imm(c.rr, 1),
								cond(c, c.label("taken")),
								insn.Mov64Imm(c.rr, 0),
								insn.Label(c.label("taken")),
								c.store(c.rr))
						})
						r.add("backward: "+what, want, func(c *execCase) []insn.Item {
							return append(operands(c),
								insn.Ja(c.label("cond")),
								insn.Label(c.label("taken")),
								insn.Mov64Imm(c.rr, 1),
								insn.Ja(c.label("store")),
								insn.Label(c.label("cond")),
								insn.Mov64Imm(c.rr, 0),
								cond(c, c.label("taken")),
								insn.Label(c.label("store")),
								c.store(c.rr))
						})
					}
				}
			}
		}
	}
	r.done()
}

// TestExecJa runs the unconditional jumps, goto (16-bit offset) and gotol
// (ISA v4, 32-bit offset), forward, backward and by zero. Each block on the
// path appends its digit to rr, so the result is the path taken. Code that
// only a jump skips would be unreachable, which the verifier rejects: a
// guard register loaded as 0 makes the verifier believe it may run.
func TestExecJa(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	r := newExecRunner(t)
	step := func(c *execCase, digit int32) []insn.Item {
		return []insn.Item{insn.ALU64Imm(insn.BPF_MUL, c.rr, 10), insn.ALU64Imm(insn.BPF_ADD, c.rr, digit)}
	}
	type jumper func(label string) insn.Item
	jumps := []struct {
		name string
		ja   jumper
	}{{"goto", insn.Ja}, {"gotol", insn.Ja32}}
	v4 := haveV4(t)
	if !v4 {
		jumps = jumps[:1]
	}
	for _, j := range jumps {
		r.begin("JA " + j.name)
		r.add(j.name+" forward over guarded code", 12, func(c *execCase) []insn.Item {
			return slices.Concat(
				[]insn.Item{insn.Mov64Imm(c.rr, 1), c.load(c.rd, 0),
					insn.JumpImm(insn.BPF_JNE, c.rd, 0, c.label("skipped")),
					j.ja(c.label("end")),
					insn.Label(c.label("skipped"))},
				step(c, 9),
				[]insn.Item{insn.Label(c.label("end"))},
				step(c, 2),
				[]insn.Item{c.store(c.rr)})
		})
		r.add(j.name+" forward, backward, forward", 1234, func(c *execCase) []insn.Item {
			return slices.Concat(
				[]insn.Item{insn.Mov64Imm(c.rr, 1), j.ja(c.label("b"))},
				[]insn.Item{insn.Label(c.label("a"))}, step(c, 3), []insn.Item{j.ja(c.label("end"))},
				[]insn.Item{insn.Label(c.label("b"))}, step(c, 2), []insn.Item{j.ja(c.label("a"))},
				[]insn.Item{insn.Label(c.label("end"))}, step(c, 4),
				[]insn.Item{c.store(c.rr)})
		})
		r.add(j.name+" +0", 123, func(c *execCase) []insn.Item {
			return slices.Concat(
				[]insn.Item{insn.Mov64Imm(c.rr, 1)}, step(c, 2),
				[]insn.Item{j.ja(c.label("next")), insn.Label(c.label("next"))}, step(c, 3),
				[]insn.Item{c.store(c.rr)})
		})
	}

	if !v4 {
		r.done()
		return
	}
	// gotol over more slots than a 16-bit offset reaches, both ways.
	const pad = 40000
	r.begin("JA gotol long")
	r.add(fmt.Sprintf("gotol over %d slots, forward and backward", pad), 1234, func(c *execCase) []insn.Item {
		items := []insn.Item{insn.Mov64Imm(c.rr, 1), insn.Mov64Imm(c.rs, 0), c.load(c.rd, 0),
			insn.Ja32(c.label("f"))}
		items = append(items, insn.Label(c.label("b")))
		items = append(items, step(c, 3)...)
		items = append(items, insn.Ja32(c.label("end")))
		items = append(items, insn.Label(c.label("pad")))
		for range pad {
			items = append(items, insn.ALU64Imm(insn.BPF_ADD, c.rs, 1))
		}
		items = append(items, insn.Ja(c.label("end")))
		items = append(items, insn.Label(c.label("f")))
		items = append(items, step(c, 2)...)
		items = append(items,
			insn.JumpImm(insn.BPF_JNE, c.rd, 0, c.label("tramp")),
			insn.Ja32(c.label("b")),
			insn.Label(c.label("tramp")),
			insn.Ja32(c.label("pad")),
			insn.Label(c.label("end")))
		items = append(items, step(c, 4)...)
		return append(items, c.store(c.rr))
	})
	r.done()
}
