package sys

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the door to bpf(2): the one function that makes the system
// call, and what every command shares (see the package doc).

// describer is how a command's attr reads in the journal: its fields as a
// reviewer wants them, after the command's name ("map_fd=8 flags=0x0").
// Each attr's describe method is one, passed as a method value: through an
// interface the attr would escape to the heap, and every map lookup would
// allocate.
type describer func() string

// hinter says what errno most likely means for command cmd, or "" for what
// it means to every command (permHint, unknownField). Each is a function
// beside its commands, but ProgLoad's, which reads the program's type.
type hinter func(cmd int, errno unix.Errno) string

// call makes the bpf(2) system call, the only place that does.
func call(cmd int, attr unsafe.Pointer, describe describer, hint hinter) (int, error) {
	return doCall(cmd, attr, false, describe, hint)
}

// doCall is call; noSleep uses unix.RawSyscall (see MapLookupElemNoSleep).
func doCall(
	cmd int, attr unsafe.Pointer, noSleep bool, describe describer, hint hinter,
) (int, error) {
	if attr == nil {
		return -1, &Error{Op: cmdName(cmd), Errno: unix.EFAULT, Hint: "nil attr"}
	}
	j := journal.Load()
	if j != nil && j.broken != nil {
		return -1, j.broken
	}
	size, err := kernelAttrSize()
	if err != nil {
		return -1, err
	}
	var start time.Time
	if j != nil {
		start = time.Now()
	}
	var r uintptr
	var errno unix.Errno
	if noSleep {
		r, _, errno = unix.RawSyscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	} else {
		r, _, errno = unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	}
	if j != nil {
		if err := j.recordBPF(cmd, describe, int(r), errno, start); err != nil {
			if errno != 0 {
				return -1, err
			}
			return int(r), err
		}
	}
	if errno != 0 {
		return -1, bpfError(cmd, errno, hint)
	}
	return int(r), nil
}

// recordBPF writes the journal's line of a bpf(2) call: the command's
// name, then what its describe says of the attr. It is a function of its
// own to keep doCall, which every map lookup goes through, small.
func (j *journalWriter) recordBPF(
	cmd int, describe describer, r int, errno unix.Errno, start time.Time,
) error {
	args := cmdName(cmd)
	if fields := describe(); fields != "" {
		args += ", " + fields
	}
	return j.record("bpf", args, r, errno, time.Since(start))
}

// kernelAttrSize is the size passed with every attr: the running kernel's
// sizeof(union bpf_attr). More would make the kernel check the excess for
// zeroes on every map lookup.
//
// It is learned once, by bisection. __sys_bpf checks that the bytes past
// its union are zero (bpf_check_uarg_tail_zero) before it looks at the
// command. So a command that does not exist answers E2BIG for a non-zero
// byte past the union, and EINVAL for one inside it; the union is
// aligned(8). Without privilege (EPERM first) AttrSize is passed: correct,
// and slower. A probe the journal failed to record is an error, and
// nothing is cached.
func kernelAttrSize() (uintptr, error) {
	if n := attrSize.Load(); n != 0 {
		return uintptr(n), nil
	}
	var probe [AttrSize]byte
	lo, hi := 8, AttrSize // the kernel's size lies in [lo, hi]
	for lo < hi {
		mid := max((lo+hi)/2&^7, lo)
		probe[mid] = 1
		args := func() string {
			return fmt.Sprintf("%#x (no command: sizing union bpf_attr), byte %d set, %d",
				invalidCmd, mid, AttrSize)
		}
		_, err := traced("bpf", args, func() (int, error) {
			r, _, errno := unix.Syscall(unix.SYS_BPF, invalidCmd, uintptr(unsafe.Pointer(&probe)), AttrSize)
			if errno != 0 {
				return -1, errno
			}
			return int(r), nil
		})
		if errors.Is(err, ErrJournal) {
			return 0, err
		}
		probe[mid] = 0
		switch errnoOf(err) {
		case unix.E2BIG: // mid is past the union
			hi = mid
		case unix.EINVAL: // mid is inside it
			lo = mid + 8
		default:
			lo, hi = AttrSize, AttrSize
		}
	}
	attrSize.Store(uint32(hi))
	return uintptr(hi), nil
}

