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
// offset kept from start-up drifts from the truth. Should CLOCK_MONOTONIC
// be unreadable (a seccomp filter refusing clock_gettime), the time of
// the call is returned.
func EventTime(ktime uint64) time.Time {
	before := time.Now()
	var mono unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	after := time.Now()
	if err != nil {
		return after
	}
	return wallTime(ktime, before.UnixNano(), mono.Nano(), after.UnixNano())
}

// wallTime is the wall-clock time of ktime, CLOCK_MONOTONIC having read
// mono between two readings of the wall clock, wall1 and wall2: the
// offset is taken at the middle of the two.
func wallTime(ktime uint64, wall1, mono, wall2 int64) time.Time {
	offset := wall1 + (wall2-wall1)/2 - mono
	return time.Unix(0, int64(ktime)+offset)
}
