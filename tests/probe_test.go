package tests

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// TestSyscallSymbol: the handler SyscallSymbol names is in /proc/kallsyms,
// with the prefix of this kernel and architecture.
func TestSyscallSymbol(t *testing.T) {
	testutil.RequireRoot(t)
	sym, err := prog.SyscallSymbol("getpid")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.Fields(sc.Text()); len(l) >= 3 && l[2] == sym && strings.Contains("tT", l[1]) {
			t.Logf("%s: %s", sym, sc.Text())
			return
		}
	}
	t.Fatalf("SyscallSymbol(getpid) = %s, which is no function in /proc/kallsyms", sym)
}

// TestKprobeWithoutKprobes: on a kernel without kprobes (the host), the
// error led with "kernel function ... not found"; it must name the cause.
func TestKprobeWithoutKprobes(t *testing.T) {
	testutil.RequireRoot(t)
	if p, _ := tracefs.Path(); !missing(p+"/kprobe_events") || !missing("/sys/bus/event_source/devices/kprobe") {
		t.Skip("this kernel has kprobes")
	}
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	for _, viaTracefs := range []bool{false, true} {
		_, err := prog.AttachKprobe(p, "do_sys_openat2", prog.KprobeOptions{Tracefs: viaTracefs})
		if !errors.Is(err, sys.ErrNotSupported) || strings.Contains(err.Error(), "not found") ||
			!strings.Contains(err.Error(), "this kernel has no kprobes") {
			t.Errorf("tracefs=%v: %v; want ErrNotSupported saying the kernel has no kprobes", viaTracefs, err)
		}
	}
}

func missing(p string) bool {
	_, err := os.Stat(p)
	return errors.Is(err, os.ErrNotExist)
}

// tracefsLink attaches a counter, through uprobe_events, to uprobeTarget,
// or with kprobe true through kprobe_events to the getppid handler.
func tracefsLink(t *testing.T, kprobe, legacy bool) (*prog.Link, string) {
	t.Helper()
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	before := ownEvents(t)
	o := prog.AttachOptions{Legacy: legacy}
	var l *prog.Link
	var err error
	if kprobe {
		sym, _ := prog.SyscallSymbol("getppid")
		l, err = prog.AttachKprobe(p, sym, prog.KprobeOptions{Tracefs: true, AttachOptions: o})
	} else {
		l, err = prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, Tracefs: true, AttachOptions: o})
	}
	if err != nil {
		t.Fatal(err)
	}
	var ev string
	for _, e := range strings.Fields(ownEvents(t)) {
		if !strings.Contains(before, e) {
			ev = e
		}
	}
	if ev == "" {
		t.Fatal("no new event in kprobe_events or uprobe_events")
	}
	return l, ev
}

// TestLinkCloseBusy: when another fd holds the perf event (here a dup of
// the link's), the kernel refuses to remove the tracefs event (EBUSY).
// Close forgot the event then, and it stayed until the process exited;
// now Close says so and a later Close removes it.
func TestLinkCloseBusy(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	kinds := []bool{false}
	if p, _ := tracefs.Path(); !missing(p + "/kprobe_events") {
		kinds = append(kinds, true)
	}
	for i := range 2 * len(kinds) {
		legacy := i%2 == 1
		l, ev := tracefsLink(t, kinds[i/2], legacy)
		dup, err := unix.FcntlInt(uintptr(l.FD()), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			t.Fatal(err)
		}
		err = l.Close()
		if !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "stays") || !strings.Contains(allEvents(t), ev) {
			unix.Close(dup)
			l.Close()
			t.Fatalf("legacy=%v: Close with the event still in use: %v; want EBUSY saying the event stays", legacy, err)
		}
		unix.Close(dup)
		if err := l.Close(); err != nil || strings.Contains(allEvents(t), ev) {
			t.Fatalf("legacy=%v: second Close: %v; event %s left: %v", legacy, err, ev, strings.Contains(allEvents(t), ev))
		}
	}
}

// TestLinkCloseConcurrent: Closes from many goroutines release each fd and
// the tracefs event once (run it with -race).
func TestLinkCloseConcurrent(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	l, ev := tracefsLink(t, false, false)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || strings.Contains(allEvents(t), ev) {
		t.Fatalf("concurrent Close: %v; event left: %v", err, strings.Contains(allEvents(t), ev))
	}
}

