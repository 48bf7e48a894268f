package mapfd_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The tests in this file call mapfd as a hostile caller would: sizes at
// their wrap points, zero and closed handles, strings the kernel would read
// otherwise than Go, paths outside the BPF file system. Each checks the
// exact answer, and that nothing is written or removed where it must not be.

// wantErr is testutil.WantErr for mapfd's errors.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	testutil.WantErr(t, "mapfd", what, err, parts...)
}

// TestLookupBatchSizesIn64Bits: with 1 MiB values, 4096 keys' worth of key
// buffer and a 16-byte value buffer, n × ValueSize wraps to 0 in 32 bits;
// the check passed and the kernel wrote a MiB into the 16 bytes.
func TestLookupBatchSizesIn64Bits(t *testing.T) {
	testutil.RequireRoot(t)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 1 << 20, MaxEntries: 4096,
		Flags: unix.BPF_F_NO_PREALLOC, Name: "bigvals"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Update(make([]byte, 4), make([]byte, 1<<20), mapfd.BPF_ANY); err != nil {
		t.Fatal(err)
	}
	values := make([]byte, 16+64)
	canary := values[16:]
	for i := range canary {
		canary[i] = 0xa5
	}
	var c mapfd.BatchCursor
	n, err := m.LookupBatch(&c, make([]byte, 4*4096), values[:16:16])
	wantErr(t, "LookupBatch into a 16-byte value buffer", err, "hold no whole element", "value 1048576")
	if n != 0 {
		t.Fatalf("LookupBatch copied %d elements", n)
	}
	for _, b := range canary {
		if b != 0xa5 {
			t.Fatal("the kernel wrote past the value buffer")
		}
	}
	// Whole elements: as many as the smaller buffer holds.
	got, err := m.LookupBatch(&c, make([]byte, 4*4096), make([]byte, 1<<20))
	if !errors.Is(err, mapfd.ErrBatchEnd) || got != 1 {
		t.Fatalf("LookupBatch with room for one value: %d, %v", got, err)
	}
}

func TestLookupBatchHostile(t *testing.T) {
	testutil.RequireRoot(t)
	q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 8, MaxEntries: 4, Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var c mapfd.BatchCursor
	// A queue's keys are 0 bytes: len(keys)/KeySize divided by zero.
	_, err = q.LookupBatch(&c, make([]byte, 8), make([]byte, 8))
	wantErr(t, "LookupBatch on a queue", err, "a queue map has no keys to walk")
	a := newMap(t, mapfd.Array, 4, 8, 4)
	_, err = a.LookupBatch(nil, make([]byte, 16), make([]byte, 32))
	wantErr(t, "LookupBatch with a nil cursor", err, "nil cursor")
	_, err = a.LookupBatch(&c, nil, nil)
	wantErr(t, "LookupBatch with no buffers", err, "hold no whole element")
}

