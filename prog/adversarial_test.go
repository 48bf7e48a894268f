package prog_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// The tests in this file call prog as a hostile caller would: zero and
// closed handles, strings the kernel would cut at a NUL, names it refuses,
// pins of the wrong kind. Each checks the exact answer.

// wantErr is testutil.WantErr for prog's errors.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	testutil.WantErr(t, "prog", what, err, parts...)
}

func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// TestZeroHandles: a Program{} or Link{} reported fd 0; Close closed stdin
// and attach calls handed fd 0 to the kernel as the program.
func TestZeroHandles(t *testing.T) {
	var p prog.Program
	var l prog.Link
	if p.FD() != -1 || l.FD() != -1 {
		t.Fatalf("zero handles' fds: program %d, link %d", p.FD(), l.FD())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !fdOpen(0) {
		t.Fatal("a zero handle's Close closed fd 0")
	}
	if _, err := prog.AttachTracepoint(&p, "syscalls", "sys_enter_getpid", prog.AttachOptions{}); !errors.Is(err, prog.ErrClosed) {
		t.Fatalf("attach of a zero Program: %v, want ErrClosed", err)
	}
	if _, err := prog.AttachRawTracepoint(&p, "sys_enter", prog.AttachOptions{}); !errors.Is(err, prog.ErrClosed) {
		t.Fatalf("raw attach of a zero Program: %v, want ErrClosed", err)
	}
	if err := p.Pin("/sys/fs/bpf/x"); !errors.Is(err, prog.ErrClosed) {
		t.Fatalf("Pin of a zero Program: %v", err)
	}
}

func retZeroSpec(typ prog.Type) prog.Spec {
	return prog.Spec{Type: typ, License: "GPL", Insns: []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}}
}

// TestStringsWithNUL: the kernel reads C strings, so "GPL\x00…" counted as
// GPL and "sys_enter\x00x" attached to sys_enter.
func TestStringsWithNUL(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	spec := retZeroSpec(prog.SocketFilter)
	spec.License = "GPL\x00 but really proprietary"
	_, err := prog.Load(spec)
	wantErr(t, "load with a license holding NUL", err, "license", "holds a NUL byte")
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("%v is not EINVAL", err)
	}
	spec = retZeroSpec(prog.SocketFilter)
	spec.Name = "bad name"
	_, err = prog.Load(spec)
	wantErr(t, "load named 'bad name'", err, `byte " " at 3 is not allowed`)

	p, err := prog.Load(retZeroSpec(prog.RawTracepoint))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter\x00x", prog.AttachOptions{})
	if err == nil {
		l.Close()
		t.Fatal(`"sys_enter\x00x" attached`)
	}
	wantErr(t, "raw tracepoint with NUL", err, "holds a NUL byte")
	l = &prog.Link{}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenChecksKind: Open of a map's pin read the map's info as a
// program's.
func TestOpenChecksKind(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	fs := testutil.BPFFS(t)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	path := filepath.Join(fs, "m")
	if err := m.Pin(path); err != nil {
		t.Fatal(err)
	}
	defer mapfd.Unpin(path)
	_, err = prog.Open(path)
	wantErr(t, "prog.Open of a map's pin", err, "a BPF map is pinned there, not a prog")
	p, err := prog.Load(retZeroSpec(prog.SocketFilter))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wantErr(t, "Pin outside bpffs", p.Pin(filepath.Join(t.TempDir(), "p")), "is not on a BPF file system")
}

func TestTypeString(t *testing.T) {
	for typ, want := range map[prog.Type]string{prog.Tracepoint: "tracepoint", prog.SocketFilter: "socket_filter", prog.Kprobe: "kprobe", 1000: "1000"} {
		if got := typ.String(); got != want {
			t.Fatalf("Type(%d).String() = %q, want %q", uint32(typ), got, want)
		}
	}
	if got := mapfd.PerCPUHash.String(); got != "percpu_hash" {
		t.Fatalf("mapfd.PerCPUHash.String() = %q", got)
	}
}

// TestProbesSupportedNoKind: a kind that is none has no events file, and
// ProbesSupported must not find the tracefs directory in its place.
func TestProbesSupportedNoKind(t *testing.T) {
	for _, k := range []tracefs.ProbeKind{-1, 99} {
		err := prog.ProbesSupported(k)
		wantErr(t, "ProbesSupported of a kind that is none", err, "probe kind")
		if !errors.Is(err, tracefs.ErrInvalid) {
			t.Fatalf("ProbesSupported(%d): %v, want tracefs.ErrInvalid", int(k), err)
		}
	}
}

