package prog_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// The tests in this file call prog as a hostile caller would: zero and
// closed handles, strings the kernel would cut at a NUL, names it refuses,
// pins of the wrong kind. Each checks the exact answer.

// wantErr fails t unless err is non-nil, starts with "prog: " (every error
// prog returns does) and holds every part.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one saying %q", what, parts)
	}
	if !strings.HasPrefix(err.Error(), "prog: ") {
		t.Fatalf("%s: error %q does not start with prog's prefix", what, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not say %q", what, err, p)
		}
	}
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
		wantErr(t, what, err, `program "" is a socket filter; `+what)
		if !errors.Is(err, prog.ErrWrongType) {
			t.Errorf("%s: %v is not ErrWrongType", what, err)
		}
		if _, err := attach(nil); err == nil || !strings.Contains(err.Error(), "nil program") {
			t.Errorf("%s, nil program: %v", what, err)
		}
	}
}
