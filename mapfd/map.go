package mapfd

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Type is a map type, enum bpf_map_type.
type Type uint32

// The map types bpfkit knows; any other bpf_map_type value works as well.
const (
	// Hash maps keys of any size to values.
	Hash Type = unix.BPF_MAP_TYPE_HASH
	// Array maps u32 indexes to values, all present, zeroed.
	Array Type = unix.BPF_MAP_TYPE_ARRAY
	// ProgArray holds program fds, for bpf_tail_call.
	ProgArray Type = unix.BPF_MAP_TYPE_PROG_ARRAY
	// PerfEventArray holds perf event fds, for bpf_perf_event_output.
	PerfEventArray Type = unix.BPF_MAP_TYPE_PERF_EVENT_ARRAY
	// PerCPUHash holds a value per possible CPU for each key.
	PerCPUHash Type = unix.BPF_MAP_TYPE_PERCPU_HASH
	// PerCPUArray holds a value per possible CPU for each index.
	PerCPUArray Type = unix.BPF_MAP_TYPE_PERCPU_ARRAY
	// StackTrace holds stacks by id, for bpf_get_stackid.
	StackTrace Type = unix.BPF_MAP_TYPE_STACK_TRACE
	// LRUHash is a hash that evicts the least recently used.
	LRUHash Type = unix.BPF_MAP_TYPE_LRU_HASH
	// LRUPerCPUHash is an LRU hash with a value per CPU.
	LRUPerCPUHash Type = unix.BPF_MAP_TYPE_LRU_PERCPU_HASH
	// Queue is a FIFO without keys (4.20).
	Queue Type = unix.BPF_MAP_TYPE_QUEUE
	// Stack is a LIFO without keys (4.20).
	Stack Type = unix.BPF_MAP_TYPE_STACK
	// RingBuf is the BPF ring buffer (5.8). MaxEntries is its size in
	// bytes, a power of 2 and a multiple of the page size.
	RingBuf Type = unix.BPF_MAP_TYPE_RINGBUF
)

// String is the type's name as in the uapi's enum bpf_map_type, without
// its prefix and in lower case ("percpu_hash"), as the journal prints it.
func (t Type) String() string { return sys.MapTypeName(uint32(t)) }

// PerCPU reports whether the map holds one value per possible CPU.
func (t Type) PerCPU() bool {
	switch t {
	case PerCPUHash, PerCPUArray, LRUPerCPUHash, unix.BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE:
		return true
	}
	return false
}

// Flags for Update, as in the uapi header.
const (
	BPF_ANY     = unix.BPF_ANY     // create or replace
	BPF_NOEXIST = unix.BPF_NOEXIST // create only
	BPF_EXIST   = unix.BPF_EXIST   // replace only
	BPF_F_LOCK  = unix.BPF_F_LOCK  // take the value's bpf_spin_lock (5.1)
)

// Flags for Spec.Flags (map_flags), as in the uapi header.
const (
	BPF_F_NO_PREALLOC    = unix.BPF_F_NO_PREALLOC    // hash: allocate at update, not all at create
	BPF_F_NO_COMMON_LRU  = unix.BPF_F_NO_COMMON_LRU  // LRU hash: an LRU list per CPU
	BPF_F_RDONLY         = unix.BPF_F_RDONLY         // user space only reads, through this fd
	BPF_F_WRONLY         = unix.BPF_F_WRONLY         // user space only writes, through this fd
	BPF_F_RDONLY_PROG    = unix.BPF_F_RDONLY_PROG    // programs only read (5.2)
	BPF_F_WRONLY_PROG    = unix.BPF_F_WRONLY_PROG    // programs only write (5.2)
	BPF_F_STACK_BUILD_ID = unix.BPF_F_STACK_BUILD_ID // stack trace: build id and offset per frame
	// BPF_F_PRESERVE_ELEMS: a perf event array keeps its events when its
	// creator's fd closes (5.10).
	BPF_F_PRESERVE_ELEMS = unix.BPF_F_PRESERVE_ELEMS
	// BPF_F_INNER_MAP: on an InnerMap template, the inner maps may differ
	// in MaxEntries (5.10).
	BPF_F_INNER_MAP = unix.BPF_F_INNER_MAP
)

