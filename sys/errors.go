package sys

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Error is a failed system call: which, the errno (errors.Is(err,
// unix.EPERM) works) and, for EPERM, a hint naming the missing capability.
type Error struct {
	Op    string     // "BPF_MAP_CREATE", "perf_event_open", "PERF_EVENT_IOC_SET_BPF"
	Errno unix.Errno // what the kernel answered, for errors.Is
	Hint  string     // the likely cause (a missing capability, a full map), or ""
}

// Error says which call failed, the errno and, when known, why. An errno
// of the kernel's own, which libc has no text for, is named as well.
func (e *Error) Error() string {
	msg := e.Op + ": " + cmp.Or(errnoText(e.Errno), errnoName(e.Errno))
	if name, _, own := kernelErrno(e.Errno); own {
		msg += " (" + name + ")"
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// ENOTSUPP (524) is the kernel's internal "not supported", which BPF lets
// reach user space (libc has no name for it).
const ENOTSUPP = unix.Errno(524)

// kernelErrnos are the errnos of the kernel's own (include/linux/errno.h),
// from 512, with the header's words. They are meant never to reach user
// space, and so no libc names them; but ENOTSUPP does reach it from
// bpf(2), and a kernel bug may let another through. An array, which costs
// no code at start-up, keyed by the errno less the first, so that each
// line shows its own.
var kernelErrnos = [...]struct{ name, text string }{
	512 - firstKernelErrno: {"ERESTARTSYS", "restart the system call"},
	513 - firstKernelErrno: {"ERESTARTNOINTR", "restart the system call, not interrupted"},
	514 - firstKernelErrno: {"ERESTARTNOHAND", "restart if no handler"},
	515 - firstKernelErrno: {"ENOIOCTLCMD", "no ioctl command"},
	516 - firstKernelErrno: {"ERESTART_RESTARTBLOCK", "restart by calling sys_restart_syscall"},
	517 - firstKernelErrno: {"EPROBE_DEFER", "driver requests probe retry"},
	518 - firstKernelErrno: {"EOPENSTALE", "open found a stale dentry"},
	519 - firstKernelErrno: {"ENOPARAM", "parameter not supported"},
	521 - firstKernelErrno: {"EBADHANDLE", "illegal NFS file handle"},
	522 - firstKernelErrno: {"ENOTSYNC", "update synchronization mismatch"},
	523 - firstKernelErrno: {"EBADCOOKIE", "cookie is stale"},
	524 - firstKernelErrno: {"ENOTSUPP", "operation not supported"},
	525 - firstKernelErrno: {"ETOOSMALL", "buffer or request is too small"},
	526 - firstKernelErrno: {"ESERVERFAULT", "an untranslatable error occurred"},
	527 - firstKernelErrno: {"EBADTYPE", "type not supported by server"},
	528 - firstKernelErrno: {"EJUKEBOX", "request initiated, but will not complete before timeout"},
	529 - firstKernelErrno: {"EIOCBQUEUED", "iocb queued, will get completion event"},
	530 - firstKernelErrno: {"ERECALLCONFLICT", "conflict with recalled state"},
	531 - firstKernelErrno: {"ENOGRACE", "NFS file lock reclaim refused"},
}

// firstKernelErrno is the lowest errno of the kernel's own: ERESTARTSYS.
const firstKernelErrno = 512

// kernelErrno returns the name and text of e if it is one of the kernel's
// own errnos.
func kernelErrno(e unix.Errno) (name, text string, own bool) {
	if i := int(e) - firstKernelErrno; i >= 0 && i < len(kernelErrnos) && kernelErrnos[i].name != "" {
		return kernelErrnos[i].name, kernelErrnos[i].text, true
	}
	return "", "", false
}

// errnoName is the errno's name as strace prints it: the uapi's for
// user-space errnos (x/sys/unix's table, of this port), the kernel's for
// its own, or "errno N" for a number no header names.
func errnoName(e unix.Errno) string {
	if name, _, own := kernelErrno(e); own {
		return name
	}
	switch name := unix.ErrnoName(e); {
	case e == unix.EOPNOTSUPP:
		return "EOPNOTSUPP" // the uapi's name of 95, which unix lists under glibc's ENOTSUP
	case name != "":
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// errnoText is what the errno means: libc's text (strerror's, as Go has
// it), the kernel header's for its own errnos, or "" where neither has one.
func errnoText(e unix.Errno) string {
	if _, text, own := kernelErrno(e); own {
		return text
	}
	if text := e.Error(); !strings.HasPrefix(text, "errno ") {
		return text
	}
	return ""
}

// Unwrap is the errno, for errors.Is(err, unix.EPERM).
func (e *Error) Unwrap() error { return e.Errno }

// Capability numbers from linux/capability.h.
const (
	CAP_NET_ADMIN = 12 // networking programs (XDP, tc) beside CAP_BPF
	CAP_SYS_ADMIN = 21 // all of BPF; before 5.8 the only one
	CAP_PERFMON   = 38 // tracing programs beside CAP_BPF (5.8)
	CAP_BPF       = 39 // loading programs and creating maps (5.8)
)

// capNames names the capabilities bpfkit checks.
var capNames = map[int]string{
	CAP_NET_ADMIN: "CAP_NET_ADMIN",
	CAP_SYS_ADMIN: "CAP_SYS_ADMIN",
	CAP_PERFMON:   "CAP_PERFMON",
	CAP_BPF:       "CAP_BPF",
}

// missingCaps names the capabilities of need the calling thread lacks
// ("CAP_BPF and CAP_PERFMON"), or is ""; CAP_SYS_ADMIN stands in for all of
// them (and alone is enough before 5.8).
func missingCaps(need ...int) (string, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "", err
	}
	caps := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	var missing []string
	for _, c := range need {
		if caps&(1<<c) == 0 && caps&(1<<CAP_SYS_ADMIN) == 0 {
			missing = append(missing, capNames[c])
		}
	}
	return strings.Join(missing, " and "), nil
}

// NeedCaps checks, before anything is asked of the kernel, that the process
// has the capabilities in need (CAP_BPF, CAP_PERFMON, ...; CAP_SYS_ADMIN
// grants them all). Its error names the missing ones and wraps EPERM.
func NeedCaps(need ...int) error {
	for _, c := range need {
		if _, ok := capNames[c]; !ok {
			hint := fmt.Sprintf("capability %d is not one bpfkit checks: "+
				"CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN or CAP_SYS_ADMIN", c)
			return &Error{Op: "capabilities", Errno: unix.EINVAL, Hint: hint}
		}
	}
	missing, err := missingCaps(need...)
	if err != nil {
		return &Error{Op: "capget", Errno: errnoOf(err)}
	}
	if missing == "" {
		return nil
	}
	hint := "missing " + missing + "; run as root, or grant them (CAP_SYS_ADMIN grants all)"
	return &Error{Op: "capabilities", Errno: unix.EPERM, Hint: hint}
}

// permHint explains an EPERM: the capabilities of need missing, or what
// else refuses root, where it can be seen.
func permHint(need ...int) string {
	missing, err := missingCaps(need...)
	if err != nil {
		return ""
	}
	var rl unix.Rlimit
	memlock := ""
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		memlock = fmt.Sprintf("; kernels before 5.11 also charge BPF memory to RLIMIT_MEMLOCK, "+
			"here %d KiB", rl.Cur/1024)
	}
	switch missing {
	case "":
		return "capabilities are present: the kernel refused it for another reason" +
			lockdown() + memlock
	case "CAP_SYS_ADMIN":
		return "missing CAP_SYS_ADMIN" + memlock
	}
	return "missing " + missing + "; CAP_SYS_ADMIN grants all, and kernels before 5.8 require it" +
		unprivilegedDisabled(missing) + memlock
}

// lockdown says that kernel lockdown is on, which refuses some of BPF to
// root (reading kernel memory, in its confidentiality mode), where
// securityfs shows it; "" where it is off or cannot be seen.
func lockdown() string {
	b, _ := os.ReadFile("/sys/kernel/security/lockdown") // "none [integrity] confidentiality"
	for _, mode := range []string{"integrity", "confidentiality"} {
		if strings.Contains(string(b), "["+mode+"]") {
			return "; kernel lockdown is in its " + mode + " mode"
		}
	}
	return ""
}

// unprivilegedDisabled names kernel.unprivileged_bpf_disabled where it is
// set and the process lacks CAP_BPF, to which it applies; "" else.
func unprivilegedDisabled(missing string) string {
	b, err := os.ReadFile("/proc/sys/kernel/unprivileged_bpf_disabled")
	value := strings.TrimSpace(string(b))
	if err != nil || value == "0" || !strings.Contains(missing, "CAP_BPF") {
		return ""
	}
	return "; kernel.unprivileged_bpf_disabled is " + value + ": without CAP_BPF, bpf() is refused"
}

// newFD finishes a call that makes an fd: on an error, which sysErr keeps
// or makes an *Error, it closes the fd if one was made (the journal failed);
// else it moves the fd above 2.
func newFD(fd int, err error, op string) (int, error) {
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, sysErr(op, err)
	}
	return safeFD(fd, op)
}

// sysErr makes a call's error an *Error, keeping an *Error or a journal
// failure as it is.
func sysErr(op string, err error) error {
	if _, ok := err.(*Error); ok || err == nil || errors.Is(err, ErrJournal) {
		return err
	}
	return &Error{Op: op, Errno: errnoOf(err)}
}

// withHint adds to an EPERM *Error the capabilities of need missing.
func withHint(err error, need ...int) error {
	if e, ok := err.(*Error); ok && e.Errno == unix.EPERM {
		e.Hint = permHint(need...)
	}
	return err
}

// errnoOf is err's errno: EINVAL for another error, 0 for nil.
func errnoOf(err error) unix.Errno {
	if e, ok := errors.AsType[unix.Errno](err); ok {
		return e
	}
	if err != nil {
		return unix.EINVAL
	}
	return 0
}

// Wrap returns err (nil for nil) behind pkg's prefix and the context that
// format and args make: "mapfd: map \"x\" update: ", then err's text less
// a leading "pkg: ", so that a package names itself once. errors.Is and As
// see err.
func Wrap(pkg string, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	context := pkg + ": " + fmt.Sprintf(format, args...) + ": "
	return &wrapped{context + strings.TrimPrefix(err.Error(), pkg+": "), err}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// ErrNotSupported is every bpfkit package's "this kernel does not have that".
var ErrNotSupported = errors.New("sys: not supported by this kernel")

var memlockOnce sync.Once

// RaiseMemlock lifts a finite RLIMIT_MEMLOCK to infinity, the first time it
// is called, and reports whether this call did. Kernels before 5.11 charge
// BPF maps and programs to it and answer EPERM past it (memory cgroups
// since, commit 3ac1f01b43b6): mapfd.Create and prog.Load call it on a
// first EPERM and try again once.
func RaiseMemlock() (raised bool) {
	memlockOnce.Do(func() {
		var old unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old) != nil || old.Cur == unix.RLIM_INFINITY {
			return
		}
		inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
		args := func() string {
			return fmt.Sprintf("RLIMIT_MEMLOCK, {cur=%d, max=%d} -> "+
				"{cur=RLIM_INFINITY, max=RLIM_INFINITY}", old.Cur, old.Max)
		}
		_, err := traced("setrlimit", args, func() (int, error) {
			return 0, unix.Setrlimit(unix.RLIMIT_MEMLOCK, &inf)
		})
		raised = err == nil
	})
	return raised
}
