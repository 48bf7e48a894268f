package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex2WriteSizes: a process makes writes of known sizes while
// tracex2 -p watches it; each log2 slot must hold exactly the writes of
// its sizes (bcc's slots: 1 is in 0 -> 1, 100 in 64 -> 127, ...), in the
// text's histogram and in -json's.
func TestTracex2WriteSizes(t *testing.T) {
	testutil.RequireRoot(t)
	for _, asJSON := range []bool{false, true} {
		pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
		args := []string{"-p", strconv.Itoa(pid), "60"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		r := startTool(t, "tracex2", args...)
		r.waitFor("Ctrl-C to stop")
		write()
		out := r.stop()
		var got string
		if asJSON {
			var hists [][]histSlot
			for _, l := range jsonLines[struct {
				WriteBytes []histSlot `json:"write_bytes"`
			}](t, out) {
				hists = append(hists, l.WriteBytes)
			}
			got = jsonSlots(hists...)
		} else {
			got = histSlots(out[strings.LastIndex(out, "write bytes"):])
		}
		if got != writerSlots {
			t.Fatalf("tracex2 %q: slots %v, want %v:\n%s", args, got, writerSlots, out)
		}
	}
}

// TestTracex2Drops: 100 datagrams to a closed UDP port are 100 packets
// freed at one site of the UDP receive path.
func TestTracex2Drops(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "tracex2", "60")
	r.waitFor("Ctrl-C to stop")
	dropUDP(t, 100)
	out := r.stop()
	if site, n := udpDropSite(out, 0); n != 100 {
		skipIfDropsInKfreeSkb(t, out, 0, 100)
		t.Fatalf("%d packets freed at the UDP receive site %q, want 100:\n%s", n, site, out)
	}
}

// TestTracex2PerfSees: while tracex2 runs, perf's own counters see every
// packet this test drops (skb:kfree_skb, counted on every CPU, as `perf
// stat -a` does) and every write(2) of a process (syscalls:sys_enter_write,
// counted for that process alone, from before it starts): its seven.
func TestTracex2PerfSees(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "tracex2", "60")
	r.waitFor("Ctrl-C to stop")
	freed := countTracepoint(t, "skb", "kfree_skb", -1)
	dropUDP(t, 100)
	freed.check("kfree_skb", r.cmd.Process.Pid, 100, false) // with other drops of the machine's
	// A shell, counted from its first instruction on, execs the writer
	// (this binary) once the counter is set: the count is the writer's
	// own writes, inherited by its threads.
	sh := exec.Command("sh", "-c", `read line; exec "$0"`, os.Args[0])
	sh.Env = append(os.Environ(),
		"BPFKIT_TEST_WRITER=1,100,100,100,5000,5000,70000",
		"BPFKIT_TEST_GETPPID=0",
		"BPFKIT_TEST_GAP=0s")
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	writes := countTracepoint(t, "syscalls", "sys_enter_write", sh.Process.Pid)
	fmt.Fprintln(stdin) // the shell's line: exec
	fmt.Fprintln(stdin) // the writer's: write
	if err := sh.Wait(); err != nil {
		t.Fatalf("the writer: %v", err)
	}
	writes.check("sys_enter_write", r.cmd.Process.Pid, 7, true)
	r.stop()
}

// TestPrometheusTracex2: tracex2's /metrics passes promtool check
// metrics, and a Prometheus server scraping it finds a process's writes
// in the buckets of their sizes, their sum in bytes, and the datagrams
// this test drops freed at the UDP receive site.
func TestPrometheusTracex2(t *testing.T) {
	testutil.RequireRoot(t)
	requirePrometheus(t)
	pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
	r := startTool(t, "tracex2", "-p", strconv.Itoa(pid), "-listen", "127.0.0.1:0", "60")
	addr := r.metricsAddr()
	r.waitFor("Ctrl-C to stop")
	p := scrapedByPrometheus(t, addr)
	// Cumulative counts at the log2 bounds: 1 in 0-1, 3 in 64-127, 2 in
	// 4096-8191, 1 in 65536-131071.
	want := map[string]float64{
		"1": 1, "63": 1, "127": 4, "4095": 4, "8191": 6, "65535": 6, "131071": 7, "+Inf": 7,
	}
	bucket := func(le string) float64 {
		return p.sum(fmt.Sprintf(`tracex2_write_size_bytes_bucket{le=%q}`, le))
	}
	before := map[string]float64{}
	for le := range want {
		before[le] = bucket(le)
	}
	sum := p.increase("tracex2_write_size_bytes_sum", write)
	for le, n := range want {
		if got := bucket(le) - before[le]; got != n {
			t.Errorf("bucket le=%s grew by %v, want %v", le, got, n)
		}
	}
	if sum != 1+3*100+2*5000+70000 {
		t.Errorf("the sum grew by %v bytes, want %d", sum, 1+3*100+2*5000+70000)
	}
	freed := `tracex2_freed_packets_total{location=~"__udp4_lib_rcv\\+0x[0-9a-f]+"}`
	if n := p.increase(freed, func() { dropUDP(t, 100) }); n < 100 {
		t.Errorf("Prometheus counted %v packets freed at the UDP receive site for 100 dropped", n)
	}
	checkMetrics(t, addr)
	r.stop()
}
