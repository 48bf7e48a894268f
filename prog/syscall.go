package prog

import (
	"fmt"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

//go:generate sh -c "go run syscalls_gen.go > syscalls_table.go"

// SyscallTable numbers the system calls of one kernel architecture, named
// as its syscalls:sys_enter_<name> tracepoints name them ("newfstat" for
// fstat's number, whose SYSCALL_DEFINE is newfstat): the numbers
// raw_syscalls:sys_enter passes as its id. The tables come from
// golang.org/x/sys's (go generate writes syscalls_table.go); x86-64's,
// arm64's and armv7l's are checked against every syscall tracepoint of the
// kernels the tests run on; i686's and riscv64's are transcribed from the
// kernel's tables, not run here.
type SyscallTable struct {
	Arch    string         // the kernel's uname machine: "x86_64", "aarch64", ...
	names   []string       // by number; "" for a number no tracepoint names
	numbers map[string]int // by name
}

// KernelSyscalls is the table of the running kernel's architecture (not
// this program's: a 386 binary on an x86-64 kernel gets x86_64's).
func KernelSyscalls() (*SyscallTable, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("prog: uname: %w", err)
	}
	return SyscallsOf(unix.ByteSliceToString(u.Machine[:]))
}

// SyscallsOf is the table of the architecture named as uname names it
// (i386 to i686 and armv6l to armv8l count as i686 and armv7l), or an
// error naming it when bpfkit has none.
func SyscallsOf(machine string) (*SyscallTable, error) {
	machine = canonicalMachine(machine)
	names, ok := syscallNames[machine]
	if !ok {
		return nil, fmt.Errorf("prog: no system call table for %q: %w", machine, sys.ErrNotSupported)
	}
	t := &SyscallTable{Arch: machine, names: names, numbers: make(map[string]int, len(names))}
	for nr, name := range names {
		if name != "" {
			t.numbers[name] = nr
		}
	}
	return t, nil
}

// Number is the number of the system call name ("getppid", "newfstat"),
// and whether the table has it.
func (t *SyscallTable) Number(name string) (int, bool) {
	nr, ok := t.numbers[name]
	return nr, ok
}

// Name is the name of system call nr, or "" when no tracepoint names it.
func (t *SyscallTable) Name(nr int) string {
	if nr < 0 || nr >= len(t.names) {
		return ""
	}
	return t.names[nr]
}

// Len is one more than the highest number the table names: the size of
// an array indexed by system call number.
func (t *SyscallTable) Len() int { return len(t.names) }