func newMap(t *testing.T, typ mapfd.Type, key, value, entries uint32) *mapfd.Map {
	t.Helper()
	m, err := mapfd.Create(mapfd.Spec{Type: typ, KeySize: key, ValueSize: value, MaxEntries: entries, Name: "adv"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestZeroMapHoldsNoFD: a Map{} reported fd 0, its Close closed stdin and
// its calls handed fd 0 to the kernel.
func TestZeroMapHoldsNoFD(t *testing.T) {
	var m mapfd.Map
	if fd := m.FD(); fd != -1 {
		t.Fatalf("zero Map's FD is %d, want -1", fd)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("zero Map's Close: %v", err)
	}
	if _, err := unix.FcntlInt(0, unix.F_GETFD, 0); err != nil {
		t.Fatalf("fd 0 was closed by a zero Map's Close: %v", err)
	}
	if err := m.Lookup(nil, nil); !errors.Is(err, mapfd.ErrClosed) {
		t.Fatalf("zero Map's Lookup: %v, want ErrClosed", err)
	}
	if err := m.Pin("/sys/fs/bpf/x"); !errors.Is(err, mapfd.ErrClosed) {
		t.Fatalf("zero Map's Pin: %v, want ErrClosed", err)
	}
	if _, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: &m}); !errors.Is(err, mapfd.ErrClosed) {
		t.Fatalf("Create with a zero inner map: %v, want ErrClosed", err)
	}
}

// TestTypedNeedsNewTyped: a Typed not made by NewTyped skipped the size
// check; a lookup then wrote the map's value size into a smaller V.
func TestTypedNeedsNewTyped(t *testing.T) {
	var tm mapfd.Typed[uint32, uint8]
	if _, err := tm.Lookup(0); !errors.Is(err, mapfd.ErrNotTyped) {
		t.Fatalf("zero Typed's Lookup: %v, want ErrNotTyped", err)
	}
	if err := tm.Update(0, 1, 0); !errors.Is(err, mapfd.ErrNotTyped) {
		t.Fatalf("zero Typed's Update: %v", err)
	}
	if err := tm.Delete(0); !errors.Is(err, mapfd.ErrNotTyped) {
		t.Fatalf("zero Typed's Delete: %v", err)
	}
	var err error
	for range tm.All(&err) {
		t.Fatal("zero Typed yielded")
	}
	if !errors.Is(err, mapfd.ErrNotTyped) {
		t.Fatalf("zero Typed's All: %v", err)
	}
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mapfd.NewTyped[uint32, uint64](nil); err == nil {
		t.Fatal("NewTyped of a nil map")
	}
}

// TestTypedPerCPU: on a per-CPU map Lookup wrote a value per CPU into one V,
// and All yielded CPU 0's value only.
func TestTypedPerCPU(t *testing.T) {
	testutil.RequireRoot(t)
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		t.Fatal(err)
	}
	m := newMap(t, mapfd.PerCPUArray, 4, 8, 2)
	tm, err := mapfd.NewTyped[uint32, uint64](m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tm.Lookup(0)
	wantErr(t, "Typed.Lookup on a per-CPU map", err, "use LookupPerCPU")
	wantErr(t, "Typed.Update on a per-CPU map", tm.Update(0, 1, 0), "use UpdatePerCPU")
	var allErr error
	for range tm.All(&allErr) {
		t.Fatal("All yielded on a per-CPU map")
	}
	wantErr(t, "Typed.All on a per-CPU map", allErr, "use AllPerCPU")

	vals := make([]uint64, ncpu)
	for i := range vals {
		vals[i] = uint64(100 + i)
	}
	if err := tm.UpdatePerCPU(1, vals, mapfd.BPF_ANY); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "UpdatePerCPU with too few values", tm.UpdatePerCPU(1, vals[:ncpu-1], 0), "per-CPU access needs")
	wantErr(t, "LookupPerCPU into nothing", tm.LookupPerCPU(1, nil), "per-CPU access needs")
	seen := 0
	for k, v := range tm.AllPerCPU(&allErr) {
		if len(v) != ncpu {
			t.Fatalf("key %d: %d values, want %d", k, len(v), ncpu)
		}
		for cpu, x := range v {
			want := uint64(0)
			if k == 1 {
				want = uint64(100 + cpu)
			}
			if x != want {
				t.Fatalf("key %d cpu %d: %d, want %d", k, cpu, x, want)
			}
		}
		seen++
	}
	if allErr != nil || seen != 2 {
		t.Fatalf("AllPerCPU: %d keys, %v", seen, allErr)
	}
	plain, err := mapfd.NewTyped[uint32, uint64](newMap(t, mapfd.Array, 4, 8, 1))
	if err != nil {
		t.Fatal(err)
	}
	for range plain.AllPerCPU(&allErr) {
	}
	wantErr(t, "AllPerCPU on an array", allErr, "needs a per-CPU map")
}

