package prog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }

func load(t testing.TB, spec prog.Spec) *prog.Program {
	t.Helper()
	if spec.License == "" {
		spec.License = "GPL"
	}
	p, err := prog.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestSocketFilterRun loads a filter that returns the skb's byte 12 plus
// 100, through the DSL with a label, and runs it.
func TestSocketFilterRun(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	p := load(t, prog.Spec{Type: prog.SocketFilter, Name: "byte12", Insns: []Item{
		Mov64Reg(R6, R1),
		LoadAbs(BPF_B, 12), // r0 = skb[12]
		JumpImm(BPF_JEQ, R0, 0, "zero"),
		ALU64Imm(BPF_ADD, R0, 100),
		Exit(),
		Label("zero"),
		Mov64Imm(R0, 7),
		Exit(),
	}})
	pkt := make([]byte, 64)
	for b, want := range map[byte]uint32{0: 7, 5: 105, 200: 300} {
		// A socket filter's skb starts after the Ethernet header, which the
		// test run pulls (eth_type_trans); only tc programs see it.
		pkt[14+12] = b
		r, err := p.TestRun(prog.RunOptions{Data: pkt, Repeat: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Retval != want {
			t.Errorf("byte %d: retval %d, want %d", b, r.Retval, want)
		}
	}
}

// TestLoadFlags: Spec.Flags reach the verifier. A 4-byte load at offset 1
// of a map value loads where the CPU has efficient unaligned access (x86,
// arm64), and BPF_F_STRICT_ALIGNMENT refuses it; a store into the value
// of a BPF_F_RDONLY_PROG map is refused, a load is not.
func TestLoadFlags(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, rdonly := range []uint32{0, mapfd.BPF_F_RDONLY_PROG} {
		m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "flags", Flags: rdonly})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		value := func(access ...Item) []Item {
			items := []Item{StoreImm(BPF_W, R10, -4, 0), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4),
				LoadMapFD(R1, m), Call(BPF_FUNC_map_lookup_elem), JumpImm(BPF_JEQ, R0, 0, "out")}
			return append(append(items, access...), Label("out"), Mov64Imm(R0, 0), Exit())
		}
		for _, c := range []struct {
			name  string
			insns []Item
			flags uint32
			log   string // the verifier's refusal, or "" if it loads
		}{
			{"misaligned load", value(LoadMem(BPF_W, R1, R0, 1)), 0, ""},
			{"misaligned load", value(LoadMem(BPF_W, R1, R0, 1)), prog.BPF_F_STRICT_ALIGNMENT, "misaligned value access"},
			{"aligned load", value(LoadMem(BPF_W, R1, R0, 4)), prog.BPF_F_STRICT_ALIGNMENT, ""},
			{"store", value(StoreImm(BPF_W, R0, 0, 1)), 0, map[uint32]string{mapfd.BPF_F_RDONLY_PROG: "write into map forbidden"}[rdonly]},
		} {
			p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "flags", License: "GPL", Insns: c.insns, Flags: c.flags})
			var ve *prog.VerifierError
			switch {
			case c.log == "" && err != nil:
				t.Errorf("map flags %#x, %s with prog flags %#x: %v", rdonly, c.name, c.flags, err)
			case c.log != "" && (!errors.As(err, &ve) || !errors.Is(err, unix.EACCES) || !strings.Contains(ve.Log, c.log)):
				t.Errorf("map flags %#x, %s with prog flags %#x: %v, want EACCES and %q in the log", rdonly, c.name, c.flags, err, c.log)
			}
			if err == nil {
				p.Close()
			}
		}
	}
}

// TestXDPRewrite rewrites the first byte of the packet and checks the
// packet that comes out.
func TestXDPRewrite(t *testing.T) {
	testutil.RequireRoot(t)
	p := load(t, prog.Spec{Type: prog.XDP, Name: "rewrite", Insns: []Item{
		LoadMem(BPF_W, R2, R1, 0), // r2 = ctx->data
		LoadMem(BPF_W, R3, R1, 4), // r3 = ctx->data_end
		Mov64Reg(R4, R2),
		ALU64Imm(BPF_ADD, R4, 1),
		Mov64Imm(R0, 1), // XDP_DROP if the packet is too short
		JumpReg(BPF_JGT, R4, R3, "out"),
		StoreImm(BPF_B, R2, 0, 0x42),
		Mov64Imm(R0, 2), // XDP_PASS
		Label("out"),
		Exit(),
	}})
	out := make([]byte, 128)
	r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64), DataOut: out})
	if err != nil {
		t.Fatal(err)
	}
	if r.Retval != 2 || len(r.DataOut) != 64 || r.DataOut[0] != 0x42 {
		t.Fatalf("retval %d, %d bytes out, first %#x", r.Retval, len(r.DataOut), r.DataOut[0])
	}
}

