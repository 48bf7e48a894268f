//go:build !bpfkit_noyield

package perfring

import (
	"runtime"
	"time"
	_ "unsafe" // for go:linkname
)

// This file is the reader's one reach into the Go runtime, kept because it
// pays: BenchmarkTuning, in make bench, measures the reader with it and
// without (BENCHMARKS.md has the figures).
//
// What it relies on: sysmon, the runtime's monitor thread, takes the P of
// a goroutine in a system call once that goroutine has run 10 ms without
// passing through the scheduler. It does so even when other Ps are idle
// (forcePreemptNS; retake in runtime/proc.go). A reader that only drains
// rings and waits on epoll never passes through the scheduler. So after
// its first 10 ms it would lose its P at nearly every wait, and get one
// back on its way out of the wait. A call to runtime.goyield every 8 ms
// resets that clock: it puts the goroutine at the back of its own P's run
// queue, and wakes no other thread, as Gosched would.
//
// goyield is reached by go:linkname. The runtime keeps it for that
// (go.dev/issue/67401; gVisor uses it); were it removed, the build would
// fail, not misbehave.
//
// Checked with: Go 1.26, whose retake and goyield this was read against
// and measured on.
//
// To turn it off, build with -tags bpfkit_noyield: yield_off.go then
// makes the reader a plain epoll loop, without go:linkname.

// yielder passes the reader's goroutine through the scheduler every
// yieldEvery, so that sysmon does not take its P at every wait.
type yielder struct {
	last time.Duration // when it last yielded, since epoch
}

// ifDue yields if yieldEvery has passed since the last time, and the
// runtime has more than one P. With one, sysmon takes it from any wait
// that lasts a tick, yield or not (retake finds no idle P to spare), and
// yielding would only cost.
func (y *yielder) ifDue() {
	now := time.Since(epoch)
	if now-y.last <= yieldEvery || !yieldOn {
		return
	}
	y.last = now
	if runtime.GOMAXPROCS(0) > 1 { // it may change (Go 1.25: cgroup limits)
		goyield()
	}
}

// yieldEvery is below sysmon's 10 ms (forcePreemptNS).
const yieldEvery = 8 * time.Millisecond

// epoch makes time.Since read the monotonic clock alone: one vDSO call.
var epoch = time.Now()

// yieldOn lets BenchmarkTuning measure the reader without yielding.
var yieldOn = true

// goyield is runtime.goyield: Gosched onto the goroutine's own P's queue,
// waking no idle thread to find no work.
//
//go:linkname goyield runtime.goyield
func goyield()