// TestPinPathsStayInBPFFS: Unpin was os.Remove, so a path through ".."
// deleted a regular file, and empty directories went too; Pin outside a BPF
// file system blamed permissions.
func TestPinPathsStayInBPFFS(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	fs := testutil.BPFFS(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(fs, victim)
	if err != nil {
		t.Fatal(err)
	}
	escape := fs + "/" + rel // <bpffs>/../../<tmp>/victim
	wantErr(t, "Unpin through ..", mapfd.Unpin(escape), "is not on a BPF file system")
	wantErr(t, "Unpin of a regular file", mapfd.Unpin(victim), "is not on a BPF file system")
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the file outside bpffs is gone: %v", err)
	}
	emptyDir := filepath.Join(fs, "dir")
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(emptyDir)
	if err := mapfd.Unpin(emptyDir); !errors.Is(err, unix.EISDIR) {
		t.Fatalf("Unpin of a directory: %v, want EISDIR", err)
	}
	if _, err := os.Stat(emptyDir); err != nil {
		t.Fatalf("Unpin removed a directory: %v", err)
	}
	for _, bad := range []string{"", fs + "/", fs + "/..", fs + "/a\x00b"} {
		if err := mapfd.Unpin(bad); err == nil {
			t.Fatalf("Unpin(%q) succeeded", bad)
		}
	}

	m := newMap(t, mapfd.Array, 4, 8, 1)
	wantErr(t, "Pin outside bpffs", m.Pin(filepath.Join(t.TempDir(), "m")), "is not on a BPF file system")
	wantErr(t, "Pin through ..", m.Pin(fs+"/../m"), "is not on a BPF file system")
	// "a\x00b" landed at "a".
	if err := m.Pin(filepath.Join(fs, "a\x00b")); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Pin at a path with NUL: %v, want EINVAL", err)
	}
	if _, err := os.Stat(filepath.Join(fs, "a")); err == nil {
		os.Remove(filepath.Join(fs, "a"))
		t.Fatal("a pin with NUL landed at its prefix")
	}
	// Through a symbolic link to the BPF file system: resolved, accepted.
	link := filepath.Join(t.TempDir(), "tobpffs")
	if err := os.Symlink(fs, link); err != nil {
		t.Fatal(err)
	}
	if err := m.Pin(filepath.Join(link, "m")); err != nil {
		t.Fatalf("Pin through a symlink to bpffs: %v", err)
	}
	if err := mapfd.Unpin(filepath.Join(link, "m")); err != nil {
		t.Fatal(err)
	}
	_, err = mapfd.Open(filepath.Join(t.TempDir(), "none"))
	wantErr(t, "Open outside bpffs", err, "is not on a BPF file system")
}

func TestNamesAndStrings(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for name, want := range map[string]string{
		"bad-name":  `byte "-" at 3`,
		"caf\u00e9": `byte "\xc3" at 3`,
		"nul\x00x":  `byte "\x00" at 3`,
		"new\nline": `byte "\n" at 3`,
		// Cut at 15 bytes, this one ended in the middle of a character.
		"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9": `byte "\xc3" at 0`,
	} {
		_, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Name: name})
		wantErr(t, "Create named "+name, err, want, "not allowed")
		if !errors.Is(err, unix.EINVAL) {
			t.Fatalf("%v is not EINVAL", err)
		}
	}
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Name: strings.Repeat("a", 300)})
	if err != nil {
		t.Fatalf("a long valid name is cut to 15 bytes: %v", err)
	}
	defer m.Close()
	if m.Name() != strings.Repeat("a", 15) {
		t.Fatalf("name %q", m.Name())
	}
}

// TestOpenChecksKind: Open of a program's pin read the program's info as a
// map's and returned a map with garbage sizes.
func TestOpenChecksKind(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	fs := testutil.BPFFS(t)
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps := filepath.Join(fs, "p")
	if err := p.Pin(ps); err != nil {
		t.Fatal(err)
	}
	defer mapfd.Unpin(ps)
	_, err = mapfd.Open(ps)
	wantErr(t, "Open of a program's pin", err, "a BPF prog is pinned there, not a map")
}

