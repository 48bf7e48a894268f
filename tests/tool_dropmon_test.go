package tests

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// haveDropReasons says whether kfree_skb records a drop reason (5.17+).
func haveDropReasons(t *testing.T) bool {
	f, err := tracefs.TracepointFormat("skb", "kfree_skb")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Field("reason")
	return err == nil
}

// TestDropmon sends 100 datagrams to a closed UDP port during an interval
// that Ctrl-C ends: dropmon must print that interval, with exactly 100
// drops at one site of the UDP receive path, named __udp4_lib_rcv+0x...
// (udp_rcv+0x... where the compiler inlined it, as in Debian's 7.2) as
// the whole kallsyms table names it (dropmon names it lazily, at the first
// report), with reason NO_SOCKET where the kernel records reasons; the
// header comes once.
func TestDropmon(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "dropmon", "-top", "50", "60")
	r.waitFor("Ctrl-C to stop")
	dropUDP(t, 100)
	out := r.stop()
	site, n := udpDropSite(out, 1)
	if n != 100 {
		skipIfDropsInKfreeSkb(t, out, 1, 100)
		t.Fatalf("%d drops at the UDP receive site %q, want 100:\n%s", n, site, out)
	}
	m := regexp.MustCompile(`^(__udp4_lib_rcv|udp_rcv)\+(0x[0-9a-f]+)$`).FindStringSubmatch(site)
	if m == nil {
		t.Fatalf("the drops are at %q, want __udp4_lib_rcv+0x... or udp_rcv+0x...", site)
	}
	syms, err := prog.Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := syms.Address(m[1])
	off, _ := strconv.ParseUint(m[2], 0, 64)
	if name := syms.Name(fn + off); name != site {
		t.Errorf("dropmon names the drops' site %s, the whole kallsyms table %s", site, name)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasSuffix(line, site) && haveDropReasons(t) != strings.Contains(line, " NO_SOCKET ") {
			t.Fatalf("reasons recorded: %v, but the line is %q", haveDropReasons(t), line)
		}
	}
	if strings.Count(out, "TIME      DROPS  REASON") != 1 {
		t.Errorf("want the header once:\n%s", out)
	}
	t.Log("\n" + out)
}

// TestDropmonQuiet: intervals without drops print nothing, not even the
// header. -p names a process that sleeps, so no drop is its.
func TestDropmonQuiet(t *testing.T) {
	testutil.RequireRoot(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	sleeping := strconv.Itoa(sleeper.Process.Pid)
	out, errOut, status := runTool(t, "dropmon", "-p", sleeping, "0.2", "4")
	if status != 0 || out != "counting drops at skb:kfree_skb; Ctrl-C to stop\n" {
		t.Fatalf("four empty intervals: status %d, stdout %q, stderr %q; "+
			"want only the line saying it counts", status, out, errOut)
	}
}

// TestDropmonPerfSees: while dropmon runs on kfree_skb, counting, by
// stack or event by event, perf's own counters of skb:kfree_skb (those
// of `perf stat -e skb:kfree_skb -a`) see every drop the test makes.
func TestDropmonPerfSees(t *testing.T) {
	testutil.RequireRoot(t)
	for _, args := range [][]string{{"60"}, {"-stacks", "60"}, {"-events", "-json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := startTool(t, "dropmon", args...)
			r.waitFor("Ctrl-C to stop")
			perf := countTracepoint(t, "skb", "kfree_skb", -1)
			dropUDP(t, 100)
			// at least 100: the machine's other drops count too
			perf.check("kfree_skb", r.cmd.Process.Pid, 100, false)
			r.stop()
		})
	}
}

// TestDropmonStacks: the 100 drops are counted under one kernel stack,
// printed symbolized, that passes through the UDP receive path.
func TestDropmonStacks(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "dropmon", "-stacks", "60")
	r.waitFor("Ctrl-C to stop")
	dropUDP(t, 100)
	out := r.stop()
	// Each stack is a line "count reason", then its frames, indented. The
	// drops take the sender's path, or ksoftirqd's when the machine is
	// busy: their stacks through udp must count 100 in all.
	total, count, udp := 0, 0, false
	for line := range strings.SplitSeq(out+"\n0 end", "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "          ") {
			if udp {
				total += count
			}
			count, udp = 0, false
			count, _ = strconv.Atoi(f[0])
		}
		udp = udp || strings.Contains(line, "udp")
	}
	if total != 100 {
		skipIfStackStopsAtTracepoint(t, out, 100)
		t.Fatalf("%d drops in stacks through udp, want 100:\n%s", total, out)
	}
}