// ErrKeyNotExist is returned for a key that is not in the map. It matches
// unix.ENOENT too.
var ErrKeyNotExist error = keyNotExist{}

type keyNotExist struct{}

func (keyNotExist) Error() string        { return "mapfd: key does not exist" }
func (keyNotExist) Is(target error) bool { return target == unix.ENOENT }
func notExist(err error) bool            { return errors.Is(err, unix.ENOENT) }

// ErrClosed is returned by every operation on a closed Map.
var ErrClosed = errors.New("mapfd: map is closed")

// wrap says which map and operation err comes from; nil stays nil.
func (m *Map) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return sys.Wrap("mapfd", err, "map %s %s", sys.QuoteName(m.name), op)
}

// Spec describes a map to create.
type Spec struct {
	Type    Type   // the map type
	KeySize uint32 // bytes; zero for a PerfEventArray or ProgArray means 4
	// ValueSize is in bytes, per CPU for per-CPU maps; zero for a
	// PerfEventArray or ProgArray means 4 (an fd).
	ValueSize uint32
	// MaxEntries is the capacity. Zero for a PerfEventArray means one entry
	// per possible CPU, what bpf_perf_event_output with BPF_F_CURRENT_CPU
	// and perfring.NewPerfReader need.
	MaxEntries uint32
	Flags      uint32 // map_flags: BPF_F_NO_PREALLOC, BPF_F_RDONLY_PROG, ...
	Name       string // kept to its first 15 bytes, of [A-Za-z0-9_.]
	InnerMap   *Map   // the template of an array or hash of maps
}

// Map is an open BPF map. Its methods may be called from several goroutines,
// but not concurrently with Close.
type Map struct {
	fd         sys.FD
	typ        Type
	keySize    uint32
	valueSize  uint32 // of the buffer a lookup fills: stride × CPUs for per-CPU maps
	maxEntries uint32
	name       string
	noSleep    bool // element operations never sleep: see sys.MapLookupElemNoSleep
}

// Create makes a new map. A map whose sizes break its type's rule is
// refused before the kernel is asked. A ring buffer's size, say, must be a
// power of two and a multiple of the page size, and an array's key is 4
// bytes. The error says the rule and wraps EINVAL, as the kernel's would.
func Create(spec Spec) (*Map, error) {
	name, err := sys.NewObjName(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("mapfd: map create: %w", err)
	}
	if spec.Type == PerfEventArray || spec.Type == ProgArray {
		spec.KeySize, spec.ValueSize = cmp.Or(spec.KeySize, 4), cmp.Or(spec.ValueSize, 4)
	}
	if spec.Type == PerfEventArray && spec.MaxEntries == 0 {
		n, err := sys.PossibleCPUs()
		if err != nil {
			return nil, fmt.Errorf("mapfd: map create %s: %w", sys.QuoteName(spec.Name), err)
		}
		spec.MaxEntries = uint32(n)
	}
	if err := checkSizes(spec); err != nil {
		return nil, err
	}
	attr := sys.MapCreateAttr{
		MapType:    uint32(spec.Type),
		KeySize:    spec.KeySize,
		ValueSize:  spec.ValueSize,
		MaxEntries: spec.MaxEntries,
		MapFlags:   spec.Flags,
		MapName:    name,
	}
	if spec.InnerMap != nil {
		if spec.InnerMap.fd.Int() < 0 {
			return nil, fmt.Errorf("%w: the inner map of %s", ErrClosed, sys.QuoteName(spec.Name))
		}
		attr.InnerMapFD = uint32(spec.InnerMap.fd.Int())
	}
	fd, err := sys.MapCreate(&attr)
	if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
		fd, err = sys.MapCreate(&attr)
	}
	if err != nil {
		return nil, refused(spec, err)
	}
	return newMap(fd, spec.Type, spec.KeySize, spec.ValueSize, spec.MaxEntries, attr.MapName.String())
}

