package sys_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The tests in this file call sys as a hostile caller would: commands out
// of range, nil attrs with the journal on, strings the kernel reads
// otherwise than Go, zero and doubly closed fds. None may panic.

// wantErr fails t unless err is non-nil, wraps errno (if not 0), holds
// every part and starts with sys's prefix: "sys: ", or for an *Error its
// call's name ("BPF_MAP_CREATE: ").
func wantErr(t *testing.T, what string, err error, errno unix.Errno, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	var e *sys.Error
	if !strings.HasPrefix(err.Error(), "sys: ") && !(errors.As(err, &e) && strings.HasPrefix(err.Error(), e.Op+": ")) {
		t.Fatalf("%s: error %q starts with neither \"sys: \" nor its call's name", what, err)
	}
	if errno != 0 && !errors.Is(err, errno) {
		t.Fatalf("%s: %v, want %s", what, err, unix.ErrnoName(errno))
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not say %q", what, err, p)
		}
	}
}

// TestNamesOutOfRange: the name tables' bound checks compared int(v) with
// their length, and on 32-bit ports int(v) of a uint32 v >= 1<<31 is
// negative: the check passed and the index panicked (mapfd.Type(^uint32(0))
// .String() on 386). The journal names an event type and an epoll op the
// same way.
func TestNamesOutOfRange(t *testing.T) {
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	defer sys.SetJournal(nil)
	for _, v := range []uint32{1 << 31, ^uint32(0)} {
		want := fmt.Sprint(v)
		for name, f := range map[string]func(uint32) string{
			"MapTypeName": sys.MapTypeName, "ProgTypeName": sys.ProgTypeName, "AttachTypeName": sys.AttachTypeName,
		} {
			if got := f(v); got != want {
				t.Errorf("%s(%d) = %q, want %q", name, v, got, want)
			}
		}
		attr := unix.PerfEventAttr{Type: v}
		if fd, err := sys.PerfEventOpen(&attr, -1, 0, -1, 0); err == nil {
			unix.Close(fd)
			t.Errorf("perf_event_open of type %d succeeded", v)
		}
		if err := sys.EpollCtl(-1, int(int32(v)), -1, 0, 0); err == nil {
			t.Errorf("epoll_ctl op %d on fd -1 succeeded", int32(v))
		}
		for _, line := range []string{"perf_event_open(type=" + want + " ", "epoll_ctl(-1, " + want + ", "} {
			if !strings.Contains(buf.String(), line) {
				t.Errorf("journal lacks %q:\n%s", line, buf.String())
			}
		}
	}
}

// TestNilAttrs: with the journal on, a nil attr was dereferenced to
// describe it; without, EPERM's hint read the program type through it.
func TestNilAttrs(t *testing.T) {
	sys.SetJournal(io.Discard)
	defer sys.SetJournal(nil)
	calls := map[string]func() error{
		"MapCreate":            func() error { _, err := sys.MapCreate(nil); return err },
		"MapLookupElem":        func() error { return sys.MapLookupElem(nil) },
		"MapUpdateElem":        func() error { return sys.MapUpdateElem(nil) },
		"MapDeleteElem":        func() error { return sys.MapDeleteElem(nil) },
		"MapGetNextKey":        func() error { return sys.MapGetNextKey(nil) },
		"MapLookupElemNoSleep": func() error { return sys.MapLookupElemNoSleep(nil) },
		"MapUpdateElemNoSleep": func() error { return sys.MapUpdateElemNoSleep(nil) },
		"MapDeleteElemNoSleep": func() error { return sys.MapDeleteElemNoSleep(nil) },
		"MapGetNextKeyNoSleep": func() error { return sys.MapGetNextKeyNoSleep(nil) },
		"MapLookupAndDel":      func() error { return sys.MapLookupAndDeleteElem(nil) },
		"MapFreeze":            func() error { return sys.MapFreeze(nil) },
		"MapLookupBatch":       func() error { return sys.MapLookupBatch(nil) },
		"ProgLoad":             func() error { _, err := sys.ProgLoad(nil); return err },
		"ObjPin":               func() error { return sys.ObjPin(nil) },
		"ObjGet":               func() error { _, err := sys.ObjGet(nil); return err },
		"ProgQuery":            func() error { return sys.ProgQuery(nil) },
		"ProgTestRun":          func() error { return sys.ProgTestRun(nil) },
		"ProgGetNextID":        func() error { return sys.ProgGetNextID(nil) },
		"MapGetFDByID":         func() error { _, err := sys.MapGetFDByID(nil); return err },
		"ObjGetInfoByFD":       func() error { return sys.ObjGetInfoByFD(nil) },
		"RawTracepoint":        func() error { _, err := sys.RawTracepointOpen(nil); return err },
		"LinkCreate":           func() error { _, err := sys.LinkCreate(nil); return err },
		"LinkCreateTr":         func() error { _, err := sys.LinkCreateTracing(nil); return err },
		"BTFGetNextID":         func() error { return sys.BTFGetNextID(nil) },
		"BTFGetFDByID":         func() error { _, err := sys.BTFGetFDByID(nil); return err },
		"LinkDetach":           func() error { return sys.LinkDetach(nil) },
		"EnableStats":          func() error { _, err := sys.EnableStats(nil); return err },
		"PerfEventOpen":        func() error { _, err := sys.PerfEventOpen(nil, -1, 0, -1, 0); return err },
	}
	for name, call := range calls {
		wantErr(t, name+"(nil)", call(), unix.EFAULT, "nil attr")
	}
}

