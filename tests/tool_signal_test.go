package tests

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// heldIDs lists the BPF programs, maps and links process pid holds, from
// the fdinfo of its files: "prog 12", "map 7", "link 3".
func heldIDs(t *testing.T, pid int) map[string]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, fd := range fds {
		b, _ := os.ReadFile(dir + "/" + fd.Name())
		for line := range strings.SplitSeq(string(b), "\n") {
			kind, id, _ := strings.Cut(line, "_id:")
			if n, err := strconv.ParseUint(strings.TrimSpace(id), 10, 32); err == nil && (kind == "prog" || kind == "map" || kind == "link") {
				ids[fmt.Sprintf("%s %d", kind, n)] = true
			}
		}
	}
	return ids
}

// leftOf returns which of heldIDs' objects the kernel still has, listing
// its ids without opening any: a prog array opened by id just as its last
// file closes stays in the kernel for good (6.18: the second
// prog_array_map_clear takes a reference for work already queued).
func leftOf(t *testing.T, held map[string]bool) []string {
	t.Helper()
	var left []string
	for kind, next := range map[string]func(uint32) (uint32, error){"prog": prog.NextID, "map": mapfd.NextID, "link": prog.NextLinkID} {
		var id uint32
		for {
			var err error
			if id, err = next(id); err != nil {
				t.Fatal(err)
			}
			if id == 0 {
				break
			}
			if key := fmt.Sprintf("%s %d", kind, id); held[key] {
				left = append(left, key)
			}
		}
	}
	return left
}