func newMap(fd int, typ Type, key, value, max uint32, name string) (*Map, error) {
	m := &Map{typ: typ, keySize: key, valueSize: value, maxEntries: max, name: name}
	switch typ {
	case Hash, Array, PerCPUHash, PerCPUArray, LRUHash, LRUPerCPUHash:
		m.noSleep = true
	}
	m.fd.Set(fd)
	if typ.PerCPU() {
		n, err := sys.PossibleCPUs()
		// In 64 bits: value+7 and the product both wrap in 32.
		size := uint64(n) * ((uint64(value) + 7) &^ 7)
		if err == nil && size > math.MaxUint32 {
			err = fmt.Errorf("per-CPU value of %d bytes times %d CPUs is more than a lookup can take",
				value, n)
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("mapfd: map %s: %w", sys.QuoteName(name), err)
		}
		m.valueSize = uint32(size)
	}
	return m, nil
}

// Open opens the map pinned at path in a BPF file system.
func Open(path string) (*Map, error) {
	fd, err := sys.OpenPinned(path, sys.ObjMap)
	if err != nil {
		return nil, fmt.Errorf("mapfd: open pinned map %s: %w", path, err)
	}
	return fromFD(fd)
}

// OpenID opens the map with the kernel-wide id (needs CAP_SYS_ADMIN).
func OpenID(id uint32) (*Map, error) {
	fd, err := sys.MapGetFDByID(&sys.GetIDAttr{ID: id})
	if err != nil {
		return nil, fmt.Errorf("mapfd: open map id %d: %w", id, err)
	}
	return fromFD(fd)
}

// NextID is the smallest id above after of a map in the kernel, or 0
// after the last (BPF_MAP_GET_NEXT_ID; needs CAP_SYS_ADMIN).
func NextID(after uint32) (uint32, error) {
	attr := sys.GetIDAttr{ID: after}
	err := sys.MapGetNextID(&attr)
	// Ids are below INT_MAX; past it the kernel answers EINVAL.
	if notExist(err) || after >= math.MaxInt32 {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("mapfd: next map id after %d: %w", after, err)
	}
	return attr.NextID, nil
}

func fromFD(fd int) (*Map, error) {
	var info sys.MapInfo
	if err := sys.InfoByFD(fd, &info); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapfd: map info: %w", err)
	}
	name := info.Name.String()
	return newMap(fd, Type(info.Type), info.KeySize, info.ValueSize, info.MaxEntries, name)
}

// FD is the map's file descriptor, for programs that reference it
// (insn.LoadMapFD) and for prog and perf event arrays. -1 once closed.
func (m *Map) FD() int { return m.fd.Int() }

// String says what the map is: `map "drops" (hash, key 16, value 8, 10240
// entries, fd 4)`.
func (m *Map) String() string {
	fd := fmt.Sprintf("fd %d", m.fd.Int())
	if m.fd.Int() < 0 {
		fd = "closed"
	}
	return fmt.Sprintf("map %s (%s, key %d, value %d, %d entries, %s)",
		sys.QuoteName(m.name), m.typ, m.keySize, m.valueSize, m.maxEntries, fd)
}

// Type is the map's type.
func (m *Map) Type() Type { return m.typ }

// KeySize is the size of a key in bytes.
func (m *Map) KeySize() uint32 { return m.keySize }

// MaxEntries is the map's max_entries: its capacity, or for a ring buffer
// its size in bytes.
func (m *Map) MaxEntries() uint32 { return m.maxEntries }

// Name is the map's name as the kernel keeps it (at most 15 bytes).
func (m *Map) Name() string { return m.name }

// ValueSize is the size of the buffer Lookup fills and Update reads: for a
// per-CPU map, the value rounded up to 8 bytes times sys.PossibleCPUs.
func (m *Map) ValueSize() uint32 { return m.valueSize }

// Close releases the map's fd; the kernel frees the map when nothing else
// (a program, a pin, an fd) holds it. Closing twice is harmless.
func (m *Map) Close() error { return m.wrap("close", m.fd.Close()) }

// check checks key, and value unless the call takes none, against the
// map's sizes.
func (m *Map) check(key, value []byte, takesValue bool) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	if len(key) != int(m.keySize) || (takesValue && len(value) != int(m.valueSize)) {
		return fmt.Errorf("mapfd: map %s: key of %d bytes and value of %d, want %d and %d",
			sys.QuoteName(m.name), len(key), len(value), m.keySize, m.valueSize)
	}
	return nil
}

