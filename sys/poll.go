package sys

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollCreate is epoll_create1(EPOLL_CLOEXEC).
func EpollCreate() (int, error) {
	fd, err := traced("epoll_create1", func() string { return "EPOLL_CLOEXEC" },
		func() (int, error) { return unix.EpollCreate1(unix.EPOLL_CLOEXEC) })
	return newFD(fd, err, "epoll_create1")
}

// EpollCtl is epoll_ctl(2): op (EPOLL_CTL_ADD, _DEL, _MOD) on fd in epfd's
// interest list, with events and data (the event's Fd field) as its event.
func EpollCtl(epfd, op, fd int, events uint32, data int32) error {
	ev := unix.EpollEvent{Events: events, Fd: data}
	args := func() string {
		opName := lookupName(epollOps, uint32(op))
		return fmt.Sprintf("%d, %s, %d, {events=%#x, data=%d}", epfd, opName, fd, events, data)
	}
	_, err := traced("epoll_ctl", args, func() (int, error) {
		return 0, unix.EpollCtl(arg32(epfd), arg32(op), arg32(fd), &ev)
	})
	return sysErr("epoll_ctl", err)
}

var epollOps = []string{"", "EPOLL_CTL_ADD", "EPOLL_CTL_DEL", "EPOLL_CTL_MOD"}

// EpollWait is epoll_wait(2), made as epoll_pwait with no mask: newer
// ports such as arm64 have no epoll_wait. It waits up to msec milliseconds
// (negative, or past 32 bits: no limit) and fills events. It does not
// allocate, even for the frequent EINTR.
func EpollWait(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	if len(events) == 0 {
		return 0, &Error{Op: "epoll_wait", Errno: unix.EINVAL, Hint: "no room for events"}
	}
	var n int
	args := func() string {
		var ready []string
		for _, ev := range events[:n] {
			ready = append(ready, fmt.Sprintf("{events=%#x, data=%d}", ev.Events, ev.Fd))
		}
		return fmt.Sprintf("%d, [%s], %d, %d, NULL", epfd, strings.Join(ready, " "), len(events), msec)
	}
	_, err := traced("epoll_pwait", args, func() (int, error) {
		r, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT,
			uintptr(arg32(epfd)),
			uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)),
			uintptr(arg32(msec)),
			0, // no signal mask
			0)
		if errno != 0 {
			return -1, errno // no allocation: Go boxes values below 256 without one
		}
		n = int(r)
		return n, nil
	})
	switch {
	case err == nil:
		return n, nil
	case err == unix.EINTR:
		return 0, errEpollEINTR
	}
	return 0, sysErr("epoll_wait", err)
}

// errEpollEINTR is EpollWait's EINTR, made once.
var errEpollEINTR = &Error{Op: "epoll_wait", Errno: unix.EINTR}

// EventFD is an eventfd(2) counter. Only Eventfd makes one, so that Write
// and Read act on an eventfd and on nothing else: given any fd, they wrote
// 8 bytes into a file or a pipe, or read a file's bytes as a counter. A
// zero or closed EventFD answers EBADF, never reaching a file that took its
// number after Close.
type EventFD struct {
	mu sync.RWMutex // Close waits for a Write or Read using the fd
	fd FD
}

// Eventfd is eventfd2(2) with EFD_CLOEXEC added to flags.
func Eventfd(initval uint, flags int) (*EventFD, error) {
	flags |= unix.EFD_CLOEXEC
	fd, err := traced("eventfd2", func() string { return fmt.Sprintf("%d, %#x", initval, flags) },
		func() (int, error) {
			if uint64(initval) > math.MaxUint32 { // eventfd2 takes an unsigned int
				return -1, unix.EINVAL
			}
			return unix.Eventfd(initval, arg32(flags))
		})
	if fd, err = newFD(fd, err, "eventfd2"); err != nil {
		return nil, err
	}
	e := &EventFD{}
	e.fd.Set(fd)
	return e, nil
}

// Int is the eventfd's fd, for EpollCtl; -1 once closed.
func (e *EventFD) Int() int {
	if e == nil {
		return -1
	}
	return e.fd.Int()
}

// Close closes the eventfd once; again, it returns nil.
func (e *EventFD) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fd.Close()
}

// use returns the fd, held open until done is called, or op's EBADF,
// without a system call, for a zero or closed EventFD.
func (e *EventFD) use(op string) (fd int, done func(), err error) {
	if e == nil {
		return -1, func() {}, &Error{Op: op, Errno: unix.EBADF}
	}
	e.mu.RLock()
	if fd = e.fd.Int(); fd < 0 {
		err = &Error{Op: op, Errno: unix.EBADF}
	}
	return fd, e.mu.RUnlock, err
}

// Write adds n to the counter: write(2) of 8 bytes.
func (e *EventFD) Write(n uint64) error {
	fd, done, err := e.use("eventfd write")
	defer done()
	if err != nil {
		return err
	}
	args := func() string { return fmt.Sprintf("%d, %d, 8", fd, n) }
	_, err = traced("write", args, func() (int, error) {
		return unix.Write(fd, unsafe.Slice((*byte)(unsafe.Pointer(&n)), 8))
	})
	return sysErr("eventfd write", err)
}

// Read reads and resets the counter: read(2) of 8 bytes. A non-blocking
// eventfd whose counter is 0 answers EAGAIN.
func (e *EventFD) Read() (uint64, error) {
	fd, done, err := e.use("eventfd read")
	defer done()
	if err != nil {
		return 0, err
	}
	var n uint64
	args := func() string { return fmt.Sprintf("%d, %d, 8", fd, n) }
	_, err = traced("read", args, func() (int, error) {
		return unix.Read(fd, unsafe.Slice((*byte)(unsafe.Pointer(&n)), 8))
	})
	return n, sysErr("eventfd read", err)
}
