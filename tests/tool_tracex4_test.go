package tests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex4: a process makes writes of known sizes while tracex4 -p
// watches vfs_write: the kprobe's histogram (the count argument, read from
// pt_regs) and the kretprobe's (the return value) must both hold exactly
// those sizes. On a kernel without kprobes tracex4 must say so in one line
// and exit 1, before loading anything.
func TestTracex4(t *testing.T) {
	testutil.RequireRoot(t)
	if !haveKprobes(t) {
		_, errOut, status := runTool(t, "tracex4", "1", "1")
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "this kernel has no kprobes") {
			t.Fatalf("without kprobes: status %d, stderr %q", status, errOut)
		}
		t.Skip("this kernel has no kprobes; tracex4 said so (tests/vm runs the rest on kernels that have them)")
	}
	pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
	r := startTool(t, "tracex4", "-p", strconv.Itoa(pid), "60")
	r.waitFor("Ctrl-C to stop")
	write()
	out := r.stop()
	for _, h := range []string{"asked bytes", "written bytes"} {
		if got := histSlots(out[strings.LastIndex(out, h):]); got != writerSlots {
			t.Errorf("%s: %v, want %v", h, got, writerSlots)
		}
	}
	t.Log("\n" + out)
}
