package sys

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the program commands: BPF_PROG_LOAD, BPF_PROG_TEST_RUN,
// BPF_PROG_QUERY and BPF_ENABLE_STATS, each beside its attr.

// ProgLoadAttr is union bpf_attr for BPF_PROG_LOAD, fields as the uapi names them.
type ProgLoadAttr struct {
	ProgType           uint32
	InsnCnt            uint32
	Insns              Pointer
	License            Pointer
	LogLevel           uint32
	LogSize            uint32
	LogBuf             Pointer
	KernVersion        uint32
	ProgFlags          uint32
	ProgName           ObjName
	ProgIfindex        uint32
	ExpectedAttachType uint32
	ProgBTFFD          uint32
	FuncInfoRecSize    uint32
	FuncInfo           Pointer
	FuncInfoCnt        uint32
	LineInfoRecSize    uint32
	LineInfo           Pointer
	LineInfoCnt        uint32
	AttachBTFID        uint32
	AttachProgFD       uint32 // or attach_btf_obj_fd
	CoreReloCnt        uint32
	FDArray            Pointer
	CoreRelos          Pointer
	CoreReloRecSize    uint32
	LogTrueSize        uint32 // 6.4
	ProgTokenFD        int32  // 6.9
	FDArrayCnt         uint32 // 6.13
	_                  [AttrSize - 152]byte
}

// ProgLoad is BPF_PROG_LOAD; it returns the program's fd.
//
// The verifier abandons a program with EAGAIN when a signal is pending,
// and the Go runtime signals its threads (SIGURG to preempt, SIGPROF to
// profile), many times in a row under load. So after a first EAGAIN the
// load is retried on a locked thread with those two blocked (delivered
// late, which the runtime copes with), and again on an EAGAIN from another
// signal. The first try goes without: blocking costs two system calls.
func ProgLoad(a *ProgLoadAttr) (int, error) {
	fd, err := callFD(unix.BPF_PROG_LOAD, unsafe.Pointer(a), a.describe, a.hint)
	if errors.Is(err, unix.EAGAIN) {
		defer blockRuntimeSignals()()
		for i := 1; i < progLoadAttempts && errors.Is(err, unix.EAGAIN); i++ {
			fd, err = callFD(unix.BPF_PROG_LOAD, unsafe.Pointer(a), a.describe, a.hint)
		}
	}
	return fd, err
}

const progLoadAttempts = 10

func (a *ProgLoadAttr) describe() string {
	s := fmt.Sprintf("prog_type=%s insn_cnt=%d license=%q name=%q kern_version=%#x "+
		"prog_flags=%#x log_level=%d", ProgTypeName(a.ProgType), a.InsnCnt, cString(a.License),
		a.ProgName, a.KernVersion, a.ProgFlags, a.LogLevel)
	if a.ExpectedAttachType != 0 {
		s += " expected_attach_type=" + AttachTypeName(a.ExpectedAttachType)
	}
	if a.AttachBTFID != 0 {
		s += fmt.Sprintf(" attach_btf_id=%d attach_btf_obj_fd=%d", a.AttachBTFID, a.AttachProgFD)
	}
	return s
}

func (a *ProgLoadAttr) hint(_ int, errno unix.Errno) string {
	switch errno {
	case unix.EPERM:
		return permHint(progCaps(a.ProgType)...)
	case unix.E2BIG:
		return "the program is too large: over 1M instructions (4096 without CAP_BPF), " +
			"over 1M processed by the verifier, or bpf-to-bpf calls nested too deep, or " +
			unknownField
	}
	return ""
}

