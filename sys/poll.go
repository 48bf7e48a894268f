package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollWaitHoldingP is epoll_wait(2) made with unix.RawSyscall6, so that
// the Go runtime does not see the thread sleep: the goroutine keeps its P
// (the scheduler's processor) for up to msec milliseconds.
//
// An ordinary blocking system call makes the runtime hand the P to another
// thread and, when the call returns, take one back, waking its monitor
// thread (sysmon) and spare threads each time. Reading a perf ring at a 64
// KiB watermark, that cost the runtime's other threads about 20 ns per
// record, more than the reading. Holding the P avoids it while data comes
// more often than msec; the price is one fewer P for other goroutines
// meanwhile. A signal, such as the runtime's preemption or the garbage
// collector stopping the world, ends the wait at once with EINTR.
func EpollWaitHoldingP(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	if len(events) == 0 {
		return 0, unix.EINVAL
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
