package tests

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// TestMemlockRaised: under an RLIMIT_MEMLOCK of 64 KiB, a 4 MiB map is
// still created. Kernels before 5.11 charge it to the limit and refuse it
// (EPERM) until mapfd raises the limit, which the journal records; later
// kernels charge the memory cgroup and leave the limit alone.
func TestMemlockRaised(t *testing.T) {
	testutil.RequireRoot(t)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Fatal(err)
	}
	low := unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old)
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	defer sys.SetJournal(nil)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 4096, MaxEntries: 1024, Name: "big"})
	if err != nil {
		t.Fatalf("a 4 MiB array under a 64 KiB RLIMIT_MEMLOCK: %v", err)
	}
	m.Close()
	raised := strings.Contains(journal.String(), "setrlimit(RLIMIT_MEMLOCK")
	var now unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_MEMLOCK, &now)
	v, _ := prog.KernelVersion()
	t.Logf("kernel %#x: limit raised %v (now %d)", v, raised, now.Cur)
	if v < 5<<16|11<<8 && (!raised || now.Cur != unix.RLIM_INFINITY) {
		t.Fatalf("kernel before 5.11, yet the limit was not raised:\n%s", journal.String())
	}
}