// probeEvents lists the kprobe and uprobe events in tracefs of process
// pid's group (tracefs.Group: bpfkit_<pid namespace>_<pid>_<start time>).
func probeEvents(t *testing.T, pid int) []string {
	t.Helper()
	var out []string
	for _, k := range []tracefs.ProbeKind{tracefs.Kprobe, tracefs.Uprobe} {
		evs, err := tracefs.Events(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if f := strings.Split(ev, "_"); len(f) > 3 && f[0] == "bpfkit" && f[2] == strconv.Itoa(pid) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// TestToolsSIGTERM stops each tool with SIGTERM, as a service manager
// does, halfway through its first interval: it must exit 0 having printed
// that interval (or its closing line), and leave nothing in the kernel:
// none of the programs, maps and links it held (its files' fdinfo says
// which) is left, nor any probe event of its group in tracefs.
func TestToolsSIGTERM(t *testing.T) {
	testutil.RequireRoot(t)
	jsonLinesWith := func(key string, n int) func(*testing.T, string) bool {
		return func(t *testing.T, out string) bool {
			got := 0
			for _, l := range jsonLines[map[string]any](t, out) {
				if _, ok := l[key]; ok {
					got++
				}
			}
			return got == n
		}
	}
	textEnds := func(re string) func(*testing.T, string) bool {
		return func(t *testing.T, out string) bool { return regexp.MustCompile(re + `\n$`).MatchString(out) }
	}
	for _, c := range []struct {
		args  []string
		needs string // "kprobes", "usdt"
		final func(*testing.T, string) bool
	}{
		{[]string{"dropmon", "-json", "60"}, "", jsonLinesWith("drops", 1)},
		{[]string{"dropmon", "-events", "60"}, "", textEnds(`\n\d+ drops(, \d+ lost)?`)},
		{[]string{"tracex1", "60"}, "", textEnds(`\n\d+ packets(, \d+ records lost)?`)},
		{[]string{"tracex1", "-printk", "60"}, "", textEnds(`\n\d+ packets(, \d+ trace events lost)?`)},
		{[]string{"tracex2", "-json", "60"}, "", jsonLinesWith("write_bytes", 1)},
		{[]string{"tracex3", "-json", "60"}, "", jsonLinesWith("latency_us", 2)},
		{[]string{"tracex4", "-json", "60"}, "kprobes", jsonLinesWith("asked_bytes", 1)},
		{[]string{"tracex5", "-json", "-p", "1", "60"}, "", jsonLinesWith("other_calls", 1)},
		{[]string{"funccount", "-json", "syscalls:sys_enter_getppid", "60"}, "", jsonLinesWith("counts", 1)},
		{[]string{"funccount", "-json", "vfs_write", "60"}, "kprobes", jsonLinesWith("counts", 1)},
		{[]string{"usdt", "-json", "-count", "-a", "0", "SDT", "bpfkit:args", "60"}, "usdt", jsonLinesWith("counts", 1)},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			switch c.needs {
			case "kprobes":
				requireKprobes(t)
			case "usdt":
				c.args[5] = sdtBinary(t)
			}
			r := startTool(t, c.args[0], c.args[1:]...)
			r.waitFor("Ctrl-C to stop")
			pid := r.cmd.Process.Pid
			ids, events := heldIDs(t, pid), probeEvents(t, pid)
			if len(ids) == 0 {
				t.Fatalf("%s holds no BPF object that its fdinfo names", c.args[0])
			}
			r.cmd.Process.Signal(syscall.SIGTERM)
			out := r.wait()
			if !c.final(t, out) {
				t.Errorf("the interval cut short by SIGTERM is not in the output:\n%s", out)
			}
			deadline := time.Now().Add(5 * time.Second) // the kernel frees some after an RCU grace period
			for left := leftOf(t, ids); len(left) > 0; left = leftOf(t, ids) {
				if time.Now().After(deadline) {
					t.Fatalf("%q still in the kernel after %s exited", left, c.args[0])
				}
				time.Sleep(10 * time.Millisecond)
			}
			if left := probeEvents(t, pid); len(left) > 0 {
				t.Fatalf("probe events left in tracefs: %q (while it ran: %q)", left, events)
			}
			t.Logf("%d objects gone (%d probe events while it ran)", len(ids), len(events))
		})
	}
}

// TestToolsReportLost: each tool that reads a perf ring, stopped (SIGSTOP)
// while a workload floods its ring on one CPU, reports the samples the
// kernel dropped once it runs again: with -json as objects {"time",
// "lost", "cpu"}, among lines that are all JSON.
func TestToolsReportLost(t *testing.T) {
	testutil.RequireRoot(t)
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	open, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	sender, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	for _, c := range []struct {
		args   []string
		flood  func() // one sample
		floods int64  // how many overflow the buffer: 20000 for a perf ring
	}{
		{[]string{"tracex5", "-json", "-p", strconv.Itoa(os.Getpid()), "60"}, func() { null.Write([]byte("x")) }, 0},
		{[]string{"dropmon", "-events", "-json", "60"}, func() { sender.WriteTo([]byte("x"), closed.LocalAddr()) }, 0},
		{[]string{"tracex1", "-json", "60"}, func() { sender.WriteTo([]byte("x"), open.LocalAddr()) }, 0},
		// trace_pipe's buffer holds 1408 KiB per CPU, a line of tracex1 ~80 bytes
		{[]string{"tracex1", "-printk", "-json", "60"}, func() { sender.WriteTo([]byte("x"), open.LocalAddr()) }, 60000},
	} {
		name := c.args[0]
		if c.args[1] == "-printk" {
			name += " -printk"
		}
		t.Run(name, func(t *testing.T) {
			r := startTool(t, c.args[0], c.args[1:]...)
			r.waitFor("Ctrl-C to stop")
			// The flood: on one CPU, whose ring (at most 1 MiB, a sample
			// 64 bytes at least) overflows within 20000 samples.
			var n atomic.Int64
			stop, done := make(chan struct{}), make(chan struct{})
			r.cmd.Process.Signal(syscall.SIGSTOP)
			go func() {
				defer close(done)
				runtime.LockOSThread() // not unlocked: the thread, pinned, ends with the goroutine
				var set unix.CPUSet
				if err := unix.SchedGetaffinity(0, &set); err != nil {
					panic(err)
				}
				for cpu := 0; ; cpu++ {
					if set.IsSet(cpu) {
						set.Zero()
						set.Set(cpu)
						break
					}
				}
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					panic(err)
				}
				for {
					select {
					case <-stop:
						return
					default:
						c.flood()
						n.Add(1)
					}
				}
			}()
			for n.Load() < max(c.floods, 20000) {
				time.Sleep(10 * time.Millisecond)
			}
			r.cmd.Process.Signal(syscall.SIGCONT)
			// The kernel writes its loss report before the next sample that fits.
			waitOutput(r, func(out string) bool { return strings.Contains(out, `"lost":`) })
			close(stop)
			<-done
			out := r.stop()
			var lost uint64
			for _, l := range jsonLines[map[string]any](t, out) {
				if _, ok := l["lost"]; !ok {
					continue
				}
				if len(l) != 3 || l["time"] == nil || l["cpu"] == nil || l["lost"].(float64) < 1 {
					t.Fatalf("a loss report %v, want {time, lost, cpu}", l)
				}
				lost += uint64(l["lost"].(float64))
			}
			if lost == 0 {
				t.Fatalf("%d samples sent while %s was stopped, none reported lost:\n%.2000s", n.Load(), c.args[0], out)
			}
			t.Logf("%d samples sent, %d reported lost", n.Load(), lost)
		})
	}
}