// TestUprobeOffsets: an offset outside the file, outside an executable
// segment, past the end of the symbol, or a ref_ctr_offset the uprobe
// PMU's 32 config bits cannot hold, was accepted; the probe never fired or
// watched the wrong semaphore.
func TestUprobeOffsets(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	_, semOff := testutil.AddrOffset(t, uintptr(unsafe.Pointer(&semaphore)))
	before := ownEvents(t)
	wrapPID := math.MinInt
	if strconv.IntSize == 64 { // pid_t is 32 bits: 1<<32 + our pid traced us
		big := int64(1) << 32
		wrapPID = int(big) + os.Getpid()
	}
	for _, c := range []struct {
		o    prog.UprobeOptions
		says string
	}{
		{prog.UprobeOptions{Offset: math.MaxUint64}, "in no executable segment"},
		{prog.UprobeOptions{Offset: math.MaxUint64, Tracefs: true}, "in no executable segment"},
		{prog.UprobeOptions{Offset: semOff}, "in no executable segment"},
		{prog.UprobeOptions{Offset: off, RefCtrOffset: math.MaxUint64, Tracefs: true}, "past the end of"},
		{prog.UprobeOptions{Offset: off, PID: -1}, "pid -1 is no process id"},
		{prog.UprobeOptions{Offset: off, PID: math.MinInt}, "is no process id"},
		{prog.UprobeOptions{Offset: off, PID: wrapPID}, "is no process id"},
	} {
		l, err := prog.AttachUprobe(p, exe, c.o)
		if err == nil {
			l.Close()
		}
		if !errors.Is(err, tracefs.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v; want ErrInvalid saying %q", c.o, err, c.says)
		}
	}
	// A ref_ctr_offset past 4 GiB, in a sparse copy of this binary that
	// long: uprobe_events takes it, the PMU cannot.
	big := filepath.Join(t.TempDir(), "big")
	if b, err := os.ReadFile(exe); err != nil || os.WriteFile(big, b, 0o755) != nil || os.Truncate(big, 5<<30) != nil {
		t.Fatal("cannot make a sparse 5 GiB copy of the test binary")
	}
	// A 32-bit kernel takes neither: uprobe_events parses an unsigned long.
	long, _ := sys.KernelLongSize()
	for _, viaTracefs := range []bool{false, true} {
		says := "does not fit the uprobe PMU's 32 config bits"
		if long == 4 {
			says = "a 32-bit kernel takes file offsets below 4 GiB"
		} else if viaTracefs {
			says = "" // taken
		}
		o := prog.UprobeOptions{Offset: off, RefCtrOffset: 1 << 32, Tracefs: viaTracefs}
		l, err := prog.AttachUprobe(p, big, o)
		if err == nil {
			l.Close()
		}
		refused := errors.Is(err, tracefs.ErrInvalid) && strings.Contains(fmt.Sprint(err), says)
		if says == "" && err != nil || says != "" && !refused {
			t.Errorf("ref_ctr_offset 1<<32, Tracefs %v: %v; want %q", viaTracefs, err, says)
		}
	}
	// By symbol: a library with a dynamic symbol table, where there is one.
	libs, _ := filepath.Glob("/lib/*/libc.so.6")
	if len(libs) > 0 {
		if _, err := prog.SymbolOffset(libs[0], "getpid"); err != nil {
			t.Fatal(err)
		}
		ef, err := elf.Open(libs[0])
		if err != nil {
			t.Fatal(err)
		}
		syms, _ := ef.DynamicSymbols()
		ef.Close()
		var size uint64
		for _, s := range syms {
			if s.Name == "getpid" {
				size = s.Size
			}
		}
		if size == 0 {
			t.Fatalf("%s: no size for getpid", libs[0])
		}
		// Its size, or more, is outside getpid, with a wrap too.
		for _, o := range []uint64{size, size + 1, 1 << 20, math.MaxUint64, math.MaxUint64 - size} {
			_, err = prog.AttachUprobe(p, libs[0], prog.UprobeOptions{Symbol: "getpid", Offset: o})
			if !errors.Is(err, tracefs.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("offset %#x is outside getpid (%d bytes)", o, size)) {
				t.Errorf("offset %#x into getpid of %d bytes: %v", o, size, err)
			}
		}
		l, err := prog.AttachUprobe(p, libs[0], prog.UprobeOptions{Symbol: "getpid", PID: os.Getpid()})
		if err != nil {
			t.Errorf("getpid's entry: %v", err)
		} else {
			l.Close()
		}
	}
	if after := ownEvents(t); after != before {
		t.Fatalf("events changed:\nbefore %q\nafter  %q", before, after)
	}
}