// TestVerifierError: a read through a scalar must fail with EACCES, a log,
// and the failing instruction in our disassembly.
func TestVerifierError(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	_, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "bad", License: "GPL", Insns: []Item{
		Mov64Imm(R0, 0),
		Mov64Imm(R2, 16),
		LoadMem(BPF_DW, R0, R2, 0), // r0 = *(u64 *)(r2 +0): r2 is not a pointer
		Exit(),
	}})
	var ve *prog.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *VerifierError, got %v", err)
	}
	if !errors.Is(err, unix.EACCES) {
		t.Errorf("errno lost: %v", err)
	}
	if ve.Insn != 2 || !strings.Contains(ve.Log, "R2 invalid mem access 'scalar'") && !strings.Contains(ve.Log, "R2 invalid mem access 'inv'") {
		t.Errorf("insn %d, log:\n%s", ve.Insn, ve.Log)
	}
	msg := err.Error()
	if !strings.Contains(msg, "at instruction 2: r0 = *(u64 *)(r2 +0)") || !strings.Contains(msg, "R2 invalid mem access") {
		t.Errorf("message does not show the failing instruction and the reason:\n%s", msg)
	}
	t.Log(msg)
}

// TestLogGrows starts with a 128-byte log that cannot hold the verifier's
// answer; the buffer must grow until it does.
func TestLogGrows(t *testing.T) {
	testutil.RequireRoot(t)
	items := []Item{Mov64Imm(R0, 0)}
	for range 200 {
		items = append(items, ALU64Imm(BPF_ADD, R0, 1))
	}
	items = append(items, Mov64Imm(R2, 0), LoadMem(BPF_DW, R0, R2, 0), Exit())
	_, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "long", License: "GPL", LogSize: 128, Insns: items})
	var ve *prog.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *VerifierError, got %v", err)
	}
	if ve.Insn != 202 || !strings.Contains(ve.Log, "invalid mem access") || len(ve.Log) < 128 {
		t.Fatalf("insn %d, %d bytes of log:\n%s", ve.Insn, len(ve.Log), ve.Log)
	}
	// Asking for a log on success keeps it.
	p := load(t, prog.Spec{Type: prog.SocketFilter, Name: "logged", LogLevel: 2, Insns: []Item{Mov64Imm(R0, 0), Exit()}})
	if !strings.Contains(p.Log(), "processed 2 insns") {
		t.Fatalf("log of a successful load:\n%s", p.Log())
	}
}

// TestLoadEMFILE: the kernel makes the program's fd after the verifier
// accepted it, so with no fd left (RLIMIT_NOFILE at the lowest free one)
// the load fails with EMFILE. That is no *VerifierError: it was one, "the
// verifier rejected it", with the log of the pass that accepted it.
func TestLoadEMFILE(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	free, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0) // the lowest free fd
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(free)
	spec := prog.Spec{Type: prog.SocketFilter, Name: "nofd", License: "GPL",
		Insns: []Item{Mov64Imm(R0, 0), Exit()}}
	low := unix.Rlimit{Cur: uint64(free), Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	p, err := prog.Load(spec)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		p.Close()
		t.Fatalf("loaded with RLIMIT_NOFILE %d", free)
	}
	var ve *prog.VerifierError
	if errors.As(err, &ve) || !errors.Is(err, unix.EMFILE) ||
		strings.Contains(err.Error(), "verifier") {
		t.Fatalf("load with no fd left: %v, want EMFILE and no VerifierError", err)
	}
	t.Log(err)
}

func TestAssembleErrorBeforeKernel(t *testing.T) {
	_, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "nolabel", License: "GPL", Insns: []Item{Ja("nowhere"), Exit()}})
	if !errors.Is(err, ErrUnknownLabel) {
		t.Fatalf("unknown label: %v", err)
	}
}

