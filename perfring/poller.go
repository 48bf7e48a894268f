package perfring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by reads on a closed reader, blocked ones
// included, and by a ReadFunc whose callback called Close.
var ErrClosed = errors.New("perfring: reader closed")

// ErrReentrant is returned by Read and ReadFunc called while a ReadFunc
// callback runs, from it or from another goroutine.
var ErrReentrant = errors.New("perfring: Read or ReadFunc called while a ReadFunc callback runs")

// poller waits on the rings' fds with one epoll, plus an eventfd that
// Close, a cancelled context or SetDeadline write to wake a blocked reader.
// It says who may read, and when the rings are freed.
type poller struct {
	epfd     int
	wakefd   *sys.EventFD
	events   []unix.EpollEvent
	deadline atomic.Int64 // unix nanoseconds, 0 for none
	yield    yielder      // passes through the scheduler now and then: see yield.go

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

// epollWait waits up to timeout ms (-1: no limit) on the poller's own epoll
// fd. Go's netpoller cannot do this wait: our epoll fd nested in the
// runtime's would lose wake-ups, since perf_poll consumes a ring's pending
// wake-up (atomic_xchg(&rb->poll, 0)), and the runtime's epoll, checking
// ours, would swallow the event.
func (p *poller) epollWait(timeout int) (int, error) {
	p.yield.ifDue()
	return sys.EpollWait(p.epfd, p.events, timeout)
}

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