// TestStringPointerRejectsNUL: "a\x00b" reached the kernel as "a".
func TestStringPointerRejectsNUL(t *testing.T) {
	for _, s := range []string{"\x00", "a\x00b", "GPL\x00proprietary"} {
		_, err := sys.StringPointer(s)
		wantErr(t, "StringPointer("+s+")", err, unix.EINVAL, "holds a NUL byte")
	}
	for _, s := range []string{"", "GPL", strings.Repeat("x", 300), "a\nb\xa0"} {
		if _, err := sys.StringPointer(s); err != nil {
			t.Fatalf("StringPointer(%q): %v", s, err)
		}
	}
}

func TestNewObjName(t *testing.T) {
	for _, s := range []string{"", "a", "map_1.x", strings.Repeat("a", 300)} {
		n, err := sys.NewObjName(s)
		if err != nil || n.String() != s[:min(len(s), 15)] {
			t.Fatalf("NewObjName(%q) = %q, %v", s, n, err)
		}
	}
	for s, bad := range map[string]string{"a-b": `"-" at 1`, "a b": `" " at 1`, "x\x00": `"\x00" at 1`, "\xa0": `"\xa0" at 0`, "é": `"\xc3" at 0`} {
		_, err := sys.NewObjName(s)
		wantErr(t, "NewObjName("+s+")", err, unix.EINVAL, bad)
	}
}

// TestZeroFD: handles built as zero values reported and closed fd 0.
func TestZeroFD(t *testing.T) {
	var f sys.FD
	if f.Int() != -1 || f.Close() != nil {
		t.Fatalf("zero FD: %d", f.Int())
	}
	if _, err := unix.FcntlInt(0, unix.F_GETFD, 0); err != nil {
		t.Fatalf("fd 0 closed: %v", err)
	}
	f.Set(-5)
	if f.Int() != -1 || f.Close() != nil {
		t.Fatalf("FD set to -5: %d", f.Int())
	}
}

// TestFDCloseOnce: two goroutines closing the same handle both called
// close(2) on its number; the second could close a newly opened file.
func TestFDCloseOnce(t *testing.T) {
	for range 200 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(p[1])
		var f sys.FD
		f.Set(p[0])
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = f.Close() }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("concurrent Close: %v", err)
			}
		}
	}
}

