package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"github.com/bpfkit/bpfkit/usdt"
)

// sdtBinary is usdt/testdata/sdt.c, a C program with USDT probes of every
// argument kind: in the VMs built statically by run.sh beside the tools,
// on the host built now with gcc and sys/sdt.h.
func sdtBinary(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("BPFKIT_TOOLS"); d != "" {
		if _, err := os.Stat(d + "/sdt"); err != nil {
			t.Skip("no sdt among the VM's tools: run.sh builds it where gcc, libc6-dev and systemtap-sdt-dev are installed")
		}
		return d + "/sdt"
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc: install gcc and libc6-dev")
	}
	if hs, _ := filepath.Glob("/usr/include/*/sys/sdt.h"); len(hs) == 0 {
		t.Skip("no sys/sdt.h: install systemtap-sdt-dev")
	}
	dir, err := os.MkdirTemp("", "bpfkit-sdt") // for nobody too: t.TempDir is not
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	out := filepath.Join(dir, "sdt")
	if b, err := exec.Command("gcc", "-O2", "-o", out, "../usdt/testdata/sdt.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// sdtRun is the C program running, driven line by line through stdin.
type sdtRun struct {
	t   testing.TB
	pid int
	in  io.Writer
	out *bufio.Reader
}

func startSDTBinary(t testing.TB, path string) *sdtRun {
	t.Helper()
	cmd := exec.Command(path)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := &sdtRun{t, cmd.Process.Pid, in, bufio.NewReader(out)}
	r.expect("ready")
	return r
}

// send writes a command and checks the answer.
func (r *sdtRun) send(cmd, answer string) {
	r.t.Helper()
	fmt.Fprintln(r.in, cmd)
	r.expect(answer)
}

func (r *sdtRun) expect(answer string) {
	r.t.Helper()
	if line, err := r.out.ReadString('\n'); strings.TrimSpace(line) != answer {
		r.t.Fatalf("sdt said %q (%v), want %q", line, err, answer)
	}
}

// waitErr waits until the tool's stderr holds s, as -json writes its
// "tracing ..." line there.
func (r *running) waitErr(s string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(r.err.String(), s) {
		select {
		case <-r.done:
			r.t.Fatalf("exited %d before saying %q:\n%s%s", r.status, s, r.out.String(), r.err.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("did not say %q in a minute:\n%s%s", s, r.out.String(), r.err.String())
		}
	}
}

// checkUsdtMode: usdt, tracing one process (-p), says whether it used
// bpf_cookie and a uprobe_multi link, and that is what the kernel has; on
// 5.10 it must have fallen back.
func checkUsdtMode(t *testing.T, said string) {
	t.Helper()
	links, err := prog.HavePerfLink()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(said, "told apart by bpf_cookie") != links || !links && !strings.Contains(said, "one program per call site") {
		t.Fatalf("perf links %v, but usdt said:\n%s", links, said)
	}
	multi, err := prog.HaveUprobeMultiPIDFilter()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(said, "one uprobe_multi link") != multi ||
		links && !multi && !strings.Contains(said, "a uprobe per site") {
		t.Fatalf("uprobe_multi links %v, but usdt said:\n%s", multi, said)
	}
	if os.Getenv("BPFKIT_VM") == "5.10" && links {
		t.Fatal("5.10 has perf links?")
	}
}

// TestUsdtList: -l lists each probe with its sites, semaphore and
// argument strings, as the library reads them; -json too.
func TestUsdtList(t *testing.T) {
	path := sdtBinary(t)
	f, err := usdt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, status := runTool(t, "usdt", "-l", path)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	want := ""
	for _, p := range f.Probes {
		want += fmt.Sprintf("%s  %d site%s  semaphore %#x\n", p, len(p.Sites), map[bool]string{true: "s"}[len(p.Sites) > 1], p.Sites[0].Semaphore)
		for _, s := range p.Sites {
			want += fmt.Sprintf("    %#x  %s\n", s.Address, s.Args)
		}
	}
	if out != want {
		t.Fatalf("usdt -l:\n%s\nwant:\n%s", out, want)
	}
	out, _, _ = runTool(t, "usdt", "-l", "-json", path)
	var p struct {
		Probe string
		Sites []usdt.Site
	}
	if err := json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &p); err != nil || p.Probe != "bpfkit:args" ||
		fmt.Sprint(p.Sites) != fmt.Sprint(f.Probes[0].Sites) || p.Sites[0].Semaphore == 0 {
		t.Fatalf("usdt -l -json: %+v, %v:\n%s", p, err, out)
	}
}

// TestUsdtEvents: usdt -json -p prints each of 4 firings of bpfkit:args
// with the values the C program passed (numbers of every kind, signed
// and unsigned, and a string) at the time it fired them. The text output
// has the same values, the strings quoted where they hold a space, the
// PID right-aligned.
func TestUsdtEvents(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	proc := startSDTBinary(t, path)
	r := startTool(t, "usdt", "-json", "-p", strconv.Itoa(proc.pid), path, "bpfkit:args", "-a", "0,1,2,3,4,5,6,7,8,9,10", "-s", "11")
	r.waitErr("Ctrl-C to stop")
	checkUsdtMode(t, r.err.String())
	proc.send("sem", "sem 1 0")
	before := time.Now()
	proc.send("fire 4", "fired 4")
	after := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(r.out.String(), "\n") < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := r.stop()
	events := usdtEvents(t, out)
	if len(events) != 4 {
		t.Fatalf("%d events, want 4:\n%s", len(events), out)
	}
	// In the order of the calls: the last argument is "call i".
	call := func(e usdtEvent) string {
		if len(e.Args) == 0 {
			return ""
		}
		return fmt.Sprint(e.Args[len(e.Args)-1])
	}
	slices.SortFunc(events, func(a, b usdtEvent) int { return strings.Compare(call(a), call(b)) })
	for i, e := range events {
		want := fmt.Sprintf("[%d %d -42 200 %d -300 -5 18364758544493064720 %d %d %d call %d]", -i, 3*i, -7*i, 1000+i, -i, i, i)
		// The time is the firing's, stamped by the program.
		early, late := before.Add(-time.Millisecond), after.Add(time.Millisecond)
		if e.Time.Before(early) || e.Time.After(late) {
			t.Errorf("event %d at %v, not while the program fired (%v to %v)",
				i, e.Time, before, after)
		}
		if got := fmt.Sprint(e.Args); e.PID != proc.pid || e.Comm != "sdt" || got != want {
			t.Errorf("event %d: pid %d comm %q args %s, want %d sdt %s", i, e.PID, e.Comm, got, proc.pid, want)
		}
	}
	proc.send("sem", "sem 0 0")

	r = startTool(t, "usdt", "-p", strconv.Itoa(proc.pid), "-a", "2,0", "-s", "11", path, "bpfkit:args")
	r.waitFor("Ctrl-C to stop")
	proc.send("fire 2", "fired 2")
	for strings.Count(r.out.String(), "call 1") < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out = r.stop()
	var rows []string
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == strconv.Itoa(proc.pid) {
			rows = append(rows, strings.Join(f[2:], " "))
			// PID right-aligned under its header, as the other tools print it.
			aligned := strings.HasPrefix(line[13:], fmt.Sprintf("%7d sdt ", proc.pid))
			if !strings.Contains(out, "\nTIME             PID COMM ") || !aligned {
				t.Errorf("PID not right-aligned under its header:\n%s", out)
			}
		}
	}
	// The strings are quoted: they hold a space. The text's times are in
	// milliseconds, too coarse to order by: the rows are compared sorted.
	slices.Sort(rows)
	if want := `sdt -1 -42 "call 1",sdt 0 -42 "call 0"`; strings.Join(rows, ",") != want {
		t.Errorf("text output: %q, want %q:\n%s", rows, want, out)
	}
	// The tool's events would be in a group named after its pid.
	probes, err := tracefs.Events(tracefs.Uprobe)
	for _, e := range probes {
		if strings.Contains(e, fmt.Sprintf("_%d_", r.cmd.Process.Pid)) {
			t.Errorf("left in uprobe_events: %s", e)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUsdtGlobals: bpfkit:global's arguments are global variables (on
// x86-64 written relative to %rip, found through the symbols): usdt prints
// the values the C program set, at each of the probe's two sites.
func TestUsdtGlobals(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	proc := startSDTBinary(t, path)
	r := startTool(t, "usdt", "-json", "-p", strconv.Itoa(proc.pid), path, "bpfkit:global", "-a", "0,1")
	r.waitErr("Ctrl-C to stop")
	proc.send("global 77", "global 77")
	proc.send("global -3", "global -3")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(r.out.String(), "\n") < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var got []string
	for _, e := range usdtEvents(t, r.stop()) {
		got = append(got, fmt.Sprint(e.Args))
	}
	slices.Sort(got)
	if want := "[-3 3] [-3 3] [77 -77] [77 -77]"; strings.Join(got, " ") != want { // two sites
		t.Errorf("usdt bpfkit:global: %q, want %s", got, want)
	}
}

// usdtEvent is a line of usdt -json: a firing.
type usdtEvent struct {
	Time time.Time
	PID  int
	Comm string
	Args []any
}

// usdtEvents decodes usdt -json's firings, numbers as json.Number, in the
// order they were printed. usdt prints each CPU's perf ring in turn, so
// firings on two CPUs may be printed out of the order they fired in (the
// process moved between them): callers compare them in an order of their
// own. Not by time: each event's wall-clock time is worked out from its
// CLOCK_MONOTONIC stamp when it is printed, and can be off by as long as
// the tool was preempted meanwhile.
func usdtEvents(t *testing.T, out string) []usdtEvent {
	t.Helper()
	var events []usdtEvent
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var e usdtEvent
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&e); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		events = append(events, e)
	}
	return events
}

// TestUsdtCount: -count counts the firings of two processes by the
// string and constant arguments, one row each, exact; without -p both
// processes count, with -p only one.
func TestUsdtCount(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	a, b := startSDTBinary(t, path), startSDTBinary(t, path)
	for _, pid := range []int{0, a.pid} {
		args := []string{"-count", "-s", "11", "-a", "2", path, "bpfkit:args", "60"}
		if pid != 0 {
			args = append([]string{"-p", strconv.Itoa(pid)}, args...)
		}
		r := startTool(t, "usdt", args...)
		r.waitFor("Ctrl-C to stop")
		a.send("fire 3", "fired 3")
		b.send("fire 2", "fired 2")
		out := r.stop()
		// most first, then in the order of their values
		want := map[int]string{
			0:     `2 -42 "call 0",2 -42 "call 1",1 -42 "call 2"`,
			a.pid: `1 -42 "call 0",1 -42 "call 1",1 -42 "call 2"`,
		}[pid]
		var rows []string
		for line := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(line); len(f) == 4 && f[2] == `"call` {
				rows = append(rows, strings.Join(f, " "))
			}
		}
		if strings.Join(rows, ",") != want {
			t.Errorf("pid %d: rows %q, want %q:\n%s", pid, rows, want, out)
		}
	}
}

// TestUsdtIntervalCount: with an interval and a count, usdt stops by
// itself, status 0, after count intervals; -count -json prints one
// object for each.
func TestUsdtIntervalCount(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	start := time.Now()
	if _, errOut, status := runTool(t, "usdt", path, "bpfkit:args", "0.2", "2"); status != 0 || time.Since(start) < 400*time.Millisecond {
		t.Errorf("events: status %d after %v: %s", status, time.Since(start), errOut)
	}
	out, errOut, status := runTool(t, "usdt", "-count", "-json", path, "bpfkit:args", "0.2", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if status != 0 || len(lines) != 2 || !strings.Contains(lines[1], `"counts":[]`) {
		t.Errorf("-count -json: status %d, %q: %s", status, lines, errOut)
	}
}

// TestUsdtPython: python3's function__entry gives the file, function and
// line of each Python function a script calls, exactly as many times,
// with -p and without.
func TestUsdtPython(t *testing.T) {
	testutil.RequireRoot(t)
	const python = "/usr/bin/python3"
	if f, err := usdt.Open(python); err != nil {
		t.Skipf("no Debian python3 with USDT probes (install python3): %v", err)
	} else if _, err := f.Probe("python:function__entry"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	script := filepath.Join(dir, "traced.py")
	src := "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\n\ndef double(x):\n    return 2 * x\n\ndef work(n):\n    return [double(i) for i in range(n)]\n\nwork(3)\nwork(2)\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, withPID := range []bool{false, true} {
		py := exec.Command(python, script)
		in, _ := py.StdinPipe()
		stdout, _ := py.StdoutPipe()
		if err := py.Start(); err != nil {
			t.Fatal(err)
		}
		// Started and waiting: its <module> runs already, untraced.
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			t.Fatalf("python3 said %q, %v", line, err)
		}
		args := []string{python, "python:function__entry", "-s", "0,1", "-a", "2"}
		if withPID {
			args = append(args, "-p", strconv.Itoa(py.Process.Pid))
		}
		r := startTool(t, "usdt", args...)
		r.waitFor("Ctrl-C to stop")
		fmt.Fprintln(in)
		if err := py.Wait(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		out := r.stop()
		got := map[string]int{}
		for line := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(line); len(f) == 6 && f[3] == script {
				got[strings.Join(f[4:], " ")]++
			}
		}
		// work's list comprehension is a function of its own, line 9.
		if want := "map[<listcomp> 9:2 double 5:5 work 8:2]"; fmt.Sprint(got) != want {
			t.Errorf("pid %v: %v, want %s:\n%s", withPID, got, want, out)
		}
	}
}

// TestUsdtHelpAndRoot: -h prints the usage and examples, status 0; as
// nobody, usdt says it needs root, status 1, before loading anything.
func TestUsdtHelpAndRoot(t *testing.T) {
	testutil.RequireRoot(t)
	out, _, status := runTool(t, "usdt", "-h")
	if status != 0 || !strings.HasPrefix(out, "usdt: ") || strings.Count(out, "\n  usdt ") < 3 {
		t.Errorf("usdt -h: status %d:\n%s", status, out)
	}
	cmd := exec.Command(toolPath(t, "usdt"), sdtBinary(t), "bpfkit:args")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := cmd.CombinedOutput()
	if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 1 || !strings.HasPrefix(string(b), "usdt: needs root") {
		t.Errorf("usdt as nobody: %v, %q", err, b)
	}
}

// TestUsdtErrors: bad arguments exit 2 with one line; a missing probe or
// a binary without probes exit 1 and say what there is.
func TestUsdtErrors(t *testing.T) {
	path := sdtBinary(t)
	for _, c := range []struct {
		args   []string
		status int
		msg    string
	}{
		{nil, 2, "want a path and a probe"},
		{[]string{"-l"}, 2, "-l takes one path"},
		{[]string{"-p", "-1", path, "bpfkit:args"}, 2, `-p "-1": want a process id`},
		{[]string{path, "bpfkit:args", "-a", "12"}, 2, "-a 12: the probe has 12 arguments"},
		{[]string{path, "bpfkit:args", "-a", "1", "-s", "1"}, 2, "argument 1 is chosen twice"},
		{[]string{path, "bpfkit:args", "-s", "0,1,2,3"}, 2, "more than the 496 there are"},
		{[]string{path, "bpfkit:nope"}, 1, "has no probe bpfkit:nope; it has bpfkit:args, bpfkit:str"},
		{[]string{"-l", "/proc/self/exe"}, 1, "no .note.stapsdt section"},
		{[]string{path, "bpfkit:args", "-x"}, 2, `unknown flag "-x"`},
		// A probe that is not provider:name is a usage error, quoted.
		{[]string{path, "p:n\n"}, 2, `probe "p:n\n": want provider:name`},
		{[]string{path, "bpfkit:"}, 2, `probe "bpfkit:": want provider:name`},
		{[]string{path, ":"}, 2, `probe ":": want provider:name`},
		{[]string{path, ""}, 2, `probe "": want provider:name`},
		{[]string{path, "bpfkit"}, 2, `probe "bpfkit": want provider:name`},
		// A pid out of the kernel's range is refused before anything is
		// loaded: 4294967297 in 32 bits is pid 1.
		{[]string{"-p", "4294967297", path, "bpfkit:args"}, 2,
			`-p "4294967297": want a process id from 1`},
		{[]string{"-listen", ":0", path, "bpfkit:args"}, 2, "-listen serves the counts of -count"},
	} {
		out, errOut, status := runTool(t, "usdt", c.args...)
		if status != c.status || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.msg) {
			t.Errorf("usdt %q: status %d, stdout %q, stderr %q; want %d and one line with %q", c.args, status, out, errOut, c.status, c.msg)
		}
	}
}

