package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// TestSyscallTableCoversTracepoints: every syscalls:sys_enter_* and
// sys_exit_* tracepoint of the running kernel has a number in
// prog.KernelSyscalls, so that funccount counts it through raw_syscalls
// (in the VMs: x86-64, arm64 and armhf, 5.10 to 7.2).
func TestSyscallTableCoversTracepoints(t *testing.T) {
	dir, err := tracefs.Path()
	if err != nil {
		t.Skip(err)
	}
	tab, err := prog.KernelSyscalls()
	if err != nil {
		t.Fatal(err)
	}
	events, err := filepath.Glob(filepath.Join(dir, "events", "syscalls", "sys_*"))
	if err != nil || len(events) == 0 {
		t.Skipf("no syscall tracepoints here (%v)", err)
	}
	var missing []string
	for _, e := range events {
		name := filepath.Base(e)
		call, ok := strings.CutPrefix(name, "sys_enter_")
		if !ok {
			call, ok = strings.CutPrefix(name, "sys_exit_")
		}
		if _, err := os.Stat(filepath.Join(e, "id")); !ok || err != nil {
			continue
		}
		if _, ok := tab.Number(call); !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s: %d syscall tracepoints without a number: %s", tab.Arch, len(missing), missing)
	}
}