func TestBPFFSPath(t *testing.T) {
	testutil.RequireRoot(t)
	fs := testutil.BPFFS(t)
	tmp := t.TempDir()
	for path, want := range map[string]string{
		"":                    "names no entry",
		fs + "/":              "names no entry",
		fs + "/..":            "names no entry",
		fs + "/.":             "names no entry",
		fs + "/../x":          "is not on a BPF file system",
		tmp + "/x":            "is not on a BPF file system",
		fs + "/a\x00b":        "holds a NUL byte",
		fs + "/missing/dir/x": "no such file",
		"relative-not-in-bpf": "is not on a BPF file system",
	} {
		_, err := sys.BPFFSPath(path)
		wantErr(t, "BPFFSPath("+path+")", err, 0, want)
	}
	link := filepath.Join(tmp, "l")
	if err := os.Symlink(fs, link); err != nil {
		t.Fatal(err)
	}
	got, err := sys.BPFFSPath(link + "/m")
	if err != nil || got != filepath.Join(fs, "m") {
		t.Fatalf("BPFFSPath through a symlink: %q, %v", got, err)
	}
	if err := sys.Unpin(fs + "/absent"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Unpin of a missing pin: %v", err)
	}
	if _, err := sys.KindOf(-1); err == nil {
		t.Fatal("KindOf(-1)")
	}
	if _, err := sys.KindOf(0); err == nil || !strings.Contains(err.Error(), "not a BPF object") {
		t.Fatalf("KindOf(0): %v", err)
	}
}

// TestE2BIGHint: every E2BIG said the attr set an unknown field, also for a
// program over the instruction limit; a map whose value is too large for
// its type is told so first.
func TestE2BIGHint(t *testing.T) {
	testutil.RequireRoot(t)
	code := make([]byte, 8)
	_, err := sys.ProgLoad(&sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_SOCKET_FILTER, InsnCnt: 1<<20 + 1,
		Insns: sys.NewPointer(unsafe.Pointer(&code[0])), License: cstr("GPL")})
	wantErr(t, "load of 1M+1 instructions", err, unix.E2BIG, "the program is too large")
	// Map sizes over what the type allows: the hint names them first.
	for _, a := range []sys.MapCreateAttr{
		{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: math.MaxUint32, MaxEntries: 1},    // over KMALLOC_MAX_SIZE
		{MapType: unix.BPF_MAP_TYPE_PERCPU_ARRAY, KeySize: 4, ValueSize: 1 << 16, MaxEntries: 1},    // over PCPU_MIN_UNIT_SIZE
		{MapType: unix.BPF_MAP_TYPE_HASH, KeySize: 4, ValueSize: math.MaxUint32 - 8, MaxEntries: 1}, // over KMALLOC_MAX_SIZE
	} {
		fd, err := sys.MapCreate(&a)
		if err == nil {
			unix.Close(fd)
		}
		wantErr(t, fmt.Sprintf("map type %d of key %d, value %d bytes", a.MapType, a.KeySize, a.ValueSize), err, unix.E2BIG,
			"BPF_MAP_CREATE: argument list too long (the key, value or max_entries is larger than this map type allows, or the attr sets a field this kernel does not know)")
	}
}

// TestUprobePMUNamesSysAdmin: with CAP_BPF and CAP_PERFMON but not
// CAP_SYS_ADMIN, the uprobe PMU refuses perf_event_open, and the hint said
// "capabilities are present".
func TestUprobePMUNamesSysAdmin(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := os.ReadFile("/sys/bus/event_source/devices/uprobe/type")
	if err != nil {
		t.Skipf("no uprobe PMU: %v", err)
	}
	var typ uint32
	for _, c := range strings.TrimSpace(string(b)) {
		typ = typ*10 + uint32(c-'0')
	}
	exe, _ := os.Executable()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread dies with its capability dropped
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err = unix.Capget(&hdr, &data[0]); err != nil {
			return
		}
		data[0].Effective &^= 1 << sys.CAP_SYS_ADMIN
		if err = unix.Capset(&hdr, &data[0]); err != nil {
			return
		}
		attr := unix.PerfEventAttr{Type: typ, Ext2: 0x1000}
		var fd int
		fd, err = sys.PerfEventOpenProbe(&attr, "uprobe", exe, -1, 0, -1, 0)
		if err == nil {
			unix.Close(fd)
		}
	}()
	wg.Wait()
	wantErr(t, "uprobe PMU without CAP_SYS_ADMIN", err, unix.EACCES, "missing CAP_SYS_ADMIN", "uprobe PMU")
}