func TestHostileSpecs(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	_, err := prog.Load(prog.Spec{})
	wantErr(t, "Load of an empty spec", err, "no instructions")
	_, err = prog.Load(prog.Spec{Type: prog.SocketFilter, Instructions: []insn.Instruction{}})
	wantErr(t, "Load of no Instructions", err, "no instructions")
	_, err = prog.Load(prog.Spec{Type: prog.SocketFilter, Insns: retZeroSpec(prog.SocketFilter).Insns,
		Instructions: []insn.Instruction{{Code: insn.BPF_JMP | uint8(insn.BPF_EXIT)}}})
	wantErr(t, "Load of both Insns and Instructions", err, "both Insns and Instructions")
	for _, size := range []int{-1, 0, 1, math.MaxInt} {
		spec := retZeroSpec(prog.SocketFilter)
		spec.LogLevel, spec.LogSize = 1, size
		p, err := prog.Load(spec)
		if err != nil {
			t.Fatalf("LogSize %d: %v", size, err)
		}
		p.Close()
	}
	spec := retZeroSpec(prog.Type(1 << 31))
	_, err = prog.Load(spec)
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("load of program type 1<<31: %v", err)
	}
	var p prog.Program
	if _, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)}); !errors.Is(err, prog.ErrClosed) {
		t.Fatalf("TestRun of a zero Program: %v", err)
	}
	if _, err := p.Info(); !errors.Is(err, prog.ErrClosed) {
		t.Fatalf("Info of a zero Program: %v", err)
	}
}

// TestWrongType: every attach function names the type it needs before
// asking the kernel, and a nil program is an error, not a panic.
func TestWrongType(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	p, err := prog.Load(retZeroSpec(prog.SocketFilter))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	exe, _ := os.Executable()
	for what, attach := range map[string]func(*prog.Program) (*prog.Link, error){
		"a tracepoint needs type Tracepoint": func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachTracepoint(p, "syscalls", "sys_enter_getppid", prog.AttachOptions{})
		},
		"a raw tracepoint needs type RawTracepoint": func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
		},
		"a kprobe needs type Kprobe": func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachKprobe(p, "vfs_read", prog.KprobeOptions{})
		},
		"a uprobe needs type Kprobe": func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: 0})
		},
		"a perf event needs type Tracepoint": func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachPerfEvent(p, 0, prog.AttachOptions{})
		},
	} {
		_, err := attach(p)
		wantErr(t, what, err, `program (unnamed) is a socket filter; `+what)
		if !errors.Is(err, prog.ErrWrongType) {
			t.Errorf("%s: %v is not ErrWrongType", what, err)
		}
		if _, err := attach(nil); err == nil || !strings.Contains(err.Error(), "nil program") {
			t.Errorf("%s, nil program: %v", what, err)
		}
	}
}

// TestAdversarialSymbols: a zero Symbols answers nothing found; names that
// are no symbol are not found; addresses at the ends of the range name the
// nearest symbol before, or the address.
func TestAdversarialSymbols(t *testing.T) {
	var zero prog.Symbols
	if got := zero.Name(math.MaxUint64); got != "0xffffffffffffffff" {
		t.Errorf("zero Symbols' Name: %q", got)
	}
	if addr, ok := zero.Address("do_sys_openat2"); ok || addr != 0 {
		t.Errorf("zero Symbols' Address: %#x, %v", addr, ok)
	}
	syms, err := prog.Kallsyms()
	if errors.Is(err, prog.ErrKallsymsHidden) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "do_sys_openat2\x00", "do_sys_openat2\n", "do_sys_openat2\xa0", strings.Repeat("a", 300)} {
		if addr, ok := syms.Address(name); ok {
			t.Errorf("Address(%q) = %#x", name, addr)
		}
	}
	if got := syms.Name(0); got != "0x0" {
		t.Errorf("Name(0) = %q", got)
	}
	if got := syms.Name(math.MaxUint64); !strings.Contains(got, "+0x") {
		t.Errorf("Name(MaxUint64) = %q, want the last symbol and an offset", got)
	}
}

// TestAdversarialSyscallSymbol: names that are no system call's refused
// before /proc/kallsyms is read.
func TestAdversarialSyscallSymbol(t *testing.T) {
	for _, name := range []string{"", "getpid\x00", "getpid\n", "getpid\xa0", "GETPID", "get pid", "../getpid", "getpid+0x10"} {
		_, err := prog.SyscallSymbol(name)
		wantErr(t, fmt.Sprintf("SyscallSymbol(%q)", name), err, fmt.Sprintf("prog: syscall name %q: lower-case letters, digits and '_' only: tracefs: invalid probe", name))
		if !errors.Is(err, tracefs.ErrInvalid) {
			t.Errorf("SyscallSymbol(%q): %v is not ErrInvalid", name, err)
		}
	}
}

