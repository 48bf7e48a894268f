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

// ErrClosed is returned by reads on a closed reader, blocked ones
// included, and by a ReadFunc whose callback called Close.
var ErrClosed = errors.New("perfring: reader closed")

// ErrReentrant is returned by Read and ReadFunc called while a ReadFunc
// callback runs, from it or from another goroutine.
var ErrReentrant = errors.New("perfring: Read or ReadFunc called while a ReadFunc callback runs")

// poller waits on the rings' fds with one epoll, plus an eventfd that Close,
// a cancelled context or SetDeadline write to wake a blocked reader; it
// says who may read, and when the rings are freed.
type poller struct {
	epfd     int
	wakefd   *sys.EventFD
	events   []unix.EpollEvent
	deadline atomic.Int64  // unix nanoseconds, 0 for none
	yielded  time.Duration // when epollWait last yielded to the scheduler, since epoch
	oneP     bool          // GOMAXPROCS is 1, as of the last yield
	waitedAt time.Duration // when epollWait last began a wait, since epoch

	closed     atomic.Bool
	delivering atomic.Bool // a ReadFunc is calling its callback, which may call Close
	mu         sync.Mutex  // held by a read; freeing the rings takes it
	fdMu       sync.Mutex  // no waker or Pause touches an fd after it is closed (and reused)
	release    func()      // unmaps and closes the rings; nil once done
	stop       func()      // marks the rings closed, for the loop that checks them
}

// errDeadline is os.ErrDeadlineExceeded, made once: a read that times out
// does not allocate.
var errDeadline = fmt.Errorf("perfring: %w", os.ErrDeadlineExceeded)

const wakeIndex = -1 // the epoll data of the eventfd

func newPoller(n int) (*poller, error) {
	p := &poller{epfd: -1, events: make([]unix.EpollEvent, n+1),
		release: func() {}, stop: func() {}}
	var err error
	if p.epfd, err = sys.EpollCreate(); err == nil {
		if p.wakefd, err = sys.Eventfd(0, unix.EFD_NONBLOCK); err == nil {
			err = p.add(p.wakefd.Int(), wakeIndex)
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

// wake ends a blocked wait, from any goroutine at any time (a context's
// AfterFunc may fire late): after Close it does nothing.
func (p *poller) wake() {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	p.wakeLocked()
}

func (p *poller) wakeLocked() {
	p.wakefd.Write(1) // closed: EBADF, reaching no other file
}

// enter begins a read, or says why it cannot.
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

// exit ends a read, one ended by a panicking callback too, freeing the
// rings if Close came while it delivered records.
func (p *poller) exit() {
	if p.delivering.Load() { // a panic left it set: a store costs more than a load
		p.delivering.Store(false)
	}
	if p.closed.Load() {
		p.free()
	}
	p.mu.Unlock()
}

// wait blocks until ring fds are readable and returns how many, their
// events first in p.events; or ErrClosed, os.ErrDeadlineExceeded or ctx's
// error.
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
			timeout = 0 // look once before AfterFunc, which allocates
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
				p.wakefd.Read()
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

// epollWait waits up to timeout ms (-1: no limit), first yielding to the
// scheduler if it has not for yieldEvery. Why: sysmon takes the P of a
// goroutine in a system call at its next tick once it has run 10 ms without
// passing through the scheduler, idle Ps or not (forcePreemptNS; retake in
// runtime/proc.go, Go 1.26): a reader that only drains and waits would lose
// its P at every wait, and goyield resets that clock. With GOMAXPROCS=1
// sysmon takes the P of any system call lasting a tick, so a wait likely to
// last (the last cycle did) holds the P instead, up to holdMs
// (sys.EpollWaitHoldingP). Our epoll fd nested in Go's netpoller would lose
// wake-ups: perf_poll consumes a ring's pending wake-up
// (atomic_xchg(&rb->poll, 0)), so the runtime's epoll, checking ours,
// would swallow the event.
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

// With one P, a wait holds it when the previous wait and reading lasted
// more than holdAbove, sysmon's shortest tick: shorter waits keep the P
// anyway, and a held wait that sleeps costs a kernel timer.
const (
	holdMs    = 1
	holdAbove = 20 * time.Microsecond
)

// yieldEvery is below sysmon's 10 ms (forcePreemptNS).
const yieldEvery = 8 * time.Millisecond

// epoch makes time.Since read the monotonic clock alone: one vDSO call.
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

// shutdown marks the poller closed, wakes a blocked read and frees the
// rings once no read uses them; while a ReadFunc delivers records (its
// callback may be the caller) it leaves that to the read's exit. The read
// stores delivering=false then loads closed, shutdown stores closed then
// loads delivering: with sequentially consistent atomics one of them sees
// the other's store, and the rings are freed.
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
	if p.epfd >= 0 {
		unix.Close(p.epfd)
		p.epfd = -1
	}
	p.wakefd.Close()
}

// goyield is runtime.goyield: Gosched onto the goroutine's own P's queue,
// waking no idle thread to find no work. The runtime keeps it for
// go:linkname (go.dev/issue/67401, gVisor); were it removed, the build
// would fail, not misbehave.
//
//go:linkname goyield runtime.goyield
func goyield()
