package tests

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// mmapCall is the mmap the workload makes, as tracex5 shows it.
var mmapCall = fmt.Sprintf("mmap(addr=0x0, len=12289, prot=%#x, flags=%#x, fd=-1, off=0)", unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)

// TestTracex5: the handlers reached by tail calls see exactly the calls a
// workload makes after it is attached: its two openat with their paths,
// its read of 123 bytes, its mmap with its arguments, and its seven writes
// with their sizes; in text and in -json, whose lines carry the arguments
// as numbers too.
func TestTracex5(t *testing.T) {
	testutil.RequireRoot(t)
	sizes := []int{1, 100, 100, 100, 5000, 5000, 70000}
	// mmap's arguments as numbers: fd -1 is an unsigned long of the
	// kernel's, of 32 bits on a 32-bit kernel.
	fd := ^uint64(0)
	if long, _ := sys.KernelLongSize(); long == 4 {
		fd = math.MaxUint32
	}
	mmapArgs := [6]uint64{0, 12289, unix.PROT_READ, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, fd, 0}
	for _, asJSON := range []bool{false, true} {
		pid, run := workload(t, 0, sizes...)
		args := []string{"-p", strconv.Itoa(pid), "60"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		r := startTool(t, "tracex5", args...)
		r.waitFor("Ctrl-C to stop")
		run()
		waitOutput(r, func(out string) bool { return strings.Count(out, "write(") >= len(sizes) })
		out := r.stop()
		calls := out
		if asJSON {
			var b strings.Builder
			for _, e := range jsonLines[struct {
				Name, Call string
				PID        int
				Args       [6]uint64
			}](t, out) {
				if e.Name == "" {
					continue
				}
				fmt.Fprintln(&b, e.Call)
				if e.PID != pid || e.Call == mmapCall && e.Args != mmapArgs {
					t.Errorf("%+v: want pid %d, and mmap's arguments as numbers", e, pid)
				}
			}
			calls = b.String()
		}
		for _, want := range []string{`openat(dfd=-100, "/dev/null", `, `openat(dfd=-100, "/dev/zero", `, `, count=123)`, mmapCall} {
			if n := strings.Count(calls, want); n != 1 {
				t.Errorf("tracex5 %q: %q %d times, want once", args, want, n)
			}
		}
		var writes []string
		for line := range strings.SplitSeq(calls, "\n") {
			if i := strings.Index(line, "write("); i >= 0 {
				writes = append(writes, line[strings.LastIndex(line, "count=")+6:len(line)-1])
			}
		}
		if strings.Join(writes, ",") != "1,100,100,100,5000,5000,70000" {
			t.Errorf("tracex5 %q: write sizes %q, want %v", args, writes, sizes)
		}
		if t.Failed() {
			t.Fatal("\n" + out)
		}
	}
}

// TestTracex5Drain: the calls a workload makes while tracex5 is stopped
// (SIGSTOP) wait in its ring when Ctrl-C comes, 500 ms later: it must
// print them all, each with the time of the call, not of its reading,
// then its last report (the other calls' counts), and nothing after.
func TestTracex5Drain(t *testing.T) {
	testutil.RequireRoot(t)
	pid, run := workload(t, 0, 1, 2, 3, 4, 5, 6, 7)
	r := startTool(t, "tracex5", "-json", "-p", strconv.Itoa(pid), "60")
	r.waitFor("Ctrl-C to stop")
	r.cmd.Process.Signal(syscall.SIGSTOP)
	start := time.Now()
	run()
	end := time.Now()
	time.Sleep(500 * time.Millisecond)
	r.cmd.Process.Signal(syscall.SIGINT)
	r.cmd.Process.Signal(syscall.SIGCONT)
	out := r.wait()
	lines := jsonLines[struct {
		Time  time.Time
		Name  string
		Other []any `json:"other_calls"`
	}](t, out)
	writes := 0
	for _, l := range lines {
		if l.Name != "write" {
			continue
		}
		writes++
		if l.Time.Before(start) || l.Time.After(end) {
			t.Errorf("a write stamped %s, made between %s and %s",
				l.Time.Format("15:04:05.000"), start.Format("15:04:05.000"), end.Format("15:04:05.000"))
		}
	}
	if last := lines[len(lines)-1].Other; writes != 7 || last == nil {
		t.Fatalf("%d writes, want 7, then the report:\n%s", writes, out)
	}
}

// TestTracex5OutputError: when its output fails (stdout is /dev/full),
// tracex5 says so and exits 1 at the first event, not at the interval's
// end.
func TestTracex5OutputError(t *testing.T) {
	testutil.RequireRoot(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	pid, run := workload(t, 0, 1)
	cmd := exec.Command(toolPath(t, "tracex5"), "-json", "-p", strconv.Itoa(pid), "60")
	cmd.Stdout = full
	r := startCmd(t, cmd)
	r.waitFor("Ctrl-C to stop")
	run()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("tracex5 writing to /dev/full still runs 10 s after the workload's calls: %s", r.err.String())
	}
	if r.status != 1 || !strings.Contains(r.err.String(), "no space left on device") {
		t.Fatalf("status %d, stderr %q; want 1 and the write's error", r.status, r.err.String())
	}
}

// TestTracex5Swap: while -swap replaces the write program every 300 ms, a
// workload writes 20 times over 2 s: each write is reported once, by one
// program or the other, and both programs report some. The prog array's
// slot is never empty.
func TestTracex5Swap(t *testing.T) {
	testutil.RequireRoot(t)
	sizes := make([]int, 20)
	for i := range sizes {
		sizes[i] = 5
	}
	pid, run := spacedWorkload(t, 0, 100*time.Millisecond, sizes...)
	r := startTool(t, "tracex5", "-p", strconv.Itoa(pid), "-swap", "0.3")
	r.waitFor("Ctrl-C to stop")
	run()
	waitOutput(r, func(out string) bool { return strings.Count(out, "write(") >= 20 })
	out := r.stop()
	plain, bytes := strings.Count(out, ", count=5)")-strings.Count(out, `"xxxxx", count=5)`), strings.Count(out, `"xxxxx", count=5)`)
	if plain+bytes != 20 || plain == 0 || bytes == 0 || !strings.Contains(out, "write program is now tracex5_write2") {
		t.Fatalf("%d writes by the first program and %d by the second, want 20 in all and some by each:\n%s", plain, bytes, out)
	}
}

// TestTracex5LeavesPerfUsers: while tracex5 runs on sys_enter, a perf user
// of the same tracepoint, raw_syscalls:sys_enter, sees every call: a
// counting perf event of this thread, filtered on getppid, counts each of
// the 1000 calls the thread makes; and tracex5 counted them too, among
// its other calls. (A perf tracepoint program returning 0 would hide
// every one of them from the perf event.)
func TestTracex5LeavesPerfUsers(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "tracex5", "-json", "-p", strconv.Itoa(os.Getpid()), "60")
	r.waitFor("Ctrl-C to stop")
	runtime.LockOSThread() // the perf event counts this thread's calls
	defer runtime.UnlockOSThread()
	count := perfCounter(t, "raw_syscalls", "sys_enter", fmt.Sprintf("id == %d", unix.SYS_GETPPID), 0)
	const calls = 1000
	for range calls {
		unix.Getppid()
	}
	seen := count()
	out := r.stop()
	counted := uint64(0)
	for _, l := range jsonLines[struct {
		Other []struct {
			NR    int
			Calls uint64
		} `json:"other_calls"`
	}](t, out) {
		for _, c := range l.Other {
			if c.NR == unix.SYS_GETPPID {
				counted += c.Calls
			}
		}
	}
	if seen != calls || counted != calls {
		t.Fatalf("%d getppid calls: the perf event counted %d, tracex5 %d; want %d for both",
			calls, seen, counted, calls)
	}
}