// ptr is the address of b's first byte, or nil for an empty b (a map with
// zero-sized keys, such as a queue).
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Lookup copies the value of key into value, which must be ValueSize bytes.
func (m *Map) Lookup(key, value []byte) error {
	if err := m.check(key, value, true); err != nil {
		return err
	}
	return m.lookup(ptr(key), ptr(value))
}

// elemOp runs an element command, without the runtime's system call
// bookkeeping for the map types whose element operations never sleep. A
// missing key is ErrKeyNotExist, but to an update.
func (m *Map) elemOp(cmd int, key, value unsafe.Pointer, flags uint64) error {
	attr := sys.MapElemAttr{
		MapFD: uint32(m.fd.Int()),
		Key:   sys.NewPointer(key),
		Value: sys.NewPointer(value),
		Flags: flags,
	}
	// Direct calls, not function values: through one, attr would escape
	// and every call would allocate.
	var err error
	switch {
	case cmd == unix.BPF_MAP_LOOKUP_ELEM && m.noSleep:
		err = sys.MapLookupElemNoSleep(&attr)
	case cmd == unix.BPF_MAP_LOOKUP_ELEM:
		err = sys.MapLookupElem(&attr)
	case cmd == unix.BPF_MAP_UPDATE_ELEM && m.noSleep:
		err = sys.MapUpdateElemNoSleep(&attr)
	case cmd == unix.BPF_MAP_UPDATE_ELEM:
		err = sys.MapUpdateElem(&attr)
	case cmd == unix.BPF_MAP_DELETE_ELEM && m.noSleep:
		err = sys.MapDeleteElemNoSleep(&attr)
	case cmd == unix.BPF_MAP_DELETE_ELEM:
		err = sys.MapDeleteElem(&attr)
	case cmd == unix.BPF_MAP_GET_NEXT_KEY && m.noSleep:
		err = sys.MapGetNextKeyNoSleep(&attr)
	case cmd == unix.BPF_MAP_GET_NEXT_KEY:
		err = sys.MapGetNextKey(&attr)
	case cmd == unix.BPF_MAP_LOOKUP_AND_DELETE_ELEM:
		err = sys.MapLookupAndDeleteElem(&attr)
	default:
		err = sys.MapFreeze(&attr)
	}
	switch {
	case err == nil:
		return nil
	case notExist(err) && cmd != unix.BPF_MAP_UPDATE_ELEM:
		return ErrKeyNotExist
	}
	return m.wrap(elemOps[cmd], err)
}

// elemOps names the element commands in errors.
var elemOps = [...]string{
	unix.BPF_MAP_LOOKUP_ELEM:            "lookup",
	unix.BPF_MAP_UPDATE_ELEM:            "update",
	unix.BPF_MAP_DELETE_ELEM:            "delete",
	unix.BPF_MAP_GET_NEXT_KEY:           "next key",
	unix.BPF_MAP_LOOKUP_AND_DELETE_ELEM: "lookup and delete",
	unix.BPF_MAP_FREEZE:                 "freeze",
}

func (m *Map) lookup(key, value unsafe.Pointer) error {
	return m.elemOp(unix.BPF_MAP_LOOKUP_ELEM, key, value, 0)
}

// Update sets key to value with flags BPF_ANY, BPF_NOEXIST or BPF_EXIST,
// optionally with BPF_F_LOCK.
func (m *Map) Update(key, value []byte, flags uint64) error {
	if err := m.check(key, value, true); err != nil {
		return err
	}
	return m.update(ptr(key), ptr(value), flags)
}

func (m *Map) update(key, value unsafe.Pointer, flags uint64) error {
	return m.elemOp(unix.BPF_MAP_UPDATE_ELEM, key, value, flags)
}

// Delete removes key.
func (m *Map) Delete(key []byte) error {
	if err := m.check(key, nil, false); err != nil {
		return err
	}
	return m.delete(ptr(key))
}