// TestAdversarialSymbolOffset: paths that are no ELF file (a FIFO, whose
// open waited for a writer, among them), and symbols that are none, NUL,
// newline, 0xA0 and 300 bytes among them. "" found the executable segment
// at file offset 0.
func TestAdversarialSymbolOffset(t *testing.T) {
	exe, _ := os.Executable()
	dir := t.TempDir()
	notELF := filepath.Join(dir, "notelf")
	os.WriteFile(notELF, []byte("#!/bin/sh\necho not an ELF file\n"), 0o755)
	fifo := filepath.Join(dir, "fifo") // opening it to read waited for a writer
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300)
	for _, c := range []struct{ path, symbol, want string }{
		{"", "main", "prog: uprobe target : open : no such file or directory"},
		{exe + "\x00x", "main", "prog: uprobe target " + exe + "\x00x: open " + exe + "\x00x: invalid argument"},
		{dir, "main", "prog: uprobe target " + dir + ": open " + dir + ": is a directory"},
		{fifo, "main", "prog: uprobe target " + fifo + ": open " + fifo + ": invalid argument (not a regular file)"},
		{"/dev/zero", "main", "prog: uprobe target /dev/zero: open /dev/zero: invalid argument (not a regular file)"},
		{dir + "/" + long, "main", "prog: uprobe target " + dir + "/" + long + ": open " + dir + "/" + long + ": file name too long"},
		{notELF, "main", "prog: uprobe target " + notELF + ": not an ELF binary: not a little-endian ELF file"},
		{exe, "", "prog: uprobe target " + exe + ": tracefs: invalid probe: symbol \"\""},
		{exe, "main.main\x00", "prog: uprobe target " + exe + ": tracefs: invalid probe: symbol \"main.main\\x00\""},
		{exe, "main.main\n", "prog: uprobe target " + exe + ": no function symbol \"main.main\\n\" (a stripped binary needs an offset)"},
		{exe, "main\xa0main", "prog: uprobe target " + exe + ": no function symbol \"main\\xa0main\" (a stripped binary needs an offset)"},
		{exe, long, "prog: uprobe target " + exe + ": no function symbol \"" + long + "\" (a stripped binary needs an offset)"},
	} {
		var off uint64
		var err error
		done := make(chan bool)
		go func() { off, err = prog.SymbolOffset(c.path, c.symbol); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("SymbolOffset(%q) still waiting after 10 s", c.path)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("SymbolOffset(%q, %q) = %#x, %v\nwant %s", c.path, c.symbol, off, err, c.want)
		}
	}
}

// TestAdversarialIDsAndQueries: ids at their limits name nothing (NextID
// past INT_MAX is the end, not EINVAL); pids and fds that are none, a
// regular file, and 1<<32 plus this process's pid (which was this
// process) are refused by QueryFD.
func TestAdversarialIDsAndQueries(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, id := range []uint32{0, math.MaxInt32, math.MaxUint32} {
		if _, err := prog.OpenID(id); !errors.Is(err, unix.ENOENT) {
			t.Errorf("OpenID(%d): %v, want ENOENT", id, err)
		}
		if _, err := prog.LinkByID(id); !errors.Is(err, unix.ENOENT) {
			t.Errorf("LinkByID(%d): %v, want ENOENT", id, err)
		}
	}
	for _, after := range []uint32{math.MaxInt32, math.MaxInt32 + 1, math.MaxUint32} {
		if id, err := prog.NextID(after); id != 0 || err != nil {
			t.Errorf("NextID(%d) = %d, %v; want 0, the end", after, id, err)
		}
		if id, err := prog.NextLinkID(after); id != 0 || err != nil {
			t.Errorf("NextLinkID(%d) = %d, %v; want 0, the end", after, id, err)
		}
	}
	file, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pid, fd := os.Getpid(), int(file.Fd())
	cases := []struct {
		pid, fd int
		errno   unix.Errno
	}{{pid, -1, unix.EBADF}, {pid, math.MinInt32, unix.EBADF}, {pid, fd, sys.ENOTSUPP}, {-1, fd, unix.ENOENT}, {0, fd, unix.ENOENT}}
	if strconv.IntSize == 64 {
		// Past 32 bits, which the kernel would cut to this process or fd.
		big := int64(1) << 32
		for _, c := range [][2]int{{pid, math.MaxInt}, {pid, math.MinInt}, {math.MaxInt, fd}, {int(big) + pid, fd}, {pid, int(big) + fd}} {
			cases = append(cases, struct {
				pid, fd int
				errno   unix.Errno
			}{c[0], c[1], unix.EINVAL})
		}
	}
	for _, c := range cases {
		_, err := prog.QueryFD(c.pid, c.fd)
		wantErr(t, fmt.Sprintf("QueryFD(%d, %d)", c.pid, c.fd), err, fmt.Sprintf("prog: query fd %d of pid %d: ", c.fd, c.pid))
		if !errors.Is(err, c.errno) {
			t.Errorf("QueryFD(%d, %d): %v, want %s", c.pid, c.fd, err, unix.ErrnoName(c.errno))
		}
	}
}

