package tests

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex4: a process makes writes of known sizes while tracex4 -p
// watches vfs_write: the kprobe's histogram (the count argument, read from
// pt_regs) and the kretprobe's (the return value) must both hold exactly
// those sizes, in the text's histograms and in -json's. On a kernel
// without kprobes tracex4 must say so in one line and exit 1, before
// loading anything.
func TestTracex4(t *testing.T) {
	testutil.RequireRoot(t)
	if !haveKprobes(t) {
		_, errOut, status := runTool(t, "tracex4", "1", "1")
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "this kernel has no kprobes") {
			t.Fatalf("without kprobes: status %d, stderr %q", status, errOut)
		}
		t.Skip("this kernel has no kprobes; tracex4 said so (tests/vm runs the rest on kernels that have them)")
	}
	for _, asJSON := range []bool{false, true} {
		pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
		args := []string{"-p", strconv.Itoa(pid), "60"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		r := startTool(t, "tracex4", args...)
		r.waitFor("Ctrl-C to stop")
		write()
		out := r.stop()
		got := map[string]string{}
		if asJSON {
			var asked, written [][]histSlot
			for _, l := range jsonLines[struct {
				Asked   []histSlot `json:"asked_bytes"`
				Written []histSlot `json:"written_bytes"`
			}](t, out) {
				asked, written = append(asked, l.Asked), append(written, l.Written)
			}
			got["asked bytes"], got["written bytes"] = jsonSlots(asked...), jsonSlots(written...)
		} else {
			for _, h := range []string{"asked bytes", "written bytes"} {
				got[h] = histSlots(out[strings.LastIndex(out, h):])
			}
		}
		for h, slots := range got {
			if slots != writerSlots {
				t.Errorf("tracex4 %q: %s: %v, want %v", args, h, slots, writerSlots)
			}
		}
		t.Log("\n" + out)
	}
}

// TestTracex4Listen: tracex4 -listen serves both histograms in bytes, with
// the sizes of a process's writes in their log2 buckets (cumulative, le
// the slots' upper edges) and their sum; promtool takes the text where
// installed (not in the VMs, which alone have kprobes here).
func TestTracex4Listen(t *testing.T) {
	testutil.RequireRoot(t)
	requireKprobes(t)
	pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
	r := startTool(t, "tracex4", "-p", strconv.Itoa(pid), "-listen", "127.0.0.1:0", "60")
	addr := r.metricsAddr()
	r.waitFor("Ctrl-C to stop")
	write()
	body := fetchMetrics(t, addr)
	if _, err := exec.LookPath("promtool"); err == nil {
		body = checkMetrics(t, addr)
	}
	r.stop()
	t.Logf("/metrics:\n%s", body)
	for _, h := range []string{"tracex4_vfs_write_asked_bytes", "tracex4_vfs_write_written_bytes"} {
		for _, want := range []string{
			`_bucket{le="1"} 1`,
			`_bucket{le="63"} 1`,
			`_bucket{le="127"} 4`,
			`_bucket{le="8191"} 6`,
			`_bucket{le="131071"} 7`,
			`_bucket{le="+Inf"} 7`,
			`_sum 80301`,
			`_count 7`,
		} {
			if !strings.Contains(body, "\n"+h+want+"\n") {
				t.Errorf("no line %q in:\n%s", h+want, body)
			}
		}
	}
}
