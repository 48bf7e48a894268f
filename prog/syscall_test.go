package prog_test

import (
	"errors"
	"testing"

	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

// TestSyscallTables: known numbers of each architecture, by the names the
// tracepoints use; where the __NR_ name and the entry point differ the
// entry point's name wins (fstat is newfstat), and where two numbers
// share one, the highest (the kernel's tracepoints fire for that one).
func TestSyscallTables(t *testing.T) {
	for _, c := range []struct {
		machine string
		name    string
		nr      int
	}{
		{"x86_64", "getppid", 110},
		{"x86_64", "newfstat", 5},
		{"x86_64", "umount", 166},
		{"x86_64", "sendfile64", 40},
		{"aarch64", "getppid", 173},
		{"aarch64", "newfstatat", 79},
		{"aarch64", "arm64_personality", 92},
		{"aarch64", "fadvise64_64", 223},
		{"riscv64", "getppid", 173},
		{"riscv64", "riscv_flush_icache", 259},
		{"i686", "getppid", 64},
		{"i686", "getuid", 199},
		{"i686", "getuid16", 24},
		{"i686", "clock_gettime", 403},
		{"i686", "clock_gettime32", 265},
		{"i686", "stat", 18},
		{"i686", "newstat", 106},
		{"i386", "mmap_pgoff", 192},
		{"armv7l", "getppid", 64},
		{"armv7l", "sync_file_range2", 341},
		{"armv6l", "old_semctl", 300},
	} {
		tab, err := prog.SyscallsOf(c.machine)
		if err != nil {
			t.Fatal(err)
		}
		if nr, ok := tab.Number(c.name); !ok || nr != c.nr {
			t.Errorf("%s %s: %d %v, want %d", c.machine, c.name, nr, ok, c.nr)
		}
		if name := tab.Name(c.nr); name != c.name {
			t.Errorf("%s %d: %q, want %q", c.machine, c.nr, name, c.name)
		}
	}
	for _, machine := range []string{"x86_64", "aarch64"} {
		tab, _ := prog.SyscallsOf(machine)
		for _, gone := range []string{"fstat", "uname", "umount2", "sendfile"} {
			if nr, ok := tab.Number(gone); ok {
				t.Errorf("%s: %q has number %d: no tracepoint bears that name", machine, gone, nr)
			}
		}
		if tab.Name(-1) != "" || tab.Name(tab.Len()) != "" || tab.Len() < 400 {
			t.Errorf("%s: Name(-1) %q, Name(Len) %q, Len %d",
				machine, tab.Name(-1), tab.Name(tab.Len()), tab.Len())
		}
	}
	if _, err := prog.SyscallsOf("sparc64"); !errors.Is(err, sys.ErrNotSupported) {
		t.Errorf("sparc64: %v, want ErrNotSupported", err)
	}
}
