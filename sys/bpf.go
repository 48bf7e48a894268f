package sys

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// call makes the bpf(2) system call, the only place that does.
func call(cmd int, attr unsafe.Pointer) (int, error) { return doCall(cmd, attr, false) }

// doCall is call; noSleep uses unix.RawSyscall (see MapElemNoSleep).
func doCall(cmd int, attr unsafe.Pointer, noSleep bool) (int, error) {
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
		if err := j.record("bpf", describe(cmd, attr), int(r), errno, time.Since(start)); err != nil {
			if errno != 0 {
				return -1, err
			}
			return int(r), err
		}
	}
	if errno != 0 {
		return -1, bpfError(cmd, attr, errno)
	}
	return int(r), nil
}

// kernelAttrSize is the size passed with every attr: the running kernel's
// sizeof(union bpf_attr); more would make the kernel check the excess for
// zeroes on every map lookup. It is learned once by bisection: __sys_bpf
// checks the bytes past its union are zero (bpf_check_uarg_tail_zero)
// before the command, so a command that does not exist answers E2BIG for a
// non-zero byte past the union, EINVAL inside it; the union is aligned(8).
// Without privilege (EPERM first) AttrSize is passed: correct, slower.
// A probe the journal failed to record is an error, and nothing is cached.
func kernelAttrSize() (uintptr, error) {
	if n := attrSize.Load(); n != 0 {
		return uintptr(n), nil
	}
	var probe [AttrSize]byte
	lo, hi := 8, AttrSize // the kernel's size lies in [lo, hi]
	for lo < hi {
		mid := max((lo+hi)/2&^7, lo)
		probe[mid] = 1
		_, err := traced("bpf", func() string {
			return fmt.Sprintf("%#x (no command: sizing union bpf_attr), byte %d set, %d", invalidCmd, mid, AttrSize)
		}, func() (int, error) {
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
func do(cmd int, attr unsafe.Pointer) error {
	_, err := call(cmd, attr)
	return err
}

// callFD is call for the commands that return a new file descriptor.
func callFD(cmd int, attr unsafe.Pointer) (int, error) {
	fd, err := call(cmd, attr)
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

func bpfError(cmd int, attr unsafe.Pointer, errno unix.Errno) error {
	if errno == unix.ENOENT && cmd < len(enoent) {
		return enoent[cmd]
	}
	e := &Error{Op: cmdName(cmd), Errno: errno}
	switch errno {
	case unix.EPERM:
		switch cmd {
		case unix.BPF_PROG_LOAD:
			e.Hint = permHint(progCaps((*ProgLoadAttr)(attr).ProgType)...)
		case unix.BPF_LINK_CREATE, unix.BPF_RAW_TRACEPOINT_OPEN:
			e.Hint = permHint(CAP_BPF, CAP_PERFMON)
		case unix.BPF_PROG_GET_FD_BY_ID, unix.BPF_MAP_GET_FD_BY_ID, unix.BPF_LINK_GET_FD_BY_ID,
			unix.BPF_BTF_GET_FD_BY_ID, unix.BPF_PROG_GET_NEXT_ID, unix.BPF_MAP_GET_NEXT_ID,
			unix.BPF_LINK_GET_NEXT_ID, unix.BPF_BTF_GET_NEXT_ID,
			unix.BPF_ENABLE_STATS, unix.BPF_PROG_QUERY:
			e.Hint = permHint(CAP_SYS_ADMIN)
		case unix.BPF_OBJ_PIN, unix.BPF_OBJ_GET:
			e.Hint = "the path's permissions in the BPF file system refuse it"
		case unix.BPF_MAP_UPDATE_ELEM, unix.BPF_MAP_DELETE_ELEM: // map_get_sys_perms
			e.Hint = "the map is read-only to user space: frozen (BPF_MAP_FREEZE) or created with BPF_F_RDONLY"
		default:
			e.Hint = permHint(CAP_BPF)
		}
	case unix.E2BIG:
		e.Hint = e2bigHint(cmd)
	}
	return e
}

// e2bigHint lists, most likely first, what makes cmd answer E2BIG; last a
// byte set past the kernel's union, which kernelAttrSize prevents.
func e2bigHint(cmd int) string {
	const unknownField = "the attr sets a field this kernel does not know"
	switch cmd {
	case unix.BPF_MAP_UPDATE_ELEM:
		return "the map is full (max_entries elements are in it), or an array index is not below max_entries"
	case unix.BPF_MAP_DELETE_ELEM: // fd_array_map_delete_elem
		return "an fd array index is not below max_entries"
	case unix.BPF_MAP_CREATE:
		return "the key, value or max_entries is larger than this map type allows, or " + unknownField
	case unix.BPF_PROG_LOAD:
		return "the program is too large: over 1M instructions (4096 without CAP_BPF), over 1M processed by the verifier, " +
			"or bpf-to-bpf calls nested too deep, or " + unknownField
	case unix.BPF_LINK_CREATE:
		return "too many programs are attached to the target (64 on a perf event), or " + unknownField
	}
	return unknownField
}

// MapCreate is BPF_MAP_CREATE; it returns the new map's fd.
func MapCreate(a *MapCreateAttr) (int, error) { return callFD(unix.BPF_MAP_CREATE, unsafe.Pointer(a)) }

// MapLookupElem is BPF_MAP_LOOKUP_ELEM: it copies the value of Key into Value.
func MapLookupElem(a *MapElemAttr) error { return do(unix.BPF_MAP_LOOKUP_ELEM, unsafe.Pointer(a)) }

// MapUpdateElem is BPF_MAP_UPDATE_ELEM; Flags is BPF_ANY, BPF_NOEXIST or BPF_EXIST.
func MapUpdateElem(a *MapElemAttr) error { return do(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(a)) }

// MapDeleteElem is BPF_MAP_DELETE_ELEM.
func MapDeleteElem(a *MapElemAttr) error { return do(unix.BPF_MAP_DELETE_ELEM, unsafe.Pointer(a)) }

// MapGetNextKey is BPF_MAP_GET_NEXT_KEY: it writes the key after Key (the
// first key if Key is nil) to Value, the next_key member.
func MapGetNextKey(a *MapElemAttr) error { return do(unix.BPF_MAP_GET_NEXT_KEY, unsafe.Pointer(a)) }

// MapElemNoSleep runs cmd (BPF_MAP_LOOKUP_ELEM, _UPDATE_ELEM, _DELETE_ELEM
// or BPF_MAP_GET_NEXT_KEY) without the Go runtime's system call bookkeeping
// (entersyscall/exitsyscall), which lets a thread blocked in the kernel
// give its P to another. For maps whose element operations never sleep
// (hash and array, per-CPU and LRU): one that does (a prog array's mutex, a
// sockmap's socket lock, a page fault) holds its P meanwhile. The caller,
// who knows the map type, decides.
func MapElemNoSleep(cmd int, attr *MapElemAttr) error {
	switch cmd {
	case unix.BPF_MAP_LOOKUP_ELEM, unix.BPF_MAP_UPDATE_ELEM, unix.BPF_MAP_DELETE_ELEM, unix.BPF_MAP_GET_NEXT_KEY:
	default:
		return &Error{Op: cmdName(cmd), Errno: unix.EINVAL, Hint: "not an element command"}
	}
	_, err := doCall(cmd, unsafe.Pointer(attr), true)
	return err
}

// MapLookupAndDeleteElem is BPF_MAP_LOOKUP_AND_DELETE_ELEM (queues and
// stacks since 4.20, hash maps since 5.14).
func MapLookupAndDeleteElem(attr *MapElemAttr) error {
	return do(unix.BPF_MAP_LOOKUP_AND_DELETE_ELEM, unsafe.Pointer(attr))
}

// MapFreeze is BPF_MAP_FREEZE (5.2): the map becomes read-only to user space.
func MapFreeze(a *MapElemAttr) error { return do(unix.BPF_MAP_FREEZE, unsafe.Pointer(a)) }

// MapLookupBatch is BPF_MAP_LOOKUP_BATCH (5.6). On return Count holds the
// number of elements copied; ENOENT means the walk reached the end.
func MapLookupBatch(a *MapBatchAttr) error { return do(unix.BPF_MAP_LOOKUP_BATCH, unsafe.Pointer(a)) }

// ProgLoad is BPF_PROG_LOAD; it returns the program's fd. The verifier
// abandons a program with EAGAIN when a signal is pending, and the Go
// runtime signals its threads (SIGURG to preempt, SIGPROF to profile), many
// times in a row under load. So after a first EAGAIN the load is retried on
// a locked thread with those two blocked (delivered late, which the runtime
// copes with), and again on an EAGAIN from another signal. The first try
// goes without: blocking costs two system calls.
func ProgLoad(attr *ProgLoadAttr) (int, error) {
	fd, err := callFD(unix.BPF_PROG_LOAD, unsafe.Pointer(attr))
	if errors.Is(err, unix.EAGAIN) {
		defer blockRuntimeSignals()()
		for i := 1; i < progLoadAttempts && errors.Is(err, unix.EAGAIN); i++ {
			fd, err = callFD(unix.BPF_PROG_LOAD, unsafe.Pointer(attr))
		}
	}
	return fd, err
}

const progLoadAttempts = 10

// blockRuntimeSignals locks the goroutine to its thread and blocks the
// runtime's SIGURG and SIGPROF there until the returned function is called.
func blockRuntimeSignals() (restore func()) {
	runtime.LockOSThread()
	var old unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &runtimeSignals, &old); err != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
		runtime.UnlockOSThread()
	}
}

// runtimeSignals is {SIGURG, SIGPROF}: bit n-1 stands for signal n, in
// words of 64 bits or, on 32-bit ports, 32.
var runtimeSignals = func() (set unix.Sigset_t) {
	bits := uint(unsafe.Sizeof(set.Val[0])) * 8
	for _, sig := range []unix.Signal{unix.SIGURG, unix.SIGPROF} {
		set.Val[uint(sig-1)/bits] |= 1 << (uint(sig-1) % bits)
	}
	return set
}()

// ObjPin is BPF_OBJ_PIN: it pins BPFFD at Pathname in a BPF file system.
func ObjPin(a *ObjAttr) error { return do(unix.BPF_OBJ_PIN, unsafe.Pointer(a)) }

// ObjGet is BPF_OBJ_GET: it opens the object pinned at Pathname.
func ObjGet(a *ObjAttr) (int, error) { return callFD(unix.BPF_OBJ_GET, unsafe.Pointer(a)) }

// ProgQuery is BPF_PROG_QUERY: the programs attached to a cgroup or device.
func ProgQuery(a *ProgQueryAttr) error { return do(unix.BPF_PROG_QUERY, unsafe.Pointer(a)) }

// ProgTestRun is BPF_PROG_TEST_RUN (4.12). A run with Repeat stops with
// EINTR when a signal is pending, and retrying would run the program's side
// effects again: so the runtime's signals are blocked for its duration.
func ProgTestRun(attr *TestRunAttr) error {
	defer blockRuntimeSignals()()
	return do(unix.BPF_PROG_TEST_RUN, unsafe.Pointer(attr))
}

// ProgGetNextID is BPF_PROG_GET_NEXT_ID: the smallest program id above ID,
// in NextID; ENOENT after the last.
func ProgGetNextID(a *GetIDAttr) error { return do(unix.BPF_PROG_GET_NEXT_ID, unsafe.Pointer(a)) }

// MapGetNextID is BPF_MAP_GET_NEXT_ID.
func MapGetNextID(a *GetIDAttr) error { return do(unix.BPF_MAP_GET_NEXT_ID, unsafe.Pointer(a)) }

// LinkGetNextID is BPF_LINK_GET_NEXT_ID (5.8).
func LinkGetNextID(a *GetIDAttr) error { return do(unix.BPF_LINK_GET_NEXT_ID, unsafe.Pointer(a)) }

// BTFGetNextID is BPF_BTF_GET_NEXT_ID (5.4): the smallest BTF object id
// above ID, in NextID (the kernel's, each module's, each program's).
func BTFGetNextID(a *GetIDAttr) error { return do(unix.BPF_BTF_GET_NEXT_ID, unsafe.Pointer(a)) }

// BTFGetFDByID is BPF_BTF_GET_FD_BY_ID (5.0): an fd for BTF object ID,
// which a tracing program's load names as attach_btf_obj_fd.
func BTFGetFDByID(attr *GetIDAttr) (int, error) {
	return callFD(unix.BPF_BTF_GET_FD_BY_ID, unsafe.Pointer(attr))
}

// ProgGetFDByID is BPF_PROG_GET_FD_BY_ID.
func ProgGetFDByID(attr *GetIDAttr) (int, error) {
	return callFD(unix.BPF_PROG_GET_FD_BY_ID, unsafe.Pointer(attr))
}

// MapGetFDByID is BPF_MAP_GET_FD_BY_ID.
func MapGetFDByID(attr *GetIDAttr) (int, error) {
	return callFD(unix.BPF_MAP_GET_FD_BY_ID, unsafe.Pointer(attr))
}

// LinkGetFDByID is BPF_LINK_GET_FD_BY_ID (5.8).
func LinkGetFDByID(attr *GetIDAttr) (int, error) {
	return callFD(unix.BPF_LINK_GET_FD_BY_ID, unsafe.Pointer(attr))
}

// ObjGetInfoByFD is BPF_OBJ_GET_INFO_BY_FD; InfoByFD fills the typed structs.
func ObjGetInfoByFD(a *InfoAttr) error { return do(unix.BPF_OBJ_GET_INFO_BY_FD, unsafe.Pointer(a)) }

// InfoByFD fills info for the program, map, link or BTF object fd.
func InfoByFD[T ProgInfo | MapInfo | LinkInfo | LinkInfoUprobeMulti | BTFInfo](fd int, info *T) error {
	attr := InfoAttr{BPFFD: uint32(arg32(fd)), InfoLen: uint32(unsafe.Sizeof(*info)), Info: NewPointer(unsafe.Pointer(info))}
	return ObjGetInfoByFD(&attr)
}

// RawTracepointOpen is BPF_RAW_TRACEPOINT_OPEN (4.17); it returns a link
// fd. With a nil Name it attaches a tracing program (fentry, fexit,
// tp_btf: 5.5) to the target it was loaded for.
func RawTracepointOpen(attr *RawTracepointAttr) (int, error) {
	return callFD(unix.BPF_RAW_TRACEPOINT_OPEN, unsafe.Pointer(attr))
}

// LinkCreate is BPF_LINK_CREATE (5.7); it returns the link's fd.
func LinkCreate(attr *LinkCreateAttr) (int, error) {
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(attr))
}

// LinkCreateTracing is BPF_LINK_CREATE for a tracing program (6.1 has it
// for fentry, fexit and tp_btf, 5.10 not; AttachType must be the
// program's expected attach type; Cookie is read from 5.19, for tp_btf
// from 6.10); it returns the link's fd. A kernel without it answers
// EINVAL, and such a program is attached by RawTracepointOpen with a nil
// Name.
func LinkCreateTracing(attr *LinkCreateTracingAttr) (int, error) {
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(attr))
}

// LinkCreateKprobeMulti is BPF_LINK_CREATE with the kprobe_multi member
// (5.18; AttachType must be BPF_TRACE_KPROBE_MULTI); it returns the link's
// fd. Kernels without CONFIG_FPROBE answer EOPNOTSUPP.
func LinkCreateKprobeMulti(attr *LinkCreateKprobeMultiAttr) (int, error) {
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(attr))
}