func (m *Map) delete(key unsafe.Pointer) error {
	return m.elemOp(unix.BPF_MAP_DELETE_ELEM, key, nil, 0)
}

// NextKey writes the key after key into next; a nil key asks for the first.
// At the end it returns ErrKeyNotExist. (A hash map restarts from its
// first key if key was deleted meanwhile.)
func (m *Map) NextKey(key, next []byte) error {
	if err := m.check(next, nil, false); err != nil {
		return err
	}
	if key != nil && len(key) != int(m.keySize) {
		return fmt.Errorf("mapfd: map %s: key of %d bytes, want %d",
			sys.QuoteName(m.name), len(key), m.keySize)
	}
	return m.nextKey(ptr(key), ptr(next))
}

func (m *Map) nextKey(key, next unsafe.Pointer) error {
	return m.elemOp(unix.BPF_MAP_GET_NEXT_KEY, key, next, 0)
}

// LookupAndDelete copies the value of key into value and removes it, in one
// step (hash maps since 5.14; for queues and stacks key is empty and the
// element popped is the next one).
func (m *Map) LookupAndDelete(key, value []byte) error {
	if err := m.check(key, value, true); err != nil {
		return err
	}
	return m.elemOp(unix.BPF_MAP_LOOKUP_AND_DELETE_ELEM, ptr(key), ptr(value), 0)
}

// Freeze makes the map read-only to user space (5.2); programs may still write
// unless it was created with BPF_F_RDONLY_PROG.
func (m *Map) Freeze() error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	return m.elemOp(unix.BPF_MAP_FREEZE, nil, nil, 0)
}

// Pin makes the map outlive the process at path, in a BPF file system
// (sys.BPFFSPath says which paths are accepted).
func (m *Map) Pin(path string) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	return m.wrap("pin at "+path, sys.Pin(m.fd.Int(), path))
}

// SetFD stores fd at index of a prog array (for bpf_tail_call), a perf
// event array (for bpf_perf_event_output) or another map of fds. The kernel
// swaps the entry atomically: a tail call sees the old program or the new.
func (m *Map) SetFD(index uint32, fd int) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	if m.keySize != 4 || m.valueSize != 4 {
		return fmt.Errorf("mapfd: map %s is not an fd array", sys.QuoteName(m.name))
	}
	v := uint32(fd)
	if int(int32(fd)) != fd {
		v = math.MaxUint32 // the kernel's EBADF, not the fd of fd's low 32 bits
	}
	return m.update(unsafe.Pointer(&index), unsafe.Pointer(&v), BPF_ANY)
}

// ClearFD empties index of an fd array; bpf_tail_call of an empty prog array
// slot falls through to the next instruction.
func (m *Map) ClearFD(index uint32) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	return m.delete(unsafe.Pointer(&index))
}

// Unpin removes a pinned object, map or program, from a BPF file system.
// It removes nothing else: a path outside a BPF file system and a
// directory are errors.
func Unpin(path string) error { return sys.Wrap("mapfd", sys.Unpin(path), "unpin") }

// Info is what the kernel reports about an open map.
type Info struct {
	ID         uint32 // the kernel's id of the map, as bpftool shows it
	Type       Type   // hash, array, ...
	KeySize    uint32 // bytes
	ValueSize  uint32 // bytes, of one CPU's value in a per-CPU map
	MaxEntries uint32 // the most elements it holds
	Flags      uint32 // BPF_F_* flags of its creation
	Name       string // up to 15 bytes
}

// Info asks the kernel about the map (BPF_OBJ_GET_INFO_BY_FD).
func (m *Map) Info() (Info, error) {
	var i sys.MapInfo
	if m.fd.Int() < 0 {
		return Info{}, ErrClosed
	}
	if err := sys.InfoByFD(m.fd.Int(), &i); err != nil {
		return Info{}, m.wrap("info", err)
	}
	return Info{
		ID:         i.ID,
		Type:       Type(i.Type),
		KeySize:    i.KeySize,
		ValueSize:  i.ValueSize,
		MaxEntries: i.MaxEntries,
		Flags:      i.MapFlags,
		Name:       i.Name.String(),
	}, nil
}