// invalidCmd is no bpf(2) command, for probing.
const invalidCmd = 0xbfbf

var attrSize atomic.Uint32

// do is call for the commands that answer only an error.
func do(cmd int, attr unsafe.Pointer, describe describer, hint hinter) error {
	_, err := doCall(cmd, attr, false, describe, hint)
	return err
}

// doNoSleep is do without the Go runtime's system call bookkeeping, for
// the element commands of maps that never sleep (see MapLookupElemNoSleep).
func doNoSleep(cmd int, attr unsafe.Pointer, describe describer, hint hinter) error {
	_, err := doCall(cmd, attr, true, describe, hint)
	return err
}

// callFD is call for the commands that return a new file descriptor.
func callFD(cmd int, attr unsafe.Pointer, describe describer, hint hinter) (int, error) {
	fd, err := call(cmd, attr, describe, hint)
	return newFD(fd, err, cmdName(cmd))
}

// enoent holds one ENOENT error per command: a lookup miss or the end of a
// key walk is everyday and must not allocate.
var enoent = func() (errs [len(cmdNames)]*Error) {
	for i := range errs {
		errs[i] = &Error{Op: cmdNames[i], Errno: unix.ENOENT}
	}
	return errs
}()

// bpfError is the error of command cmd that failed with errno: the
// command's hint says what errno likely means, else what it means to
// every command.
func bpfError(cmd int, errno unix.Errno, hint hinter) error {
	if errno == unix.ENOENT && cmd < len(enoent) {
		return enoent[cmd]
	}
	e := &Error{Op: cmdName(cmd), Errno: errno, Hint: hint(cmd, errno)}
	switch {
	case e.Hint != "":
	case errno == unix.EPERM:
		e.Hint = permHint(CAP_BPF)
	case errno == unix.E2BIG:
		e.Hint = unknownField
	}
	return e
}

// unknownField is the last cause of every command's E2BIG: a byte set past
// the kernel's union, which kernelAttrSize prevents, or a field it does
// not know.
const unknownField = "the attr sets a field this kernel does not know"

// noHint is the hint of the commands whose errnos mean what they mean to
// every command.
func noHint(int, unix.Errno) string { return "" }

// cmdName is the name of command cmd, or its number.
func cmdName(cmd int) string {
	if cmd >= 0 && cmd < len(cmdNames) {
		return cmdNames[cmd]
	}
	return fmt.Sprintf("bpf cmd %d", cmd)
}

// cmdNames are the names of enum bpf_cmd, by number.
var cmdNames = [...]string{
	"BPF_MAP_CREATE", "BPF_MAP_LOOKUP_ELEM", "BPF_MAP_UPDATE_ELEM", "BPF_MAP_DELETE_ELEM",
	"BPF_MAP_GET_NEXT_KEY", "BPF_PROG_LOAD", "BPF_OBJ_PIN", "BPF_OBJ_GET", "BPF_PROG_ATTACH",
	"BPF_PROG_DETACH", "BPF_PROG_TEST_RUN", "BPF_PROG_GET_NEXT_ID", "BPF_MAP_GET_NEXT_ID",
	"BPF_PROG_GET_FD_BY_ID", "BPF_MAP_GET_FD_BY_ID", "BPF_OBJ_GET_INFO_BY_FD", "BPF_PROG_QUERY",
	"BPF_RAW_TRACEPOINT_OPEN", "BPF_BTF_LOAD", "BPF_BTF_GET_FD_BY_ID", "BPF_TASK_FD_QUERY",
	"BPF_MAP_LOOKUP_AND_DELETE_ELEM", "BPF_MAP_FREEZE", "BPF_BTF_GET_NEXT_ID",
	"BPF_MAP_LOOKUP_BATCH", "BPF_MAP_LOOKUP_AND_DELETE_BATCH", "BPF_MAP_UPDATE_BATCH",
	"BPF_MAP_DELETE_BATCH", "BPF_LINK_CREATE", "BPF_LINK_UPDATE", "BPF_LINK_GET_FD_BY_ID",
	"BPF_LINK_GET_NEXT_ID", "BPF_ENABLE_STATS", "BPF_ITER_CREATE", "BPF_LINK_DETACH",
	"BPF_PROG_BIND_MAP",
}
