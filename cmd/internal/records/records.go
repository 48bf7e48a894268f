// Package records lets the tools' tests check that what a BPF program
// builds on its stack (a perf record, a map key) is exactly the Go struct
// the tool declares for it: the program writes every byte of the struct,
// padding included, and hands the helper the struct's address and size.
//
// It reads a program as the verifier's first pass would, in order,
// following constants and stack addresses through r1 to r9; it ignores
// jumps, so a value set on one branch is taken as set after it. The
// tools' programs set each helper's arguments right before the call, so
// that is enough here; it is no verifier.
package records

import (
	"testing"

	"github.com/bpfkit/bpfkit/insn"
)

// Value is what a register holds before a call, when the reading knows.
type Value struct {
	Known bool
	Stack bool  // r10 + N: an address on the program's stack
	N     int64 // the constant, or the offset from r10
}

// Call is a helper call and what r1 to r5 hold at it.
type Call struct {
	Helper insn.Helper
	Args   [5]Value
}

// fills are the helpers that fill a buffer given by r1 (the address) and
// r2 (its size) entirely.
var fills = map[insn.Helper]bool{
	insn.BPF_FUNC_get_current_comm:  true,
	insn.BPF_FUNC_probe_read:        true,
	insn.BPF_FUNC_probe_read_kernel: true,
	insn.BPF_FUNC_probe_read_user:   true,
}

// Read returns the program's helper calls and which bytes of its stack it
// writes, by offset from r10: by stores, and by the helpers of fills.
func Read(insns []insn.Instruction) (calls []Call, written map[int16]bool) {
	written = map[int16]bool{}
	var regs [11]Value
	regs[insn.R10] = Value{Known: true, Stack: true}
	mark := func(off int64, n int64) {
		for b := off; b < off+n; b++ {
			written[int16(b)] = true
		}
	}
	for i := 0; i < len(insns); i++ {
		in := insns[i]
		class, op, reg := in.Class(), in.ALUOp(), in.Source() == insn.BPF_X
		alu64, dst := class == insn.BPF_ALU64, &regs[in.Dst]
		store := (class == insn.BPF_ST || class == insn.BPF_STX) && in.Mode() == insn.BPF_MEM
		switch {
		case alu64 && op == insn.BPF_MOV && reg:
			*dst = regs[in.Src]
		case alu64 && op == insn.BPF_MOV:
			*dst = Value{Known: true, N: int64(in.Imm)}
		case alu64 && op == insn.BPF_ADD && !reg:
			dst.N += int64(in.Imm)
		case class == insn.BPF_ALU || alu64 || class == insn.BPF_LDX:
			*dst = Value{}
		case class == insn.BPF_LD: // a 64-bit immediate: two slots
			*dst = Value{}
			i++
		case store && dst.Known && dst.Stack:
			mark(dst.N+int64(in.Off), sizeBytes[in.Size()])
		case class == insn.BPF_JMP && in.JumpOp() == insn.BPF_CALL && in.Src == 0:
			c := Call{Helper: insn.Helper(in.Imm)}
			copy(c.Args[:], regs[insn.R1:insn.R6])
			calls = append(calls, c)
			buf, n := c.Args[0], c.Args[1]
			if fills[c.Helper] && buf.Known && buf.Stack && n.Known && !n.Stack {
				mark(buf.N, n.N)
			}
			for r := insn.R0; r <= insn.R5; r++ {
				regs[r] = Value{}
			}
		}
	}
	return calls, written
}

var sizeBytes = map[insn.Size]int64{insn.BPF_B: 1, insn.BPF_H: 2, insn.BPF_W: 4, insn.BPF_DW: 8}

// CheckWritten fails t unless the program writes every byte of what, the
// size bytes at r10+off.
func CheckWritten(t testing.TB, insns []insn.Instruction, what string, off int16, size uintptr) {
	t.Helper()
	_, written := Read(insns)
	for b := off; b < off+int16(size); b++ {
		if !written[b] {
			t.Errorf("%s: %d bytes at fp%d: byte %d (fp%d) is never written",
				what, size, off, b-off, b)
		}
	}
}

// CheckArg fails t unless every call of helper is given, as its argument
// arg (1 to 5), the address r10+off, or with stack false the constant off;
// and there is one such call at least.
func CheckArg(t testing.TB, insns []insn.Instruction, helper insn.Helper, arg int, stack bool,
	off int64) {
	t.Helper()
	calls, _ := Read(insns)
	n := 0
	for _, c := range calls {
		if c.Helper != helper {
			continue
		}
		n++
		if want := (Value{Known: true, Stack: stack, N: off}); c.Args[arg-1] != want {
			t.Errorf("%v: r%d is %+v, want %+v", helper, arg, c.Args[arg-1], want)
		}
	}
	if n == 0 {
		t.Errorf("the program never calls %v", helper)
	}
}

// FakeMap stands for a map, its fd, in a program that is assembled for
// Read and not loaded.
type FakeMap int

// FD is the map's fd.
func (m FakeMap) FD() int { return int(m) }

// Assemble assembles items, failing tb if they do not assemble.
func Assemble(tb testing.TB, items []insn.Item) []insn.Instruction {
	tb.Helper()
	insns, err := insn.Assemble(items)
	if err != nil {
		tb.Fatal(err)
	}
	return insns
}
