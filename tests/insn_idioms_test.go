package tests

import (
	"encoding/binary"
	"math"
	"math/bits"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestLog2 runs insn.Log2 on values read from a map, so that the verifier
// cannot fold them, and compares each result with bits.Len64(v)-1 (0 for
// 0): every power of two, its neighbours, and the edges.
func TestLog2(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	vals := []uint64{0, 1, 2, 3, 4, 5, 7, 8, 1023, 1024, 1025, math.MaxUint32, math.MaxInt64, math.MaxUint64}
	for k := range 64 {
		vals = append(vals, 1<<k, 1<<k-1, 1<<k+1, 1<<k|1<<(k/2))
	}
	const batch = 64
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 2 * 8 * batch, MaxEntries: 1, Name: "log2"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for start := 0; start < len(vals); start += batch {
		in := vals[start:min(start+batch, len(vals))]
		items := []Item{LoadMapValue(R6, m, 0)}
		for i := range in {
			items = append(items, LoadMem(BPF_DW, R1, R6, int16(8*i)))
			items = append(items, Log2(R7, R1, R2)...)
			items = append(items, StoreMem(BPF_DW, R6, int16(8*(batch+i)), R7))
		}
		p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "log2", License: "GPL",
			Insns: append(items, Mov64Imm(R0, 0), Exit())})
		if err != nil {
			t.Fatal(err)
		}
		value := make([]byte, 2*8*batch)
		for i, v := range in {
			binary.NativeEndian.PutUint64(value[8*i:], v)
		}
		if err := m.Update(make([]byte, 4), value, mapfd.BPF_ANY); err != nil {
			t.Fatal(err)
		}
		runRet(t, p)
		p.Close()
		if err := m.Lookup(make([]byte, 4), value); err != nil {
			t.Fatal(err)
		}
		for i, v := range in {
			want := uint64(max(bits.Len64(v)-1, 0))
			if got := binary.NativeEndian.Uint64(value[8*(batch+i):]); got != want {
				t.Errorf("log2(%#x) = %d, want %d", v, got, want)
			}
		}
	}
}

// TestMapIncrement counts with two MapIncrement sequences and a MapAdd in
// one program: the first run inserts the keys, the later ones add.
func TestMapIncrement(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4, Name: "counts"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	items := []Item{StoreImm(BPF_DW, R10, -8, 7)}
	items = append(items, MapIncrement(m, -8, -16)...)
	items = append(items, MapIncrement(m, -8, -16)...)
	items = append(items, StoreImm(BPF_DW, R10, -8, 9), Mov64Imm(R7, 5))
	items = append(items, MapAdd(m, -8, -24, R7)...)
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "counts", License: "GPL",
		Insns: append(items, Mov64Imm(R0, 0), Exit())})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for run := 1; run <= 3; run++ {
		runRet(t, p)
		for key, per := range map[uint64]uint64{7: 2, 9: 5} {
			v := make([]byte, 8)
			if err := m.Lookup(binary.NativeEndian.AppendUint64(nil, key), v); err != nil {
				t.Fatalf("run %d: key %d: %v", run, key, err)
			}
			if got := binary.NativeEndian.Uint64(v); got != per*uint64(run) {
				t.Errorf("run %d: key %d counts %d, want %d", run, key, got, per*uint64(run))
			}
		}
	}
}

// TestCurrentCPUFlag: bpf_perf_event_output's flags are a u64, and
// BPF_F_CURRENT_CPU is 0xffffffff in it, which LoadImm64 loads and
// Mov32Imm(r, -1) too (zero-extended); Mov64Imm(r, -1), sign-extended to
// all ones, sets bits outside BPF_F_INDEX_MASK and BPF_F_CTXLEN_MASK, and
// the helper refuses it with EINVAL: which is why BPF_F_CURRENT_CPU does
// not compile as Mov64Imm's immediate (insn's TestOpcodeTypes). A tc
// program's bpf_perf_event_output (bpf_skb_event_output) checks the flags
// first; with the right ones it finds this CPU's slot of the array empty:
// ENOENT.
func TestCurrentCPUFlag(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "flags"})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	for _, c := range []struct {
		name  string
		flags Item
		want  unix.Errno
	}{
		{"LoadImm64(R3, BPF_F_CURRENT_CPU)", LoadImm64(R3, BPF_F_CURRENT_CPU), unix.ENOENT},
		{"Mov32Imm(R3, -1)", Mov32Imm(R3, -1), unix.ENOENT},
		{"Mov64Imm(R3, -1)", Mov64Imm(R3, -1), unix.EINVAL},
	} {
		p, err := prog.Load(prog.Spec{Type: prog.SchedCLS, Name: "flags", License: "GPL", Insns: []Item{
			LoadMapFD(R2, events), c.flags, StoreImm(BPF_DW, R10, -8, 0), // r1 is still the context
			Mov64Reg(R4, R10), ALU64Imm(BPF_ADD, R4, -8), Mov64Imm(R5, 8), Call(BPF_FUNC_perf_event_output),
			Exit(),
		}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := -int32(r.Retval); got != int32(c.want) {
			t.Errorf("%s: bpf_perf_event_output returned -%d, want -%d (%v)", c.name, got, c.want, c.want)
		}
	}
}