// LinkCreateUprobeMulti is BPF_LINK_CREATE with the uprobe_multi member
// (6.6; AttachType must be BPF_TRACE_UPROBE_MULTI); it returns the link's
// fd.
func LinkCreateUprobeMulti(attr *LinkCreateUprobeMultiAttr) (int, error) {
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(attr))
}

// TaskFDQuery is BPF_TASK_FD_QUERY (4.18): which program runs through file
// FD of process PID (a perf event or raw tracepoint link), and where.
// ENOSPC: the name did not fit Buf; ENOENT: no program; ENOTSUPP: another
// kind of file.
func TaskFDQuery(a *TaskFDQueryAttr) error { return do(unix.BPF_TASK_FD_QUERY, unsafe.Pointer(a)) }

// LinkDetach is BPF_LINK_DETACH (5.9): the link stays open but its program
// no longer runs.
func LinkDetach(a *LinkDetachAttr) error { return do(unix.BPF_LINK_DETACH, unsafe.Pointer(a)) }

// EnableStats is BPF_ENABLE_STATS (5.8): run time and count statistics stay
// on while the returned fd is open.
func EnableStats(attr *EnableStatsAttr) (int, error) {
	return callFD(unix.BPF_ENABLE_STATS, unsafe.Pointer(attr))
}
