package sys_test

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// TestPollJournaled: the epoll and eventfd calls of the ring readers are
// each one journal line, their errors keep the errno, and a wait with the
// journal off allocates nothing.
func TestPollJournaled(t *testing.T) {
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	defer sys.SetJournal(nil)
	epfd, err := sys.EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	eventfd, err := sys.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer eventfd.Close()
	efd := eventfd.Int()
	if err := sys.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, 7); err != nil {
		t.Fatal(err)
	}
	if err := sys.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, 7); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("adding an fd twice: %v, want EEXIST", err)
	}
	events := make([]unix.EpollEvent, 2)
	if n, err := sys.EpollWait(epfd, events, 0); n != 0 || err != nil {
		t.Fatalf("wait on a zero eventfd: %d, %v", n, err)
	}
	if err := eventfd.Write(3); err != nil {
		t.Fatal(err)
	}
	if n, err := sys.EpollWait(epfd, events, 1); n != 1 || err != nil || events[0].Fd != 7 {
		t.Fatalf("wait on a ready eventfd: %d, %v, data %d", n, err, events[0].Fd)
	}
	if n, err := eventfd.Read(); n != 3 || err != nil {
		t.Fatalf("eventfd read: %d, %v", n, err)
	}
	if _, err := eventfd.Read(); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("read of a zero non-blocking eventfd: %v, want EAGAIN", err)
	}
	if _, err := sys.EpollWait(-1, events, 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("wait on fd -1: %v, want EBADF", err)
	}
	if _, err := sys.EpollWait(epfd, nil, 0); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("wait with no room for events: %v, want EINVAL", err)
	}
	for _, re := range []string{
		`(?m)^epoll_create1\(EPOLL_CLOEXEC\) = \d+ <`,
		`(?m)^eventfd2\(0, 0x80800\) = \d+ <`,
		`(?m)^epoll_ctl\(\d+, EPOLL_CTL_ADD, \d+, \{events=0x1, data=7\}\) = 0 <`,
		`(?m)^epoll_ctl\(\d+, EPOLL_CTL_ADD, \d+, \{events=0x1, data=7\}\) = -1 EEXIST `,
		`(?m)^epoll_pwait\(\d+, \[\], 2, 0, NULL\) = 0 <`,
		`(?m)^write\(\d+, 3, 8\) = 8 <`,
		`(?m)^epoll_pwait\(\d+, \[\{events=0x1, data=7\}\], 2, 1, NULL\) = 1 <`,
		`(?m)^read\(\d+, 3, 8\) = 8 <`,
		`(?m)^read\(\d+, 0, 8\) = -1 EAGAIN `,
		`(?m)^epoll_pwait\(-1, \[\], 2, 0, NULL\) = -1 EBADF `,
	} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("journal lacks %s:\n%s", re, buf.String())
		}
	}
	sys.SetJournal(nil)
	if a := testing.AllocsPerRun(100, func() { sys.EpollWait(epfd, events, 0) }); a != 0 {
		t.Fatalf("EpollWait with the journal off: %.1f allocations", a)
	}
}

// TestEventFDOnlyEventfds: Write and Read act only on an eventfd Eventfd
// made (given any fd, they wrote 8 bytes into a regular file or a pipe). A
// nil, zero or closed EventFD answers EBADF without a system call, so the
// file that took a closed eventfd's number gets nothing.
func TestEventFDOnlyEventfds(t *testing.T) {
	if f, err := os.CreateTemp(t.TempDir(), "first"); err == nil { // the runtime's poller fds
		f.Close()
	}
	closed, err := sys.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	fd := closed.Int()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if int(f.Fd()) != fd {
		t.Fatalf("the file got fd %d, not the closed eventfd's %d", f.Fd(), fd)
	}
	var buf bytes.Buffer
	sys.SetJournal(&buf)
	defer sys.SetJournal(nil)
	for what, e := range map[string]*sys.EventFD{"nil": nil, "zero": {}, "closed": closed} {
		_, rerr := e.Read()
		for op, err := range map[string]error{"write": e.Write(1), "read": rerr} {
			want := "eventfd " + op + ": bad file descriptor"
			if err == nil || err.Error() != want || !errors.Is(err, unix.EBADF) {
				t.Errorf("%s EventFD's %s: %v, want %q", what, op, err, want)
			}
		}
		if e.Int() != -1 || e.Close() != nil {
			t.Errorf("%s EventFD: fd %d", what, e.Int())
		}
	}
	if st, err := f.Stat(); err != nil || st.Size() != 0 || buf.Len() != 0 {
		t.Fatalf("the file with the closed eventfd's number: %v, %d bytes; journal %q",
			err, st.Size(), buf.String())
	}
}
