package prog

import (
	"fmt"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// PtRegs is where a kprobe program finds a function's arguments and return
// value in its context, struct pt_regs, on one architecture: offsets from
// its uapi asm/ptrace.h, for the calling convention's registers. A raw
// tracepoint on raw_syscalls finds the system call's registers there too.
type PtRegs struct {
	Arch string    // the kernel's uname machine: "x86_64", "aarch64", ...
	Args []int16   // offsets of the registers holding arguments 0, 1, ...
	Ret  int16     // offset of the register holding the return value
	Size insn.Size // register width: BPF_DW, or BPF_W on 32-bit kernels
	// SyscallNr is the offset of what holds the number of the system call
	// in progress until it returns, syscall_get_nr's source. It is read
	// where raw_syscalls:sys_exit, unlike sys_enter, does not pass it. -1
	// where it is not in pt_regs (32-bit arm keeps it in thread_info).
	SyscallNr int16
	// Syscall are the offsets of the system call's arguments 0 to 5, where
	// the kernel reads them (syscall_get_arguments). They differ from a
	// function's on x86-64 (r10, not cx). On arm64, riscv64 and arm the
	// first is the saved copy orig_x0, orig_a0 or ARM_ORIG_r0: the register
	// itself holds the return value once the call has run.
	Syscall [6]int16
	// Compat tells a compat (32-bit) task's system calls apart.
	Compat CompatTest
}

// CompatTest says how a system call of a compat (32-bit) task on a 64-bit
// kernel shows in its pt_regs: the register at Offset, read with Size, and
// Mask, equals Value. The kernel's syscalls:* tracepoints skip those calls
// (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS, x86-64 and arm64), while
// raw_syscalls passes them with the 32-bit ABI's numbers: getppid of a
// 386 process is 64, semget's number on x86-64.
type CompatTest struct {
	Offset int16     // the register's offset; -1: no compat test
	Size   insn.Size // its width to read
	Mask   int32     // the bits that tell
	Value  int32     // what they are in a compat system call
}

// noCompat is the CompatTest of architectures without one.
var noCompat = CompatTest{Offset: -1}

// ptRegs lists the layouts bpfkit knows, by uname machine.
var ptRegs = []PtRegs{
	// struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di
	// orig_ax ip cs flags sp ss. A system call entered from 32-bit code
	// (int $0x80, sysenter, or syscall in compat mode) has cs ==
	// __USER32_CS, 0x23. That is the kernel's in_ia32_syscall() for all
	// but int $0x80 made by 64-bit code: the tracepoints skip those, and
	// the test does not see them (their cs is __USER_CS). cs is read as its
	// 16 bits: FRED (6.9) keeps more in the u64 around it.
	{
		Arch:      "x86_64",
		Args:      []int16{112, 104, 96, 88, 72, 64},
		Ret:       80,
		Size:      insn.BPF_DW,
		SyscallNr: 120,
		Syscall:   [6]int16{112, 104, 96, 56, 72, 64}, // di si dx r10 r8 r9
		Compat:    CompatTest{Offset: 136, Size: insn.BPF_H, Mask: 0xffff, Value: 0x23},
	},
	// struct user_pt_regs: regs[31] (x0-x30) first, then sp pc pstate;
	// arguments in x0-x7. struct pt_regs goes on with orig_x0 and the s32
	// syscallno. A compat task runs in AArch32: PSR_MODE32_BIT (0x10) of
	// pstate, exactly the kernel's is_compat_task() for a task at EL0.
	{
		Arch:      "aarch64",
		Args:      []int16{0, 8, 16, 24, 32, 40, 48, 56},
		Ret:       0,
		Size:      insn.BPF_DW,
		SyscallNr: 280,
		Syscall:   [6]int16{272, 8, 16, 24, 32, 40}, // orig_x0 x1-x5
		Compat:    CompatTest{Offset: 264, Size: insn.BPF_W, Mask: 0x10, Value: 0x10},
	},
	// struct user_regs_struct: pc ra sp gp tp t0 t1 t2 s0 s1 a0-a7 ...;
	// the number in a7. riscv's tracepoints do not skip compat calls.
	{
		Arch:      "riscv64",
		Args:      []int16{80, 88, 96, 104, 112, 120, 128, 136},
		Ret:       80,
		Size:      insn.BPF_DW,
		SyscallNr: 136,
		Syscall:   [6]int16{280, 88, 96, 104, 112, 120}, // orig_a0 (at 280) a1-a5
		Compat:    noCompat,
	},
	// struct pt_regs: bx cx dx si di bp ax ds es fs gs orig_ax ...; the
	// kernel is built with -mregparm=3: arguments in ax, dx, cx
	{
		Arch:      "i686",
		Args:      []int16{24, 8, 4},
		Ret:       24,
		Size:      insn.BPF_W,
		SyscallNr: 44,
		Syscall:   [6]int16{0, 4, 8, 12, 16, 20}, // bx cx dx si di bp
		Compat:    noCompat,
	},
	// struct pt_regs: uregs[18], r0-r15 first; arguments in r0-r3. The
	// number is in thread_info (abi_syscall), not here.
	{
		Arch:      "armv7l",
		Args:      []int16{0, 4, 8, 12},
		Ret:       0,
		Size:      insn.BPF_W,
		SyscallNr: -1,
		Syscall:   [6]int16{68, 4, 8, 12, 16, 20}, // ARM_ORIG_r0 (uregs[17]) r1-r5
		Compat:    noCompat,
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
	machine = canonicalMachine(machine)
	for _, r := range ptRegs {
		if r.Arch == machine {
			return r, nil
		}
	}
	return PtRegs{}, fmt.Errorf("prog: kprobe arguments: no pt_regs layout for %q: %w",
		machine, sys.ErrNotSupported)
}

// canonicalMachine names uname machines alike that bpfkit treats alike:
// i386 to i586 as i686, armv6l and armv8l (a 32-bit kernel) as armv7l.
func canonicalMachine(machine string) string {
	switch machine {
	case "i386", "i486", "i586":
		return "i686"
	case "armv6l", "armv8l":
		return "armv7l"
	}
	return machine
}

// Arg is dst = argument n (from 0) of the probed function, read from the
// pt_regs that ctx points at; an error for an argument not passed in a
// register.
func (r PtRegs) Arg(dst, ctx insn.Register, n int) (insn.Item, error) {
	if n < 0 || n >= len(r.Args) {
		return insn.Item{}, fmt.Errorf("prog: kprobe argument %d: %s passes %d in registers",
			n, r.Arch, len(r.Args))
	}
	return insn.LoadMem(r.Size, dst, ctx, r.Args[n]), nil
}

// Return is dst = the return value, in a kretprobe.
func (r PtRegs) Return(dst, ctx insn.Register) insn.Item {
	return insn.LoadMem(r.Size, dst, ctx, r.Ret)
}

// archSyscallPrefix is, for a GOARCH, the prefix of the system call handlers
// since the syscall wrappers (x86-64 4.17, arm64 4.19, s390 and riscv
// later), or "" for another; a 386 process on an x86-64 kernel enters
// through __ia32_sys_*. A switch, not a map: a package's map is built at
// start-up in every program that links the package.
func archSyscallPrefix(goarch string) string {
	switch goarch {
	case "amd64":
		return "__x64_sys_"
	case "386":
		return "__ia32_sys_"
	case "arm64":
		return "__arm64_sys_"
	case "riscv64":
		return "__riscv_sys_"
	case "s390x":
		return "__s390x_sys_"
	}
	return ""
}