// TestJournalFailsClosed: a BPFKIT_JOURNAL value that is not an absolute
// path, and a journal that cannot be written, let the program run
// unrecorded. Now the calls fail, and a new fd is not leaked.
func TestJournalFailsClosed(t *testing.T) {
	testutil.RequireRoot(t)
	if v, ok := os.LookupEnv("BPFKIT_JOURNAL_CHILD"); ok {
		sys.SetJournal(io.Discard) // a program's own journal does not unbreak BPFKIT_JOURNAL's
		fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
		if err == nil {
			unix.Close(fd)
		}
		if v == "fail" {
			if !errors.Is(err, sys.ErrJournal) {
				t.Fatalf("MapCreate with BPFKIT_JOURNAL=%q: %v, want ErrJournal", os.Getenv("BPFKIT_JOURNAL"), err)
			}
			t.Log(err)
		} else if err != nil {
			t.Fatal(err)
		}
		return
	}
	for env, want := range map[string]string{
		"relative/file": "fail", "true": "fail", "/nonexistent-dir/j": "fail", "/dev/full": "fail",
		"0": "ok", "": "ok", "stderr": "ok", "1": "ok",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestJournalFailsClosed$", "-test.v")
		cmd.Env = append(os.Environ(), "BPFKIT_JOURNAL="+env, "BPFKIT_JOURNAL_CHILD="+want)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("BPFKIT_JOURNAL=%q: %v\n%s", env, err, out)
		}
		if journaled := strings.Contains(string(out), "bpf(BPF_MAP_CREATE"); journaled != (env == "stderr" || env == "1") {
			t.Fatalf("BPFKIT_JOURNAL=%q: journaled to stderr: %v\n%s", env, journaled, out)
		}
	}

	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	testutil.CheckNoLeaks(t)
	sys.SetJournal(full)
	fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	sys.SetJournal(nil)
	if !errors.Is(err, sys.ErrJournal) || !errors.Is(err, unix.ENOSPC) || fd != -1 {
		t.Fatalf("MapCreate journaled to /dev/full: %d, %v", fd, err)
	}
	sys.SetJournalBestEffort(full)
	fd, err = sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	sys.SetJournal(nil)
	if err != nil {
		t.Fatalf("best-effort journal to /dev/full: %v", err)
	}
	unix.Close(fd)
}

// hostileFDs are fds that are none, or not what a call wants: -1, one just
// closed, a regular file, math.MaxInt and math.MinInt, and (on 64-bit)
// 1<<32 plus the regular file's, which the kernel, reading 32 bits, would
// take for it.
type hostileFDs struct {
	closed, file int
	wrap         []int // 1<<32 + file, on 64-bit
}

func newHostileFDs(t *testing.T) hostileFDs {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(file) })
	closed := 1000 // a number no other fd of the test takes
	if err := unix.Dup3(file, closed, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.Close(closed)
	h := hostileFDs{closed: closed, file: file}
	if strconv.IntSize == 64 {
		big := int64(1) << 32
		h.wrap = []int{int(big) + file, int(-big) + file}
	}
	return h
}

// bad are the fds that are none at all.
func (h hostileFDs) bad() []int {
	return append([]int{-1, h.closed, math.MaxInt, math.MinInt}, h.wrap...)
}

