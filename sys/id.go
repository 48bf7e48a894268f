package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the commands that walk the kernel's programs, maps,
// links and BTF objects by id, and open them by id: BPF_*_GET_NEXT_ID and
// BPF_*_GET_FD_BY_ID. All need CAP_SYS_ADMIN.

// GetIDAttr is union bpf_attr for BPF_*_GET_NEXT_ID and BPF_*_GET_FD_BY_ID,
// fields as the uapi names them; ID is start_id, prog_id, map_id or link_id.
type GetIDAttr struct {
	ID        uint32
	NextID    uint32
	OpenFlags uint32
	_         [AttrSize - 12]byte
}

func (a *GetIDAttr) describe() string { return fmt.Sprintf("id=%d", a.ID) }

// ProgGetNextID is BPF_PROG_GET_NEXT_ID: the smallest program id above ID,
// in NextID; ENOENT after the last.
func ProgGetNextID(a *GetIDAttr) error {
	return do(unix.BPF_PROG_GET_NEXT_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// ProgGetFDByID is BPF_PROG_GET_FD_BY_ID.
func ProgGetFDByID(a *GetIDAttr) (int, error) {
	return callFD(unix.BPF_PROG_GET_FD_BY_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// MapGetNextID is BPF_MAP_GET_NEXT_ID.
func MapGetNextID(a *GetIDAttr) error {
	return do(unix.BPF_MAP_GET_NEXT_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// MapGetFDByID is BPF_MAP_GET_FD_BY_ID.
func MapGetFDByID(a *GetIDAttr) (int, error) {
	return callFD(unix.BPF_MAP_GET_FD_BY_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// LinkGetNextID is BPF_LINK_GET_NEXT_ID (5.8).
func LinkGetNextID(a *GetIDAttr) error {
	return do(unix.BPF_LINK_GET_NEXT_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// LinkGetFDByID is BPF_LINK_GET_FD_BY_ID (5.8).
func LinkGetFDByID(a *GetIDAttr) (int, error) {
	return callFD(unix.BPF_LINK_GET_FD_BY_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// BTFGetNextID is BPF_BTF_GET_NEXT_ID (5.4): the smallest BTF object id
// above ID, in NextID (the kernel's, each module's, each program's).
func BTFGetNextID(a *GetIDAttr) error {
	return do(unix.BPF_BTF_GET_NEXT_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}

// BTFGetFDByID is BPF_BTF_GET_FD_BY_ID (5.0): an fd for BTF object ID,
// which a tracing program's load names as attach_btf_obj_fd.
func BTFGetFDByID(a *GetIDAttr) (int, error) {
	return callFD(unix.BPF_BTF_GET_FD_BY_ID, unsafe.Pointer(a), a.describe, needsSysAdmin)
}
