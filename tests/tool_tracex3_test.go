package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex3 makes 50 O_DIRECT reads on a loop device while tracex3
// watches it: the histogram at exit must count exactly 50 requests, each
// issue matched with its completion; with -json, so must the intervals'
// objects together, and the run's object (total) that comes last.
func TestTracex3(t *testing.T) {
	testutil.RequireRoot(t)
	path, minor := testutil.LoopDevice(t)
	r := startTool(t, "tracex3", "-dev", "7:"+strconv.Itoa(minor), "0.2")
	r.waitFor("Ctrl-C to stop")
	testutil.DirectReads(t, path, 50)
	out := r.stop()
	hist := out[strings.LastIndex(out, "usecs"):]
	total := 0
	for _, line := range strings.Split(hist, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 {
			n, _ := strconv.Atoi(f[4])
			total += n
		}
	}
	if total != 50 {
		t.Fatalf("tracex3 counted %d requests on %s, want 50:\n%s", total, path, hist)
	}
	t.Log("\n" + hist)
	checkHeatmaps(t, out[:strings.LastIndex(out, "usecs")])

	r = startTool(t, "tracex3", "-json", "-dev", "7:"+strconv.Itoa(minor), "0.2")
	r.waitFor("Ctrl-C to stop")
	testutil.DirectReads(t, path, 50)
	out = r.stop()
	type column struct {
		Requests  int
		LatencyUs []histSlot `json:"latency_us"`
		Total     bool
	}
	lines := jsonLines[column](t, out)
	var sum column
	for _, c := range lines[:len(lines)-1] {
		sum.Requests += c.Requests
		sum.LatencyUs = append(sum.LatencyUs, c.LatencyUs...)
		if c.Total {
			t.Fatalf("an interval's object says total:\n%s", out)
		}
	}
	last := lines[len(lines)-1]
	if !last.Total || last.Requests != 50 || sum.Requests != 50 || jsonSlots(last.LatencyUs) != jsonSlots(sum.LatencyUs) {
		t.Fatalf("tracex3 -json: %d requests in the intervals (slots %s), the run's object %+v; want 50 in both, the same slots:\n%s",
			sum.Requests, jsonSlots(sum.LatencyUs), last, out)
	}
}

