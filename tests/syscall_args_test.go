package tests

import (
	"os"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestSyscallArguments: a raw tracepoint program on sys_enter reads the six
// arguments of a system call through prog.KernelPtRegs's Syscall offsets
// (di si dx r10 r8 r9 on x86-64, orig_x0 x1-x5 on arm64) from the pt_regs
// the tracepoint passes, with bpf_probe_read_kernel, into slots 0-5. The
// test makes getppid, which ignores its arguments, with six values it
// chose in the argument registers, and finds each one in its slot.
func TestSyscallArguments(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	regs, err := prog.KernelPtRegs()
	if err != nil {
		t.Fatal(err)
	}
	m, tm := newArray(t, 6)
	width := int32(8)
	if regs.Size == insn.BPF_W {
		width = 4
	}
	// The context is u64 args[2]: the pt_regs pointer, then the number.
	items := []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1),
		insn.LoadMem(insn.BPF_DW, insn.R7, insn.R6, 8),
		insn.JumpImm(insn.BPF_JNE, insn.R7, unix.SYS_GETPPID, "out"),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.LoadMem(insn.BPF_DW, insn.R8, insn.R6, 0),
	}
	for n, off := range regs.Syscall {
		items = append(items,
			// fp-8 = the register, read from the kernel's pt_regs
			insn.StoreImm(insn.BPF_DW, insn.R10, -8, 0),
			insn.Mov64Reg(insn.R1, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R1, -8),
			insn.Mov64Imm(insn.R2, width),
			insn.Mov64Reg(insn.R3, insn.R8),
			insn.ALU64Imm(insn.BPF_ADD, insn.R3, int32(off)),
			insn.Call(insn.BPF_FUNC_probe_read_kernel),
			// slot n = fp-8
			insn.StoreImm(insn.BPF_W, insn.R10, -12, int32(n)),
			insn.Mov64Reg(insn.R2, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R2, -12),
			insn.LoadMapFD(insn.R1, m),
			insn.Call(insn.BPF_FUNC_map_lookup_elem),
			insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R10, -8),
			insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
		)
	}
	items = append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	p, err := prog.Load(prog.Spec{
		Type:    prog.RawTracepoint,
		Name:    "syscall_args",
		License: "GPL",
		Insns:   items,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := []uint64{0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666}
	unix.RawSyscall6(unix.SYS_GETPPID, uintptr(want[0]), uintptr(want[1]), uintptr(want[2]),
		uintptr(want[3]), uintptr(want[4]), uintptr(want[5]))
	for n, w := range want {
		if got, err := tm.Lookup(uint32(n)); err != nil || got != w {
			t.Errorf("%s: argument %d (pt_regs offset %d) = %#x, %v; want %#x",
				regs.Arch, n, regs.Syscall[n], got, err, w)
		}
	}
}
