package sys

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FD is a file descriptor owned by a handle (a map, a program, a link). Its
// zero value holds none (Int is -1, Close does nothing), so a zero handle
// never uses or closes fd 0. Of concurrent Closes, one closes the fd.
type FD struct {
	n atomic.Int64 // the fd plus one; 0 holds none
}

// Set makes f hold fd; a negative fd, or one past 32 bits, holds none.
func (f *FD) Set(fd int) { f.n.Store(int64(max(arg32(fd), -1)) + 1) }

// Int is the fd, or -1 when f holds none (a zero FD, or after Close).
func (f *FD) Int() int { return int(f.n.Load()) - 1 }

// Close closes the fd once and makes f hold none; again, it returns nil.
func (f *FD) Close() error {
	if n := f.n.Swap(0); n != 0 {
		return sysErr("close", unix.Close(int(n-1)))
	}
	return nil
}

// Dup returns a new close-on-exec fd, above 2, for the same open file as
// fd (fcntl F_DUPFD_CLOEXEC).
func Dup(fd int) (int, error) {
	nfd, err := traced("fcntl", func() string { return fmt.Sprintf("%d, F_DUPFD_CLOEXEC, 3", fd) },
		func() (int, error) { return unix.FcntlInt(uintptr(arg32(fd)), unix.F_DUPFD_CLOEXEC, 3) })
	return newFD(nfd, err, "fcntl F_DUPFD_CLOEXEC")
}

// OpenRegular opens the file at path to read, close-on-exec, if it is a
// regular file, as ELF binaries are. A FIFO, a device, a socket or a
// directory is refused without being opened, even when path (or a
// symbolic link on it) is changed meanwhile.
//
// It resolves path once, with O_PATH, which opens nothing: no device's
// open runs, and a FIFO wakes no writer and waits for none. It checks with
// fstat what that found. Then it opens that very inode, O_RDONLY and
// O_NONBLOCK, through /proc/self/fd, which names the file already found
// rather than resolving path again: the file opened is the regular file
// checked. It needs /proc mounted, and says so.
func OpenRegular(path string) (*os.File, error) {
	op := "open " + path
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &Error{Op: op, Errno: errnoOf(err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &Error{Op: "fstat " + path, Errno: errnoOf(err)}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return nil, &Error{Op: op, Errno: unix.EISDIR}
	default:
		return nil, &Error{Op: op, Errno: unix.EINVAL, Hint: "not a regular file"}
	}
	beforeReopen()
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	rfd, err := unix.Open(proc, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		hint := "reopening it through " + proc + ": is /proc mounted?"
		return nil, &Error{Op: op, Errno: unix.ENOENT, Hint: hint}
	}
	if rfd, err = newFD(rfd, err, op); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(rfd), path), nil
}

// beforeReopen runs between OpenRegular's check and its open: a test
// changes the path there.
var beforeReopen = func() {}

// safeFD moves fd above 2, where no careless write or close to a standard
// stream (closed when a daemon started) reaches it, keeping O_CLOEXEC.
func safeFD(fd int, op string) (int, error) {
	if fd > 2 {
		return fd, nil
	}
	nfd, err := Dup(fd)
	unix.Close(fd)
	if e, ok := err.(*Error); ok {
		e.Op = op + " (moving fd above 2)"
	}
	return nfd, err
}

// arg32 is v as the kernel reads an int argument (an fd, a pid, a cpu, an
// op, a timeout): in 32 bits. A v past 32 bits becomes math.MinInt32. The
// kernel refuses that (EBADF, ESRCH, EINVAL), or as a timeout waits
// without limit; v's low bits alone would name another fd or process, or
// no wait at all.
func arg32(v int) int {
	if int(int32(v)) != v {
		return math.MinInt32
	}
	return v
}
