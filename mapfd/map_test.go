package mapfd_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }

func create(t testing.TB, spec mapfd.Spec) *mapfd.Map {
	t.Helper()
	m, err := mapfd.Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestHashAndArray(t *testing.T) {
	testutil.RequireRoot(t)
	for _, typ := range []mapfd.Type{mapfd.Hash, mapfd.LRUHash, mapfd.Array} {
		max := uint32(8)
		if typ == mapfd.LRUHash {
			max = 128 // the LRU evicts early when it is nearly full: its free lists are per CPU
		}
		m := create(t, mapfd.Spec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: max, Name: "basic"})
		for k := uint32(0); k < 8; k++ {
			if err := m.Update(u32(k), u64(uint64(k)*3), mapfd.BPF_ANY); err != nil {
				t.Fatal(err)
			}
		}
		v := make([]byte, 8)
		if err := m.Lookup(u32(5), v); err != nil || binary.LittleEndian.Uint64(v) != 15 {
			t.Fatalf("type %d: lookup 5 = %x, %v", typ, v, err)
		}
		if err := m.Update(u32(5), u64(1), mapfd.BPF_NOEXIST); !errors.Is(err, unix.EEXIST) {
			t.Fatalf("type %d: BPF_NOEXIST on a present key: %v", typ, err)
		}
		seen := map[uint32]uint64{}
		var err error
		for k, v := range m.All(&err) {
			seen[binary.LittleEndian.Uint32(k)] = binary.LittleEndian.Uint64(v)
		}
		if err != nil || len(seen) != 8 || seen[7] != 21 {
			t.Fatalf("type %d: iterated %v, %v", typ, seen, err)
		}
		if typ == mapfd.Array {
			if err := m.Lookup(u32(8), v); !errors.Is(err, mapfd.ErrKeyNotExist) || !errors.Is(err, unix.ENOENT) {
				t.Fatalf("array index out of range: %v", err)
			}
			continue
		}
		if err := m.Delete(u32(5)); err != nil {
			t.Fatal(err)
		}
		if err := m.Lookup(u32(5), v); !errors.Is(err, mapfd.ErrKeyNotExist) {
			t.Fatalf("lookup of deleted key: %v", err)
		}
		if err := m.Delete(u32(5)); !errors.Is(err, mapfd.ErrKeyNotExist) {
			t.Fatalf("second delete: %v", err)
		}
		if err := m.LookupAndDelete(u32(6), v); err != nil || binary.LittleEndian.Uint64(v) != 18 {
			t.Fatalf("lookup and delete: %x %v", v, err)
		}
	}
}

func TestBadSizes(t *testing.T) {
	testutil.RequireRoot(t)
	m := create(t, mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "sizes"})
	if err := m.Update(u64(1), u64(1), 0); err == nil || !strings.Contains(err.Error(), "key of 8 bytes") {
		t.Fatalf("8-byte key into a 4-byte map: %v", err)
	}
	_, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 0, ValueSize: 8, MaxEntries: 1, Name: "bad"})
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), `map create "bad"`) {
		t.Fatalf("hash with 0-byte keys: %v", err)
	}
	m.Close()
	if err := m.Lookup(u32(1), u64(0)); !errors.Is(err, mapfd.ErrClosed) || m.Close() != nil {
		t.Fatalf("use after close: %v", err)
	}
}

func TestPerCPU(t *testing.T) {
	testutil.RequireRoot(t)
	n, err := sys.PossibleCPUs()
	if err != nil {
		t.Fatal(err)
	}
	// 12-byte values are rounded to 16 per CPU.
	m := create(t, mapfd.Spec{Type: mapfd.PerCPUArray, KeySize: 4, ValueSize: 12, MaxEntries: 2, Name: "pcpu"})
	if m.ValueSize() != uint32(16*n) {
		t.Fatalf("per-CPU value size %d, want %d", m.ValueSize(), 16*n)
	}
	in := make([]byte, m.ValueSize())
	for cpu := range n {
		binary.LittleEndian.PutUint32(in[cpu*16:], uint32(100+cpu))
	}
	if err := m.Update(u32(1), in, mapfd.BPF_ANY); err != nil {
		t.Fatal(err)
	}
	tm, err := mapfd.NewTyped[uint32, [2]uint64](m)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][2]uint64, n)
	if err := tm.LookupPerCPU(1, out); err != nil {
		t.Fatal(err)
	}
	for cpu := range n {
		if out[cpu][0] != uint64(100+cpu) {
			t.Errorf("cpu %d value %d", cpu, out[cpu][0])
		}
	}
}

type key struct {
	PID  uint32
	Kind uint16
	_    uint16
}

