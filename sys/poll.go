package sys

import (
	"fmt"
	"math"
	"strings"
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
	_, err := traced("epoll_ctl", func() string {
		return fmt.Sprintf("%d, %s, %d, {events=%#x, data=%d}", epfd, lookupName(epollOps, uint32(op)), fd, events, data)
	}, func() (int, error) { return 0, unix.EpollCtl(arg32(epfd), arg32(op), arg32(fd), &ev) })
	return sysErr("epoll_ctl", err)
}

var epollOps = []string{"", "EPOLL_CTL_ADD", "EPOLL_CTL_DEL", "EPOLL_CTL_MOD"}

// EpollWait is epoll_wait(2), as epoll_pwait with no mask (newer ports such
// as arm64 have no epoll_wait): it waits up to msec milliseconds (negative,
// or past 32 bits: no limit) and fills events, without allocating, even for
// the frequent EINTR.
func EpollWait(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	return epollWait(epfd, events, msec, false)
}

// EpollWaitHoldingP is EpollWait made with unix.RawSyscall6: the goroutine
// keeps its P, which runs nothing else, for up to msec milliseconds. A
// signal (preemption, a stop of the world) ends the wait with EINTR; the
// caller must then pass through the scheduler, which could not preempt it.
func EpollWaitHoldingP(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	return epollWait(epfd, events, msec, true)
}

// errEpollEINTR is EpollWait's EINTR, made once.
var errEpollEINTR = &Error{Op: "epoll_wait", Errno: unix.EINTR}

func epollWait(epfd int, events []unix.EpollEvent, msec int, holdP bool) (int, error) {
	if len(events) == 0 {
		return 0, &Error{Op: "epoll_wait", Errno: unix.EINVAL, Hint: "no room for events"}
	}
	var n int
	_, err := traced("epoll_pwait", func() string {
		var ready []string
		for _, ev := range events[:n] {
			ready = append(ready, fmt.Sprintf("{events=%#x, data=%d}", ev.Events, ev.Fd))
		}
		return fmt.Sprintf("%d, [%s], %d, %d, NULL", epfd, strings.Join(ready, " "), len(events), msec)
	}, func() (int, error) {
		var r uintptr
		var errno unix.Errno
		if holdP {
			r, _, errno = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(arg32(epfd)), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(arg32(msec)), 0, 0)
		} else {
			r, _, errno = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(arg32(epfd)), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(arg32(msec)), 0, 0)
		}
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

// Eventfd is eventfd2(2) with EFD_CLOEXEC added to flags.
func Eventfd(initval uint, flags int) (int, error) {
	flags |= unix.EFD_CLOEXEC
	fd, err := traced("eventfd2", func() string { return fmt.Sprintf("%d, %#x", initval, flags) },
		func() (int, error) {
			if uint64(initval) > math.MaxUint32 { // eventfd2 takes an unsigned int
				return -1, unix.EINVAL
			}
			return unix.Eventfd(initval, arg32(flags))
		})
	return newFD(fd, err, "eventfd2")
}

// EventfdWrite adds n to eventfd fd's counter: write(2) of 8 bytes.
func EventfdWrite(fd int, n uint64) error {
	_, err := traced("write", func() string { return fmt.Sprintf("%d, %d, 8", fd, n) }, func() (int, error) {
		return unix.Write(arg32(fd), unsafe.Slice((*byte)(unsafe.Pointer(&n)), 8))
	})
	return sysErr("eventfd write", err)
}

// EventfdRead reads and resets eventfd fd's counter: read(2) of 8 bytes.
// A non-blocking eventfd whose counter is 0 answers EAGAIN.
func EventfdRead(fd int) (uint64, error) {
	var n uint64
	got, err := traced("read", func() string { return fmt.Sprintf("%d, %d, 8", fd, n) }, func() (int, error) {
		return unix.Read(arg32(fd), unsafe.Slice((*byte)(unsafe.Pointer(&n)), 8))
	})
	if err == nil && got != 8 {
		return 0, &Error{Op: "eventfd read", Errno: unix.EINVAL, Hint: fmt.Sprintf("read %d of 8 bytes: not an eventfd", got)}
	}
	return n, sysErr("eventfd read", err)
}