// TestPrometheusUsdt: usdt -count -listen serves usdt_firings_total by
// probe and argument values, which passes promtool check metrics; a
// Prometheus server scraping it while the C program fires bpfkit:args 7
// times (traced with -p: nothing else counts) finds exactly 7 more
// firings, one with arg11="call 3" and arg1="9".
func TestPrometheusUsdt(t *testing.T) {
	testutil.RequireRoot(t)
	requirePrometheus(t)
	path := sdtBinary(t)
	proc := startSDTBinary(t, path)
	r := startTool(t, "usdt", "-count", "-a", "1", "-s", "11", "-listen", "127.0.0.1:0",
		"-p", strconv.Itoa(proc.pid), path, "bpfkit:args", "60")
	addr := r.metricsAddr()
	r.waitFor("Ctrl-C to stop")
	p := scrapedByPrometheus(t, addr)
	firings := `usdt_firings_total{job="bpfkit",probe="bpfkit:args"}`
	if n := p.increase(firings, func() { proc.send("fire 7", "fired 7") }); n != 7 {
		t.Fatalf("Prometheus counted %v firings for 7: %+v", n, p.query(firings))
	}
	third := p.query(`usdt_firings_total{arg1="9",arg11="call 3"}`)
	if len(third) != 1 || third[0].Value != 1 {
		t.Errorf("the firing with i=3: %+v, want one series of 1", third)
	}
	out := checkMetrics(t, addr)
	if !strings.Contains(out, `usdt_missed_firings_total{probe="bpfkit:args"} 0`) {
		t.Errorf("no usdt_missed_firings_total of 0:\n%s", out)
	}
	r.stop()
}