// progCaps is what loading or attaching a program of a type needs: tracing
// types need CAP_PERFMON and networking types CAP_NET_ADMIN besides CAP_BPF.
func progCaps(progType uint32) []int {
	switch progType {
	case unix.BPF_PROG_TYPE_KPROBE,
		unix.BPF_PROG_TYPE_TRACEPOINT,
		unix.BPF_PROG_TYPE_PERF_EVENT,
		unix.BPF_PROG_TYPE_RAW_TRACEPOINT,
		unix.BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE,
		unix.BPF_PROG_TYPE_TRACING:
		return []int{CAP_BPF, CAP_PERFMON}
	case unix.BPF_PROG_TYPE_SOCKET_FILTER, unix.BPF_PROG_TYPE_CGROUP_SKB:
		return []int{CAP_BPF}
	case unix.BPF_PROG_TYPE_SCHED_CLS, unix.BPF_PROG_TYPE_SCHED_ACT, unix.BPF_PROG_TYPE_XDP:
		return []int{CAP_BPF, CAP_NET_ADMIN}
	}
	return []int{CAP_BPF, CAP_SYS_ADMIN}
}

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

// TestRunAttr is union bpf_attr's test, fields as the uapi names them.
type TestRunAttr struct {
	ProgFD      uint32
	Retval      uint32
	DataSizeIn  uint32
	DataSizeOut uint32
	DataIn      Pointer
	DataOut     Pointer
	Repeat      uint32
	Duration    uint32
	CtxSizeIn   uint32
	CtxSizeOut  uint32
	CtxIn       Pointer
	CtxOut      Pointer
	Flags       uint32
	CPU         uint32
	BatchSize   uint32
	_           [AttrSize - 76]byte
}

// ProgTestRun is BPF_PROG_TEST_RUN (4.12). A run with Repeat stops with
// EINTR when a signal is pending, and retrying would run the program's side
// effects again: so the runtime's signals are blocked for its duration.
func ProgTestRun(a *TestRunAttr) error {
	defer blockRuntimeSignals()()
	return do(unix.BPF_PROG_TEST_RUN, unsafe.Pointer(a), a.describe, noHint)
}

func (a *TestRunAttr) describe() string {
	return fmt.Sprintf("prog_fd=%d data_size_in=%d ctx_size_in=%d repeat=%d",
		a.ProgFD, a.DataSizeIn, a.CtxSizeIn, a.Repeat)
}

// ProgQueryAttr is union bpf_attr's query, fields as the uapi names them.
type ProgQueryAttr struct {
	TargetFD        uint32
	AttachType      uint32
	QueryFlags      uint32
	AttachFlags     uint32
	ProgIDs         Pointer
	ProgCnt         uint32
	_               uint32
	ProgAttachFlags Pointer // 5.19
	LinkIDs         Pointer // 6.6
	LinkAttachFlags Pointer // 6.6
	Revision        uint64  // 6.6
	_               [AttrSize - 64]byte
}

// ProgQuery is BPF_PROG_QUERY: the programs attached to a cgroup or device.
func ProgQuery(a *ProgQueryAttr) error {
	return do(unix.BPF_PROG_QUERY, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

func (a *ProgQueryAttr) describe() string {
	return fmt.Sprintf("target_fd=%d attach_type=%s", a.TargetFD, AttachTypeName(a.AttachType))
}

// needsSysAdmin is the hint of the commands that need CAP_SYS_ADMIN: the
// queries and walks of what is loaded, and statistics.
func needsSysAdmin(_ int, errno unix.Errno) string {
	if errno == unix.EPERM {
		return permHint(CAP_SYS_ADMIN)
	}
	return ""
}

// EnableStatsAttr is union bpf_attr's enable_stats, fields as the uapi names them.
type EnableStatsAttr struct {
	Type uint32
	_    [AttrSize - 4]byte
}

// EnableStats is BPF_ENABLE_STATS (5.8): run time and count statistics stay
// on while the returned fd is open.
func EnableStats(a *EnableStatsAttr) (int, error) {
	return callFD(unix.BPF_ENABLE_STATS, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

func (a *EnableStatsAttr) describe() string { return fmt.Sprintf("type=%d", a.Type) }