// TestAdversarialFDCalls: the calls on fds answer EBADF for an fd that is
// none, past 32 bits too (1<<32 + fd was fd), and the kernel's error for a
// regular file; a timeout past 32 bits waits (it was cut to 0, or to a few
// milliseconds). Nothing is left open.
func TestAdversarialFDCalls(t *testing.T) {
	testutil.CheckNoLeaks(t)
	h := newHostileFDs(t)
	fdsBefore := testutil.OpenFDs(t)
	defer func() {
		if after := testutil.OpenFDs(t); after != fdsBefore {
			t.Errorf("fds before: %s; after: %s", fdsBefore, after)
		}
	}()
	ebadf := func(what string, err error, op string) {
		t.Helper()
		errno := unix.EBADF
		if op == "BPF_OBJ_GET_INFO_BY_FD" {
			errno = unix.EBADFD // bpf(2)'s word for it
		}
		if want := op + ": " + errno.Error(); err == nil || err.Error() != want || !errors.Is(err, errno) {
			t.Errorf("%s: %v, want %q", what, err, want)
		}
	}
	ep, err := sys.EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	eventfd, err := sys.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer eventfd.Close()
	efd := eventfd.Int()
	events := make([]unix.EpollEvent, 1)
	for _, fd := range h.bad() {
		what := fmt.Sprintf("fd %d", fd)
		nfd, err := sys.Dup(fd)
		if err == nil {
			unix.Close(nfd)
		}
		ebadf("Dup of "+what, err, "fcntl F_DUPFD_CLOEXEC")
		ebadf("EpollCtl of "+what, sys.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN, 0), "epoll_ctl")
		ebadf("EpollCtl on "+what, sys.EpollCtl(fd, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, 0), "epoll_ctl")
		_, err = sys.EpollWait(fd, events, 0)
		ebadf("EpollWait on "+what, err, "epoll_wait")
		mem, err := sys.Mmap(fd, 0, 4096, unix.PROT_READ)
		if err == nil {
			sys.Munmap(mem)
		}
		ebadf("Mmap of "+what, err, "mmap")
		ebadf("PerfEventEnable of "+what, sys.PerfEventEnable(fd), "PERF_EVENT_IOC_ENABLE")
		ebadf("PerfEventDisable of "+what, sys.PerfEventDisable(fd), "PERF_EVENT_IOC_DISABLE")
		ebadf("PerfEventPauseOutput of "+what, sys.PerfEventPauseOutput(fd, true), "PERF_EVENT_IOC_PAUSE_OUTPUT")
		ebadf("PerfEventSetBPF of "+what, sys.PerfEventSetBPF(fd, -1), "PERF_EVENT_IOC_SET_BPF")
		var info sys.MapInfo
		ebadf("InfoByFD of "+what, sys.InfoByFD(fd, &info), "BPF_OBJ_GET_INFO_BY_FD")
		var btfInfo sys.BTFInfo
		ebadf("InfoByFD of "+what+" as BTF", sys.InfoByFD(fd, &btfInfo), "BPF_OBJ_GET_INFO_BY_FD")
		if _, err := sys.KindOf(fd); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("sys: kind of fd %d: readlink /proc/self/fd/%d: ", fd, fd)) {
			t.Errorf("KindOf of %s: %v", what, err)
		}
		var f sys.FD
		if f.Set(fd); fd != h.closed && int64(fd) != math.MaxInt32 && (f.Int() != -1 || f.Close() != nil) {
			t.Errorf("FD set to %s holds %d", what, f.Int())
		}
	}
	// A regular file: the kernel's error for what it is not.
	for what, c := range map[string]struct {
		err   error
		errno unix.Errno
	}{
		"EpollCtl of a file":        {sys.EpollCtl(ep, unix.EPOLL_CTL_ADD, h.file, unix.EPOLLIN, 0), unix.EPERM},
		"EpollCtl on a file":        {sys.EpollCtl(h.file, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, 0), unix.EINVAL},
		"EpollWait on a file":       {func() error { _, err := sys.EpollWait(h.file, events, 0); return err }(), unix.EINVAL},
		"PerfEventEnable of a file": {sys.PerfEventEnable(h.file), unix.ENOTTY},
		"PerfEventSetBPF of a file": {sys.PerfEventSetBPF(h.file, h.file), unix.ENOTTY},
		"InfoByFD of a file":        {sys.InfoByFD(h.file, &sys.ProgInfo{}), unix.EINVAL},
	} {
		if !errors.Is(c.err, c.errno) {
			t.Errorf("%s: %v, want %s", what, c.err, unix.ErrnoName(c.errno))
		}
	}
	// Ops, flags and counts past 32 bits or out of range.
	for what, err := range map[string]error{
		"EpollCtl op 99":       sys.EpollCtl(ep, 99, efd, unix.EPOLLIN, 0),
		"EpollCtl op -1":       sys.EpollCtl(ep, -1, efd, unix.EPOLLIN, 0),
		"EpollCtl op MaxInt":   sys.EpollCtl(ep, math.MaxInt, efd, unix.EPOLLIN, 0),
		"Eventfd flags -1":     func() error { _, err := sys.Eventfd(0, -1); return err }(),
		"Eventfd flags MaxInt": func() error { _, err := sys.Eventfd(0, math.MaxInt); return err }(),
		"Mmap of 0 bytes":      func() error { _, err := sys.Mmap(h.file, 0, 0, unix.PROT_READ); return err }(),
		"Mmap of -1 bytes":     func() error { _, err := sys.Mmap(h.file, 0, -1, unix.PROT_READ); return err }(),
		"Mmap at 1":            func() error { _, err := sys.Mmap(h.file, 1, 4096, unix.PROT_READ); return err }(),
		"Munmap of nil":        sys.Munmap(nil),
		"Munmap of a slice":    sys.Munmap(make([]byte, 4096)),
	} {
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", what, err)
		}
	}
	if _, err := sys.Mmap(h.file, -4096, 4096, unix.PROT_READ); !errors.Is(err, unix.EOVERFLOW) && !errors.Is(err, unix.EINVAL) {
		t.Errorf("Mmap at -4096: %v, want EOVERFLOW (EINVAL on 32-bit)", err)
	}
	if mem, err := sys.Mmap(h.file, 0, math.MaxInt, unix.PROT_READ); err == nil {
		sys.Munmap(mem) // 2 GiB may fit a 32-bit address space
	} else if !errors.Is(err, unix.ENOMEM) {
		t.Errorf("Mmap of MaxInt bytes: %v, want ENOMEM", err)
	}
	if strconv.IntSize == 64 {
		big := int64(1) << 32
		eventfdErr := func(initval uint, flags int) error {
			e, err := sys.Eventfd(initval, flags)
			e.Close()
			return err
		}
		for what, err := range map[string]error{
			"EpollCtl op 1<<32 + EPOLL_CTL_ADD": sys.EpollCtl(ep, int(big)+unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, 0),
			"Eventfd flags 1<<32":               eventfdErr(0, int(big)),
			"Eventfd count 1<<32":               eventfdErr(uint(big), 0),
		} {
			if !errors.Is(err, unix.EINVAL) {
				t.Errorf("%s: %v, want EINVAL", what, err)
			}
		}
		// A wait of 1<<32 ms (or of -1<<32: none) is a wait, not a look.
		for _, msec := range []int64{1 << 32, -1 << 32, 1<<32 + 1, math.MaxInt64, math.MinInt64} {
			wait := func() (int, error) { return sys.EpollWait(ep, events, int(msec)) }
			w := waitReady(t, ep, eventfd, events, wait)
			if w != 1 {
				t.Errorf("a wait of %d ms returned %d events before the eventfd was written", msec, w)
			}
		}
	}
	// The regular file can be mapped, and unmapped once.
	mem, err := sys.Mmap(h.file, 0, 4096, unix.PROT_READ)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	if err := sys.Munmap(mem); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second Munmap: %v", err)
	}
}

