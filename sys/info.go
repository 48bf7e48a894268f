package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds BPF_OBJ_GET_INFO_BY_FD and the structs it fills.

// InfoAttr is union bpf_attr's info, fields as the uapi names them.
type InfoAttr struct {
	BPFFD   uint32
	InfoLen uint32
	Info    Pointer
	_       [AttrSize - 16]byte
}

// ObjGetInfoByFD is BPF_OBJ_GET_INFO_BY_FD; InfoByFD fills the typed structs.
func ObjGetInfoByFD(a *InfoAttr) error {
	return do(unix.BPF_OBJ_GET_INFO_BY_FD, unsafe.Pointer(a), a.describe, noHint)
}

func (a *InfoAttr) describe() string {
	return fmt.Sprintf("bpf_fd=%d info_len=%d", a.BPFFD, a.InfoLen)
}

// infoStruct is the set of bpf_*_info structs BPF_OBJ_GET_INFO_BY_FD fills.
type infoStruct interface {
	ProgInfo | MapInfo | LinkInfo | UprobeMultiLinkInfo | BTFInfo
}

// InfoByFD fills info for the program, map, link or BTF object fd.
func InfoByFD[T infoStruct](fd int, info *T) error {
	attr := InfoAttr{
		BPFFD:   uint32(arg32(fd)),
		InfoLen: uint32(unsafe.Sizeof(*info)),
		Info:    NewPointer(unsafe.Pointer(info)),
	}
	return ObjGetInfoByFD(&attr)
}

// ProgInfo is struct bpf_prog_info, its fields as the uapi names them. For
// an array (map ids, xlated instructions) point the field at a buffer and
// set its count or length: the kernel fills up to that and writes the full
// count.
type ProgInfo struct {
	Type                 uint32
	ID                   uint32
	Tag                  [8]byte
	JitedProgLen         uint32
	XlatedProgLen        uint32
	JitedProgInsns       Pointer
	XlatedProgInsns      Pointer
	LoadTime             uint64 // ns since boot
	CreatedByUID         uint32
	NrMapIDs             uint32
	MapIDs               Pointer
	Name                 ObjName
	Ifindex              uint32
	GPLCompatible        uint32 // bit 0
	NetnsDev             uint64
	NetnsIno             uint64
	NrJitedKsyms         uint32
	NrJitedFuncLens      uint32
	JitedKsyms           Pointer
	JitedFuncLens        Pointer
	BTFID                uint32
	FuncInfoRecSize      uint32
	FuncInfo             Pointer
	NrFuncInfo           uint32
	NrLineInfo           uint32
	LineInfo             Pointer
	JitedLineInfo        Pointer
	NrJitedLineInfo      uint32
	LineInfoRecSize      uint32
	JitedLineInfoRecSize uint32
	NrProgTags           uint32
	ProgTags             Pointer
	RunTimeNs            uint64 // with BPF_ENABLE_STATS (5.8)
	RunCnt               uint64
	RecursionMisses      uint64 // 5.12
	VerifiedInsns        uint32 // 5.16
	AttachBTFObjID       uint32 // 6.0
	AttachBTFID          uint32
	_                    uint32
}

// MapInfo is struct bpf_map_info, its fields as the uapi names them.
type MapInfo struct {
	Type                  uint32
	ID                    uint32
	KeySize               uint32
	ValueSize             uint32
	MaxEntries            uint32
	MapFlags              uint32
	Name                  ObjName
	Ifindex               uint32
	BTFVmlinuxValueTypeID uint32
	NetnsDev              uint64
	NetnsIno              uint64
	BTFID                 uint32
	BTFKeyTypeID          uint32
	BTFValueTypeID        uint32
	BTFVmlinuxID          uint32
	MapExtra              uint64
	Hash                  Pointer // 6.17
	HashSize              uint32
	_                     uint32
}

// LinkInfo is struct bpf_link_info, its fields as the uapi names them: a
// common head and a union by link type.
type LinkInfo struct {
	Type   uint32
	ID     uint32
	ProgID uint32
	_      uint32
	Union  [6]uint64
}

// UprobeMultiLinkInfo is struct bpf_link_info with its uprobe_multi member
// (6.8; 6.6 and 6.7 fill only the head), fields as the uapi names them.
// Point Path at a buffer of PathSize bytes, and Offsets, RefCtrOffsets and
// Cookies at Count u64s each, or leave them nil. The kernel sets PathSize,
// Count, Flags and PID; it answers ENOSPC, filling nothing, when Count is
// below the link's count.
type UprobeMultiLinkInfo struct {
	Type          uint32
	ID            uint32
	ProgID        uint32
	_             uint32
	Path          Pointer
	Offsets       Pointer
	RefCtrOffsets Pointer
	Cookies       Pointer
	PathSize      uint32
	Count         uint32
	Flags         uint32
	PID           uint32
}

// BTFInfo is struct bpf_btf_info (5.0; Name, NameLen and KernelBTF 5.11),
// its fields as the uapi names them. Point BTF at a buffer of BTFSize
// bytes for the raw BTF, and Name at one of NameLen for the name
// ("vmlinux", or a module's). KernelBTF is 1 for the kernel's and its
// modules' BTF.
type BTFInfo struct {
	BTF       Pointer
	BTFSize   uint32
	ID        uint32
	Name      Pointer
	NameLen   uint32
	KernelBTF uint32
}
