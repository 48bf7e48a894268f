package tests

import (
	"encoding/binary"
	"testing"

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
