package sys_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
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

// TestCommandOutOfRange: the command-name table was indexed without a bound,
// so MapElemNoSleep(36, ...) panicked.
func TestCommandOutOfRange(t *testing.T) {
	for _, cmd := range []int{-1, 36, 1 << 20, unix.BPF_PROG_LOAD} {
		err := sys.MapElemNoSleep(cmd, &sys.MapElemAttr{})
		wantErr(t, "MapElemNoSleep", err, unix.EINVAL, "not an element command")
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
		"MapCreate":       func() error { _, err := sys.MapCreate(nil); return err },
		"MapLookupElem":   func() error { return sys.MapLookupElem(nil) },
		"MapUpdateElem":   func() error { return sys.MapUpdateElem(nil) },
		"MapDeleteElem":   func() error { return sys.MapDeleteElem(nil) },
		"MapGetNextKey":   func() error { return sys.MapGetNextKey(nil) },
		"MapElemNoSleep":  func() error { return sys.MapElemNoSleep(unix.BPF_MAP_LOOKUP_ELEM, nil) },
		"MapLookupAndDel": func() error { return sys.MapLookupAndDeleteElem(nil) },
		"MapFreeze":       func() error { return sys.MapFreeze(nil) },
		"MapLookupBatch":  func() error { return sys.MapLookupBatch(nil) },
		"ProgLoad":        func() error { _, err := sys.ProgLoad(nil); return err },
		"ObjPin":          func() error { return sys.ObjPin(nil) },
		"ObjGet":          func() error { _, err := sys.ObjGet(nil); return err },
		"ProgQuery":       func() error { return sys.ProgQuery(nil) },
		"ProgTestRun":     func() error { return sys.ProgTestRun(nil) },
		"ProgGetNextID":   func() error { return sys.ProgGetNextID(nil) },
		"MapGetFDByID":    func() error { _, err := sys.MapGetFDByID(nil); return err },
		"ObjGetInfoByFD":  func() error { return sys.ObjGetInfoByFD(nil) },
		"RawTracepoint":   func() error { _, err := sys.RawTracepointOpen(nil); return err },
		"LinkCreate":      func() error { _, err := sys.LinkCreate(nil); return err },
		"LinkDetach":      func() error { return sys.LinkDetach(nil) },
		"EnableStats":     func() error { _, err := sys.EnableStats(nil); return err },
		"PerfEventOpen":   func() error { _, err := sys.PerfEventOpen(nil, -1, 0, -1, 0); return err },
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
	if _, err := sys.ObjKind(-1); err == nil {
		t.Fatal("ObjKind(-1)")
	}
	if _, err := sys.ObjKind(0); err == nil || !strings.Contains(err.Error(), "not a BPF object") {
		t.Fatalf("ObjKind(0): %v", err)
	}
}

// TestE2BIGHint: every E2BIG said the attr set an unknown field, also for a
// program over the instruction limit.
func TestE2BIGHint(t *testing.T) {
	testutil.RequireRoot(t)
	code := make([]byte, 8)
	_, err := sys.ProgLoad(&sys.ProgLoadAttr{ProgType: unix.BPF_PROG_TYPE_SOCKET_FILTER, InsnCnt: 1<<20 + 1,
		Insns: sys.NewPointer(unsafe.Pointer(&code[0])), License: cstr("GPL")})
	wantErr(t, "load of 1M+1 instructions", err, unix.E2BIG, "the program is too large")
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