// TestDropmonEvents: with -events -json each of 20 drops is one JSON
// object naming this process, the IP protocol and the UDP site.
func TestDropmonEvents(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "dropmon", "-events", "-json")
	r.waitFor("Ctrl-C to stop")
	dropUDP(t, 20)
	waitOutput(r, func(out string) bool { return strings.Count(out, "udp") >= 20 })
	out := r.stop()
	n, inKfreeSkb := 0, 0
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var e struct {
			PID                      int
			Comm, Protocol, Location string
		}
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if e.Protocol == "IP" && e.Comm == "tests.test"[:min(len("tests.test"), 15)] {
			if strings.Contains(e.Location, "udp") {
				n++
			} else if strings.HasPrefix(e.Location, "kfree_skb+") {
				inKfreeSkb++
			}
		}
	}
	if n != 20 && inKfreeSkb == 20 {
		t.Skipf("%s: the 20 events are in kfree_skb", kfreeSkbLocationQuirk)
	}
	if n != 20 {
		t.Fatalf("%d events from this process at the UDP site, want 20:\n%s", n, out)
	}
}

// TestDropmonEventsFilter: with -p and -reason, -events shows the drops
// of that process for that reason only: the 20 datagrams this test sends
// to a closed port (NO_SOCKET), not the 20 another process sends there,
// nor those a full receive buffer drops in this process (another reason).
//
// A drop belongs to the task the kernel runs the receive in: loopback's
// softirq runs in the sender as a rule, but in ksoftirqd once the kernel
// has deferred it (a slow, emulated machine after a burst does). So a
// second dropmon with -reason only is the reference: the filtered one
// must show exactly the NO_SOCKET drops the reference saw in this process.
func TestDropmonEventsFilter(t *testing.T) {
	testutil.RequireRoot(t)
	me := os.Getpid()
	if !haveDropReasons(t) {
		_, errOut, status := runTool(t, "dropmon", "-events", "-reason", "NO_SOCKET")
		if status != 1 || !strings.Contains(errOut, "records no drop reason") {
			t.Fatalf("-reason on a kernel without reasons: status %d, %q", status, errOut)
		}
		t.Skip("this kernel's kfree_skb records no reason (5.17+): -reason says so")
	}
	_, errOut, status := runTool(t, "dropmon", "-events", "-reason", "NO_SOCKET,NO_SUCH_REASON")
	if status != 2 || !strings.Contains(errOut, `-reason "NO_SUCH_REASON": no such drop reason`) {
		t.Errorf("an unknown reason: status %d, %q; want 2 and the name", status, errOut)
	}
	r := startTool(t, "dropmon", "-events", "-json", "-p", strconv.Itoa(me), "-reason", "no_socket")
	r.waitFor("Ctrl-C to stop")
	ref := startTool(t, "dropmon", "-events", "-json", "-reason", "no_socket")
	ref.waitFor("Ctrl-C to stop")
	other := exec.Command(os.Args[0])
	other.Env = append(os.Environ(), "BPFKIT_TEST_UDP_DROPS=20")
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	fullReceiveBuffer(t, 50)
	dropUDP(t, 20)
	waitOutput(ref, func(out string) bool { return strings.Count(out, "\n") >= 40 })
	time.Sleep(200 * time.Millisecond) // and whatever would come after
	type event struct {
		PID              int
		Reason, Location string
	}
	refOut, out := ref.stop(), r.stop()
	all, mine := jsonLines[event](t, refOut), 0
	for _, e := range all {
		if e.PID == me {
			mine++
		}
	}
	if len(all) < 40 || mine == 0 {
		t.Fatalf("the reference saw %d NO_SOCKET drops, %d in this process: want 40 or more, "+
			"some of them this process's:\n%s", len(all), mine, refOut)
	}
	n := 0
	for _, e := range jsonLines[event](t, out) {
		if e.PID != me || e.Reason != "NO_SOCKET" {
			t.Errorf("an event the filters should have left out: pid %d (want %d), reason %s",
				e.PID, me, e.Reason)
		}
		n++
	}
	if n != mine {
		t.Fatalf("%d events, want the %d the reference saw in this process:\n%s", n, mine, out)
	}
}

// fullReceiveBuffer sends n datagrams of 1000 bytes to a UDP socket of
// this process with the smallest receive buffer, which reads none: the
// kernel drops most for a full buffer (SOCKET_RCVBUFF), not NO_SOCKET.
func fullReceiveBuffer(t *testing.T, n int) {
	t.Helper()
	rcv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	if err := rcv.SetReadBuffer(1); err != nil {
		t.Fatal(err)
	}
	s, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range n {
		s.WriteTo(make([]byte, 1000), rcv.LocalAddr())
	}
}

// TestDropmonMetrics scrapes -listen's /metrics after 100 drops: the
// counter of the UDP site holds 100.
func TestDropmonMetrics(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "dropmon", "-listen", "127.0.0.1:0", "60")
	r.waitFor("Ctrl-C to stop")
	addr := r.metricsAddr()
	dropUDP(t, 100)
	time.Sleep(100 * time.Millisecond)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.stop()
	var sites []string
	s := bufio.NewScanner(strings.NewReader(string(body)))
	for s.Scan() {
		// dropmon_drops_total{location="__udp4_lib_rcv+0x4bc",reason="NO_SOCKET"} 100
		if loc, rest, ok := strings.Cut(strings.TrimPrefix(s.Text(), `dropmon_drops_total{location="`), `"`); ok && strings.HasSuffix(rest, "} 100") {
			sites = append(sites, "100 "+loc)
		}
	}
	if _, n := udpDropSite(strings.Join(sites, "\n"), 0); n != 100 {
		skipIfDropsInKfreeSkb(t, strings.Join(sites, "\n"), 0, 100)
	}
	if _, n := udpDropSite(strings.Join(sites, "\n"), 0); n != 100 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("no UDP counter at 100 in %s:\n%s", resp.Header.Get("Content-Type"), body)
	}
}