// TestErrnoHints: E2BIG said "a field this kernel does not know" for a full
// map, and an update of a frozen map blamed lockdown or an LSM.
func TestErrnoHints(t *testing.T) {
	testutil.RequireRoot(t)
	h := newMap(t, mapfd.Hash, 4, 4, 1)
	if err := h.Update([]byte{1, 0, 0, 0}, make([]byte, 4), mapfd.BPF_ANY); err != nil {
		t.Fatal(err)
	}
	err := h.Update([]byte{2, 0, 0, 0}, make([]byte, 4), mapfd.BPF_ANY)
	wantErr(t, "update of a full map", err, "the map is full")
	if !errors.Is(err, unix.E2BIG) {
		t.Fatalf("%v is not E2BIG", err)
	}
	a := newMap(t, mapfd.Array, 4, 4, 1)
	if err := a.Freeze(); err != nil {
		t.Fatal(err)
	}
	err = a.Update(make([]byte, 4), make([]byte, 4), mapfd.BPF_ANY)
	wantErr(t, "update of a frozen map", err, "frozen")
	if !errors.Is(err, unix.EPERM) || strings.Contains(err.Error(), "lockdown") {
		t.Fatalf("update of a frozen map: %v", err)
	}
}

func TestClosedMapCalls(t *testing.T) {
	testutil.RequireRoot(t)
	m := newMap(t, mapfd.Array, 4, 8, 1)
	m.Close()
	k, v := make([]byte, 4), make([]byte, 8)
	var c mapfd.BatchCursor
	_, batchErr := m.LookupBatch(&c, k, v)
	_, infoErr := m.Info()
	for what, err := range map[string]error{
		"Lookup": m.Lookup(k, v), "Update": m.Update(k, v, 0), "Delete": m.Delete(k), "NextKey": m.NextKey(nil, k),
		"LookupAndDelete": m.LookupAndDelete(k, v), "Freeze": m.Freeze(), "Pin": m.Pin("/sys/fs/bpf/x"),
		"SetFD": m.SetFD(0, 0), "ClearFD": m.ClearFD(0), "LookupBatch": batchErr, "Info": infoErr, "Close": m.Close(),
	} {
		if what == "Close" {
			if err != nil {
				t.Fatalf("second Close: %v", err)
			}
			continue
		}
		if !errors.Is(err, mapfd.ErrClosed) {
			t.Fatalf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
	if m.FD() != -1 {
		t.Fatalf("FD after Close: %d", m.FD())
	}
}

func TestSizeMismatches(t *testing.T) {
	testutil.RequireRoot(t)
	m := newMap(t, mapfd.Array, 4, 8, 1)
	for what, err := range map[string]error{
		"Lookup into nil":       m.Lookup(make([]byte, 4), nil),
		"Lookup short value":    m.Lookup(make([]byte, 4), make([]byte, 7)),
		"Lookup long key":       m.Lookup(make([]byte, 5), make([]byte, 8)),
		"Update nil value":      m.Update(make([]byte, 4), nil, 0),
		"NextKey short next":    m.NextKey(nil, make([]byte, 3)),
		"NextKey long key":      m.NextKey(make([]byte, 8), make([]byte, 4)),
		"Delete nil key":        m.Delete(nil),
		"LookupAndDelete empty": m.LookupAndDelete(nil, nil),
	} {
		wantErr(t, what, err, "want 4")
	}
}

// TestHostileSpecs: sizes at 0, the maximum and the wrap points are the
// kernel's to refuse, with its errno, and leave no fd.
func TestHostileSpecs(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, s := range []mapfd.Spec{
		{Type: mapfd.Hash, KeySize: 0, ValueSize: 8, MaxEntries: 1},
		{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 0},
		{Type: mapfd.Array, KeySize: 4, ValueSize: ^uint32(0), MaxEntries: 1},
		{Type: mapfd.PerCPUArray, KeySize: 4, ValueSize: ^uint32(0) - 6, MaxEntries: 1},
		{Type: mapfd.Hash, KeySize: ^uint32(0), ValueSize: 8, MaxEntries: ^uint32(0)},
		{Type: mapfd.Type(^uint32(0)), KeySize: 4, ValueSize: 4, MaxEntries: 1},
		{Type: mapfd.RingBuf, MaxEntries: 4097},
	} {
		m, err := mapfd.Create(s)
		if err == nil {
			m.Close()
			t.Fatalf("Create(%+v) succeeded", s)
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.E2BIG) && !errors.Is(err, unix.ENOMEM) {
			t.Fatalf("Create(%+v): %v, want the kernel's EINVAL, E2BIG or ENOMEM", s, err)
		}
	}
	if _, err := mapfd.OpenID(0); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("OpenID(0): %v", err)
	}
	if _, err := mapfd.OpenID(^uint32(0)); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("OpenID(max): %v", err)
	}
}