func TestTyped(t *testing.T) {
	testutil.RequireRoot(t)
	m := create(t, mapfd.Spec{Type: mapfd.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 100, Name: "typed"})
	if _, err := mapfd.NewTyped[uint32, uint64](m); err == nil {
		t.Fatal("4-byte key type accepted for an 8-byte key")
	}
	if _, err := mapfd.NewTyped[key, *int](m); err == nil {
		t.Fatal("pointer value type accepted")
	}
	tm, err := mapfd.NewTyped[key, uint64](m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint32(10) {
		if err := tm.Update(key{PID: i, Kind: 2}, uint64(i)*uint64(i), mapfd.BPF_NOEXIST); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := tm.Lookup(key{PID: 7, Kind: 2}); err != nil || v != 49 {
		t.Fatalf("lookup = %d, %v", v, err)
	}
	if _, err := tm.Lookup(key{PID: 7, Kind: 3}); !errors.Is(err, mapfd.ErrKeyNotExist) {
		t.Fatalf("lookup of a missing key: %v", err)
	}
	sum := uint64(0)
	var iterErr error
	for k, v := range tm.All(&iterErr) {
		if v != uint64(k.PID)*uint64(k.PID) {
			t.Errorf("key %+v value %d", k, v)
		}
		sum += v
	}
	if iterErr != nil || sum != 285 {
		t.Fatalf("sum over All = %d, %v", sum, iterErr)
	}
	allocs := testing.AllocsPerRun(100, func() {
		tm.Update(key{PID: 3, Kind: 2}, 9, mapfd.BPF_ANY)
		tm.Lookup(key{PID: 3, Kind: 2})
		tm.Lookup(key{PID: 99}) // a miss
	})
	if allocs != 0 {
		t.Fatalf("typed update+lookup+miss allocates %.1f times", allocs)
	}
	k, v := make([]byte, 8), make([]byte, 8)
	if allocs := testing.AllocsPerRun(100, func() { m.Lookup(k, v); m.Update(k, v, 0) }); allocs != 0 {
		t.Fatalf("byte update+lookup allocates %.1f times", allocs)
	}
}

func TestBatch(t *testing.T) {
	testutil.RequireRoot(t)
	m := create(t, mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1000, Name: "batch"})
	for k := range uint32(1000) {
		m.Update(u32(k), u64(uint64(k)+1), 0)
	}
	keys, values := make([]byte, 4*64), make([]byte, 8*64)
	var c mapfd.BatchCursor
	got := map[uint32]bool{}
	for {
		n, err := m.LookupBatch(&c, keys, values)
		for i := range n {
			k := binary.LittleEndian.Uint32(keys[4*i:])
			if binary.LittleEndian.Uint64(values[8*i:]) != uint64(k)+1 || got[k] {
				t.Fatalf("batch element %d: key %d seen %v", i, k, got[k])
			}
			got[k] = true
		}
		if errors.Is(err, mapfd.ErrBatchEnd) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1000 {
		t.Fatalf("batch walk saw %d keys, want 1000", len(got))
	}
}

func TestFreezePinOpen(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	dir := testutil.BPFFS(t)
	m := create(t, mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4, MaxEntries: 4, Name: "pinned"})
	m.Update(u32(2), u32(42), 0)
	if err := m.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(u32(2), u32(1), 0); !errors.Is(err, unix.EPERM) {
		t.Fatalf("update of frozen map: %v", err)
	}
	path := filepath.Join(dir, "counts")
	if err := m.Pin(path); err != nil {
		t.Fatal(err)
	}
	m2, err := mapfd.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	v := make([]byte, 4)
	if err := m2.Lookup(u32(2), v); err != nil || binary.LittleEndian.Uint32(v) != 42 || m2.Name() != "pinned" || m2.Type() != mapfd.Array {
		t.Fatalf("reopened map: %x %v %q", v, err, m2.Name())
	}
	info, _ := m.Info()
	m3, err := mapfd.OpenID(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	m3.Close()
	if err := mapfd.Unpin(path); err != nil {
		t.Fatal(err)
	}
	if _, err := mapfd.Open(path); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("open after unpin: %v", err)
	}
}

func TestSpecialTypes(t *testing.T) {
	testutil.RequireRoot(t)
	n, _ := sys.PossibleCPUs()
	create(t, mapfd.Spec{Type: mapfd.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: uint32(n), Name: "events"})
	create(t, mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 1 << 16, Name: "ring"})
	create(t, mapfd.Spec{Type: mapfd.PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Name: "pchash"})
	pa := create(t, mapfd.Spec{Type: mapfd.ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4, Name: "jumps"})
	if err := pa.SetFD(0, pa.FD()); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("a map fd in a prog array: %v, want EINVAL", err)
	}
	q := create(t, mapfd.Spec{Type: mapfd.Queue, ValueSize: 4, MaxEntries: 4, Name: "queue"})
	for i := range uint32(3) {
		if err := q.Update(nil, u32(i+10), 0); err != nil {
			t.Fatal(err)
		}
	}
	v := make([]byte, 4)
	if err := q.LookupAndDelete(nil, v); err != nil || binary.LittleEndian.Uint32(v) != 10 {
		t.Fatalf("queue pop: %x %v", v, err)
	}
}