// forgedSDT is a copy of the C program whose notes name bpfkit:args
// "bpfkit:a\n\x1b[" and bpfkit:str "bpfkit:\x1b[m", and write the
// arguments of bpfkit:str's first site with a newline for their space:
// what a hostile file may say, the bytes patched in place. It returns
// the copy's path and those arguments as the original writes them.
func forgedSDT(t *testing.T) (string, string) {
	t.Helper()
	path := sdtBinary(t)
	f, err := usdt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	str, err := f.Probe("bpfkit:str")
	if err != nil {
		t.Fatal(err)
	}
	first, second := str.Sites[0].Args, str.Sites[1].Args
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{
		{"bpfkit\x00args\x00", "bpfkit\x00a\n\x1b[\x00"},
		{"bpfkit\x00str\x00" + first + "\x00",
			"bpfkit\x00\x1b[m\x00" + strings.Replace(first, " ", "\n", 1) + "\x00"},
		{"bpfkit\x00str\x00" + second + "\x00", "bpfkit\x00\x1b[m\x00" + second + "\x00"},
	} {
		if strings.Count(string(b), p[0]) != 1 {
			t.Fatalf("the notes hold %q %d times, want once", p[0], strings.Count(string(b), p[0]))
		}
		b = []byte(strings.Replace(string(b), p[0], p[1], 1))
	}
	forged := filepath.Join(t.TempDir(), "forged")
	if err := os.WriteFile(forged, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return forged, first
}

// TestUsdtListHostile: names and arguments a file gives that are not
// printable are quoted by -l, text and -json, so that a newline in a name
// does not forge a line and an escape sequence does not reach the
// terminal; a probe asked for that the file lacks is answered with its
// names quoted, on one line.
func TestUsdtListHostile(t *testing.T) {
	path, args := forgedSDT(t)
	out, errOut, status := runTool(t, "usdt", "-l", path)
	if status != 0 || strings.ContainsRune(out, 0x1b) || strings.Count(out, "\n") != 8 {
		t.Fatalf("usdt -l: status %d, an escape %v, %d lines, want 0, none and 8:\n%s%s",
			status, strings.ContainsRune(out, 0x1b), strings.Count(out, "\n"), out, errOut)
	}
	forgedArgs := "  " + strconv.Quote(strings.Replace(args, " ", "\n", 1)) + "\n"
	for _, want := range []string{`"bpfkit:a\n\x1b["  1 site`, `"bpfkit:\x1b[m"  2 sites`,
		forgedArgs, "\nbpfkit:global  2 sites"} {
		if !strings.Contains(out, want) {
			t.Errorf("usdt -l lacks %s:\n%s", want, out)
		}
	}
	out, _, _ = runTool(t, "usdt", "-l", "-json", path)
	var probes []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var p struct{ Probe string }
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		probes = append(probes, p.Probe)
	}
	wantProbes := []string{`"bpfkit:a\n\x1b["`, `"bpfkit:\x1b[m"`, "bpfkit:global"}
	if want := wantProbes; fmt.Sprint(probes) != fmt.Sprint(want) {
		t.Errorf("usdt -l -json: probes %q, want %q", probes, want)
	}
	_, errOut, status = runTool(t, "usdt", path, "bpfkit:nope")
	want := `has no probe bpfkit:nope; it has "bpfkit:a\n\x1b[", "bpfkit:\x1b[m", bpfkit:global`
	oneLine := strings.Count(errOut, "\n") == 1 && !strings.ContainsRune(errOut, 0x1b)
	if status != 1 || !oneLine || !strings.Contains(errOut, want) {
		t.Errorf("usdt %s bpfkit:nope: status %d: %q, want 1 and one line with %s",
			path, status, errOut, want)
	}
}