// TestInfo checks the kernel's view: id, name, tag, map ids, and the xlated
// program disassembled with its map reference as bpftool prints it.
func TestInfo(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "counter"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	items := append([]Item{StoreImm(BPF_W, R10, -4, 0)}, testutil.AddOne(m, "out")...)
	p := load(t, prog.Spec{Type: prog.SocketFilter, Name: "count", Insns: append(items, Label("out"), Mov64Imm(R0, 0), Exit())})
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	minfo, _ := m.Info()
	if info.ID == 0 || info.Name != "count" || info.Type != prog.SocketFilter || len(info.Tag) != 16 {
		t.Fatalf("info %+v", info)
	}
	if len(info.MapIDs) != 1 || info.MapIDs[0] != minfo.ID {
		t.Fatalf("map ids %v, want [%d]", info.MapIDs, minfo.ID)
	}
	text := Disassemble(info.Xlated)
	if !strings.Contains(text, "r1 = map[id:"+strconv.Itoa(int(minfo.ID))+"]") || !strings.Contains(text, "exit") {
		t.Fatalf("xlated listing:\n%s", text)
	}
	t.Log("\n" + text)
	// A hash map's lookup stays a call in the rewritten program, to the
	// kernel function the helper was turned into; Listing names it from
	// kallsyms, as bpftool does.
	h, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "h"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	items = append([]Item{StoreImm(BPF_W, R10, -4, 0)}, testutil.AddOne(h, "out")...)
	hp := load(t, prog.Spec{Type: prog.SocketFilter, Name: "hcount", Insns: append(items, Label("out"), Mov64Imm(R0, 0), Exit())})
	hinfo, err := hp.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Disassemble(hinfo.Xlated), "call unknown#") {
		t.Fatalf("the rewritten hash lookup is no longer an unnamed call:\n%s", Disassemble(hinfo.Xlated))
	}
	if l := hinfo.Listing(); !strings.Contains(l, "call __htab_map_lookup_elem#") || strings.Contains(l, "unknown#") {
		t.Fatalf("listing with kallsyms:\n%s", l)
	}
	r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64), Repeat: 5})
	if err != nil || r.Retval != 0 {
		t.Fatal(r, err)
	}
	tm, _ := mapfd.NewTyped[uint32, uint64](m)
	if v, err := tm.Lookup(0); err != nil || v != 5 {
		t.Fatalf("counter after 5 runs: %d, %v", v, err)
	}
}

func TestPinOpen(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	dir := testutil.BPFFS(t)
	p := load(t, prog.Spec{Type: prog.SocketFilter, Name: "pinme", Insns: []Item{Mov64Imm(R0, 3), Exit()}})
	path := filepath.Join(dir, "p")
	if err := p.Pin(path); err != nil {
		t.Fatal(err)
	}
	defer mapfd.Unpin(path)
	p2, err := prog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	r, err := p2.TestRun(prog.RunOptions{Data: make([]byte, 14)})
	if err != nil || r.Retval != 3 || p2.Name() != "pinme" {
		t.Fatalf("reopened program: %v %v %q", r, err, p2.Name())
	}
	info, _ := p.Info()
	p3, err := prog.OpenID(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	p3.Close()
	p.Close()
	if err := p.Pin(path + "2"); !errors.Is(err, prog.ErrClosed) || p.Close() != nil {
		t.Fatalf("pin after close: %v", err)
	}
}

// TestTracingTypesLoad: the verifier accepts a minimal program of each
// tracing type, with kern_version from the vDSO for kprobes.
func TestTracingTypesLoad(t *testing.T) {
	testutil.RequireRoot(t)
	for _, typ := range []prog.Type{prog.Kprobe, prog.Tracepoint, prog.PerfEvent, prog.RawTracepoint, prog.SchedCLS, prog.SchedACT, prog.CgroupSKB} {
		load(t, prog.Spec{Type: typ, Name: "min", Insns: []Item{Mov64Imm(R0, 0), Exit()}})
	}
}

func TestKernelVersion(t *testing.T) {
	v, err := prog.KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	release := unix.ByteSliceToString(uts.Release[:])
	m := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(release)
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if int(v>>16) != major || int(v>>8&0xff) != minor {
		t.Fatalf("vDSO says %d.%d.%d, uname says %s", v>>16, v>>8&0xff, v&0xff, release)
	}
	t.Logf("LINUX_VERSION_CODE %#x (%d.%d.%d), uname %s", v, v>>16, v>>8&0xff, v&0xff, release)
}

// TestString: fmt.Print of a program says what it is.
func TestString(t *testing.T) {
	testutil.RequireRoot(t)
	p := load(t, prog.Spec{Type: prog.SocketFilter, Name: "named", Insns: []Item{Mov64Imm(R0, 0), Exit()}})
	if got, want := fmt.Sprint(p), fmt.Sprintf(`program "named" (socket_filter, fd %d)`, p.FD()); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	p.Close()
	if got := fmt.Sprint(p); got != `program "named" (socket_filter, closed)` {
		t.Fatalf("closed: %q", got)
	}
}
