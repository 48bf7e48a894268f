package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the commands that attach programs and ask about
// attachments: BPF_RAW_TRACEPOINT_OPEN, BPF_LINK_CREATE in each of the
// forms its union takes, BPF_LINK_DETACH and BPF_TASK_FD_QUERY.

// RawTracepointAttr is union bpf_attr's raw_tracepoint, fields as the uapi names them.
type RawTracepointAttr struct {
	Name   Pointer
	ProgFD uint32
	_      uint32
	Cookie uint64 // 6.10
	_      [AttrSize - 24]byte
}

// RawTracepointOpen is BPF_RAW_TRACEPOINT_OPEN (4.17); it returns a link
// fd. With a nil Name it attaches a tracing program (fentry, fexit,
// tp_btf: 5.5) to the target it was loaded for.
func RawTracepointOpen(a *RawTracepointAttr) (int, error) {
	return callFD(unix.BPF_RAW_TRACEPOINT_OPEN, unsafe.Pointer(a), a.describe, needsPerfmon)
}

func (a *RawTracepointAttr) describe() string {
	if a.Name.ptr == nil { // a tracing program, attached where it was loaded for
		return fmt.Sprintf("name=NULL prog_fd=%d", a.ProgFD)
	}
	return fmt.Sprintf("name=%q prog_fd=%d", cString(a.Name), a.ProgFD)
}

// needsPerfmon is the hint of the commands that attach tracing programs,
// which need CAP_PERFMON beside CAP_BPF.
func needsPerfmon(_ int, errno unix.Errno) string {
	if errno == unix.EPERM {
		return permHint(CAP_BPF, CAP_PERFMON)
	}
	return ""
}

// LinkCreateAttr is union bpf_attr's link_create, fields as the uapi names
// them, with only perf_event.bpf_cookie (5.15) of its union at offset 16.
// The kernel reads the union by AttachType, and so does the journal: each
// form's describe is LinkCreateAttr's.
type LinkCreateAttr struct {
	ProgFD     uint32
	TargetFD   uint32
	AttachType uint32
	Flags      uint32
	Cookie     uint64 // perf_event.bpf_cookie
	_          [AttrSize - 24]byte
}

// LinkCreate is BPF_LINK_CREATE (5.7); it returns the link's fd.
func LinkCreate(a *LinkCreateAttr) (int, error) {
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(a), a.describe, linkCreateHint)
}

// describe reads the union as the kernel does, by the attach type.
func (a *LinkCreateAttr) describe() string {
	p := unsafe.Pointer(a)
	switch a.AttachType {
	case unix.BPF_TRACE_KPROBE_MULTI:
		return (*LinkCreateKprobeMultiAttr)(p).fields()
	case unix.BPF_TRACE_UPROBE_MULTI:
		return (*LinkCreateUprobeMultiAttr)(p).fields()
	case unix.BPF_TRACE_FENTRY, unix.BPF_TRACE_FEXIT, unix.BPF_MODIFY_RETURN,
		unix.BPF_TRACE_RAW_TP, unix.BPF_LSM_MAC:
		return (*LinkCreateTracingAttr)(p).fields()
	}
	return fmt.Sprintf("prog_fd=%d target_fd=%d attach_type=%s flags=%#x cookie=%#x",
		a.ProgFD, int32(a.TargetFD), AttachTypeName(a.AttachType), a.Flags, a.Cookie)
}

func linkCreateHint(cmd int, errno unix.Errno) string {
	if errno == unix.E2BIG {
		return "too many programs are attached to the target (64 on a perf event), or " +
			unknownField
	}
	return needsPerfmon(cmd, errno)
}

// linkCreate is a form of link_create as LinkCreateAttr, which describes
// every form.
func linkCreate(p unsafe.Pointer) *LinkCreateAttr { return (*LinkCreateAttr)(p) }

// LinkCreateTracingAttr is union bpf_attr's link_create for a tracing
// program (fentry, fexit, tp_btf, fields as the uapi names them), with
// tracing.cookie (5.19) at offset 24, not where perf_event.bpf_cookie
// lies. TargetFD and TargetBTFID name another BPF program's function to
// trace, or are zero for the kernel function the program was loaded for.
type LinkCreateTracingAttr struct {
	ProgFD      uint32
	TargetFD    uint32
	AttachType  uint32
	Flags       uint32
	TargetBTFID uint32 // tracing.target_btf_id
	_           uint32
	Cookie      uint64 // tracing.cookie
	_           [AttrSize - 32]byte
}

// LinkCreateTracing is BPF_LINK_CREATE for a tracing program; it returns
// the link's fd. 6.1 has it for fentry, fexit and tp_btf, 5.10 not: a
// kernel without it answers EINVAL, and such a program is attached by
// RawTracepointOpen with a nil Name. AttachType must be the program's
// expected attach type. Cookie is read from 5.19, for tp_btf from 6.10.
func LinkCreateTracing(a *LinkCreateTracingAttr) (int, error) {
	l := linkCreate(unsafe.Pointer(a))
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(a), l.describe, linkCreateHint)
}

func (a *LinkCreateTracingAttr) fields() string {
	return fmt.Sprintf("prog_fd=%d target_fd=%d attach_type=%s flags=%#x "+
		"target_btf_id=%d cookie=%#x", a.ProgFD, int32(a.TargetFD),
		AttachTypeName(a.AttachType), a.Flags, a.TargetBTFID, a.Cookie)
}