// checkHeatmaps checks tracex3's frames of text: each a time, a line that
// names the rows and the column of totals, and rows labelled by round
// figures of a unit, from the first with requests to the last.
func checkHeatmaps(t *testing.T, out string) {
	t.Helper()
	frames := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\n`).Split(out, -1)[1:]
	label := regexp.MustCompile(`^ *(0|(1|2|4|8|16|32|64|128|256|512)(us|ms|s)) \|.*\| (\d+)$`)
	if len(frames) == 0 {
		t.Fatalf("no heatmap in:\n%s", out)
	}
	for _, f := range frames {
		lines := strings.Split(strings.TrimRight(f, " \n"), "\n")
		if !regexp.MustCompile(`^ *latency \| *\| requests$`).MatchString(lines[0]) {
			t.Fatalf("a frame's first line %q, want \"latency |...| requests\":\n%s", lines[0], f)
		}
		rows := lines[1:]
		for i, row := range rows {
			m := label.FindStringSubmatch(row)
			if m == nil {
				t.Fatalf("row %q: want a round latency, its cells and its total:\n%s", row, f)
			}
			if (i == 0 || i == len(rows)-1) && m[4] == "0" {
				t.Fatalf("an empty row %q at an edge of the frame:\n%s", row, f)
			}
		}
	}
}

// TestToolsRejectBadArguments: every tool refuses bad arguments with one
// line and status 2, before loading anything: run as nobody (when the
// test may), before it checks for root too.
func TestToolsRejectBadArguments(t *testing.T) {
	for _, c := range []struct {
		tool string
		args []string
		msg  string
	}{
		{"tracex3", []string{"0"}, "interval \"0\": must be more than zero"},
		{"tracex3", []string{"-1"}, `unknown flag "-1"`},
		{"tracex3", []string{"1", "-2"}, `unknown flag "-2"`},
		{"tracex3", []string{"1", "--", "-2"}, "count \"-2\""},
		{"tracex3", []string{"1", "-dev"}, "flag -dev needs a value"},
		{"tracex3", []string{"1", "2", "3"}, "unexpected argument \"3\""},
		{"tracex3", []string{"-dev", "sda"}, "-dev \"sda\": want MAJOR:MINOR"},
		{"dropmon", []string{"-top", "-1"}, "-top -1: want 1 or more"},
		{"dropmon", []string{"-stacks", "-events"}, "choose one"},
		{"dropmon", []string{"-i", "5"}, `unknown flag "-i"`},
		{"dropmon", []string{"5", "-i\n"}, `unknown flag "-i\n"`},
		{"dropmon", []string{"5", "-top", "0"}, "-top 0: want 1 or more"},
		{"dropmon", []string{"5x"}, "want seconds (1, 0.5) or a duration with its unit"},
		{"dropmon", []string{"86401"}, "interval \"86401\": at most 24h"},
		{"dropmon", []string{"1000000h", "1"}, "interval \"1000000h\": at most 24h"},
		{"dropmon", []string{"-listen", "127.0.0.1"}, "-listen \"127.0.0.1\": want HOST:PORT"},
		{"dropmon", []string{"-listen", ":99999"}, "-listen \":99999\": want HOST:PORT"},
		{"dropmon", []string{"-listen", "localhost:http"}, "the port a number"},
		{"dropmon", []string{"5", "-listen", "a\nb:80"}, `"a\nb:80": the host is neither a name`},
		{"tracex2", []string{"-p", "-3"}, `-p "-3": want a process id from 1 to 4194304`},
		{"tracex2", []string{"-p", "4294967297"}, `-p "4294967297": want a process id`},
		{"tracex4", []string{"-p", "4294967296"}, `-p "4294967296": want a process id`},
		{"tracex5", []string{"5", "-p", "4194305"}, `-p "4194305": want a process id`},
		{"funccount", []string{"vfs_read", "-p", "0"}, `-p "0": want a process id`},
		{"usdt", []string{"/bin/true", "a:b", "-p", "4294967297"}, `"4294967297": want a process`},
		{"tracex4", []string{"1", "0"}, "count \"0\""},
		{"funccount", nil, "no pattern"},
		{"funccount", []string{"vfs_[", "1"}, "syntax error in pattern"},
		{"funccount", []string{"-max", "0", "vfs_read"}, "-max 0: want 1 or more"},
		{"funccount", []string{"1", "2", "3"}, "pattern \"1\" is a number: the interval and count come last"},
		{"funccount", []string{"vfs_read", "1", "2", "3"}, "pattern \"1\" is a number"},
		{"funccount", []string{"0.5s", "vfs_read"}, "pattern \"0.5s\" is a number"},
	} {
		cmd := exec.Command(toolPath(t, c.tool), c.args...)
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, errOut, status := runCmd(t, cmd)
		if status != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%s %q: status %d, stdout %q, stderr %q; want 2 and one line with %q", c.tool, c.args, status, out, errOut, c.msg)
		}
	}
}

// TestDropmonListenBusy: -listen on a port in use is refused (status 1:
// the system's, not a usage error) before anything is loaded, as the
// journal of its bpf(2) calls shows.
func TestDropmonListenBusy(t *testing.T) {
	testutil.RequireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	journal := t.TempDir() + "/journal"
	cmd := exec.Command(toolPath(t, "dropmon"), "-listen", ln.Addr().String(), "1", "1")
	cmd.Env = append(os.Environ(), "BPFKIT_JOURNAL="+journal)
	out, errOut, status := runCmd(t, cmd)
	if status != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("status %d, stdout %q, stderr %q; want 1 and one line saying the address is in use", status, out, errOut)
	}
	b, _ := os.ReadFile(journal)
	if loads := regexp.MustCompile(`(?m)^bpf\((BPF_MAP_CREATE|BPF_PROG_LOAD)`).FindAllString(string(b), -1); len(loads) > 0 {
		t.Fatalf("dropmon loaded %q before finding the port in use:\n%s", loads, b)
	}
}

// TestTracex3LeavesPerfUsers: while tracex3 runs, perf users of its
// tracepoints get every record: counting perf events on block_rq_issue and
// block_rq_complete, filtered on the loop device, count each of 50
// requests a workload makes there, as tracex3 does. (A tracepoint program
// returning 0 would hide every one of them from the perf events.)
func TestTracex3LeavesPerfUsers(t *testing.T) {
	testutil.RequireRoot(t)
	path, minor := testutil.LoopDevice(t)
	r := startTool(t, "tracex3", "-json", "-dev", "7:"+strconv.Itoa(minor), "60")
	r.waitFor("Ctrl-C to stop")
	filter := fmt.Sprintf("dev == %d", 7<<20|minor)
	issued := perfCounter(t, "block", "block_rq_issue", filter, -1)
	completed := perfCounter(t, "block", "block_rq_complete", filter, -1)
	testutil.DirectReads(t, path, 50)
	seen := [2]uint64{issued(), completed()}
	out := r.stop()
	lines := jsonLines[struct{ Requests int }](t, out)
	if counted := lines[len(lines)-1].Requests; seen != [2]uint64{50, 50} || counted != 50 {
		t.Fatalf("50 reads: the perf events counted %d issued and %d completed, tracex3 %d; want 50 each",
			seen[0], seen[1], counted)
	}
}

// TestPrometheusTracex3: tracex3 -listen serves the latencies of the loop
// device as a histogram in seconds, labelled by device, which promtool
// takes; a Prometheus server scraping it while 50 reads go to the device
// finds 50 more requests in the series, in the +Inf bucket too, and their
// latencies in its sum; bucket by bucket, what it counts is what tracex3
// prints at exit.
func TestPrometheusTracex3(t *testing.T) {
	testutil.RequireRoot(t)
	requirePrometheus(t)
	path, minor := testutil.LoopDevice(t)
	dev := "7:" + strconv.Itoa(minor)
	r := startTool(t, "tracex3", "-json", "-listen", "127.0.0.1:0", "-dev", dev, "60")
	addr := r.metricsAddr()
	r.waitFor("Ctrl-C to stop")
	p := scrapedByPrometheus(t, addr)
	series := fmt.Sprintf(`tracex3_block_latency_seconds_%%s{job="bpfkit",device=%q%%s}`, dev)
	count := fmt.Sprintf(series, "count", "")
	if n := p.increase(count, func() { testutil.DirectReads(t, path, 50) }); n != 50 {
		t.Fatalf("Prometheus counted %v requests for 50 reads: %+v", n, p.query(count))
	}
	if n := p.sum(fmt.Sprintf(series, "bucket", `,le="+Inf"`)); n != 50 {
		t.Errorf("the +Inf bucket holds %v requests, want 50", n)
	}
	if sum := p.sum(fmt.Sprintf(series, "sum", "")); sum <= 0 || sum > 50 {
		t.Errorf("the latencies sum to %v s, want some, under 50 s", sum)
	}
	body := checkMetrics(t, addr)
	out := r.stop()
	lines := jsonLines[struct {
		LatencyUs []histSlot `json:"latency_us"`
	}](t, out)
	upTo := uint64(0) // requests at or below each bucket's bound, from tracex3's own total
	for _, s := range lines[len(lines)-1].LatencyUs {
		upTo += s.Count
		le := strconv.FormatFloat(float64(s.To+1)/1e6, 'f', -1, 64)
		want := fmt.Sprintf(series, "bucket", fmt.Sprintf(",le=%q", le))
		want = strings.Replace(want, `job="bpfkit",`, "", 1) + " " + strconv.FormatUint(upTo, 10)
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("no line %q in:\n%s", want, body)
		}
	}
}
