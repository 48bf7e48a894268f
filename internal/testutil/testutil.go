// Package testutil holds what bpfkit's tests share: the root requirement,
// checks that a test leaves no BPF or perf fd open, a private BPF file
// system for pinning, a loop device to make block I/O on, and a lock for
// the tests that sweep tracefs's probe events.
package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"golang.org/x/sys/unix"
)

// RequireRoot skips t unless the process may load BPF programs, and under
// go test -short, which make check uses to run only the tests that need
// no root, root or not.
func RequireRoot(t testing.TB) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("needs root to talk to the kernel: -short runs only the tests that need none")
	case os.Geteuid() != 0:
		t.Skip("needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN) to talk to the kernel")
	}
}

// KernelFDs lists the fds of this process that refer to BPF objects or perf
// events, as "fd -> target".
func KernelFDs() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue
		}
		if strings.Contains(target, "bpf") || strings.Contains(target, "perf_event") {
			out = append(out, e.Name()+" -> "+target)
		}
	}
	sort.Strings(out)
	return out
}

// SweepLock waits for, and takes, a lock that every process of bpfkit's
// tests shares, and returns what releases it. tracefs.Sweep removes the
// probe events of every bpfkit process that is gone, whichever test left
// them, and go test runs the packages' tests at once: a test holds the
// lock while it sweeps, and while it keeps a gone process's events for
// its own Sweep to find.
//
// The processes a holder starts inherit sweepLockEnv and do not wait for
// the lock: a test binary run again as a child would otherwise wait for
// its parent, and the parent for it. A wait that lasts longer than
// sweepLockWait is an error that names the holder.
func SweepLock() (unlock func(), err error) {
	if os.Getenv(sweepLockEnv) != "" {
		return func() {}, nil
	}
	name := filepath.Join(os.TempDir(), "bpfkit-tests-sweep.lock")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(sweepLockWait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EWOULDBLOCK && err != unix.EINTR || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		holder, _ := os.ReadFile(name)
		f.Close()
		return nil, fmt.Errorf("flock %s (held by pid %q): %w", name, holder, err)
	}
	pid := strconv.Itoa(os.Getpid())
	f.Truncate(0)
	f.WriteAt([]byte(pid), 0)
	os.Setenv(sweepLockEnv, pid)
	return func() {
		os.Unsetenv(sweepLockEnv)
		f.Close() // the lock goes with the file's last fd
	}, nil
}

const (
	// sweepLockEnv holds the pid of the process that holds SweepLock, in
	// that process and the ones it starts.
	sweepLockEnv = "BPFKIT_TESTS_SWEEP_LOCK"
	// sweepLockWait is the longest SweepLock waits: longer than any
	// holder keeps it (tracefs's tests, for as long as they run).
	sweepLockWait = 3 * time.Minute
)

// LockSweeps holds SweepLock until t ends.
func LockSweeps(t testing.TB) {
	t.Helper()
	unlock, err := SweepLock()
	if err != nil {
		t.Fatalf("the tests' sweep lock: %v", err)
	}
	t.Cleanup(unlock)
}

// CheckNoLeaks fails t, at its end, if it left a BPF or perf fd open that
// was not open when CheckNoLeaks was called.
func CheckNoLeaks(t testing.TB) {
	t.Helper()
	before := map[string]bool{}
	for _, f := range KernelFDs() {
		before[f] = true
	}
	t.Cleanup(func() {
		for _, f := range KernelFDs() {
			if !before[f] {
				t.Errorf("leaked fd %s", f)
			}
		}
	})
}

// LeakMain wraps a package's tests: it fails the run if any BPF or perf fd is
// open at the end that was not open at the start.
func LeakMain(m *testing.M) int {
	before := strings.Join(KernelFDs(), "\n")
	code := m.Run()
	if after := strings.Join(KernelFDs(), "\n"); code == 0 && after != before {
		os.Stderr.WriteString("FAIL: BPF or perf fds left open by the tests:\n" + after + "\n")
		return 1
	}
	return code
}

// BPFFS mounts a private BPF file system for t and unmounts it at the end.
func BPFFS(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		t.Fatalf("mount bpffs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".debug") { // the kernel's own iterators (5.10+)
				t.Errorf("left pinned in bpffs: %s", e.Name())
			}
		}
		unix.Unmount(dir, unix.MNT_DETACH)
	})
	return dir
}

// Cgroup2 mounts a private view of the cgroup2 hierarchy, makes a child
// cgroup for t, and removes both at the end. It returns the child's path.
func Cgroup2(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	if err := unix.Mount("none", root, "cgroup2", 0, ""); err != nil {
		t.Skipf("cannot mount cgroup2: %v", err)
	}
	dir, err := os.MkdirTemp(root, "bpfkit-test-")
	if err != nil {
		unix.Unmount(root, unix.MNT_DETACH)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove test cgroup: %v", err)
		}
		unix.Unmount(root, unix.MNT_DETACH)
	})
	return dir
}

// FuncOffset returns the executable holding the Go function fn and fn's
// offset in that file, for a uprobe on it. It reads the mapping of fn's
// address from /proc/self/maps, so it works for stripped and PIE binaries
// alike (go test strips the binaries it runs). A uprobe there counts each
// call of fn once only if fn is go:nosplit (see prog's uprobed).
func FuncOffset(t testing.TB, fn any) (string, uint64) {
	t.Helper()
	return AddrOffset(t, reflect.ValueOf(fn).Pointer())
}

// AddrOffset returns the file mapped at addr in this process and addr's
// offset in it.
func AddrOffset(t testing.TB, addr uintptr) (string, uint64) {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(maps), "\n") {
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		if uint64(addr) >= start && uint64(addr) < end {
			return f[5], uint64(addr) - start + off
		}
	}
	t.Fatalf("address %#x is in no file mapping", addr)
	return "", 0
}

// AddOne returns instructions that add one to the u64 value of m at the u32
// key stored at r10-4, jumping to label out when the key is missing. They
// clobber r0 to r5.
func AddOne(m insn.MapFD, out string) []insn.Item {
	return []insn.Item{
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, m),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, out),
		insn.Mov64Imm(insn.R1, 1),
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R0, insn.R1, 0),
	}
}

// OpenFDs lists this process's open fds, all of them, as "0 1 2 5".
func OpenFDs(t testing.TB) string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// Allocated is how many bytes f allocates.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
