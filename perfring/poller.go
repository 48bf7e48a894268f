package perfring

import (
	"context"
	"errors"
	"fmt"
	"math"
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
// was blocked when Close was called, and by a ReadFunc whose callback
// called Close.
var ErrClosed = errors.New("perfring: reader closed")

// ErrReentrant is returned by Read and ReadFunc called while a ReadFunc
// callback runs: from the callback itself, or from another goroutine
// meanwhile (a reader is meant for one reading goroutine).
var ErrReentrant = errors.New("perfring: Read or ReadFunc called while a ReadFunc callback runs")

// poller waits on the rings' fds with one epoll, plus an eventfd that Close,
// a cancelled context or SetDeadline write to wake a blocked reader. It also
// owns the reader's life: who may read, and when the rings are freed.
type poller struct {
	epfd, wakefd int
	events       []unix.EpollEvent
	deadline     atomic.Int64  // unix nanoseconds, 0 for none
	yielded      time.Duration // when epollWait last yielded to the scheduler, since epoch
	oneP         bool          // GOMAXPROCS is 1, as of the last yield
	waitedAt     time.Duration // when epollWait last began a wait, since epoch

	closed     atomic.Bool
	delivering atomic.Bool // a ReadFunc is calling its callback, which may call Close
	mu         sync.Mutex  // held by a read; freeing the rings takes it
	// fdMu orders wakers and Pause against the freeing: none of them
	// touches an fd number after it is closed, and perhaps reused.
	fdMu    sync.Mutex
	release func() // unmaps and closes the rings; nil once done
	stop    func() // marks the rings closed, for a loop that checks them rather than closed
}

// errDeadline is os.ErrDeadlineExceeded, made once: a read that times out
// does not allocate.
var errDeadline = fmt.Errorf("perfring: %w", os.ErrDeadlineExceeded)

const wakeIndex = -1 // the epoll data of the eventfd

func newPoller(n int) (*poller, error) {
	p := &poller{epfd: -1, wakefd: -1, events: make([]unix.EpollEvent, n+1), release: func() {}, stop: func() {}}
	var err error
	if p.epfd, err = sys.EpollCreate(); err == nil {
		if p.wakefd, err = sys.Eventfd(0, unix.EFD_NONBLOCK); err == nil {
			err = p.add(p.wakefd, wakeIndex)
		}
	}
	if err != nil {
		p.free()
		return nil, err
	}
	return p, nil
}

func (p *poller) add(fd int, index int32) error {
	return sys.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN, index)
}

// wake ends a blocked wait. It may come from any goroutine at any time,
// as when a context's AfterFunc fires late: after Close it does nothing.
func (p *poller) wake() {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	p.wakeLocked()
}

func (p *poller) wakeLocked() {
	if p.wakefd >= 0 {
		sys.EventfdWrite(p.wakefd, 1)
	}
}

// enter begins a read, or says why it cannot: the reader is closed (or a
// zero value), or a ReadFunc callback runs, holding the read.
func (p *poller) enter(ctx context.Context) error {
	switch {
	case p == nil || p.closed.Load():
		return ErrClosed
	case p.delivering.Load():
		return ErrReentrant
	case ctx == nil:
		return errors.New("perfring: nil context")
	}
	p.mu.Lock()
	if p.closed.Load() {
		p.exit()
		return ErrClosed
	}
	return nil
}

