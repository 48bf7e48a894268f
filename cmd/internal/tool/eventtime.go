package tool

import (
	"time"

	"golang.org/x/sys/unix"
)

// EventTime is the wall-clock time of an event the kernel stamped with
// bpf_ktime_get_ns(), which reads CLOCK_MONOTONIC, in nanoseconds. It is
// also the time of a perf sample's PERF_SAMPLE_TIME when the perf event
// was opened with use_clockid and CLOCK_MONOTONIC (perf's default clock
// is another); no tool opens one so today.
//
// The offset between the wall clock (CLOCK_REALTIME) and CLOCK_MONOTONIC
// is read at each call, not once: NTP or an administrator steps the wall
// clock, and CLOCK_MONOTONIC stops while the machine is suspended, so an
// offset kept from start-up drifts from the truth. It is read between two
// readings of the wall clock, up to offsetTries times until the two are
// at most tightOffset apart, and the tightest is kept: a preemption
// between them would move the offset by half the time the thread lost.
// Should CLOCK_MONOTONIC be unreadable (a seccomp filter refusing
// clock_gettime), the time of the call is returned.
func EventTime(ktime uint64) time.Time {
	r, err := tightest(readClocks)
	if err != nil {
		return time.Now()
	}
	return r.wallTime(ktime)
}

// clockReading is a reading of CLOCK_MONOTONIC, mono, between two of the
// wall clock, wall1 and wall2, all in nanoseconds.
type clockReading struct {
	wall1, mono, wall2 int64
}

// span is how far apart the two wall-clock readings are.
func (r clockReading) span() int64 { return r.wall2 - r.wall1 }

// readClocks reads the clocks once.
func readClocks() (clockReading, error) {
	before := time.Now()
	var ts unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	after := time.Now()
	return clockReading{before.UnixNano(), ts.Nano(), after.UnixNano()}, err
}

// tightest reads the clocks with read up to offsetTries times, until a
// reading spans at most tightOffset, and returns the tightest reading.
func tightest(read func() (clockReading, error)) (clockReading, error) {
	var best clockReading
	for i := range offsetTries {
		r, err := read()
		if err != nil {
			return clockReading{}, err
		}
		if i == 0 || r.span() < best.span() {
			best = r
		}
		if best.span() <= tightOffset {
			break
		}
	}
	return best, nil
}

const (
	// offsetTries is how many times EventTime reads the clocks at most.
	offsetTries = 3
	// tightOffset is a span of the two wall-clock readings that needs no
	// other try: unpreempted, the three readings take well under it.
	tightOffset = int64(10 * time.Microsecond)
)

// wallTime is the wall-clock time of ktime by the reading r: the offset
// between the clocks is taken at the middle of the two wall-clock readings.
func (r clockReading) wallTime(ktime uint64) time.Time {
	offset := r.wall1 + r.span()/2 - r.mono
	return time.Unix(0, int64(ktime)+offset)
}