// TestProbeStringsWithNUL: every string of a probe attachment is handed to
// the kernel as a C string; a NUL in one is refused, not cut.
func TestProbeStringsWithNUL(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	tp := counter(t, prog.Tracepoint, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	invalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, tracefs.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	for _, viaTracefs := range []bool{false, true} {
		_, err := prog.AttachUprobe(p, exe+"\x00.so", prog.UprobeOptions{Offset: off, Tracefs: viaTracefs})
		invalid("uprobe path with NUL", err)
		_, err = prog.AttachUprobe(p, exe, prog.UprobeOptions{Symbol: "main.main\x00x", Tracefs: viaTracefs})
		invalid("uprobe symbol with NUL", err)
		_, err = prog.AttachKprobe(p, "do_sys_openat2\x00x", prog.KprobeOptions{Tracefs: viaTracefs})
		invalid("kprobe symbol with NUL", err)
	}
	_, err := prog.AttachTracepoint(tp, "syscalls", "sys_enter_getppid\x00x", prog.AttachOptions{})
	invalid("tracepoint name with NUL", err)
	_, err = prog.SyscallSymbol("getpid\x00x")
	invalid("syscall name with NUL", err)
	attr := unix.PerfEventAttr{Type: math.MaxUint32}
	if _, err := sys.PerfEventOpenProbe(&attr, "kprobe", "do_sys_openat2\x00x", -1, 0, -1, 0); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("PerfEventOpenProbe with NUL: %v", err)
	}
}

// TestProbeJournal: perf_event_open's journal line says what a PMU probe
// probes, and tracefs's writes are journaled too.
func TestProbeJournal(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	counts, _ := newArray(t, 1)
	p := counter(t, prog.Kprobe, counts, false)
	exe, off := testutil.FuncOffset(t, uprobeTarget)
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	for _, viaTracefs := range []bool{false, true} {
		l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, Tracefs: viaTracefs, Return: viaTracefs})
		if err != nil {
			sys.SetJournal(nil)
			t.Fatal(err)
		}
		l.Close()
	}
	res := []string{}
	if !missing("/sys/bus/event_source/devices/kprobe") {
		sym, _ := prog.SyscallSymbol("getppid")
		l, err := prog.AttachKprobe(p, sym, prog.KprobeOptions{Offset: 0})
		if err != nil {
			sys.SetJournal(nil)
			t.Fatal(err)
		}
		l.Close()
		res = append(res, `(?m)^perf_event_open\(type=kprobe config=0x0 kprobe_func="`+sym+`" probe_offset=0x0 .*, pid=-1, cpu=0, .*\) = \d+ <`)
	}
	sys.SetJournal(nil)
	q := regexp.QuoteMeta
	for _, re := range append([]string{
		`(?m)^perf_event_open\(type=uprobe config=0x0 uprobe_path="` + q(exe) + `" probe_offset=0x[0-9a-f]+ .*, pid=-1, cpu=0, .*\) = \d+ <`,
		`(?m)^write\(".*/uprobe_events", "r:bpfkit_\d+_\d+_\d+/e\d+_tests_test ` + q(exe) + `:0x[0-9a-f]+\\n"\) = \d+ <`,
		`(?m)^perf_event_open\(type=tracepoint config=0x[0-9a-f]+ .*\) = \d+ <`,
		`(?m)^write\(".*/uprobe_events", "-:bpfkit_\d+_\d+_\d+/e\d+_tests_test\\n"\) = \d+ <`,
	}, res...) {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("journal lacks %s:\n%s", re, buf.String())
		}
	}
	// The tracefs event: created, opened, removed, in that order.
	m := regexp.MustCompile(`(?m)^write\(".*/uprobe_events", "r:(bpfkit_\d+_\d+_\d+/e\d+_tests_test) `).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("journal lacks the uprobe_events line of the event:\n%s", buf.String())
	}
	order := `(?ms)^write\("[^"]*/uprobe_events", "r:` + q(m[1]) + ` .*^perf_event_open\(type=tracepoint .*^write\("[^"]*/uprobe_events", "-:` + q(m[1]) + `\\n"\) = \d+ <`
	if !regexp.MustCompile(order).MatchString(buf.String()) {
		t.Errorf("journal does not create, open and remove %s in that order:\n%s", m[1], buf.String())
	}
}
