package sys_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// TestKernfsJournaled: mmap, munmap, mount and control-file writes are each
// one journal line, and their errors keep the errno.
func TestKernfsJournaled(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	defer sys.SetJournal(nil)

	ctl := filepath.Join(t.TempDir(), "events")
	os.WriteFile(ctl, []byte("first\n"), 0o600)
	if err := sys.WriteControl(ctl, "p:g/e /bin/true:0x10\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(ctl); string(got) != "first\np:g/e /bin/true:0x10\n" {
		t.Fatalf("WriteControl did not append: %q", got)
	}
	if err := sys.WriteControl(filepath.Join(t.TempDir(), "none", "x"), "x"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("WriteControl to a missing file: %v", err)
	}

	dir := t.TempDir()
	if err := sys.Mount("bpf", dir, "bpf"); err != nil {
		t.Fatal(err)
	}
	unix.Unmount(dir, 0)

	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY}
	fd, err := sys.PerfEventOpen(&attr, 0, -1, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	mem, err := sys.Mmap(fd, 0, 2*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Mmap(fd, 0, 4*os.Getpagesize(), unix.PROT_READ); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("mmap of 1+3 pages: %v, want EINVAL (a perf ring is 1+2^n pages)", err)
	}
	for _, re := range []string{
		`(?m)^write\("` + regexp.QuoteMeta(ctl) + `", "p:g/e /bin/true:0x10\\n"\) = 21 <`,
		`(?m)^write\(".*/none/x", "x"\) = -1 ENOENT `,
		`(?m)^mount\("bpf", "` + regexp.QuoteMeta(dir) + `", "bpf", 0, NULL\) = 0 <`,
		`(?m)^mmap\(NULL, 8192, PROT_READ\|PROT_WRITE, MAP_SHARED, \d+, 0x0\) = 0x[0-9a-f]+ <`,
		`(?m)^munmap\(0x[0-9a-f]+, 8192\) = 0 <`,
	} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("journal lacks %s:\n%s", re, buf.String())
		}
	}
}
