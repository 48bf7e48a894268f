// Package perftest is what the tools' benchmarks share to measure how a
// program attached to a tracepoint through perf costs an event.
package perftest

import (
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// AttachSampling attaches p to a sampling perf event of the tracepoint
// group:name (sample_period 1, and no ring) on CPU 0, as
// prog.AttachTracepoint did before it opened counting events: a record
// the program passes on (by returning non-zero) is then prepared as a
// sample for a ring the event does not have. The link holds the event.
func AttachSampling(p *prog.Program, group, name string) (*prog.Link, error) {
	id, err := tracefs.TracepointID(group, name)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Config: id,
		Sample: 1, // sample_period
		Wakeup: 1,
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := sys.PerfEventOpen(&attr, -1, 0, -1, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return prog.AttachPerfEvent(p, fd, prog.AttachOptions{}) // which enables it
}