// TestToolsNeedRoot: run as nobody, each tool says on its first line that
// it needs root and which capabilities, and exits 1, before loading.
func TestToolsNeedRoot(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"dropmon", "tracex1", "tracex2", "tracex3", "tracex4", "tracex5", "funccount"} {
		args := map[string][]string{"funccount": {"syscalls:sys_enter_getppid"}}[tool]
		cmd := exec.Command(toolPath(t, tool), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		status := -1
		if e, ok := err.(*exec.ExitError); ok {
			status = e.ExitCode()
		}
		first, _, _ := strings.Cut(string(out), "\n")
		if status != 1 || !strings.Contains(first, tool+": needs root") || !strings.Contains(first, "CAP_BPF") {
			t.Errorf("%s as nobody: status %d, %q", tool, status, out)
		}
	}
}

// TestToolsHelp: -h prints the description, the flags and examples, and
// exits 0.
func TestToolsHelp(t *testing.T) {
	for _, tool := range []string{"dropmon", "tracex1", "tracex2", "tracex3", "tracex4", "tracex5", "funccount"} {
		out, _, status := runTool(t, tool, "-h")
		if status != 0 || !strings.HasPrefix(out, tool+": ") || !strings.Contains(out, "\nflags:\n") ||
			strings.Count(out[strings.Index(out, "examples:"):], "\n  "+tool) < 2 {
			t.Errorf("%s -h: status %d:\n%s", tool, status, out)
		}
	}
}

// TestToolsVersion: -version, wherever it is among the arguments, prints
// one line naming the tool, and the module's version and VCS revision as
// the go command recorded them in the binary (go version -m), and exits 0;
// -h after the positional arguments still prints the usage.
func TestToolsVersion(t *testing.T) {
	tools := []string{"dropmon", "tracex1", "tracex2", "tracex3", "tracex4", "tracex5", "funccount",
		"usdt", "bpfkit", "example"}
	for _, tool := range tools {
		args := map[string][]string{
			"funccount": {"vfs_read", "5", "-version"},
			"usdt":      {"/bin/true", "a:b", "-version"},
		}[tool]
		if args == nil {
			args = []string{"-version"}
		}
		out, errOut, status := runTool(t, tool, args...)
		oneLine := strings.HasPrefix(out, tool+" ") && strings.Count(out, "\n") == 1
		if status != 0 || errOut != "" || !oneLine {
			t.Errorf("%s -version: status %d, stdout %q, stderr %q; want one line",
				tool, status, out, errOut)
		}
		if recorded := goVersionM(t, toolPath(t, tool)); !strings.Contains(out, recorded) {
			t.Errorf("%s -version: %q; the binary records %q", tool, out, recorded)
		}
		if tool == "bpfkit" {
			continue
		}
		args = append(args[:len(args)-1:len(args)-1], "-h")
		out, _, status = runTool(t, tool, args...)
		if status != 0 || !strings.HasPrefix(out, tool+": ") {
			t.Errorf("%s %q: status %d:\n%s", tool, args, status, out)
		}
	}
}

// goVersionM is what -version must print of the build information that
// go version -m reads from binary: the module's path and version, then
// the revision or the lack of one. In the VMs, which have no go command,
// it is "".
func goVersionM(t *testing.T, binary string) string {
	if os.Getenv("BPFKIT_VM") != "" {
		return ""
	}
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", binary, err)
	}
	mod, revision := "", ", no VCS revision recorded"
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			mod = f[1] + " " + f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			revision = ", revision " + strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	return mod + revision
}

// TestExampleHelp: cmd/example -h says what it does and exits 0 without
// loading anything, as nobody too (it ran and failed to load before); an
// argument is a usage error.
func TestExampleHelp(t *testing.T) {
	cmd := exec.Command(toolPath(t, "example"), "-h")
	if os.Geteuid() == 0 {
		nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	}
	out, errOut, status := runCmd(t, cmd)
	if status != 0 || errOut != "" || !strings.HasPrefix(out, "example: build a packet") ||
		!strings.Contains(out, "\nusage: example\n") ||
		!strings.Contains(out, "\nexamples:\n  example ") {
		t.Errorf("example -h: status %d, stderr %q, stdout:\n%s", status, errOut, out)
	}
	out, errOut, status = runTool(t, "example", "now")
	if status != 2 || out != "" || !strings.Contains(errOut, `unexpected argument "now"`) {
		t.Errorf("example now: status %d, stdout %q, stderr %q; want 2", status, out, errOut)
	}
}
