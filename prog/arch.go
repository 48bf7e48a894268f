package prog

import (
	"fmt"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// PtRegs is where a kprobe program finds a function's arguments and return
// value in its context, struct pt_regs, on one architecture: offsets from
// its uapi asm/ptrace.h, for the calling convention's registers. Syscall
// is where the kernel keeps a system call's arguments in the same struct
// (its syscall_get_arguments), which the raw tracepoint sys_enter passes
// as a pointer: they differ from a function's on x86-64 (r10, not cx) and
// on arm64, riscv64 and arm, whose first one is the saved copy orig_x0,
// orig_a0 or ARM_ORIG_r0 (the register itself holds the return value
// once the call has run).
type PtRegs struct {
	Arch    string    // the kernel's uname machine: "x86_64", "aarch64", ...
	Args    []int16   // offsets of the registers holding arguments 0, 1, ...
	Ret     int16     // offset of the register holding the return value
	Syscall [6]int16  // offsets of a system call's arguments 0 to 5
	Size    insn.Size // register width: BPF_DW, or BPF_W on 32-bit kernels
}

// ptRegs lists the layouts bpfkit knows, by uname machine.
var ptRegs = []PtRegs{
	// struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di ...;
	// a system call passes di si dx r10 r8 r9
	{
		Arch:    "x86_64",
		Args:    []int16{112, 104, 96, 88, 72, 64},
		Ret:     80,
		Syscall: [6]int16{112, 104, 96, 56, 72, 64},
		Size:    insn.BPF_DW,
	},
	// struct pt_regs: user_pt_regs (x0-x30, sp, pc, pstate), then orig_x0
	// at 272; arguments in x0-x7, a system call's in orig_x0, x1-x5
	{
		Arch:    "aarch64",
		Args:    []int16{0, 8, 16, 24, 32, 40, 48, 56},
		Ret:     0,
		Syscall: [6]int16{272, 8, 16, 24, 32, 40},
		Size:    insn.BPF_DW,
	},
	// struct pt_regs: epc ra sp gp tp t0 t1 t2 s0 s1 a0-a7 ..., orig_a0 at
	// 280; arguments in a0-a7, a system call's in orig_a0, a1-a5
	{
		Arch:    "riscv64",
		Args:    []int16{80, 88, 96, 104, 112, 120, 128, 136},
		Ret:     80,
		Syscall: [6]int16{280, 88, 96, 104, 112, 120},
		Size:    insn.BPF_DW,
	},
	// struct pt_regs: bx cx dx si di bp ax ...; the kernel is built with
	// -mregparm=3: arguments in ax, dx, cx; a system call's in bx cx dx si
	// di bp
	{
		Arch:    "i686",
		Args:    []int16{24, 8, 4},
		Ret:     24,
		Syscall: [6]int16{0, 4, 8, 12, 16, 20},
		Size:    insn.BPF_W,
	},
	// struct pt_regs: uregs[18], r0-r15 first, ARM_ORIG_r0 at 68;
	// arguments in r0-r3, a system call's in ARM_ORIG_r0, r1-r5
	{
		Arch:    "armv7l",
		Args:    []int16{0, 4, 8, 12},
		Ret:     0,
		Syscall: [6]int16{68, 4, 8, 12, 16, 20},
		Size:    insn.BPF_W,
	},
}

// KernelPtRegs is the layout of the running kernel's architecture (uname's
// machine), or an error naming it when bpfkit does not know it.
func KernelPtRegs() (PtRegs, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return PtRegs{}, fmt.Errorf("prog: uname: %w", err)
	}
	return PtRegsOf(unix.ByteSliceToString(u.Machine[:]))
}

// PtRegsOf is the layout of the architecture named as uname names it
// (i386 to i686 and armv6l to armv8l count as i686 and armv7l).
func PtRegsOf(machine string) (PtRegs, error) {
	switch machine {
	case "i386", "i486", "i586":
		machine = "i686"
	case "armv6l", "armv8l":
		machine = "armv7l"
	}
	for _, r := range ptRegs {
		if r.Arch == machine {
			return r, nil
		}
	}
	return PtRegs{}, fmt.Errorf("prog: kprobe arguments: no pt_regs layout for %q: %w", machine, sys.ErrNotSupported)
}

// Arg is dst = argument n (from 0) of the probed function, read from the
// pt_regs that ctx points at; an error for an argument not passed in a
// register.
func (r PtRegs) Arg(dst, ctx insn.Register, n int) (insn.Item, error) {
	if n < 0 || n >= len(r.Args) {
		return insn.Item{}, fmt.Errorf("prog: kprobe argument %d: %s passes %d in registers", n, r.Arch, len(r.Args))
	}
	return insn.LoadMem(r.Size, dst, ctx, r.Args[n]), nil
}

// Return is dst = the return value, in a kretprobe.
func (r PtRegs) Return(dst, ctx insn.Register) insn.Item {
	return insn.LoadMem(r.Size, dst, ctx, r.Ret)
}

// syscallPrefixes is, by GOARCH, the prefix of the system call handlers
// since the syscall wrappers (x86-64 4.17, arm64 4.19, s390 and riscv
// later); a 386 process on an x86-64 kernel enters through __ia32_sys_*.
var syscallPrefixes = map[string]string{"amd64": "__x64_sys_", "386": "__ia32_sys_", "arm64": "__arm64_sys_",
	"riscv64": "__riscv_sys_", "s390x": "__s390x_sys_"}