// waitReady runs wait while another goroutine writes efd, registered in ep,
// after 50 ms, and returns what wait returned: 1 for a wait, 0 for a look.
func waitReady(t *testing.T, ep int, efd *sys.EventFD, events []unix.EpollEvent,
	wait func() (int, error)) int {
	t.Helper()
	if err := sys.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd.Int(), unix.EPOLLIN, 0); err != nil {
		t.Fatal(err)
	}
	defer sys.EpollCtl(ep, unix.EPOLL_CTL_DEL, efd.Int(), 0, 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		efd.Write(1)
	}()
	n, err := wait()
	for errors.Is(err, unix.EINTR) {
		n, err = wait()
	}
	<-done
	efd.Read()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAdversarialPaths: Mount and WriteControl with paths and texts that
// are empty, hold a NUL, a newline or 0xA0, or are too long, answer the
// kernel's errno (a NUL, which the kernel would read as the end, EINVAL).
// Nothing is mounted.
func TestAdversarialPaths(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300)
	mountsBefore, _ := os.ReadFile("/proc/self/mountinfo")
	for _, c := range []struct {
		source, target, fstype string
		errno                  unix.Errno
	}{
		{"", "", "", unix.ENOENT},
		{"nodev", dir + "/missing", "tmpfs", unix.ENOENT},
		{"nodev", dir + "/a\x00b", "tmpfs", unix.EINVAL},
		{"no\x00dev", dir, "tmpfs", unix.EINVAL},
		{"nodev", dir, "tmp\x00fs", unix.EINVAL},
		{"nodev", dir, long, unix.ENODEV},
		{"nodev", dir, "tmpfs\n", unix.ENODEV},
		{"nodev", dir, "tmpfs\xa0", unix.ENODEV},
		{"nodev", dir + "/" + long, "tmpfs", unix.ENAMETOOLONG},
		{"nodev", file, "bpf\x00", unix.EINVAL},
	} {
		err := sys.Mount(c.source, c.target, c.fstype)
		if err == nil {
			unix.Unmount(c.target, 0)
		}
		wantErr(t, fmt.Sprintf("Mount(%q, %q, %q)", c.source, c.target, c.fstype), err, c.errno, "mount "+c.fstype+" at "+c.target+": ")
	}
	if after, _ := os.ReadFile("/proc/self/mountinfo"); !bytes.Equal(after, mountsBefore) {
		t.Error("the mounts changed")
	}
	for _, c := range []struct {
		path, text string
		errno      unix.Errno
	}{
		{"", "x", unix.ENOENT},
		{dir, "x", unix.EISDIR},
		{dir + "/a\x00b", "x", unix.EINVAL},
		{dir + "/" + long, "x", unix.ENAMETOOLONG},
		{dir + "/missing", "x", unix.ENOENT},
	} {
		wantErr(t, fmt.Sprintf("WriteControl(%q, %q)", c.path, c.text), sys.WriteControl(c.path, c.text), c.errno, "write "+c.path+": ")
	}
	// To a file, the text goes as it is; uprobe_events refuses a command
	// with a NUL (trace_parse_run_command finds no newline before it).
	for _, text := range []string{"", "a\nb\xa0\x00" + long} {
		if err := sys.WriteControl(file, text); err != nil {
			t.Errorf("WriteControl of %q to a file: %v", text, err)
		}
	}
	events := "/sys/kernel/tracing/uprobe_events"
	if _, err := os.Stat(events); err != nil {
		t.Skipf("no %s: %v", events, err)
	}
	exe, _ := os.Executable()
	wantErr(t, "WriteControl of a command with a NUL", sys.WriteControl(events, "p:bpfkit_nul/e "+exe+":0x0\x00p:bpfkit_nul/f "+exe+":0x0\n"), unix.EINVAL)
	if b, _ := os.ReadFile(events); bytes.Contains(b, []byte("bpfkit_nul")) {
		t.Errorf("uprobe_events holds the command with a NUL:\n%s", b)
		sys.WriteControl(events, "-:bpfkit_nul/e\n")
		sys.WriteControl(events, "-:bpfkit_nul/f\n")
	}
}

