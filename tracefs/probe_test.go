package tracefs_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// copyExe copies this test binary to dir/name and returns its path.
func copyExe(t *testing.T, name string) string {
	t.Helper()
	exe, _ := fileOffset(t, "")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p := filepath.Join(t.TempDir(), name)
	dst, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	return p
}

func createAndRemove(t *testing.T, spec tracefs.ProbeSpec) error {
	t.Helper()
	e, err := tracefs.CreateProbe(spec)
	if err != nil {
		return err
	}
	if len(e.Name) > 63 || !contains(events(t, spec.Kind), e.Group+"/"+e.Name) {
		t.Errorf("event %s/%s (%d bytes) not listed, or longer than the kernel's 63", e.Group, e.Name, len(e.Name))
	}
	return e.Remove()
}

// TestLongFileNames: event names were cut to 64 bytes, one more than the
// kernel takes, so a binary whose name is 61 bytes or longer could not be
// probed through uprobe_events.
func TestLongFileNames(t *testing.T) {
	testutil.RequireRoot(t)
	_, off := fileOffset(t, "")
	for _, n := range []int{61, 200} {
		p := copyExe(t, strings.Repeat("x", n))
		if err := createAndRemove(t, tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: p, Offset: off}); err != nil {
			t.Errorf("uprobe on a binary with a %d-byte name: %v", n, err)
		}
	}
}

// TestPathBytes: the kernel splits a uprobe_events command where its own
// isspace() says, which takes 0xA0 (Latin-1's no-break space) for a space,
// and cuts it at '#': such paths are refused before anything is written;
// other bytes, control characters included, reach the kernel whole.
func TestPathBytes(t *testing.T) {
	testutil.RequireRoot(t)
	_, off := fileOffset(t, "")
	for _, name := range []string{"nb\xa0sp", "hash#tag", "tab\tx", "vt\vx"} {
		p := copyExe(t, name)
		err := createAndRemove(t, tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: p, Offset: off})
		if !errors.Is(err, tracefs.ErrInvalid) || !strings.Contains(err.Error(), "splits or ends a uprobe_events command") {
			t.Errorf("path %q: %v, want ErrInvalid", p, err)
		}
	}
	for _, name := range []string{"ctl\x01x", "nel\x85x", "col:on(1)", "pct%x"} {
		p := copyExe(t, name)
		if err := createAndRemove(t, tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: p, Offset: off}); err != nil {
			t.Errorf("path %q: %v", p, err)
		}
	}
}

// TestOffsetsInFile: an offset past the end of the file (2^64-1, say) was
// written to uprobe_events, which took it, and the probe never fired.
func TestOffsetsInFile(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "")
	st, _ := os.Stat(exe)
	before := probeEvents(t)
	for _, spec := range []tracefs.ProbeSpec{
		{Kind: tracefs.Uprobe, Path: exe, Offset: math.MaxUint64},
		{Kind: tracefs.Uprobe, Path: exe, Offset: uint64(st.Size())},
		{Kind: tracefs.Uretprobe, Path: exe, Offset: off, RefCtrOffset: math.MaxUint64},
	} {
		err := createAndRemove(t, spec)
		if !errors.Is(err, tracefs.ErrInvalid) || !strings.Contains(err.Error(), "past the end of") {
			t.Errorf("offset %#x, ref_ctr_offset %#x: %v, want ErrInvalid", spec.Offset, spec.RefCtrOffset, err)
		}
	}
	if after := probeEvents(t); after != before {
		t.Fatalf("events changed: %v -> %v", before, after)
	}
}

// TestErrorLogFresh: a failed write quoted the last error_log entry even
// when the write added none, so an earlier, unrelated failure was blamed.
func TestErrorLogFresh(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "")
	// An unrelated failure that error_log keeps.
	if err := writeUprobeEvents("p:bpfkit_stale/x /nonexistent_bpfkit:0x0"); err == nil {
		t.Fatal("the kernel took a uprobe on a missing file")
	}
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	// Another tool removes the event; our Remove then fails with ENOENT,
	// which the kernel does not log.
	if err := writeUprobeEvents("-:" + e.Group + "/" + e.Name); err != nil {
		t.Fatal(err)
	}
	err = e.Remove()
	if !errors.Is(err, unix.ENOENT) || strings.Contains(err.Error(), "error_log") {
		t.Fatalf("Remove of an event removed behind its back: %v; want ENOENT and no stale error_log entry", err)
	}
}

// TestGroupNeedsProc: with /proc unreadable the group became
// bpfkit_<pid>_0, which another process's Sweep took for a dead owner's.
// Now Group and CreateProbe fail. The child runs in a mount namespace of
// its own and unmounts /proc there.
func TestGroupNeedsProc(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("BPFKIT_NOPROC_CHILD") != "" {
		exe, off := fileOffset(t, "")
		if _, err := tracefs.Path(); err != nil { // found through /proc/self/mountinfo
			t.Fatal(err)
		}
		if err := syscall.Unmount("/proc", syscall.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		g, err := tracefs.Group()
		if err == nil || !strings.Contains(err.Error(), "/proc/self/") {
			t.Errorf("Group without /proc: %q, %v; want an error naming /proc", g, err)
		}
		e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
		if err == nil {
			e.Remove()
			t.Errorf("CreateProbe without /proc made %s/%s", e.Group, e.Name)
		}
		t.Log(err)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("no unshare(1) to make a private mount namespace")
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestGroupNeedsProc$", "-test.v")
	cmd.Env = append(os.Environ(), "BPFKIT_NOPROC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGroupNeedsProc") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestJournal: creating, removing and sweeping events are journaled
// writes, one line each, through sys.
func TestJournal(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "")
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	defer sys.SetJournal(nil)
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Remove(); err != nil {
		t.Fatal(err)
	}
	p, _ := tracefs.Path()
	ctl := regexp.QuoteMeta(p + "/uprobe_events")
	for _, re := range []string{
		`(?m)^write\("` + ctl + `", "p:` + e.Group + `/` + e.Name + ` ` + regexp.QuoteMeta(exe) + `:0x[0-9a-f]+\\n"\) = \d+ <`,
		`(?m)^write\("` + ctl + `", "-:` + e.Group + `/` + e.Name + `\\n"\) = \d+ <`,
	} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("journal lacks %s:\n%s", re, buf.String())
		}
	}
}
