package tests

import (
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
)

// TestBPFToBPFCalls: a program calls a bpf function (BPF_PSEUDO_CALL),
// which saves an argument on its own stack and calls another: the result
// comes back in r0, f(3, 4) = (3*10 + 1000) + 4. The program's JIT state is
// logged (jitState): a JIT that cannot compile functions leaves them to
// the interpreter.
func TestBPFToBPFCalls(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	enableJIT(t)
	calls := []Item{
		Mov64Imm(R1, 3),
		Mov64Imm(R2, 4),
		CallFunc("f"),
		Exit(),
		Label("f"), // g(r1 * 10) + r2
		StoreMem(BPF_DW, R10, -8, R2),
		ALU64Imm(BPF_MUL, R1, 10),
		CallFunc("g"),
		LoadMem(BPF_DW, R2, R10, -8),
		ALU64Reg(BPF_ADD, R0, R2),
		Exit(),
		Label("g"), // r1 + 1000
		Mov64Reg(R0, R1),
		ALU64Imm(BPF_ADD, R0, 1000),
		Exit(),
	}
	spec := prog.Spec{Type: prog.SocketFilter, Name: "calls", License: "GPL", Insns: calls}
	p, err := prog.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("calls: %s", jitState(t, p))
	if r := runRet(t, p); r != 1034 {
		t.Fatalf("f(3, 4) = %d, want 1034", r)
	}
}