// TestAdversarialPerfEventOpen: the probe target's C string refuses a NUL
// and leaves no address behind; pids, cpus and group fds past 32 bits are
// refused, not cut to another.
func TestAdversarialPerfEventOpen(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	b, err := os.ReadFile("/sys/bus/event_source/devices/uprobe/type")
	if err != nil {
		t.Skipf("no uprobe PMU: %v", err)
	}
	typ, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	exe, _ := os.Executable()
	for target, errno := range map[string]unix.Errno{
		exe + "\x00x":                  unix.EINVAL,
		"":                             unix.EINVAL,
		"/" + strings.Repeat("a", 300): unix.ENAMETOOLONG,
		exe + "\n":                     unix.ENOENT,
		exe + "\xa0":                   unix.ENOENT,
	} {
		attr := unix.PerfEventAttr{Type: uint32(typ), Ext2: 0}
		fd, err := sys.PerfEventOpenProbe(&attr, "uprobe", target, -1, 0, -1, 0)
		if err == nil {
			unix.Close(fd)
		}
		wantErr(t, fmt.Sprintf("PerfEventOpenProbe(%q)", target), err, errno, "perf_event_open: ")
		if attr.Ext1 != 0 {
			t.Errorf("PerfEventOpenProbe(%q) left config1 %#x", target, attr.Ext1)
		}
	}
	if _, err := sys.PerfEventOpenProbe(nil, "uprobe", exe, -1, 0, -1, 0); !errors.Is(err, unix.EFAULT) {
		t.Errorf("PerfEventOpenProbe(nil): %v", err)
	}
	if strconv.IntSize == 64 {
		big := int64(1) << 32
		sw := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY}
		for what, args := range map[string][3]int{
			"pid 1<<32 + own": {int(big) + os.Getpid(), -1, -1},
			"cpu 1<<32":       {-1, int(big), -1},
			"group 1<<32 - 1": {-1, 0, int(big) - 1},
		} {
			fd, err := sys.PerfEventOpen(&sw, args[0], args[1], args[2], 0)
			if err == nil {
				unix.Close(fd)
				t.Errorf("PerfEventOpen with %s: opened", what)
			}
		}
	}
}

