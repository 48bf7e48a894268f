package tests

// The instructions newer than ISA v4 that package insn builds, each run in
// the kernel through BPF_PROG_TEST_RUN. Kernels without them refuse the
// program with EINVAL; those tests skip, saying which kernel brings them.

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// loadOrSkip loads a socket filter, skipping the test when the verifier
// refuses it with EINVAL and a log line containing one of missing, the
// answers of kernels that predate the feature.
func loadOrSkip(t *testing.T, name, since string, items []Item, missing ...string) *prog.Program {
	t.Helper()
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: name, License: "GPL", Insns: items})
	var ve *prog.VerifierError
	for _, m := range missing {
		if errors.As(err, &ve) && errors.Is(err, unix.EINVAL) && strings.Contains(ve.Log, m) {
			t.Skipf("this kernel predates %s (%s): %q", name, since, m)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runRet(t *testing.T, p *prog.Program) uint32 {
	t.Helper()
	res, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Retval
}

// TestLoadAcquireStoreRelease stores a value with store_release at each
// size into a stack slot of all ones, reads it back with load_acquire, and
// reports both the value loaded (zero-extended) and the whole slot, which
// must have changed in its first size bytes only.
func TestLoadAcquireStoreRelease(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	const v = 0x78776655c4b3a291 // each low part has its sign bit set: loads zero-extend
	out, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 64, MaxEntries: 1, Name: "acqrel"})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sizes := []struct {
		size  Size
		bytes int
	}{{BPF_B, 1}, {BPF_H, 2}, {BPF_W, 4}, {BPF_DW, 8}}
	program := func() []Item {
		items := []Item{LoadMapValue(R6, out, 0), LoadImm64(R1, v)}
		for i, s := range sizes {
			items = append(items,
				StoreImm(BPF_DW, R10, -8, -1),
				StoreRelease(s.size, R10, -8, R1),
				LoadAcquire(s.size, R2, R10, -8),
				StoreMem(BPF_DW, R6, int16(16*i), R2),
				LoadMem(BPF_DW, R2, R10, -8),
				StoreMem(BPF_DW, R6, int16(16*i+8), R2))
		}
		return append(items, Mov64Imm(R0, 0), Exit())
	}
	// A 32-bit kernel refuses the 8-byte ones (EOPNOTSUPP): the others are
	// checked, then the test skips, saying so.
	var refused64 string
	spec := prog.Spec{Type: prog.SocketFilter, Name: "acqrel", License: "GPL", Insns: program()}
	p, err := prog.Load(spec)
	if ve, ok := errors.AsType[*prog.VerifierError](err); ok && errors.Is(err, unix.EOPNOTSUPP) {
		for line := range strings.SplitSeq(ve.Log, "\n") {
			if strings.Contains(line, "only supported on 64-bit arches") {
				refused64, sizes = line, sizes[:3]
			}
		}
	} else if err == nil {
		p.Close()
	}
	// Before 6.15, the 8 and 16-bit atomic opcodes are unknown, the others'
	// imm is; 5.10 knows only BPF_XADD, whose imm must be 0.
	p = loadOrSkip(t, "acqrel", "6.15", program(),
		"unknown opcode d3", "invalid atomic opcode", "BPF_STX uses reserved fields")
	defer p.Close()
	if refused64 != "" {
		defer t.Skipf("this kernel refuses 8-byte load_acquire and store_release: %q "+
			"(1, 2 and 4 bytes checked)", refused64)
	}
	runRet(t, p)
	got := make([]byte, 64)
	if err := out.Lookup(make([]byte, 4), got); err != nil {
		t.Fatal(err)
	}
	for i, s := range sizes {
		// A store of n bytes writes the low n bytes of the register over
		// the first n bytes of the slot, in the host's byte order.
		mask := ^uint64(0) >> (64 - 8*s.bytes)
		slot := binary.NativeEndian.AppendUint64(nil, ^uint64(0))
		val := binary.NativeEndian.AppendUint64(nil, v)
		if execHostLE {
			copy(slot, val[:s.bytes])
		} else {
			copy(slot, val[8-s.bytes:])
		}
		loaded, whole := binary.NativeEndian.Uint64(got[16*i:]), binary.NativeEndian.Uint64(got[16*i+8:])
		if loaded != v&mask || whole != binary.NativeEndian.Uint64(slot) {
			t.Errorf("%d bytes: load_acquire %#x, want %#x; slot %#x, want %#x",
				s.bytes, loaded, v&mask, whole, binary.NativeEndian.Uint64(slot))
		}
	}
}

