package sys

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AttrSize is the size of every attr struct passed to bpf(2): union bpf_attr
// of every kernel we know (144 bytes in 6.1, 168 in 6.18) with room to grow.
// A zeroed tail past the kernel's size is accepted (else E2BIG). Less would
// be unsafe: the kernel writes some answers back whatever size it was told,
// BPF_PROG_QUERY's prog_cnt at offset 24 among them (TestProgQueryFullAttr).
const AttrSize = 256

// NewPointer wraps p.
func NewPointer(p unsafe.Pointer) Pointer { return Pointer{ptr: p} }

// SlicePointer points at the first byte of b, or is nil for an empty b.
func SlicePointer(b []byte) Pointer {
	if len(b) == 0 {
		return Pointer{}
	}
	return Pointer{ptr: unsafe.Pointer(&b[0])}
}

// StringPointer points at a NUL-terminated copy of s; a NUL inside s is
// EINVAL (the kernel would read "a\x00b" as "a").
func StringPointer(s string) (Pointer, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return Pointer{}, fmt.Errorf("sys: string %q holds a NUL byte at %d, where the kernel would end it: %w", s, i, unix.EINVAL)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return Pointer{ptr: unsafe.Pointer(&b[0])}, nil
}

// CheckPlain says why t cannot carry bytes to or from the kernel, if it
// cannot: only fixed-size data without Go pointers can, since the kernel
// would copy addresses the garbage collector does not know of.
func CheckPlain(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return nil
	case reflect.Array:
		return CheckPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := CheckPlain(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("sys: %s is not fixed-size plain data", t)
}

// ObjName is char[BPF_OBJ_NAME_LEN], the name of a map or program.
type ObjName [16]byte

// NewObjName keeps the first 15 bytes of name, NUL-terminated, after
// checking it has only what bpf_obj_name_cpy accepts (letters, digits, '_'
// and, since 5.1, '.'): else an EINVAL error names the first other byte.
func NewObjName(name string) (ObjName, error) {
	var n ObjName
	for i := range len(name) {
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.') {
			return n, fmt.Errorf("sys: name %q: byte %q at %d is not allowed (only A-Z, a-z, 0-9, '_' and '.'): %w", name, []byte{c}, i, unix.EINVAL)
		}
	}
	copy(n[:len(n)-1], name)
	return n, nil
}

// String is the name up to its NUL.
func (n ObjName) String() string { return unix.ByteSliceToString(n[:]) }

// QuoteName is a program's or map's name as messages show it: quoted, or
// (unnamed) for none, where "" would read as a name lost.
func QuoteName(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return strconv.Quote(name)
}

// MapCreateAttr is union bpf_attr for BPF_MAP_CREATE, fields as the uapi names them.
type MapCreateAttr struct {
	MapType               uint32
	KeySize               uint32
	ValueSize             uint32
	MaxEntries            uint32
	MapFlags              uint32
	InnerMapFD            uint32
	NumaNode              uint32
	MapName               ObjName
	MapIfindex            uint32
	BTFFD                 uint32
	BTFKeyTypeID          uint32
	BTFValueTypeID        uint32
	BTFVmlinuxValueTypeID uint32
	MapExtra              uint64 // 5.16
	ValueTypeBTFObjFD     int32  // 6.9
	MapTokenFD            int32  // 6.9
	_                     [AttrSize - 80]byte
}

// MapElemAttr is union bpf_attr for the BPF_MAP_*_ELEM commands,
// BPF_MAP_GET_NEXT_KEY (Value is next_key) and BPF_MAP_FREEZE, fields as
// the uapi names them.
type MapElemAttr struct {
	MapFD uint32
	_     uint32
	Key   Pointer
	Value Pointer
	Flags uint64
	_     [AttrSize - 32]byte
}

// MapBatchAttr is union bpf_attr's batch, fields as the uapi names them.
type MapBatchAttr struct {
	InBatch   Pointer
	OutBatch  Pointer
	Keys      Pointer
	Values    Pointer
	Count     uint32
	MapFD     uint32
	ElemFlags uint64
	Flags     uint64
	_         [AttrSize - 56]byte
}

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

// ObjAttr is union bpf_attr for BPF_OBJ_PIN and BPF_OBJ_GET, fields as the uapi names them.
type ObjAttr struct {
	Pathname  Pointer
	BPFFD     uint32
	FileFlags uint32
	PathFD    int32 // 6.5, with BPF_F_PATH_FD
	_         [AttrSize - 20]byte
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

// GetIDAttr is union bpf_attr for BPF_*_GET_NEXT_ID and BPF_*_GET_FD_BY_ID,
// fields as the uapi names them; ID is start_id, prog_id, map_id or link_id.
type GetIDAttr struct {
	ID        uint32
	NextID    uint32
	OpenFlags uint32
	_         [AttrSize - 12]byte
}

// InfoAttr is union bpf_attr's info, fields as the uapi names them.
type InfoAttr struct {
	BPFFD   uint32
	InfoLen uint32
	Info    Pointer
	_       [AttrSize - 16]byte
}

// RawTracepointAttr is union bpf_attr's raw_tracepoint, fields as the uapi names them.
type RawTracepointAttr struct {
	Name   Pointer
	ProgFD uint32
	_      uint32
	Cookie uint64 // 6.10
	_      [AttrSize - 24]byte
}

// LinkCreateAttr is union bpf_attr's link_create, fields as the uapi names
// them, with only perf_event.bpf_cookie (5.15) of its union at offset 16.
type LinkCreateAttr struct {
	ProgFD     uint32
	TargetFD   uint32
	AttachType uint32
	Flags      uint32
	Cookie     uint64 // perf_event.bpf_cookie
	_          [AttrSize - 24]byte
}

// LinkCreateTracingAttr is union bpf_attr's link_create for a tracing
// program (fentry, fexit, tp_btf, fields as the uapi names them), with
// tracing.cookie (5.19) at offset 24, not where perf_event.bpf_cookie
// lies: TargetFD and TargetBTFID name another BPF program's function to
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

// LinkCreateKprobeMultiAttr is union bpf_attr's link_create with
// kprobe_multi (5.18), fields as the uapi names them: one link, through
// fprobe, on Cnt kernel functions: Syms points at C string pointers, or
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

// LinkCreateUprobeMultiAttr is union bpf_attr's link_create with
// uprobe_multi (6.6), fields as the uapi names them: one link on Cnt
// places of the file at Path (a NUL-terminated path), given as file
// offsets; RefCtrOffsets (USDT semaphores) and Cookies, if set, hold Cnt
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

// LinkDetachAttr is union bpf_attr's link_detach, fields as the uapi names them.
type LinkDetachAttr struct {
	LinkFD uint32
	_      [AttrSize - 4]byte
}

// TaskFDQueryAttr is union bpf_attr's task_fd_query, fields as the uapi
// names them: for file FD of process PID, the kernel answers the program,
// FDType (BPF_FD_TYPE_*), the name in Buf (BufLen), a probe's offset or address.
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

// EnableStatsAttr is union bpf_attr's enable_stats, fields as the uapi names them.
type EnableStatsAttr struct {
	Type uint32
	_    [AttrSize - 4]byte
}
