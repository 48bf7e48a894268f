package perfring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by reads on a closed reader, including a read that
// was blocked when Close was called.
var ErrClosed = errors.New("perfring: reader closed")

// poller waits on the rings' fds with one epoll, plus an eventfd that Close,
// a cancelled context or SetDeadline write to wake a blocked reader.
type poller struct {
	epfd, wakefd int
	events       []unix.EpollEvent
	deadline     atomic.Int64  // unix nanoseconds, 0 for none
	yielded      time.Duration // when epollWait last yielded to the scheduler, since epoch
	oneP         bool          // GOMAXPROCS is 1, as of the last yield
	waitedAt     time.Duration // when epollWait last began a wait, since epoch
	closed       atomic.Bool
	mu           sync.Mutex // held by a read; Close takes it to know no read uses the fds
}

const wakeIndex = -1 // the epoll data of the eventfd

func newPoller(n int) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &poller{epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, n+1)}
	if err := p.add(wakefd, wakeIndex); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *poller) add(fd int, index int32) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: index}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

func (p *poller) wake() {
	var one = [8]byte{1}
	unix.Write(p.wakefd, one[:])
}

// wait blocks until a ring fd is readable and returns how many are, their
// events first in p.events. It returns ErrClosed after Close,
// os.ErrDeadlineExceeded after the deadline, and ctx's error when it is
// done.
func (p *poller) wait(ctx context.Context) (int, error) {
	// watched: ctx cannot end, or context.AfterFunc wakes us when it does.
	watched := ctx.Done() == nil
	for {
		if p.closed.Load() {
			return 0, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		timeout := -1
		if d := p.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		if !watched {
			// Before blocking, have ctx wake us when it ends. That
			// allocates, so look once without blocking first.
			timeout = 0
		}
		n, err := p.epollWait(timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("epoll_wait: %w", err)
		}
		ready := 0
		for _, ev := range p.events[:n] {
			if ev.Fd == wakeIndex {
				var buf [8]byte
				unix.Read(p.wakefd, buf[:])
				continue
			}
			p.events[ready] = ev
			ready++
		}
		if ready > 0 {
			return ready, nil
		}
		if !watched {
			stop := context.AfterFunc(ctx, p.wake)
			defer stop()
			watched = true
		}
	}
}

// epollWait waits up to timeout ms (-1: no limit), yielding to the Go
// scheduler first if it has not done so for yieldEvery.
//
// Why yield: sysmon, the Go runtime's monitor, takes the P of a goroutine
// in a system call at its next tick (20 µs to 10 ms on) once that goroutine
// has run for 10 ms without passing through the scheduler, even when other
// Ps are idle; and it does not preempt a goroutine in a system call, so
// nothing makes it pass through (Go 1.26: retake's sysretake and
// preemptone in runtime/proc.go). A reader that only drains and waits is
// such a goroutine: after its first 10 ms, every wait lost its P, which
// sysmon handed to another thread to park, and which the reader took back
// from the idle list on waking, waking sysmon out of its deep sleep. At a
// 64 KiB watermark that cost the runtime's other threads about 20 ns per
// record, as much as the reading. Passing through the scheduler (goyield)
// resets the clock.
//
// With a single P (GOMAXPROCS=1) yielding is not enough: sysmon takes the
// P of any system call that lasts a tick, no other P being idle. There a
// wait that is likely to last (the previous wait and the reading after it
// did) holds the P instead, for up to holdMs (sys.EpollWaitHoldingP), and
// other goroutines wait that long at most. At a 64 KiB watermark that took
// the reader from 1.9 to 1.3 times libbpf's CPU per record.
//
// What sysmon still costs: while any P is not idle (ours, in the wait), it
// wakes every 10 ms or more often, 170-180 times in a 1.3 s benchmark run,
// at 9-30 µs each here: 1-2.5 ns per record at a 64 KiB watermark, most of
// what bpfkit's reader costs over libbpf's (per-thread schedstat: the
// reading thread itself was at par with libbpf's reader). Only with every P
// idle does it sleep for long, and for that the reader would have to park in
// Go's netpoller, our epoll fd nested in the runtime's. That loses wake-ups:
// perf_poll consumes a ring's pending wake-up (atomic_xchg(&rb->poll, 0),
// kernel/events/core.c), so the runtime's epoll, checking our epoll fd,
// swallows the event ours would have reported (TestPerfWatermark hung when
// tried); with every ring read after any wake-up instead, parking and waking
// through the scheduler cost the reading thread 3 ns per record more than
// sysmon costs. Nor did waits bounded to yield in time, so that sysmon never
// takes the P mid-run, pay: the kernel timer each such wait arms cost the
// reader more than sysmon saved.
func (p *poller) epollWait(timeout int) (int, error) {
	now := time.Since(epoch)
	if now-p.yielded > yieldEvery {
		goyield()
		p.yielded = now
		p.oneP = runtime.GOMAXPROCS(0) == 1 // it may change (Go 1.25: cgroup limits)
	}
	if timeout == 0 { // a look, not a wait
		return unix.EpollWait(p.epfd, p.events, 0)
	}
	cycle := now - p.waitedAt // the previous wait, and the reading after it
	p.waitedAt = now
	if !p.oneP || cycle <= holdAbove {
		return unix.EpollWait(p.epfd, p.events, timeout)
	}
	hold := holdMs
	if timeout > 0 && timeout < hold {
		hold = timeout
	}
	n, err := sys.EpollWaitHoldingP(p.epfd, p.events, hold)
	if err == unix.EINTR {
		goyield() // the runtime could not preempt us in the call
	}
	if err != nil || n > 0 || hold == timeout {
		return n, err
	}
	if timeout > 0 {
		timeout -= hold
	}
	return unix.EpollWait(p.epfd, p.events, timeout)
}

// With one P, a wait holds it (for up to holdMs) when the previous wait and
// the reading after it lasted more than holdAbove, sysmon's shortest tick:
// shorter waits keep the P anyway, and a held wait that sleeps costs a
// kernel timer (epoll arms it only to sleep: after a long reading, a wait
// that finds events at once costs nothing more held). Timing the whole
// cycle takes one clock read per wait, not two.
const (
	holdMs    = 1
	holdAbove = 20 * time.Microsecond
)

// yieldEvery is below sysmon's 10 ms (forcePreemptNS), so that sysmon sees
// the reader pass through the scheduler between two of its ticks.
const yieldEvery = 8 * time.Millisecond

// epoch makes time.Since read the monotonic clock alone: one vDSO call per
// wait, not time.Now's two.
var epoch = time.Now()

// setDeadline makes blocked and future waits return os.ErrDeadlineExceeded
// at t; the zero t means no deadline.
func (p *poller) setDeadline(t time.Time) {
	if t.IsZero() {
		p.deadline.Store(0)
	} else {
		p.deadline.Store(t.UnixNano())
	}
	p.wake()
}

// shutdown marks the poller closed, wakes a blocked read, waits until no
// read runs, then calls release to free what reads use, and closes the
// poller. Reads that come later find it closed and return ErrClosed.
// Closing twice is harmless.
func (p *poller) shutdown(release func()) {
	if p.closed.Swap(true) {
		return
	}
	p.wake()
	p.mu.Lock()
	defer p.mu.Unlock()
	release()
	p.close()
}

func (p *poller) close() {
	unix.Close(p.epfd)
	unix.Close(p.wakefd)
}

// goyield is runtime.goyield: runtime.Gosched without waking another
// thread. Gosched puts the goroutine on the global run queue and, when a P
// is idle, wakes a thread to look for work, which finds none and sleeps
// again: with a reader woken every 200 µs, those threads used 4 ms of CPU
// per second on this paravirtualized machine, where waking a thread costs
// about 20 µs. goyield puts the goroutine on its own P's queue and wakes
// nobody: 0.05 ms per second. The runtime keeps this symbol, with this
// signature, for packages outside the standard library (the go:linkname
// list of go.dev/issue/67401, used by gVisor); were it ever removed, the
// build would fail, not misbehave.
//
//go:linkname goyield runtime.goyield
func goyield()