// TestMayGoto runs may_goto with the loop budget unspent, where it falls
// through, and as the only exit of a loop the verifier cannot bound, which
// it accepts because of it and which must end.
func TestMayGoto(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	p := loadOrSkip(t, "may_goto", "6.9", []Item{
		Mov64Imm(R0, 1),
		MayGoto("out"),
		Mov64Imm(R0, 2),
		Label("out"),
		Exit(),
	}, "unknown opcode e5")
	defer p.Close()
	if r := runRet(t, p); r != 2 {
		t.Errorf("may_goto with budget left: returned %d, want 2 (fell through)", r)
	}
	loop, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "may_goto_loop", License: "GPL", Insns: []Item{
		Mov64Imm(R0, 0),
		Label("loop"),
		MayGoto("out"),
		ALU64Imm(BPF_ADD, R0, 1),
		Ja("loop"),
		Label("out"),
		Exit(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	// The budget is BPF_MAX_LOOPS (8M) iterations, or, where may_goto is
	// timed (6.15 on x86-64 and arm64), what fits its time slice.
	if r := runRet(t, loop); r == 0 {
		t.Errorf("unbounded loop: %d iterations", r)
	} else {
		t.Logf("unbounded loop: %d iterations", r)
	}
}

type arena struct{ fd sys.FD }

func (a *arena) FD() int { return a.fd.Int() }

// TestAddrSpaceCast casts between an arena's kernel (0) and user (1)
// address spaces. The arena's user space starts at 4 GiB (map_extra), so
// casting the low half of any pointer to as(1) gives 1<<32 | low, and 0
// stays 0; as(1) to as(0) keeps the low half.
func TestAddrSpaceCast(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	const bpfMapTypeArena = 33 // 6.9
	fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: bpfMapTypeArena, MaxEntries: 1,
		MapFlags: unix.BPF_F_MMAPABLE, MapExtra: 1 << 32, MapName: sys.ObjName{'a', 'r', 'e', 'n', 'a'}})
	if long, _ := sys.KernelLongSize(); errors.Is(err, unix.EINVAL) && long == 4 {
		t.Skipf("no arena maps: a 32-bit kernel has none (they need CONFIG_64BIT): %v", err)
	} else if errors.Is(err, unix.EINVAL) {
		t.Skipf("no arena maps (6.9): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	a := &arena{}
	a.fd.Set(fd)
	defer a.fd.Close()
	out, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1, Name: "cast"})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "cast", License: "GPL", Insns: []Item{
		LoadMapFD(R1, a), // the program uses the arena
		LoadMapValue(R6, out, 0),
		LoadImm64(R2, 0x7_1234_5678),
		AddrSpaceCast(R3, R2, 0, 1), // user to kernel: the low half
		AddrSpaceCast(R4, R3, 1, 0), // kernel to user
		StoreMem(BPF_DW, R6, 8, R4),
		Mov64Imm(R5, 0),
		AddrSpaceCast(R5, R5, 1, 0),
		StoreMem(BPF_DW, R6, 16, R5),
		Mov64Imm(R0, 0),
		Exit(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runRet(t, p)
	got := make([]byte, 24)
	if err := out.Lookup(make([]byte, 4), got); err != nil {
		t.Fatal(err)
	}
	user, zero := binary.NativeEndian.Uint64(got[8:]), binary.NativeEndian.Uint64(got[16:])
	if user != 1<<32|0x1234_5678 || zero != 0 {
		t.Errorf("addr_space_cast: 0x71234_5678 via as(0) to as(1) = %#x, want %#x; 0 to as(1) = %#x", user, uint64(1<<32|0x1234_5678), zero)
	}
}