// TestAdversarialSetFD: SetFD of fds that are none, a regular file, a map
// where a program goes, and 1<<32 plus a program's fd (which the map took
// for the program) are refused with the kernel's errno.
func TestAdversarialSetFD(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	pa := newMap(t, mapfd.ProgArray, 4, 4, 2)
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	file, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fds := map[int]unix.Errno{-1: unix.EBADF, math.MinInt: unix.EBADF, math.MaxInt: unix.EBADF, int(file.Fd()): unix.EINVAL, pa.FD(): unix.EINVAL}
	if strconv.IntSize == 64 {
		big := int64(1) << 32
		fds[int(big)+p.FD()] = unix.EBADF
		fds[int(-big)+p.FD()] = unix.EBADF
	}
	for fd, errno := range fds {
		err := pa.SetFD(0, fd)
		wantErr(t, fmt.Sprintf("SetFD of fd %d", fd), err, "update")
		if !errors.Is(err, errno) {
			t.Errorf("SetFD of fd %d: %v, want %s", fd, err, unix.ErrnoName(errno))
		}
	}
	for _, index := range []uint32{2, math.MaxUint32} {
		err := pa.SetFD(index, p.FD())
		if !errors.Is(err, unix.E2BIG) {
			t.Errorf("SetFD at index %d of 2: %v, want E2BIG", index, err)
		}
		// E2BIG said the attr set a field this kernel does not know.
		if err := pa.ClearFD(index); err == nil || err.Error() != `mapfd: map "adv" delete: BPF_MAP_DELETE_ELEM: argument list too long (an fd array index is not below max_entries)` {
			t.Errorf("ClearFD at index %d of 2: %v", index, err)
		}
	}
	if err := pa.SetFD(1, p.FD()); err != nil {
		t.Fatal(err)
	}
	h := newMap(t, mapfd.Hash, 8, 8, 1)
	wantErr(t, "SetFD into a hash of 8-byte values", h.SetFD(0, p.FD()), "is not an fd array")
}

// TestAdversarialIDsAndTypes: ids at their limits, types that are none,
// and typed maps of types that cannot be a map's.
func TestAdversarialIDsAndTypes(t *testing.T) {
	for _, typ := range []mapfd.Type{1000, 1<<31 - 1, 1 << 31, math.MaxUint32} {
		if got, want := typ.String(), strconv.FormatUint(uint64(typ), 10); got != want || typ.PerCPU() {
			t.Errorf("Type(%d): %q, per-CPU %v; want %q", uint32(typ), got, typ.PerCPU(), want)
		}
	}
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	if id, err := mapfd.NextID(math.MaxUint32); id != 0 || err != nil {
		t.Errorf("NextID(MaxUint32) = %d, %v; want 0 (the end)", id, err)
	}
	m := newMap(t, mapfd.Array, 4, 4, 1)
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	if id, err := mapfd.NextID(info.ID - 1); id != info.ID || err != nil {
		t.Errorf("NextID(%d) = %d, %v; want %d", info.ID-1, id, err, info.ID)
	}
	_, err = mapfd.CreateTyped[string, uint32](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 1, Name: "s"})
	wantErr(t, "CreateTyped with a string key", err, `map "s"`, "string")
	_, err = mapfd.CreateTyped[uint32, []byte](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "b"})
	wantErr(t, "CreateTyped with a slice value", err, `map "b"`)
	_, err = mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, KeySize: 8, MaxEntries: 1, Name: "k"})
	wantErr(t, "CreateTyped with a KeySize of 8 for uint32", err, `map "k": key and value sizes 8 and 0, the types' are 4 and 8`)
	_, err = mapfd.CreateTyped[struct{}, uint32](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 1, Name: "z"})
	wantErr(t, "CreateTyped with a zero-size key", err)
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("CreateTyped with a zero-size key: %v, want EINVAL", err)
	}
	_, err = mapfd.CreateTyped[uint32, uint32](mapfd.Spec{Type: mapfd.Type(math.MaxUint32), MaxEntries: 1, Name: "t"})
	wantErr(t, "CreateTyped of type MaxUint32", err)
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("CreateTyped of type MaxUint32: %v, want EINVAL", err)
	}
}