// TestUsdtCountFull: with more keys than -count has room for (20000
// firings of bpfkit:args, each with its own argument 1), every firing is
// either counted once under its key or counted as missed, and the tool
// says how many were missed: the table's probes end after a few slots,
// the hash map of kernels before 5.12 holds 10240 keys.
func TestUsdtCountFull(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	proc := startSDTBinary(t, path)
	r := startTool(t, "usdt", "-count", "-json", "-a", "1", "-p", strconv.Itoa(proc.pid),
		path, "bpfkit:args", "60")
	r.waitErr("Ctrl-C to stop")
	proc.send("fire 20000", "fired 20000")
	out := r.stop()
	var report struct {
		Counts []struct {
			Args  []uint64
			Count uint64
		}
		Missed uint64
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v:\n%.500s", err, out)
	}
	seen := map[uint64]bool{}
	for _, c := range report.Counts {
		if len(c.Args) != 1 || c.Args[0]%3 != 0 || c.Args[0] >= 60000 || c.Count != 1 ||
			seen[c.Args[0]] {
			t.Fatalf("a count of %d for %v: want 1 for each argument 3*i, once", c.Count, c.Args)
		}
		seen[c.Args[0]] = true
	}
	if n := uint64(len(report.Counts)); n+report.Missed != 20000 || report.Missed == 0 {
		t.Errorf("%d keys counted and %d missed, want 20000 in all, some missed", n, report.Missed)
	}
	t.Logf("%d keys counted, %d missed", len(report.Counts), report.Missed)
}
