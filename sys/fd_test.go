package sys

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenRegular: a regular file opens, through a symbolic link too; a
// FIFO, a device and a directory are refused, and the FIFO is never opened
// (inotify sees no IN_OPEN): its open would have woken a waiting writer.
// When the link is swapped to the FIFO between the check and the open,
// OpenRegular still opens the regular file it checked, and the FIFO stays
// unopened: with stat, open and fstat, the open reached the FIFO.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	regular, fifo := filepath.Join(dir, "regular"), filepath.Join(dir, "fifo")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(regular, []byte("the regular file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	fifoOpened := func() bool {
		var ev [4096]byte
		n, err := unix.Read(in, ev[:])
		if err != nil && err != unix.EAGAIN {
			t.Fatal(err)
		}
		return n > 0
	}
	symlink := func(target string) {
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) (string, error) {
		f, err := OpenRegular(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}

	symlink(regular)
	for path, want := range map[string]string{
		regular:     "",
		link:        "",
		fifo:        "open " + fifo + ": invalid argument (not a regular file)",
		"/dev/zero": "open /dev/zero: invalid argument (not a regular file)",
		dir:         "open " + dir + ": is a directory",
		dir + "/no": "open " + dir + "/no: no such file or directory",
		"a\x00b":    "open a\x00b: invalid argument",
	} {
		got, err := read(path)
		switch {
		case want == "" && (err != nil || got != "the regular file"):
			t.Errorf("%s: %q, %v", path, got, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	if fifoOpened() {
		t.Fatal("the FIFO was opened to be refused")
	}

	beforeReopen = func() { symlink(fifo) }
	defer func() { beforeReopen = func() {} }()
	symlink(regular)
	got, err := read(link)
	if fifoOpened() {
		t.Fatal("the FIFO swapped in after the check was opened")
	}
	if err != nil || got != "the regular file" {
		t.Fatalf("a link swapped to a FIFO after the check: %q, %v, not the regular file", got, err)
	}
}