// TestUnnamed: messages name a map without a name "(unnamed)", not "":
// a map the kernel refuses, its String, a key of the wrong size.
func TestUnnamed(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	_, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8})
	wantErr(t, "an unnamed map of no entries", err, "mapfd: map create (unnamed)")
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if s := m.String(); !strings.HasPrefix(s, "map (unnamed) (array, ") {
		t.Errorf("String of an unnamed map: %s", s)
	}
	err = m.Lookup([]byte{1}, make([]byte, 4))
	wantErr(t, "a short key of an unnamed map", err, "mapfd: map (unnamed): key of 1 bytes")
}

// TestRefusedMaps: a map whose sizes break its type's rule is refused
// before the kernel is asked, naming its type and the rule, as EINVAL; a
// map the kernel refuses for another reason names its type and says the
// kernel does not take its sizes or flags.
func TestRefusedMaps(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, c := range []struct {
		spec mapfd.Spec
		says string
	}{
		{mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 1000, Name: "rb"},
			`map create "rb" (ringbuf, key 0, value 0, 1000 entries, flags 0x0): ` +
				"a ringbuf map: its size (MaxEntries, in bytes) must be a power of two " +
				"and a multiple of the page size, " + strconv.Itoa(os.Getpagesize()) +
				": invalid argument"},
		{mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 3 << 12}, "must be a power of two"},
		{mapfd.Spec{Type: mapfd.RingBuf, KeySize: 4, MaxEntries: 1 << 16},
			"KeySize and ValueSize must be 0"},
		{mapfd.Spec{Type: mapfd.Array, KeySize: 8, ValueSize: 8, MaxEntries: 1},
			"an array map: its key must be 4 bytes"},
		{mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8},
			"a hash map: it must have an entry or more"},
		{mapfd.Spec{Type: mapfd.Queue, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			"KeySize must be 0"},
		{mapfd.Spec{Type: mapfd.StackTrace, KeySize: 4, ValueSize: 12, MaxEntries: 1},
			"8-byte addresses"},
		{mapfd.Spec{Type: mapfd.ProgArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			"4-byte fds"},
	} {
		var journal strings.Builder
		sys.SetJournal(&journal)
		_, err := mapfd.Create(c.spec)
		sys.SetJournal(nil)
		wantErr(t, fmt.Sprintf("%+v", c.spec), err, c.says)
		if !errors.Is(err, unix.EINVAL) || journal.Len() > 0 {
			t.Errorf("%+v: %v is not EINVAL, or the kernel was asked:\n%s",
				c.spec, err, journal.String())
		}
	}
	unknownFlag := mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	unknownFlag.Flags = 1 << 30
	_, err := mapfd.Create(unknownFlag)
	wantErr(t, "a hash map with an unknown flag", err, "flags 0x40000000): "+
		"the kernel does not take these sizes or flags for a hash map: BPF_MAP_CREATE")
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("%v is not EINVAL", err)
	}
	for _, ok := range []mapfd.Spec{
		{Type: mapfd.RingBuf, MaxEntries: uint32(os.Getpagesize())},
		{Type: mapfd.StackTrace, KeySize: 4, ValueSize: 8 * 127, MaxEntries: 1},
		{Type: mapfd.PerfEventArray},
	} {
		m, err := mapfd.Create(ok)
		if err != nil {
			t.Errorf("%+v: %v", ok, err)
			continue
		}
		m.Close()
	}
}
