package tests

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// sendLo sends n datagrams of 777 bytes to a socket listening on
// 127.0.0.1: n packets of 805 bytes (IP and UDP headers on top) received
// on lo, and nothing else (no ICMP errors, the port being open).
func sendLo(t *testing.T, n int) {
	t.Helper()
	rcv, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	snd, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	for range n {
		if _, err := snd.WriteTo(make([]byte, 777), rcv.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
}

// count805 counts the lines that report a packet of 805 bytes on lo.
func count805(out string) int {
	n := 0
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[len(f)-1] == "805" && (f[len(f)-2] == "lo" || f[len(f)-2] == "len") {
			n++
		}
	}
	return n
}

// TestTracex1: 25 datagrams on lo are 25 records kept by the filter
// program, with their length, through the perf ring and, with -printk,
// through bpf_trace_printk and trace_pipe; in text and in -json (where
// -printk's lines are parsed: the CPU, and a thread of this process, the
// sender, for some).
func TestTracex1(t *testing.T) {
	testutil.RequireRoot(t)
	for _, args := range [][]string{{"60"}, {"-printk", "60"}, {"-json", "60"}, {"-printk", "-json", "60"}} {
		asJSON, printk := slices.Contains(args, "-json"), slices.Contains(args, "-printk")
		r := startTool(t, "tracex1", args...)
		r.waitFor("Ctrl-C to stop")
		sendLo(t, 25)
		count := count805
		if asJSON {
			count = func(out string) int { return strings.Count(out, `"device":"lo","len":805}`) }
		}
		waitOutput(r, func(out string) bool { return count(out) >= 25 })
		out := r.stop()
		if n := count(out); n != 25 {
			t.Fatalf("tracex1 %q: %d packets of 805 bytes on lo, want 25:\n%s", args, n, out)
		}
		if !asJSON {
			continue
		}
		ours := 0
		for _, p := range jsonLines[struct {
			Time, Comm, Device string
			CPU, TID, Len      int
		}](t, out) {
			if _, err := time.Parse(time.RFC3339Nano, p.Time); err != nil || p.CPU < 0 || p.CPU >= runtime.NumCPU() {
				t.Errorf("tracex1 %q: %+v", args, p)
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", p.TID)); err == nil && p.Comm == "tests.test" {
				ours++
			}
		}
		if printk && ours == 0 {
			t.Errorf("tracex1 %q: none of the packets in this process:\n%s", args, out)
		}
	}
}

// TestTracex1Filter: watching another device, the filter drops every
// packet of lo.
func TestTracex1Filter(t *testing.T) {
	testutil.RequireRoot(t)
	ifs, _ := net.Interfaces()
	other := ""
	for _, i := range ifs {
		if i.Name != "lo" {
			other = i.Name
		}
	}
	if other == "" {
		t.Skip("no network device but lo")
	}
	r := startTool(t, "tracex1", "-dev", other, "60")
	r.waitFor("Ctrl-C to stop")
	sendLo(t, 25)
	out := r.stop()
	if strings.Contains(out, " lo ") || !strings.Contains(out, "\n0 packets") && strings.Contains(out, "805") {
		t.Fatalf("tracex1 -dev %s printed lo's packets:\n%s", other, out)
	}
}

// TestTracex1Time: TIME is when the packet came, not when tracex1 read
// it: with tracex1 stopped (SIGSTOP), a datagram, 400 ms later another,
// then tracex1 goes on and reads both at once; each is stamped within
// 100 ms of its sending, through the perf ring (PERF_SAMPLE_TIME) and
// through trace_pipe (the time the program printed).
func TestTracex1Time(t *testing.T) {
	testutil.RequireRoot(t)
	for _, args := range [][]string{{"-json", "60"}, {"-printk", "-json", "60"}} {
		r := startTool(t, "tracex1", args...)
		r.waitFor("Ctrl-C to stop")
		r.cmd.Process.Signal(syscall.SIGSTOP)
		rcv, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer rcv.Close()
		sent := map[int]time.Time{}
		for _, size := range []int{1000, 1100} { // IP and UDP headers take 28 bytes
			if len(sent) > 0 {
				time.Sleep(400 * time.Millisecond)
			}
			sent[size] = time.Now()
			if _, err := rcv.WriteTo(make([]byte, size-28), rcv.LocalAddr()); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		r.cmd.Process.Signal(syscall.SIGCONT)
		waitOutput(r, func(out string) bool { return strings.Contains(out, `"len":1100}`) })
		out := r.stop()
		seen := 0
		for _, p := range jsonLines[struct {
			Time time.Time
			Len  int
		}](t, out) {
			if at, ok := sent[p.Len]; ok {
				seen++
				if d := p.Time.Sub(at); d < -100*time.Millisecond || d > 100*time.Millisecond {
					t.Errorf("tracex1 %q: the packet of %d bytes sent at %s is stamped %s",
						args, p.Len, at.Format("15:04:05.000"), p.Time.Format("15:04:05.000"))
				}
			}
		}
		if seen != 2 {
			t.Fatalf("tracex1 %q: %d of the 2 packets:\n%s", args, seen, out)
		}
	}
}

// TestTracex1PipeBusy: where the kernel lets one process read trace_pipe
// at a time (6.6), tracex1 -printk, finding it open here, says so in one
// line naming this process, and exits 1.
func TestTracex1PipeBusy(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := tracefs.Path()
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := os.Open(dir + "/trace_pipe")
	if err != nil {
		t.Skipf("trace_pipe: %v", err) // another reader, of another test
	}
	defer pipe.Close()
	if again, err := os.Open(dir + "/trace_pipe"); err == nil {
		again.Close()
		t.Skip("this kernel lets several processes read trace_pipe (before 6.6)")
	}
	_, errOut, status := runTool(t, "tracex1", "-printk", "1", "1")
	want := fmt.Sprintf("trace_pipe is being read by process %d (", os.Getpid())
	if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("status %d, stderr %q; want 1 and one line with %q", status, errOut, want)
	}
}
