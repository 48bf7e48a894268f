package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the map commands: BPF_MAP_CREATE, the element commands
// and BPF_MAP_LOOKUP_BATCH, each beside its attr.

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

// MapCreate is BPF_MAP_CREATE; it returns the new map's fd.
func MapCreate(a *MapCreateAttr) (int, error) {
	return callFD(unix.BPF_MAP_CREATE, unsafe.Pointer(a), a.describe, mapCreateHint)
}

func (a *MapCreateAttr) describe() string {
	return fmt.Sprintf("map_type=%s key_size=%d value_size=%d max_entries=%d map_flags=%#x name=%q",
		MapTypeName(a.MapType), a.KeySize, a.ValueSize, a.MaxEntries, a.MapFlags, a.MapName)
}

func mapCreateHint(_ int, errno unix.Errno) string {
	if errno == unix.E2BIG {
		return "the key, value or max_entries is larger than this map type allows, or " + unknownField
	}
	return ""
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

// MapLookupElem is BPF_MAP_LOOKUP_ELEM: it copies the value of Key into Value.
func MapLookupElem(a *MapElemAttr) error {
	return do(unix.BPF_MAP_LOOKUP_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapUpdateElem is BPF_MAP_UPDATE_ELEM; Flags is BPF_ANY, BPF_NOEXIST or BPF_EXIST.
func MapUpdateElem(a *MapElemAttr) error {
	return do(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapDeleteElem is BPF_MAP_DELETE_ELEM.
func MapDeleteElem(a *MapElemAttr) error {
	return do(unix.BPF_MAP_DELETE_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapGetNextKey is BPF_MAP_GET_NEXT_KEY: it writes the key after Key (the
// first key if Key is nil) to Value, the next_key member.
func MapGetNextKey(a *MapElemAttr) error {
	return do(unix.BPF_MAP_GET_NEXT_KEY, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapLookupElemNoSleep is MapLookupElem for a map whose element operations
// never sleep in the kernel: hash and array maps, per-CPU and LRU. It skips
// the Go runtime's system call bookkeeping (entersyscall and exitsyscall),
// which lets another goroutine have the thread's P while the call blocks.
// On a map whose operations may sleep (a prog array's mutex, a sockmap's
// socket lock, a page fault) the P stays held meanwhile: the caller, who
// knows the map's type, decides.
func MapLookupElemNoSleep(a *MapElemAttr) error {
	return doNoSleep(unix.BPF_MAP_LOOKUP_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapUpdateElemNoSleep is MapUpdateElem for a map whose element operations
// never sleep (see MapLookupElemNoSleep).
func MapUpdateElemNoSleep(a *MapElemAttr) error {
	return doNoSleep(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapDeleteElemNoSleep is MapDeleteElem for a map whose element operations
// never sleep (see MapLookupElemNoSleep).
func MapDeleteElemNoSleep(a *MapElemAttr) error {
	return doNoSleep(unix.BPF_MAP_DELETE_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapGetNextKeyNoSleep is MapGetNextKey for a map whose element operations
// never sleep (see MapLookupElemNoSleep).
func MapGetNextKeyNoSleep(a *MapElemAttr) error {
	return doNoSleep(unix.BPF_MAP_GET_NEXT_KEY, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapLookupAndDeleteElem is BPF_MAP_LOOKUP_AND_DELETE_ELEM (queues and
// stacks since 4.20, hash maps since 5.14).
func MapLookupAndDeleteElem(a *MapElemAttr) error {
	return do(unix.BPF_MAP_LOOKUP_AND_DELETE_ELEM, unsafe.Pointer(a), a.describe, mapElemHint)
}

// MapFreeze is BPF_MAP_FREEZE (5.2): the map becomes read-only to user space.
func MapFreeze(a *MapElemAttr) error {
	return do(unix.BPF_MAP_FREEZE, unsafe.Pointer(a), a.describe, mapElemHint)
}

func (a *MapElemAttr) describe() string {
	return fmt.Sprintf("map_fd=%d flags=%#x", a.MapFD, a.Flags)
}

// mapElemHint is the element commands' hint: a static function, not a
// method value, which would cost each map lookup an inlining.
func mapElemHint(cmd int, errno unix.Errno) string {
	switch {
	case errno == unix.EPERM && (cmd == unix.BPF_MAP_UPDATE_ELEM || cmd == unix.BPF_MAP_DELETE_ELEM):
		// map_get_sys_perms
		return "the map is read-only to user space: frozen (BPF_MAP_FREEZE) or created with BPF_F_RDONLY"
	case errno == unix.E2BIG && cmd == unix.BPF_MAP_UPDATE_ELEM:
		return "the map is full (max_entries elements are in it), " +
			"or an array index is not below max_entries"
	case errno == unix.E2BIG && cmd == unix.BPF_MAP_DELETE_ELEM: // fd_array_map_delete_elem
		return "an fd array index is not below max_entries"
	}
	return ""
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

// MapLookupBatch is BPF_MAP_LOOKUP_BATCH (5.6). On return Count holds the
// number of elements copied; ENOENT means the walk reached the end.
func MapLookupBatch(a *MapBatchAttr) error {
	return do(unix.BPF_MAP_LOOKUP_BATCH, unsafe.Pointer(a), a.describe, noHint)
}

func (a *MapBatchAttr) describe() string {
	return fmt.Sprintf("map_fd=%d count=%d", a.MapFD, a.Count)
}
