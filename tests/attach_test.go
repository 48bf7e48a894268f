package tests

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// requireKprobes skips on a kernel without kprobes (the host) with the
// reason; the VM suite runs these tests on kernels that have them.
func requireKprobes(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	if !haveKprobes(t) {
		t.Skip("this kernel has no kprobes (CONFIG_KPROBES is off); tests/vm runs this on kernels that have them")
	}
}

// haveKprobes says whether this kernel has kprobes; in the VMs, whose
// kernels all do, it fails the test if not.
func haveKprobes(t testing.TB) bool {
	t.Helper()
	p, err := tracefs.Path()
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p + "/kprobe_events")
	if err != nil && os.Getenv("BPFKIT_VM") != "" {
		t.Fatalf("the VM kernel %s has no kprobe_events", os.Getenv("BPFKIT_VM"))
	}
	return err == nil
}

func newArray(t testing.TB, n uint32) (*mapfd.Map, *mapfd.Typed[uint32, uint64]) {
	t.Helper()
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: n, Name: "counts"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tm, err := mapfd.NewTyped[uint32, uint64](m)
	if err != nil {
		t.Fatal(err)
	}
	return m, tm
}

// counter is a program that, for this process only, adds one to
// counts[key], where key is the attachment's cookie (bpf_get_attach_cookie,
// 5.15) or 0 when withCookie is false.
func counter(t *testing.T, typ prog.Type, counts *mapfd.Map, withCookie bool) *prog.Program {
	t.Helper()
	key := []Item{StoreImm(BPF_W, R10, -4, 0)}
	if withCookie {
		key = []Item{Mov64Reg(R1, R6), Call(BPF_FUNC_get_attach_cookie), StoreMem(BPF_W, R10, -4, R0)}
	}
	items := append([]Item{
		Mov64Reg(R6, R1),
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
	}, key...)
	items = append(items, testutil.AddOne(counts, "out")...)
	// Return 1: on a tracepoint, 0 would drop its record for every other
	// perf user of it, other tests running at the same time among them.
	items = append(items, Label("out"), Mov64Imm(R0, 1), Exit())
	p, err := prog.Load(prog.Spec{Type: typ, Name: "counter", License: "GPL", Insns: items})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// raw makes a system call without the Go runtime's help, n times.
func raw(nr uintptr, n int) {
	for range n {
		unix.RawSyscall(nr, 0, 0, 0)
	}
}

func expectCounts(t *testing.T, tm *mapfd.Typed[uint32, uint64], want map[uint32]uint64) {
	t.Helper()
	for k, w := range want {
		if got, err := tm.Lookup(k); err != nil || got != w {
			t.Errorf("counts[%d] = %d, %v; want %d", k, got, err, w)
		}
	}
}

// cookieSupport says whether this kernel must carry cookies: perf links
// exist from 5.15. The probe is checked against the kernel version.
func cookieSupport(t *testing.T) bool {
	t.Helper()
	ok, err := prog.HavePerfLink()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := prog.KernelVersion()
	if !ok && v >= 5<<16|15<<8 {
		t.Fatalf("HavePerfLink says no on %d.%d, which has perf links", v>>16, v>>8&0xff)
	}
	return ok
}

var threeSyscalls = []struct {
	name string
	nr   uintptr
	n    int
}{{"getppid", unix.SYS_GETPPID, 11}, {"getuid", sysGetuid, 23}, {"getgid", sysGetgid, 37}}

// TestCookies: one program on three syscall tracepoints, then on three
// kprobes on the syscall handlers (the first through kprobe_events, the
// others through the PMU), with cookies 1, 2, 3, counts each attachment
// separately. Without perf links a cookie must be refused.
func TestCookies(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range []string{"tracepoint", "kprobe"} {
		t.Run(kind, func(t *testing.T) {
			typ, attach := prog.Tracepoint, func(p *prog.Program, i int, name string, o prog.AttachOptions) (*prog.Link, error) {
				return prog.AttachTracepoint(p, "syscalls", "sys_enter_"+name, o)
			}
			if kind == "kprobe" {
				requireKprobes(t)
				typ, attach = prog.Kprobe, func(p *prog.Program, i int, name string, o prog.AttachOptions) (*prog.Link, error) {
					sym, err := prog.SyscallSymbol(name)
					if err != nil {
						return nil, err
					}
					return prog.AttachKprobe(p, sym, prog.KprobeOptions{AttachOptions: o, Tracefs: i == 0})
				}
			}
			testutil.CheckNoLeaks(t)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			counts, tm := newArray(t, 4)
			if !cookieSupport(t) {
				p := counter(t, typ, counts, false)
				if _, err := attach(p, 0, "getppid", prog.AttachOptions{Cookie: 1}); !errors.Is(err, sys.ErrNotSupported) {
					t.Fatalf("cookie without perf links: %v, want ErrNotSupported", err)
				}
				t.Skip("no perf links: cookies are refused, as checked")
			}
			p := counter(t, typ, counts, true)
			for i, sc := range threeSyscalls {
				l, err := attach(p, i, sc.name, prog.AttachOptions{Cookie: uint64(i + 1)})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			for _, sc := range threeSyscalls {
				raw(sc.nr, sc.n)
			}
			expectCounts(t, tm, map[uint32]uint64{0: 0, 1: 11, 2: 23, 3: 37})
		})
	}
}

// TestKprobeCount: a kprobe on the getppid handler counts exactly N calls
// from this process, through the PMU and through kprobe_events, each with a
// perf link and with the ioctl.
func TestKprobeCount(t *testing.T) {
	requireKprobes(t)
	testutil.CheckNoLeaks(t)
	counts, tm := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	sym, err := prog.SyscallSymbol("getppid")
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for _, viaTracefs := range []bool{false, true} {
		for _, legacy := range []bool{false, true} {
			l, err := prog.AttachKprobe(p, sym, prog.KprobeOptions{Tracefs: viaTracefs, AttachOptions: prog.AttachOptions{Legacy: legacy}})
			if err != nil {
				t.Fatalf("tracefs=%v legacy=%v: %v", viaTracefs, legacy, err)
			}
			raw(unix.SYS_GETPPID, 41)
			n += 41
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			raw(unix.SYS_GETPPID, 5) // not counted: detached
			expectCounts(t, tm, map[uint32]uint64{0: n})
		}
	}
	assertNoEvents(t)
}

// TestKretprobeReturnValue: a kretprobe on getppid's handler records the
// return value (pt_regs->ax on x86-64, regs[0] on arm64: prog.KernelPtRegs).
func TestKretprobeReturnValue(t *testing.T) {
	requireKprobes(t)
	testutil.CheckNoLeaks(t)
	regs, err := prog.KernelPtRegs()
	if err != nil {
		t.Fatal(err)
	}
	counts, tm := newArray(t, 1)
	p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: "retval", License: "GPL", Insns: []Item{
		Mov64Reg(R6, R1),
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
		regs.Return(R7, R6), // PT_REGS_RC
		StoreImm(BPF_W, R10, -4, 0),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, counts),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		StoreMem(BPF_DW, R0, 0, R7),
		Label("out"),
		Mov64Imm(R0, 0),
		Exit(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sym, _ := prog.SyscallSymbol("getppid")
	l, err := prog.AttachKprobe(p, sym, prog.KprobeOptions{Return: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ppid, _, _ := unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	expectCounts(t, tm, map[uint32]uint64{0: uint64(ppid)})
	if ppid == 0 {
		t.Fatal("getppid returned 0: the check proves nothing")
	}
}

// uprobeTarget is the function the uprobe tests probe; nosplit, with no
// stack check to run it again from its first instruction after the
// runtime stopped the goroutine there (see prog's uprobed), so that a
// uprobe counts each call once.
//
//go:noinline
//go:nosplit
func uprobeTarget(x int) int { return x*7 + 3 }

// TestUprobeCount: a uprobe on a function of this test binary counts exactly
// N calls, through the PMU and uprobe_events; by symbol where the binary
// has a symbol table (go test -c keeps it; go test strips it).
func TestUprobeCount(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, tm := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	if symOff, err := prog.SymbolOffset(exe, "github.com/bpfkit/bpfkit/tests.uprobeTarget"); err == nil {
		if symOff != off {
			t.Fatalf("SymbolOffset = %#x, the function is at %#x", symOff, off)
		}
	} else {
		t.Logf("by-symbol check skipped: %v", err)
	}
	n, sum := uint64(0), 0
	for _, viaTracefs := range []bool{false, true} {
		l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, Tracefs: viaTracefs, PID: os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 29 {
			sum += uprobeTarget(i)
		}
		n += 29
		l.Close()
		_ = uprobeTarget(0) // a call the closed link must not count
		expectCounts(t, tm, map[uint32]uint64{0: n})
	}
	_ = sum
	assertNoEvents(t)
}

// semaphore is a USDT semaphore: initialised, so that it lives in the
// binary's data, a file-backed mapping, where ref_ctr_offset can name it.
var semaphore uint16 = 40

// TestUprobeRefCtr: a uprobe with ref_ctr_offset (4.20) makes the kernel
// increment the semaphore in this very process while the probe exists, and
// decrement it when the probe goes, through the PMU and uprobe_events.
func TestUprobeRefCtr(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, tm := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	semFile, semOff := testutil.AddrOffset(t, uintptr(unsafe.Pointer(&semaphore)))
	if semFile != exe {
		t.Fatalf("the semaphore is mapped from %s, not %s", semFile, exe)
	}
	read := func() uint16 { return *(*uint16)(unsafe.Pointer(&semaphore)) }
	for _, viaTracefs := range []bool{false, true} {
		before := read()
		l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, RefCtrOffset: semOff, Tracefs: viaTracefs})
		if err != nil {
			t.Fatal(err)
		}
		if got := read(); got != before+1 {
			l.Close()
			t.Fatalf("tracefs=%v: semaphore %d while probed, want %d", viaTracefs, got, before+1)
		}
		_ = uprobeTarget(1) // a call while probed
		l.Close()
		if got := read(); got != before {
			t.Fatalf("tracefs=%v: semaphore %d after Close, want %d", viaTracefs, got, before)
		}
	}
	expectCounts(t, tm, map[uint32]uint64{0: 2})
}

// TestKretprobeMaxActive: maxactive goes through kprobe_events ("r8:...")
// and the kretprobe still counts every return.
func TestKretprobeMaxActive(t *testing.T) {
	requireKprobes(t)
	testutil.CheckNoLeaks(t)
	counts, tm := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	sym, _ := prog.SyscallSymbol("getppid")
	l, err := prog.AttachKprobe(p, sym, prog.KprobeOptions{Return: true, MaxActive: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(allEvents(t), group(t)) {
		l.Close()
		t.Fatal("a kretprobe with maxactive made no kprobe_events entry")
	}
	raw(unix.SYS_GETPPID, 13)
	l.Close()
	expectCounts(t, tm, map[uint32]uint64{0: 13})
	assertNoEvents(t)
}

// TestRawTracepoint counts this process's getppid calls at sys_enter.
func TestRawTracepoint(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	counts, tm := newArray(t, 1)
	// ctx->args[1] is the syscall number at sys_enter.
	items := append([]Item{
		LoadMem(BPF_DW, R6, R1, 8),
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
		JumpImm(BPF_JNE, R6, unix.SYS_GETPPID, "out"),
		StoreImm(BPF_W, R10, -4, 0),
	}, testutil.AddOne(counts, "out")...)
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: "rawtp", License: "GPL", Insns: append(items,
		Label("out"), Mov64Imm(R0, 0), Exit())})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw(unix.SYS_GETPPID, 17)
	l.Close()
	raw(unix.SYS_GETPPID, 3)
	expectCounts(t, tm, map[uint32]uint64{0: 17})
	if _, err := prog.AttachRawTracepoint(p, "no_such_tp", prog.AttachOptions{}); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("unknown raw tracepoint: %v", err)
	}
}

func allEvents(t *testing.T) string {
	t.Helper()
	k, err := tracefs.Events(tracefs.Kprobe)
	if err != nil {
		t.Fatal(err)
	}
	u, err := tracefs.Events(tracefs.Uprobe)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(append(k, u...), " ")
}

// ownEvents is allEvents but other bpfkit processes' groups: go test runs
// packages at once, and their probes come and go meanwhile.
func ownEvents(t *testing.T) string {
	t.Helper()
	var out []string
	for _, e := range strings.Fields(allEvents(t)) {
		if g, _, _ := strings.Cut(e, "/"); !strings.HasPrefix(g, "bpfkit_") || g == group(t) {
			out = append(out, e)
		}
	}
	return strings.Join(out, " ")
}

// group is this process's tracefs event group.
func group(t *testing.T) string {
	t.Helper()
	g, err := tracefs.Group()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func assertNoEvents(t *testing.T) {
	t.Helper()
	if ev := allEvents(t); strings.Contains(ev, group(t)) {
		t.Fatalf("events left behind: %s", ev)
	}
}

// TestBadInput: each mistake gives a clear error and writes nothing.
func TestBadInput(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	tp := counter(t, prog.Tracepoint, counts, false)
	before := ownEvents(t)
	notELF := filepath.Join(t.TempDir(), "script.sh")
	os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755)
	exe, off := testutil.FuncOffset(t, uprobeTarget)

	_, err := prog.AttachTracepoint(tp, "syscalls", "sys_enter_nonexistent", prog.AttachOptions{})
	if !errors.Is(err, tracefs.ErrNotExist) {
		t.Errorf("missing tracepoint: %v", err)
	}
	_, err = prog.AttachUprobe(p, notELF, prog.UprobeOptions{Offset: 0})
	if err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("non-ELF uprobe target: %v", err)
	}
	_, err = prog.AttachUprobe(p, exe, prog.UprobeOptions{Symbol: "no_such_function"})
	if err == nil || !strings.Contains(err.Error(), `no function symbol "no_such_function"`) {
		t.Errorf("unknown uprobe symbol: %v", err)
	}
	for _, viaTracefs := range []bool{false, true} {
		_, err = prog.AttachUprobe(p, exe+"\n-:x/y", prog.UprobeOptions{Offset: off, Tracefs: viaTracefs})
		if err == nil {
			t.Errorf("path with a newline accepted")
		}
	}
	_, err = prog.AttachKprobe(p, "do_sys_open\n-:kprobes/x", prog.KprobeOptions{Tracefs: true})
	if !errors.Is(err, tracefs.ErrInvalid) {
		t.Errorf("symbol with a newline: %v", err)
	}
	if _, statErr := os.Stat("/sys/kernel/tracing/kprobe_events"); statErr == nil {
		for _, viaTracefs := range []bool{false, true} {
			_, err = prog.AttachKprobe(p, "bpfkit_no_such_function", prog.KprobeOptions{Tracefs: viaTracefs})
			if err == nil || !strings.Contains(err.Error(), `"bpfkit_no_such_function" not found`) {
				t.Errorf("unknown kernel symbol (tracefs=%v): %v", viaTracefs, err)
			}
			t.Log(err)
		}
	}
	if after := ownEvents(t); after != before {
		t.Fatalf("events changed:\nbefore %q\nafter  %q", before, after)
	}
}

// TestSignalCleanup runs a child that attaches through tracefs events (a
// uprobe, and a kprobe where the kernel has them), like a tool would, and
// stops it: with SIGINT it closes its links and leaves nothing; with SIGKILL
// it leaves its events, and Sweep removes them.
func TestSignalCleanup(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("BPFKIT_SIGNAL_CHILD") != "" {
		signalChild(t)
		return
	}
	testutil.LockSweeps(t) // the killed child's events are for its own Sweep
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSignalCleanup$")
		cmd.Env = append(os.Environ(), "BPFKIT_SIGNAL_CHILD=1")
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "attached ") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q %v", line, err)
		}
		group := strings.TrimSpace(strings.TrimPrefix(line, "attached "))
		if !strings.Contains(allEvents(t), group) {
			t.Fatalf("the child's events (%s) are not in tracefs", group)
		}
		cmd.Process.Signal(sig)
		err = cmd.Wait()
		left := strings.Contains(allEvents(t), group)
		switch sig {
		case syscall.SIGINT:
			if err != nil || left {
				t.Fatalf("after SIGINT: exit %v, events left: %v", err, left)
			}
		case syscall.SIGKILL:
			if !left {
				t.Fatal("after SIGKILL the events are gone already: nothing to sweep")
			}
			removed, _, err := tracefs.Sweep()
			if err != nil || len(removed) == 0 || strings.Contains(allEvents(t), group) {
				t.Fatalf("Sweep removed %v, %v; left %s", removed, err, allEvents(t))
			}
		}
	}
}

func signalChild(t *testing.T) {
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	var links []*prog.Link
	l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, Tracefs: true})
	if err != nil {
		t.Fatal(err)
	}
	links = append(links, l)
	if _, err := os.Stat("/sys/kernel/tracing/kprobe_events"); err == nil {
		sym, _ := prog.SyscallSymbol("getppid")
		l, err := prog.AttachKprobe(p, sym, prog.KprobeOptions{Tracefs: true})
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, l)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	fmt.Printf("attached %s\n", group(t))
	<-sigs
	for _, l := range links {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}
}
