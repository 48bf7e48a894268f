package sys_test

import (
	"bytes"
	"errors"
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
	efd, err := sys.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
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
	if err := sys.EventfdWrite(efd, 3); err != nil {
		t.Fatal(err)
	}
	if n, err := sys.EpollWaitHoldingP(epfd, events, 1); n != 1 || err != nil || events[0].Fd != 7 {
		t.Fatalf("wait on a ready eventfd: %d, %v, data %d", n, err, events[0].Fd)
	}
	if n, err := sys.EventfdRead(efd); n != 3 || err != nil {
		t.Fatalf("eventfd read: %d, %v", n, err)
	}
	if _, err := sys.EventfdRead(efd); !errors.Is(err, unix.EAGAIN) {
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
