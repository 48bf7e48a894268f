package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollWaitHoldingP is epoll_wait(2), as epoll_pwait with no signal mask
// (arm64 and other newer ports have no epoll_wait), made with unix.RawSyscall6, so that
// the Go runtime does not see the thread sleep: the goroutine keeps its P
// (the scheduler's processor) for up to msec milliseconds, and no other
// goroutine runs on that P meanwhile. A signal, such as the runtime's
// preemption or the garbage collector stopping the world, ends the wait at
// once with EINTR; the caller must then pass through the scheduler
// (runtime.Gosched), since the runtime could not preempt it in the call.
func EpollWaitHoldingP(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	if len(events) == 0 {
		return 0, unix.EINVAL
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
