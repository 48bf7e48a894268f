package prog_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// multiA and multiB are the functions TestUprobeMulti probes; nosplit,
// with no stack check to run them again from their first instruction
// after the runtime stopped the goroutine there (see uprobed), so that a
// uprobe counts each call once.
//
//go:noinline
//go:nosplit
func multiA(x int) int { return x*3 + 1 }

//go:noinline
//go:nosplit
func multiB(x int) int { return x*5 + 2 }

// TestUprobeMulti: one uprobe_multi link on two functions of this binary,
// cookies 1 and 2, for this process, counts 5 and 7 calls exactly, entered
// and returned; a kernel without them says so with sys.ErrNotSupported.
// The calls run with SIGURG blocked on their thread: a uprobe whose
// instruction the kernel single-steps fires again when a signal (Go's
// preemption) interrupts the step and the instruction restarts.
func TestUprobeMulti(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	exe, offA, err := funcOffset(multiA)
	if err != nil {
		t.Fatal(err)
	}
	_, offB, err := funcOffset(multiB)
	if err != nil {
		t.Fatal(err)
	}
	have, err := prog.HaveUprobeMulti()
	if err != nil {
		t.Fatal(err)
	}
	for _, ret := range []bool{false, true} {
		counts, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 3,
			Name: "umulti"})
		if err != nil {
			t.Fatal(err)
		}
		defer counts.Close()
		p := uprobeMultiCounter(t, counts)
		l, err := prog.AttachUprobeMulti(p, exe, prog.UprobeMultiOptions{
			Offsets: []uint64{offB, offA},
			Cookies: []uint64{2, 1},
			PID:     os.Getpid(),
			Return:  ret,
		})
		if !have {
			if !errors.Is(err, sys.ErrNotSupported) {
				t.Fatalf("no uprobe_multi links, yet attach said %v", err)
			}
			t.Skipf("no uprobe_multi links: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		callWithoutSIGURG(func() {
			// The calls are what the uprobes count.
			for i := range 5 {
				_ = multiA(i)
			}
			for i := range 7 {
				_ = multiB(i)
			}
		})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		_ = multiA(0) // detached: not counted
		for cookie, want := range map[uint32]uint64{1: 5, 2: 7} {
			if got, err := counts.Lookup(cookie); err != nil || got != want {
				t.Errorf("return %v: cookie %d counted %d (%v), want %d", ret, cookie, got, err, want)
			}
		}
	}
}

// uprobeMultiCounter counts at counts[cookie], for uprobe_multi links.
func uprobeMultiCounter(t *testing.T, counts insn.MapFD) *prog.Program {
	t.Helper()
	items := []insn.Item{
		insn.Call(insn.BPF_FUNC_get_attach_cookie),
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R0),
	}
	items = append(items, insn.MapIncrement(counts, -4, -16)...)
	items = append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit())
	p, err := prog.Load(prog.Spec{
		Type:               prog.Kprobe,
		Name:               "umulti_counter",
		License:            "GPL",
		Insns:              items,
		ExpectedAttachType: unix.BPF_TRACE_UPROBE_MULTI,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// callWithoutSIGURG runs fn on a thread of its own with SIGURG blocked.
func callWithoutSIGURG(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	bits := int(unsafe.Sizeof(set.Val[0]) * 8)
	sig := int(unix.SIGURG) - 1
	set.Val[sig/bits] |= 1 << (sig % bits)
	unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old)
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	fn()
}

// TestUprobeMultiRefuses: what the kernel would refuse with a bare errno,
// or take and never fire, is refused first, naming it.
func TestUprobeMultiRefuses(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	exe, off, err := funcOffset(multiA)
	if err != nil {
		t.Fatal(err)
	}
	spec := retZeroSpec(prog.Kprobe)
	spec.ExpectedAttachType = unix.BPF_TRACE_UPROBE_MULTI
	p, err := prog.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	plain, err := prog.Load(retZeroSpec(prog.Kprobe))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, c := range []struct {
		what string
		p    *prog.Program
		path string
		o    prog.UprobeMultiOptions
		want string
	}{
		{"not loaded for it", plain, exe, prog.UprobeMultiOptions{Offsets: []uint64{off}},
			"ExpectedAttachType unix.BPF_TRACE_UPROBE_MULTI"},
		{"no place", p, exe, prog.UprobeMultiOptions{}, "no place"},
		{"both lists", p, exe, prog.UprobeMultiOptions{Offsets: []uint64{off}, Symbols: []string{"main"}},
			"both"},
		{"cookies short", p, exe, prog.UprobeMultiOptions{Offsets: []uint64{off, off + 1},
			Cookies: []uint64{1}}, "1 cookies for 2 places"},
		{"negative pid", p, exe, prog.UprobeMultiOptions{Offsets: []uint64{off}, PID: -1},
			"pid -1 is no process id"},
		{"NUL in the path", p, exe + "\x00x", prog.UprobeMultiOptions{Offsets: []uint64{off}}, `path "`},
		{"offset past the file", p, exe, prog.UprobeMultiOptions{Offsets: []uint64{1 << 40}},
			"in no executable segment"},
		{"offset twice", p, exe, prog.UprobeMultiOptions{Offsets: []uint64{off, off + 1, off}},
			fmt.Sprintf("file offset %#x is given twice", off)},
		{"not a file", p, "/", prog.UprobeMultiOptions{Offsets: []uint64{off}}, "/"},
	} {
		l, err := prog.AttachUprobeMulti(c.p, c.path, c.o)
		if err == nil {
			l.Close()
			t.Fatalf("%s: attached", c.what)
		}
		wantErr(t, c.what, err, c.want)
	}
}