// TestAdversarialPtRegs: arguments past those in registers, layouts of
// machines that are none.
func TestAdversarialPtRegs(t *testing.T) {
	regs, err := prog.PtRegsOf("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []prog.PtRegs{regs, {}} {
		for _, n := range []int{-1, len(r.Args), math.MaxInt, math.MinInt} {
			_, err := r.Arg(insn.R0, insn.R1, n)
			wantErr(t, fmt.Sprintf("Arg %d of %q", n, r.Arch), err, fmt.Sprintf("prog: kprobe argument %d: %s passes %d in registers", n, r.Arch, len(r.Args)))
		}
	}
	if it, err := regs.Arg(insn.R0, insn.R1, 5); err != nil || it.Instruction().Off != 64 {
		t.Errorf("Arg 5 on x86_64: %+v, %v; want the load at 64 (r9)", it, err)
	}
	for _, m := range []string{"", "x86_64\x00", "x86_64\n", "x86_64\xa0", strings.Repeat("a", 300), "X86_64"} {
		_, err := prog.PtRegsOf(m)
		wantErr(t, fmt.Sprintf("PtRegsOf(%q)", m), err, fmt.Sprintf("prog: kprobe arguments: no pt_regs layout for %q", m))
		if !errors.Is(err, sys.ErrNotSupported) {
			t.Errorf("PtRegsOf(%q): %v is not ErrNotSupported", m, err)
		}
	}
}

// TestAdversarialFeatureProbes: the probes refuse arguments that are no
// version or kind, and answer no, without an error, for types and helpers
// that are none.
func TestAdversarialFeatureProbes(t *testing.T) {
	for _, v := range []int{-1, 0, 1, 5, math.MaxInt, math.MinInt} {
		ok, err := prog.HaveISA(v)
		wantErr(t, fmt.Sprintf("HaveISA(%d)", v), err, fmt.Sprintf("prog: probe for ISA v%d: there are versions 2 to 4", v))
		if ok {
			t.Errorf("HaveISA(%d) is true", v)
		}
	}
	for _, k := range []tracefs.ProbeKind{-1, 4, math.MaxInt, math.MinInt} {
		ok, err := prog.HavePMU(k)
		wantErr(t, fmt.Sprintf("HavePMU(%d)", int(k)), err, fmt.Sprintf("prog: probe for a PMU: kind %d: tracefs: invalid probe", int(k)))
		if ok {
			t.Errorf("HavePMU(%d) is true", int(k))
		}
	}
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, typ := range []prog.Type{1000, 1 << 31, math.MaxUint32} {
		if ok, err := prog.HaveProgType(typ); ok || err != nil {
			t.Errorf("HaveProgType(%d) = %v, %v; want false", uint32(typ), ok, err)
		}
		if ok, err := prog.HaveMapType(uint32(typ)); ok || err != nil {
			t.Errorf("HaveMapType(%d) = %v, %v; want false", uint32(typ), ok, err)
		}
		if ok, err := prog.HaveHelper(typ, insn.BPF_FUNC_map_lookup_elem); ok || err != nil {
			t.Errorf("HaveHelper(%d, map_lookup_elem) = %v, %v; want false", uint32(typ), ok, err)
		}
	}
	for _, h := range []insn.Helper{-1, 10000, math.MaxInt32, math.MinInt32} {
		if ok, err := prog.HaveHelper(prog.SocketFilter, h); ok || err != nil {
			t.Errorf("HaveHelper(socket_filter, %d) = %v, %v; want false", int32(h), ok, err)
		}
	}
}

// TestUnnamed: messages name a program without a name "(unnamed)", not
// "": a load the verifier refuses, an attach of the program closed, its
// String.
func TestUnnamed(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	spec := retZeroSpec(prog.SocketFilter)
	spec.Name = ""
	spec.Insns = []insn.Item{insn.Exit()} // r0 not set
	_, err := prog.Load(spec)
	wantErr(t, "an unnamed program refused", err, "prog: load (unnamed): ")
	p, err := prog.Load(retZeroSpec(prog.SocketFilter))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.String(); !strings.HasPrefix(s, "program (unnamed) (socket_filter, fd ") {
		t.Errorf("String of an unnamed program: %s", s)
	}
	p.Close()
	if s := p.String(); s != "program (unnamed) (socket_filter, closed)" {
		t.Errorf("String of an unnamed program closed: %s", s)
	}
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err == nil {
		l.Close()
	}
	wantErr(t, "attach an unnamed program closed", err, "attach (unnamed) to ")
}