// exit ends a read, also one ended by a panicking callback. If Close came
// while the read delivered records, it left the freeing to the read.
func (p *poller) exit() {
	if p.delivering.Load() { // a panic left it set: a store costs more than a load
		p.delivering.Store(false)
	}
	if p.closed.Load() {
		p.free()
	}
	p.mu.Unlock()
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
			return 0, fmt.Errorf("perfring: %w", err)
		}
		timeout := -1
		if d := p.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return 0, errDeadline
			}
			timeout = int(min((left+time.Millisecond-1)/time.Millisecond, 1<<31-1))
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
			return 0, fmt.Errorf("perfring: %w", err)
		}
		ready := 0
		for _, ev := range p.events[:n] {
			if ev.Fd == wakeIndex {
				sys.EventfdRead(p.wakefd)
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
// in a system call at its next tick once that goroutine has run for 10 ms
// (forcePreemptNS) without passing through the scheduler, even when other
// Ps are idle; and it does not preempt a goroutine in a system call (Go
// 1.26: retake in runtime/proc.go). A reader that only drains and waits is
// such a goroutine: every wait would lose its P to another thread, and
// take one back from the idle list on waking. Passing through the
// scheduler (goyield) resets the clock.
//
// With a single P (GOMAXPROCS=1) yielding is not enough: sysmon takes the
// P of any system call that lasts a tick, no other P being idle. There a
// wait that is likely to last (the previous wait and the reading after it
// did) holds the P instead, for up to holdMs (sys.EpollWaitHoldingP), and
// other goroutines wait that long at most.
//
// Parking in Go's netpoller instead, our epoll fd nested in the runtime's,
// would let sysmon sleep, but it loses wake-ups: perf_poll consumes a
// ring's pending wake-up (atomic_xchg(&rb->poll, 0), kernel/events/core.c),
// so the runtime's epoll, checking ours, swallows the event ours would
// have reported.
func (p *poller) epollWait(timeout int) (int, error) {
	now := time.Since(epoch)
	if now-p.yielded > yieldEvery {
		goyield()
		p.yielded = now
		p.oneP = runtime.GOMAXPROCS(0) == 1 // it may change (Go 1.25: cgroup limits)
	}
	if timeout == 0 { // a look, not a wait
		return sys.EpollWait(p.epfd, p.events, 0)
	}
	cycle := now - p.waitedAt // the previous wait, and the reading after it
	p.waitedAt = now
	if !p.oneP || cycle <= holdAbove {
		return sys.EpollWait(p.epfd, p.events, timeout)
	}
	hold := holdMs
	if timeout > 0 && timeout < hold {
		hold = timeout
	}
	n, err := sys.EpollWaitHoldingP(p.epfd, p.events, hold)
	if errors.Is(err, unix.EINTR) {
		goyield() // the runtime could not preempt us in the call
	}
	if err != nil || n > 0 || hold == timeout {
		return n, err
	}
	if timeout > 0 {
		timeout -= hold
	}
	return sys.EpollWait(p.epfd, p.events, timeout)
}

// With one P, a wait holds it (for up to holdMs) when the previous wait and
// the reading after it lasted more than holdAbove, sysmon's shortest tick:
// shorter waits keep the P anyway, and a held wait that sleeps costs a
// kernel timer (epoll arms it only to sleep). Timing the whole cycle takes
// one clock read per wait, not two.
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
	if p == nil {
		return
	}
	var d int64 // 0 means none: a time UnixNano cannot hold is made one it can
	switch {
	case t.IsZero():
	case t.Unix() <= 0: // by 1970 (UnixNano wraps before 1678)
		d = 1
	case t.Unix() >= math.MaxInt64/int64(time.Second): // by 2262
		d = math.MaxInt64
	default:
		d = t.UnixNano()
	}
	p.deadline.Store(d)
	p.wake()
}

// shutdown marks the poller closed and wakes a blocked read. Then it frees
// the rings once no read uses them, and closes the poller; but while a
// ReadFunc delivers records, whose callback may be the caller, it leaves
// that to the read, which frees them on its way out. Reads that come later
// find it closed and return ErrClosed. Closing twice is harmless.
//
// The read stores delivering=false and then loads closed; shutdown stores
// closed and then loads delivering. With sequentially consistent atomics,
// at least one of them sees the other's store: the rings are freed.
func (p *poller) shutdown() {
	if p == nil || p.closed.Swap(true) {
		return
	}
	p.fdMu.Lock()
	p.stop()
	p.wakeLocked()
	p.fdMu.Unlock()
	if p.delivering.Load() {
		return
	}
	p.mu.Lock()
	p.free()
	p.mu.Unlock()
}

// free releases the rings and closes the poller's fds, once; the caller
// holds mu (or is the constructor).
func (p *poller) free() {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	if p.release != nil {
		p.release()
		p.release = nil
	}
	for _, fd := range []*int{&p.epfd, &p.wakefd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// goyield is runtime.goyield: runtime.Gosched without waking another
// thread. Gosched puts the goroutine on the global run queue and, when a P
// is idle, wakes a thread to look for work, which finds none and sleeps
// again; goyield puts the goroutine on its own P's queue and wakes nobody.
// The runtime keeps this symbol, with this signature, for packages outside
// the standard library (the go:linkname list of go.dev/issue/67401, used
// by gVisor); were it ever removed, the build would fail, not misbehave.
//
//go:linkname goyield runtime.goyield
func goyield()