// LinkCreateKprobeMultiAttr is union bpf_attr's link_create with
// kprobe_multi (5.18), fields as the uapi names them: one link, through
// fprobe, on Cnt kernel functions. Syms points at C string pointers, or
// Addrs at addresses.
type LinkCreateKprobeMultiAttr struct {
	ProgFD      uint32
	TargetFD    uint32
	AttachType  uint32
	Flags       uint32
	KprobeFlags uint32 // kprobe_multi.flags: BPF_F_KPROBE_MULTI_RETURN
	Cnt         uint32
	Syms        Pointer
	Addrs       Pointer
	Cookies     Pointer
	_           [AttrSize - 48]byte
}

// LinkCreateKprobeMulti is BPF_LINK_CREATE with the kprobe_multi member
// (5.18; AttachType must be BPF_TRACE_KPROBE_MULTI); it returns the link's
// fd. Kernels without CONFIG_FPROBE answer EOPNOTSUPP.
func LinkCreateKprobeMulti(a *LinkCreateKprobeMultiAttr) (int, error) {
	l := linkCreate(unsafe.Pointer(a))
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(a), l.describe, linkCreateHint)
}

func (a *LinkCreateKprobeMultiAttr) fields() string {
	return fmt.Sprintf("prog_fd=%d attach_type=%s kprobe_multi.flags=%#x cnt=%d",
		a.ProgFD, AttachTypeName(a.AttachType), a.KprobeFlags, a.Cnt)
}

// LinkCreateUprobeMultiAttr is union bpf_attr's link_create with
// uprobe_multi (6.6), fields as the uapi names them: one link on Cnt
// places of the file at Path (a NUL-terminated path), given as file
// offsets. RefCtrOffsets (USDT semaphores) and Cookies, if set, hold Cnt
// values too. PID, if not 0, runs the program for that process only.
type LinkCreateUprobeMultiAttr struct {
	ProgFD        uint32
	TargetFD      uint32
	AttachType    uint32
	Flags         uint32
	Path          Pointer // uprobe_multi.path
	Offsets       Pointer // uprobe_multi.offsets: u64 each
	RefCtrOffsets Pointer // uprobe_multi.ref_ctr_offsets: u64 each
	Cookies       Pointer // uprobe_multi.cookies: u64 each
	Cnt           uint32  // uprobe_multi.cnt
	UprobeFlags   uint32  // uprobe_multi.flags: BPF_F_UPROBE_MULTI_RETURN
	PID           uint32  // uprobe_multi.pid
	_             [AttrSize - 60]byte
}

// LinkCreateUprobeMulti is BPF_LINK_CREATE with the uprobe_multi member
// (6.6; AttachType must be BPF_TRACE_UPROBE_MULTI); it returns the link's
// fd.
func LinkCreateUprobeMulti(a *LinkCreateUprobeMultiAttr) (int, error) {
	l := linkCreate(unsafe.Pointer(a))
	return callFD(unix.BPF_LINK_CREATE, unsafe.Pointer(a), l.describe, linkCreateHint)
}

func (a *LinkCreateUprobeMultiAttr) fields() string {
	return fmt.Sprintf("prog_fd=%d attach_type=%s uprobe_multi.path=%q flags=%#x cnt=%d pid=%d",
		a.ProgFD, AttachTypeName(a.AttachType), cString(a.Path), a.UprobeFlags, a.Cnt, a.PID)
}

// LinkDetachAttr is union bpf_attr's link_detach, fields as the uapi names them.
type LinkDetachAttr struct {
	LinkFD uint32
	_      [AttrSize - 4]byte
}

// LinkDetach is BPF_LINK_DETACH (5.9): the link stays open but its program
// no longer runs.
func LinkDetach(a *LinkDetachAttr) error {
	return do(unix.BPF_LINK_DETACH, unsafe.Pointer(a), a.describe, noHint)
}

func (a *LinkDetachAttr) describe() string { return fmt.Sprintf("link_fd=%d", a.LinkFD) }

// TaskFDQueryAttr is union bpf_attr's task_fd_query, fields as the uapi
// names them. For file FD of process PID, the kernel answers the program,
// FDType (BPF_FD_TYPE_*), the name in Buf (BufLen), and a probe's offset
// or address.
type TaskFDQueryAttr struct {
	PID         uint32
	FD          uint32
	Flags       uint32
	BufLen      uint32
	Buf         Pointer
	ProgID      uint32
	FDType      uint32
	ProbeOffset uint64
	ProbeAddr   uint64
	_           [AttrSize - 48]byte
}

// TaskFDQuery is BPF_TASK_FD_QUERY (4.18): which program runs through file
// FD of process PID (a perf event or raw tracepoint link), and where.
// ENOSPC: the name did not fit Buf; ENOENT: no program; ENOTSUPP: another
// kind of file.
func TaskFDQuery(a *TaskFDQueryAttr) error {
	return do(unix.BPF_TASK_FD_QUERY, unsafe.Pointer(a), a.describe, noHint)
}

func (a *TaskFDQueryAttr) describe() string {
	return fmt.Sprintf("pid=%d fd=%d buf_len=%d", a.PID, a.FD, a.BufLen)
}