// TestTracex5NamesOtherCalls: the calls without a handler are counted by
// name, from the kernel's system call table: a workload's 37 getppid
// calls show as "getppid 37" in the text, and as {"nr": N, "name":
// "getppid", "calls": 37} with -json.
func TestTracex5NamesOtherCalls(t *testing.T) {
	testutil.RequireRoot(t)
	for _, asJSON := range []bool{false, true} {
		pid, run := workload(t, 37, 1)
		args := []string{"-p", strconv.Itoa(pid), "60"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		r := startTool(t, "tracex5", args...)
		r.waitFor("Ctrl-C to stop")
		run()
		out := r.stop()
		n := 0
		if asJSON {
			for _, l := range jsonLines[struct {
				Other []struct {
					NR    int
					Name  string
					Calls int
				} `json:"other_calls"`
			}](t, out) {
				for _, c := range l.Other {
					if c.Name == "getppid" && c.NR == unix.SYS_GETPPID {
						n += c.Calls
					}
				}
			}
		} else {
			for _, m := range regexp.MustCompile(`[:,] getppid (\d+)`).FindAllStringSubmatch(out, -1) {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
		}
		if n != 37 {
			t.Fatalf("tracex5 %q: %d getppid calls named, want 37:\n%s", args, n, out)
		}
	}
}

// TestTracex5Order: a workload writes 12 times, each write on the next
// CPU, while tracex5 is stopped, so that every CPU's ring holds some of
// them when it goes on: it prints them in the order they were made (one
// ring read after another would print each CPU's together).
func TestTracex5Order(t *testing.T) {
	testutil.RequireRoot(t)
	var cpus unix.CPUSet
	if unix.SchedGetaffinity(0, &cpus); cpus.Count() < 2 {
		t.Skip("one CPU: one ring")
	}
	sizes := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	w := workloadCmd(0, 0, sizes...)
	w.Env = append(w.Env, "BPFKIT_TEST_ACROSS_CPUS=1")
	pid, run := startWorkload(t, w)
	r := startTool(t, "tracex5", "-json", "-p", strconv.Itoa(pid), "60")
	r.waitFor("Ctrl-C to stop")
	r.cmd.Process.Signal(syscall.SIGSTOP)
	run()
	r.cmd.Process.Signal(syscall.SIGCONT)
	waitOutput(r, func(out string) bool { return strings.Count(out, `"name":"write"`) >= len(sizes) })
	out := r.stop()
	var got []uint64
	for _, e := range jsonLines[struct {
		Name string
		Args [6]uint64
	}](t, out) {
		if e.Name == "write" {
			got = append(got, e.Args[2])
		}
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 9 10 11 12]" {
		t.Fatalf("writes of %v bytes, want 1 to 12 in order:\n%s", got, out)
	}
}
