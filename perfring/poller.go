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
	deadline     atomic.Int64 // unix nanoseconds, 0 for none
	holdMs       int          // Options.HoldP in milliseconds, 0 for none
	closed       atomic.Bool
	mu           sync.Mutex // held by a read; Close takes it to know no read uses the fds
}

const wakeIndex = -1 // the epoll data of the eventfd

func newPoller(n int, holdP time.Duration) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &poller{epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, n+1),
		holdMs: int((holdP + time.Millisecond - 1) / time.Millisecond)}
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

// wait blocks until a ring fd is readable. It returns ErrClosed after
// Close, os.ErrDeadlineExceeded after the deadline, and ctx's error when it
// is done.
func (p *poller) wait(ctx context.Context) error {
	if done := ctx.Done(); done != nil {
		stop := context.AfterFunc(ctx, p.wake)
		defer stop()
	}
	for {
		if p.closed.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		timeout := -1
		if d := p.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := p.epollWait(timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
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
			return nil
		}
	}
}

// epollWait waits up to timeout ms (-1: no limit): first for up to holdMs
// keeping the goroutine's P (see sys.EpollWaitHoldingP), then, if nothing
// came, the ordinary way.
func (p *poller) epollWait(timeout int) (int, error) {
	if p.holdMs > 0 && runtime.GOMAXPROCS(0) > 1 {
		t := p.holdMs
		if timeout >= 0 && timeout < t {
			t = timeout
		}
		n, err := sys.EpollWaitHoldingP(p.epfd, p.events, t)
		if err != nil || n > 0 || t == timeout {
			return n, err
		}
		if timeout > 0 {
			timeout -= t
		}
	}
	return unix.EpollWait(p.epfd, p.events, timeout)
}

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

// shutdown marks the poller closed, wakes a blocked read, and waits until
// no read runs: then the caller may release what reads use.
func (p *poller) shutdown() bool {
	if p.closed.Swap(true) {
		return false
	}
	p.wake()
	p.mu.Lock()
	return true
}

func (p *poller) close() {
	unix.Close(p.epfd)
	unix.Close(p.wakefd)
}
