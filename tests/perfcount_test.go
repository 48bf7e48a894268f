package tests

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// perfCount is perf's own count of a tracepoint's hits, as `perf stat -e
// group:name` keeps it: a counting perf event (no sampling, no ring, no
// BPF), the kind of user a tool that drops the tracepoint's records
// blinds. A BPF program attached through perf that returns 0 stops the
// record before any perf event of the tracepoint counts it
// (perf_trace_run_bpf_submit).
type perfCount struct {
	t   *testing.T
	fds []int
}

// countTracepoint opens the counting events: one per online CPU for every
// process (pid -1), or with pid one for that process on any CPU,
// inherited by the threads and processes it starts after.
func countTracepoint(t *testing.T, group, name string, pid int) *perfCount {
	t.Helper()
	id, err := tracefs.TracepointID(group, name)
	if err != nil {
		t.Fatal(err)
	}
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_TRACEPOINT, Config: id}
	c := &perfCount{t: t}
	t.Cleanup(func() {
		for _, fd := range c.fds {
			unix.Close(fd)
		}
	})
	cpus := []int{-1}
	if pid == -1 {
		if cpus, err = sys.OnlineCPUs(); err != nil {
			t.Fatal(err)
		}
	} else {
		attr.Bits |= unix.PerfBitInherit
	}
	for _, cpu := range cpus {
		fd, err := sys.PerfEventOpen(&attr, pid, cpu, -1, 0)
		if err != nil {
			t.Fatalf("perf_event_open(%s:%s, pid %d, cpu %d): %v", group, name, pid, cpu, err)
		}
		c.fds = append(c.fds, fd)
	}
	return c
}

// total reads the events' counts and adds them up; for a process, its
// threads and children count once they have exited.
func (c *perfCount) total() uint64 {
	c.t.Helper()
	n := uint64(0)
	for _, fd := range c.fds {
		var b [8]byte
		if got, err := unix.Read(fd, b[:]); err != nil || got != 8 {
			c.t.Fatalf("reading a perf counter: %d bytes, %v", got, err)
		}
		n += binary.NativeEndian.Uint64(b[:])
	}
	return n
}

// otherPerfPrograms lists the processes, other than pid, that hold a BPF
// program attached through a perf event to the tracepoint name: a
// program there that returns 0 hides the tracepoint's hits from every
// perf counter, and other tests on this machine may run one meanwhile.
func otherPerfPrograms(name string, pid int) []string {
	var others []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		other, err := strconv.Atoi(p.Name())
		if err != nil || other == pid {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", other))
		for _, f := range fds {
			fd, _ := strconv.Atoi(f.Name())
			link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", other, fd))
			if link != "anon_inode:[perf_event]" {
				continue
			}
			a, err := prog.QueryFD(other, fd)
			if err == nil && a.Kind == "tracepoint" && a.Name == name {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", other))
				name := strings.TrimSpace(string(comm))
				others = append(others, fmt.Sprintf("%d (%s)", other, name))
			}
		}
	}
	return others
}

// check fails the test unless perf counted want hits (exactly, or at
// least), while the tool of process pid ran on the tracepoint name. Where
// another process held a program on the perf tracepoint meanwhile, perf
// may have missed hits for that one's sake: the test skips, naming it.
func (c *perfCount) check(name string, pid int, want uint64, exact bool) {
	c.t.Helper()
	n := c.total()
	if n == want || n > want && !exact {
		return
	}
	if others := otherPerfPrograms(name, pid); len(others) > 0 {
		c.t.Skipf("perf counted %d %s hits of %d, but processes %s (not the tool's, %d) "+
			"hold programs on the perf tracepoint, which may hide hits from perf",
			n, name, want, strings.Join(others, ", "), pid)
	}
	c.t.Errorf("perf counted %d %s hits while the tool ran, want %d", n, name, want)
}