// TestAdversarialNames: the name tables answer a number for any value, up
// to the top of uint32, on 32-bit too, where int(v) was negative.
func TestAdversarialNames(t *testing.T) {
	for _, v := range []uint32{1000, 1<<31 - 1, 1 << 31, math.MaxUint32} {
		want := strconv.FormatUint(uint64(v), 10)
		for what, got := range map[string]string{
			"MapTypeName": sys.MapTypeName(v), "ProgTypeName": sys.ProgTypeName(v), "AttachTypeName": sys.AttachTypeName(v),
			"mapfd.Type": mapfd.Type(v).String(), "prog.Type": prog.Type(v).String(),
		} {
			if got != want {
				t.Errorf("%s(%d) = %q, want %q", what, v, got, want)
			}
		}
	}
	for what, got := range map[string]string{"MapTypeName(1)": sys.MapTypeName(1), "ProgTypeName(2)": sys.ProgTypeName(2), "AttachTypeName(0)": sys.AttachTypeName(0)} {
		if want := map[string]string{"MapTypeName(1)": "hash", "ProgTypeName(2)": "kprobe", "AttachTypeName(0)": "cgroup_inet_ingress"}[what]; got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
}

// TestAdversarialTaskFDQuery: a nil attr, and pids and fds that are none.
func TestAdversarialTaskFDQuery(t *testing.T) {
	testutil.RequireRoot(t)
	wantErr(t, "TaskFDQuery(nil)", sys.TaskFDQuery(nil), unix.EFAULT, "nil attr")
	for _, c := range []struct {
		pid, fd uint32
		errno   unix.Errno
	}{
		{0, 0, unix.ENOENT}, {math.MaxUint32, 0, unix.ENOENT}, {uint32(os.Getpid()), math.MaxUint32, unix.EBADF},
		{uint32(os.Getpid()), 0, sys.ENOTSUPP},
	} {
		buf := make([]byte, 16)
		attr := sys.TaskFDQueryAttr{PID: c.pid, FD: c.fd, Buf: sys.SlicePointer(buf), BufLen: uint32(len(buf))}
		wantErr(t, fmt.Sprintf("TaskFDQuery(pid %d, fd %d)", c.pid, c.fd), sys.TaskFDQuery(&attr), c.errno)
	}
}

// TestAdversarialNeedCaps: capability numbers that are none, or not ones
// bpfkit checks, are an EINVAL that says so; a negative one panicked (a
// negative shift).
func TestAdversarialNeedCaps(t *testing.T) {
	for _, c := range []int{-1, math.MinInt, 5, 40, 64, math.MaxInt} {
		err := sys.NeedCaps(sys.CAP_BPF, c)
		wantErr(t, fmt.Sprintf("NeedCaps(CAP_BPF, %d)", c), err, unix.EINVAL, fmt.Sprintf("capability %d is not one bpfkit checks", c))
		if !strings.Contains(err.Error(), fmt.Sprintf("capability %d is not one bpfkit checks", c)) {
			t.Errorf("NeedCaps(%d): %v", c, err)
		}
	}
}