// TestMapFlags: Spec.Flags reach the kernel: an LPM trie is made only with
// BPF_F_NO_PREALLOC (EINVAL without); a hash keeps it in its flags, while
// BPF_F_RDONLY belongs to the fd, not the map (the kernel drops it from
// map_flags, bpf_map_flags_retain_permanent), and that fd refuses updates
// (EPERM) but not lookups.
func TestMapFlags(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	lpm := mapfd.Spec{Type: unix.BPF_MAP_TYPE_LPM_TRIE, KeySize: 8, ValueSize: 8, MaxEntries: 16, Name: "lpm"}
	if m, err := mapfd.Create(lpm); !errors.Is(err, unix.EINVAL) {
		t.Errorf("an LPM trie without BPF_F_NO_PREALLOC: %v, want EINVAL", err)
		if err == nil {
			m.Close()
		}
	}
	lpm.Flags = mapfd.BPF_F_NO_PREALLOC
	create(t, lpm)
	m := create(t, mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 16, Name: "ro",
		Flags: mapfd.BPF_F_NO_PREALLOC | mapfd.BPF_F_RDONLY})
	if info, err := m.Info(); err != nil || info.Flags != mapfd.BPF_F_NO_PREALLOC {
		t.Errorf("map_flags %#x, %v; want BPF_F_NO_PREALLOC (%#x)", info.Flags, err, mapfd.BPF_F_NO_PREALLOC)
	}
	if err := m.Update(u32(1), u32(2), mapfd.BPF_ANY); !errors.Is(err, unix.EPERM) {
		t.Errorf("update through a BPF_F_RDONLY fd: %v, want EPERM", err)
	}
	if err := m.Lookup(u32(1), make([]byte, 4)); !errors.Is(err, mapfd.ErrKeyNotExist) {
		t.Errorf("lookup through a BPF_F_RDONLY fd: %v, want ErrKeyNotExist", err)
	}
}

// TestString: fmt.Print of a map says what it is.
func TestString(t *testing.T) {
	testutil.RequireRoot(t)
	m := create(t, mapfd.Spec{Type: mapfd.Hash, KeySize: 16, ValueSize: 8, MaxEntries: 64, Name: "drops"})
	if got, want := fmt.Sprint(m), fmt.Sprintf(`map "drops" (hash, key 16, value 8, 64 entries, fd %d)`, m.FD()); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	m.Close()
	if got := fmt.Sprint(m); got != `map "drops" (hash, key 16, value 8, 64 entries, closed)` {
		t.Fatalf("closed: %q", got)
	}
}

// TestDefaults: a perf event array or prog array from a Spec with zero
// sizes gets 4-byte keys and fd values, and a perf event array one entry
// per possible CPU.
func TestDefaults(t *testing.T) {
	testutil.RequireRoot(t)
	n, _ := sys.PossibleCPUs()
	pe := create(t, mapfd.Spec{Type: mapfd.PerfEventArray, Name: "events"})
	pa := create(t, mapfd.Spec{Type: mapfd.ProgArray, MaxEntries: 8, Name: "jumps"})
	for _, c := range []struct {
		m                   *mapfd.Map
		key, value, entries uint32
	}{{pe, 4, 4, uint32(n)}, {pa, 4, 4, 8}} {
		info, err := c.m.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.KeySize != c.key || info.ValueSize != c.value || info.MaxEntries != c.entries {
			t.Fatalf("%v: the kernel has key %d, value %d, %d entries", c.m, info.KeySize, info.ValueSize, info.MaxEntries)
		}
	}
}

// TestCreateTyped: sizes come from the Go types; sizes that disagree with
// them, or types holding pointers, are refused and leave no map behind.
func TestCreateTyped(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	type key struct {
		PID  uint32
		Kind uint16
		_    uint16
	}
	m, err := mapfd.CreateTyped[key, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 16, Name: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Map().KeySize() != 8 || m.Map().ValueSize() != 8 || m.FD() != m.Map().FD() {
		t.Fatalf("%v", m.Map())
	}
	if err := m.Update(key{PID: 7, Kind: 2}, 42, mapfd.BPF_ANY); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Lookup(key{PID: 7, Kind: 2}); err != nil || v != 42 {
		t.Fatalf("lookup: %d %v", v, err)
	}
	if _, err := mapfd.CreateTyped[key, uint64](mapfd.Spec{Type: mapfd.Hash, KeySize: 4, MaxEntries: 16}); err == nil ||
		!strings.Contains(err.Error(), "the types' are 8 and 8") {
		t.Fatalf("key size 4 for an 8-byte key type: %v", err)
	}
	if _, err := mapfd.CreateTyped[*int, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 16}); err == nil ||
		!strings.Contains(err.Error(), "not fixed-size plain data") {
		t.Fatalf("a pointer key: %v", err)
	}
}
