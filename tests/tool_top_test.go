package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
)

// bpfkit top is tested as its users run it, on a machine where other
// tests load programs too: each test looks only at the programs it loads
// (those its own tools hold), and drives them with workloads only it
// runs (USDT probes of a process it started, probed for that pid).

// topRow is an object of bpfkit top -json.
type topRow struct {
	Time           string    `json:"time"`
	Interval       float64   `json:"interval_s"`
	ID             uint32    `json:"id"`
	Type           string    `json:"type"`
	Name           string    `json:"name"`
	Tag            string    `json:"tag"`
	Attached       []string  `json:"attached"`
	Pids           []topProc `json:"pids"`
	RunCnt         uint64    `json:"run_cnt"`
	RunTimeNs      uint64    `json:"run_time_ns"`
	Misses         uint64    `json:"misses"`
	Events         uint64    `json:"events"`
	EventsPerSec   float64   `json:"events_per_sec"`
	AvgNs          float64   `json:"avg_ns"`
	AvgGrossNs     float64   `json:"avg_gross_ns"`
	CPUPercent     float64   `json:"cpu_percent"`
	MachinePercent float64   `json:"machine_percent"`
}

// topProc is a process holding a program, in top's -json.
type topProc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// heldBy says whether process pid holds the row's program.
func (r topRow) heldBy(pid int) bool {
	for _, p := range r.Pids {
		if p.PID == pid {
			return true
		}
	}
	return false
}

// end is when the row's interval ended.
func (r topRow) end(t *testing.T) time.Time {
	at, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		t.Fatalf("time %q: %v", r.Time, err)
	}
	return at
}

// topRows decodes top's -json output, keeping the rows of programs pid
// holds (every row for 0).
func topRows(t *testing.T, out string, pid int) []topRow {
	t.Helper()
	var rows []topRow
	for line := range strings.SplitSeq(out, "\n") {
		var r topRow
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bpfkit top -json: line %q: %v", line, err)
		}
		if pid == 0 || r.heldBy(pid) {
			rows = append(rows, r)
		}
	}
	return rows
}

// eventsOf sums the events of rows.
func eventsOf(rows []topRow) uint64 {
	n := uint64(0)
	for _, r := range rows {
		n += r.Events
	}
	return n
}

// statsEnabled reads kernel.bpf_stats_enabled.
func statsEnabled(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// burst is a workload's burst of probe firings, and when it was fired:
// after from (the command sent) and before to (its answer read). In a VM
// under emulation a burst of 200 takes milliseconds.
type burst struct {
	from, to time.Time
	firing   uint64
}

// TestTopWorkloads: two tools run (usdt counting one process's
// bpfkit:args, usdt printing another's), each driven by a
// known workload, while bpfkit top -json samples every half second. For
// each tool's programs, top's runs in each interval are those of the
// bursts fired in it, its events a second those over the interval's
// length, its totals the workload's, and its run_cnt the kernel's; it
// names the processes holding them and the uprobes they run on; the
// statistics are left as they were.
func TestTopWorkloads(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	a, b := startSDTBinary(t, path), startSDTBinary(t, path)
	counter := startTool(t, "usdt", "-count", "-p", strconv.Itoa(a.pid), path, "bpfkit:args")
	counter.waitFor("Ctrl-C to stop")
	printer := startTool(t, "usdt", "-json", "-p", strconv.Itoa(b.pid), path, "bpfkit:args",
		"-a", "0")
	printer.waitErr("Ctrl-C to stop")
	before := statsEnabled(t)
	top := startTool(t, "bpfkit", "top", "-json", "-d", "0.5", "-comm", "usdt,bpfkit_none")
	waitRows(t, top, counter.cmd.Process.Pid, 1)

	// a: 25 bursts of 200, 80 ms apart, 2 s in all; b: one of 600.
	var bursts []burst
	for range 25 {
		from := time.Now()
		a.send("fire 200", "fired 200")
		bursts = append(bursts, burst{from, time.Now(), 200})
		time.Sleep(80 * time.Millisecond)
	}
	b.send("fire 600", "fired 600")
	waitEvents(t, top, counter.cmd.Process.Pid, 5000)
	waitEvents(t, top, printer.cmd.Process.Pid, 600)
	out := top.stop()
	if after := statsEnabled(t); after != before {
		t.Errorf("kernel.bpf_stats_enabled was %s before top, %s after", before, after)
	}

	for _, r := range topRows(t, out, 0) { // every row -comm kept
		if !slices.ContainsFunc(r.Pids, func(p topProc) bool { return p.Comm == "usdt" }) {
			t.Errorf("-comm usdt,bpfkit_none kept program %d of %+v", r.ID, r.Pids)
		}
	}
	counted := topRows(t, out, counter.cmd.Process.Pid)
	checkIntervals(t, counted, bursts)
	for _, c := range []struct {
		tool *running
		rows []topRow
		runs uint64
	}{{counter, counted, 5000}, {printer, topRows(t, out, printer.cmd.Process.Pid), 600}} {
		if got := eventsOf(c.rows); got != c.runs {
			t.Errorf("top counted %d runs of the programs of %v, the workload made %d",
				got, c.tool.cmd.Args, c.runs)
		}
		checkRunCounts(t, c.rows, c.runs)
		checkUsers(t, c.rows, c.tool.cmd.Process.Pid, path)
	}
}

// waitRows waits until top has printed n intervals' rows of programs pid
// holds.
func waitRows(t *testing.T, top *running, pid, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		seen := map[string]bool{}
		for _, r := range topRows(t, completeLines(top.out.String()), pid) {
			seen[r.Time] = true
		}
		if len(seen) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("top printed no rows of pid %d's programs in a minute:\n%s%s",
				pid, top.out.String(), top.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitEvents waits until top has counted runs runs of the programs pid
// holds.
func waitEvents(t *testing.T, top *running, pid int, runs uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for eventsOf(topRows(t, completeLines(top.out.String()), pid)) < runs {
		if time.Now().After(deadline) {
			t.Fatalf("top did not count %d runs of pid %d's programs in 30 s:\n%s",
				runs, pid, top.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// completeLines is out up to its last newline.
func completeLines(out string) string {
	return out[:strings.LastIndexByte(out, '\n')+1]
}

// checkIntervals checks each interval's rows against the bursts fired
// in it: its runs are at least those of the bursts surely inside it and
// at most those of the bursts that may be (some of whose time is within
// a margin of it, where top's clock and its reading of the statistics
// are apart by the time the reading takes); its events a second are its
// runs over its length.
func checkIntervals(t *testing.T, rows []topRow, bursts []burst) {
	t.Helper()
	const margin = 50 * time.Millisecond
	for _, r := range rows {
		end := r.end(t)
		start := end.Add(-time.Duration(r.Interval * float64(time.Second)))
		var surely, maybe uint64
		for _, b := range bursts {
			if b.from.After(start.Add(margin)) && b.to.Before(end.Add(-margin)) {
				surely += b.firing
			}
			if b.to.After(start.Add(-margin)) && b.from.Before(end.Add(margin)) {
				maybe += b.firing
			}
		}
		if r.Events < surely || r.Events > maybe {
			t.Errorf("interval %v to %v: %d runs, the workload fired %d to %d in it",
				start.Format("15:04:05.000"), end.Format("15:04:05.000"), r.Events, surely, maybe)
		}
		if rate := float64(r.Events) / r.Interval; math.Abs(r.EventsPerSec-rate) > 1e-6*rate {
			t.Errorf("interval ending %s: %v events a second for %d runs in %v s",
				r.Time, r.EventsPerSec, r.Events, r.Interval)
		}
	}
}

// checkRunCounts checks that the run counts of the last rows of each
// program add up to runs, and that the kernel's run_cnt says the same
// now; that each interval's time per run is its gross time less the
// same floor.
func checkRunCounts(t *testing.T, rows []topRow, runs uint64) {
	t.Helper()
	last := map[uint32]topRow{}
	floors := map[float64]bool{}
	for _, r := range rows {
		last[r.ID] = r
		if r.Events > 0 && r.AvgNs > 0 {
			floors[math.Round(r.AvgGrossNs-r.AvgNs)] = true
		}
	}
	if len(floors) > 1 {
		t.Errorf("time per run less than the kernel's by different floors: %v", floors)
	}
	var topTotal, kernelTotal uint64
	for id, r := range last {
		topTotal += r.RunCnt
		info, err := prog.StatsByID(id)
		if err != nil {
			t.Fatal(err)
		}
		kernelTotal += info.RunCount
	}
	if topTotal != runs || kernelTotal != runs {
		t.Errorf("run_cnt: top's last %d, the kernel's %d, the workload's %d",
			topTotal, kernelTotal, runs)
	}
}

// checkUsers checks that the rows name pid (a usdt) as holding each
// program, and a uprobe on path as what it runs on.
func checkUsers(t *testing.T, rows []topRow, pid int, path string) {
	t.Helper()
	for _, r := range rows {
		comm := ""
		for _, p := range r.Pids {
			if p.PID == pid {
				comm = p.Comm
			}
		}
		uprobe := slices.ContainsFunc(r.Attached, func(a string) bool {
			return onUprobe(a, path)
		})
		if comm != "usdt" || !uprobe || r.Type != "kprobe" || r.Name == "" || len(r.Tag) != 16 {
			t.Errorf("program %d: %+v, want usdt(%d) holding it and a uprobe on %s",
				r.ID, r, pid, path)
			return
		}
	}
}

// onUprobe says whether attached, as top describes what a program is
// attached to, is a uprobe on path, through a perf link or uprobe_multi's
// (which the usdt tool takes where the kernel has it).
func onUprobe(attached, path string) bool {
	return strings.HasPrefix(attached, "uprobe "+path+"+0x") ||
		strings.HasPrefix(attached, "uprobe_multi "+path+"+0x")
}

// tmux is a terminal of its own, run by tmux on a socket of the test's
// (Debian's tmux package, which make deps installs): what a user sees,
// as tmux renders it.
type tmux struct {
	t      *testing.T
	socket string
}

// newTmux starts a tmux server with one window of cols×lines running
// command, its exit status printed when it ends; it is killed when the
// test ends. The VMs have no tmux: there the test is skipped.
func newTmux(t *testing.T, cols, lines int, command string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if vm := os.Getenv("BPFKIT_VM"); vm != "" {
			t.Skipf("the VM (%s) has no tmux: the host runs this test", vm)
		}
		t.Fatal("no tmux on PATH: make deps installs Debian's tmux package")
	}
	m := &tmux{t: t, socket: fmt.Sprintf("bpfkit-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	m.run("new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(lines),
		command+"; echo status=$?; sleep 600")
	t.Cleanup(func() { exec.Command("tmux", "-L", m.socket, "kill-server").Run() })
	return m
}

// run runs a tmux command on the test's server.
func (m *tmux) run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", m.socket}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the window shows now, line by line.
func (m *tmux) screen() []string {
	return strings.Split(strings.TrimSuffix(m.run("capture-pane", "-p"), "\n"), "\n")
}

// await captures the window until ok accepts it, failing the test after
// 30 s.
func (m *tmux) await(what string, ok func(lines []string) bool) []string {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := m.screen()
		if ok(lines) {
			return lines
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the screen did not show %s in 30 s:\n%s", what, strings.Join(lines, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasLine says whether a line of lines holds every one of parts, in order.
func hasLine(lines []string, parts ...string) bool {
	return slices.ContainsFunc(lines, func(line string) bool {
		for _, p := range parts {
			i := strings.Index(line, p)
			if i < 0 {
				return false
			}
			line = line[i+len(p):]
		}
		return true
	})
}

// TestTopScreen: on a terminal of 80×24, top draws its header, the
// table's header and a row for a program a usdt holds, with its
// sparkline, in 24 lines of at most 80 columns, whatever the other
// programs of the machine; on one of 200×50 the machine's share, the
// recursion misses and what the program is attached to too. A terminal
// made wider redraws at once; Ctrl-C leaves the last frame on the
// screen and exits 0.
func TestTopScreen(t *testing.T) {
	testutil.RequireRoot(t)
	path := sdtBinary(t)
	a := startSDTBinary(t, path)
	counter := startTool(t, "usdt", "-count", "-p", strconv.Itoa(a.pid), path, "bpfkit:args")
	counter.waitFor("Ctrl-C to stop")
	pid := strconv.Itoa(counter.cmd.Process.Pid)
	go func() { // keep the program busy
		for range 40 {
			fmt.Fprintln(a.in, "fire 100")
			time.Sleep(100 * time.Millisecond)
		}
	}()
	top := toolPath(t, "bpfkit") + " top -d 0.5"
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		cols, lines := size[0], size[1]
		all := newTmux(t, cols, lines, top) // every program of the machine
		ours := newTmux(t, cols, lines, top+" -p "+pid)
		row := []string{"usdt", "usdt(" + pid + ")"}
		screen := ours.await("the usdt's program with its sparkline", func(l []string) bool {
			sparkline := strings.ContainsAny(strings.Join(l, ""), "▁▂▃▄▅▆▇█")
			attached := cols <= 80 || slices.ContainsFunc(l, func(line string) bool {
				_, after, _ := strings.Cut(line, "usdt("+pid+")")
				return onUprobe(strings.TrimSpace(after), path)
			})
			return hasLine(l, row...) && sparkline && attached
		})
		header := []string{"ID", "TYPE", "NAME", "EVENTS/s", "AVG", "%CPU", "HISTORY", "PROCESS"}
		if cols > 80 {
			header = []string{"ID", "TYPE", "NAME", "EVENTS/s", "AVG", "%CPU", "%MACH", "MISSES",
				"HISTORY", "PROCESS", "ATTACHED"}
		}
		if !strings.HasPrefix(screen[0], "bpfkit top - ") || !hasLine(screen, "1 shown") ||
			!hasLine(screen, "statistics") || !hasLine(screen, header...) {
			t.Errorf("%dx%d:\n%s", cols, lines, strings.Join(screen, "\n"))
		}
		crowded := all.await("a frame", func(l []string) bool { return hasLine(l, "PROCESS") })
		checkFits(t, crowded, cols, lines)
		checkFits(t, screen, cols, lines)
	}
	narrow := newTmux(t, 80, 24, top+" -d 5 -p "+pid)
	narrow.await("a frame", func(l []string) bool { return hasLine(l, "usdt(") })
	narrow.run("resize-window", "-x", "160")
	narrow.await("the wider table before the next interval", func(l []string) bool {
		return hasLine(l, "MISSES")
	})
	narrow.run("send-keys", "C-c")
	narrow.await("the last frame and status 0", func(l []string) bool {
		return hasLine(l, "usdt(") && hasLine(l, "status=0")
	})
}

// checkFits checks that a screen has at most lines lines of at most cols
// columns.
func checkFits(t *testing.T, screen []string, cols, lines int) {
	t.Helper()
	if len(screen) > lines {
		t.Errorf("%d lines on a screen of %d", len(screen), lines)
	}
	for _, l := range screen {
		if n := len([]rune(l)); n > cols {
			t.Errorf("a line of %d columns on a screen of %d: %q", n, cols, l)
		}
	}
}

// TestTopEmpty: with no program to show (none matches -name, or none is
// loaded at all, as in a VM just booted), top prints its header and an
// empty table, or no JSON at all, and exits 0.
func TestTopEmpty(t *testing.T) {
	testutil.RequireRoot(t)
	args := [][]string{{"-name", "bpfkit_test_no_such_*"}}
	if id, err := prog.NextID(0); err == nil && id == 0 {
		args = append(args, nil) // nothing loaded: no filter needed
	}
	for _, a := range args {
		once := append([]string{"top", "-once", "-d", "0.2"}, a...)
		out, errOut, status := runTool(t, "bpfkit", once...)
		lines := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n")
		tableHeaderLast := strings.HasPrefix(lines[len(lines)-1], "    ID")
		if status != 0 || !strings.Contains(lines[0], ", 0 shown") ||
			!hasLine(lines, "ID", "TYPE", "NAME") || !tableHeaderLast {
			t.Errorf("top -once %q: exit %d:\n%s%s", a, status, out, errOut)
		}
		out, errOut, status = runTool(t, "bpfkit", append(once, "-json")...)
		if status != 0 || out != "" {
			t.Errorf("top -once -json %q: exit %d:\n%s%s", a, status, out, errOut)
		}
	}
}

// TestTopProgramGone: a program shown in one interval and unloaded
// before the next is gone from the next, while programs are loaded and
// unloaded all the time (some between top's walk of the ids and its
// reading of each); top carries on and exits 0.
func TestTopProgramGone(t *testing.T) {
	testutil.RequireRoot(t)
	load := func(name string) *prog.Program {
		p, err := prog.Load(prog.Spec{
			Type:    prog.SocketFilter,
			Name:    name,
			License: "GPL",
			Insns:   retZeroInsns,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	goes, stays := load("bk_top_goes"), load("bk_top_stays")
	defer stays.Close()
	defer goes.Close()
	done := make(chan struct{})
	churned := make(chan int)
	go func() { // load and unload programs until the test is done
		n := 0
		for ; ; n++ {
			select {
			case <-done:
				churned <- n
				return
			default:
			}
			load("bk_top_churn").Close()
		}
	}()
	top := startTool(t, "bpfkit", "top", "-json", "-d", "0.2", "-p", strconv.Itoa(os.Getpid()))
	ids := func() map[string][]string { // each interval's names of programs
		names := map[string][]string{}
		for _, r := range topRows(t, completeLines(top.out.String()), os.Getpid()) {
			names[r.Time] = append(names[r.Time], r.Name)
		}
		return names
	}
	deadline := time.Now().Add(30 * time.Second)
	shown := func(names []string) bool { return slices.Contains(names, "bk_top_goes") }
	for !slices.ContainsFunc(slices.Collect(maps.Values(ids())), shown) {
		if time.Now().After(deadline) {
			t.Fatalf("top did not show bk_top_goes in 30 s:\n%s%s",
				top.out.String(), top.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	goes.Close()
	closed := time.Now()
	time.Sleep(time.Second) // five intervals
	out := top.stop()
	close(done)
	t.Logf("%d programs loaded and unloaded meanwhile", <-churned)
	after := 0
	for _, r := range topRows(t, out, os.Getpid()) {
		if r.end(t).After(closed.Add(300 * time.Millisecond)) { // an interval begun after the close
			after++
			if r.Name == "bk_top_goes" {
				t.Errorf("bk_top_goes, unloaded at %v, in the interval ending %s", closed, r.Time)
			}
		}
	}
	if after == 0 {
		t.Errorf("no interval after bk_top_goes was unloaded shows bk_top_stays:\n%s", out)
	}
}

// retZeroInsns is a program that returns 0.
var retZeroInsns = []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}

// TestTopStats: while top runs it holds a BPF_ENABLE_STATS fd; on
// SIGTERM it exits 0 and leaves kernel.bpf_stats_enabled as it was; and
// where no other process holds statistics on, runs are no longer
// counted.
func TestTopStats(t *testing.T) {
	testutil.RequireRoot(t)
	before := statsEnabled(t)
	top := startTool(t, "bpfkit", "top", "-d", "0.2")
	top.waitFor("bpfkit top - ")
	if holders := statsHolders(t); !slices.Contains(holders, top.cmd.Process.Pid) {
		t.Errorf("top runs, but the processes holding a BPF_ENABLE_STATS fd are %v", holders)
	}
	top.cmd.Process.Signal(syscall.SIGTERM)
	top.wait()
	if after := statsEnabled(t); after != before {
		t.Errorf("kernel.bpf_stats_enabled was %s before top, %s after", before, after)
	}
	if holders := statsHolders(t); len(holders) > 0 || before != "0" {
		t.Logf("statistics held on by processes %v or the sysctl (%s): "+
			"not checking they are off", holders, before)
		return
	}
	p, err := prog.Load(prog.Spec{
		Type:    prog.SocketFilter,
		Name:    "bk_top_off",
		License: "GPL",
		Insns:   retZeroInsns,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64), Repeat: 3}); err != nil {
		t.Fatal(err)
	}
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	if holders := statsHolders(t); info.RunCount != 0 && len(holders) == 0 {
		t.Errorf("top has exited and no process holds statistics on, but 3 test runs counted %d",
			info.RunCount)
	}
}

// statsHolders is the processes that hold a BPF_ENABLE_STATS fd.
func statsHolders(t *testing.T) []int {
	t.Helper()
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if target == "anon_inode:bpf-stats" {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// TestTopPrometheus: top -listen serves what promtool accepts, and a
// Prometheus scraping it finds the run count of a usdt's program after
// a workload of 1000 firings, and the statistics' floor.
func TestTopPrometheus(t *testing.T) {
	testutil.RequireRoot(t)
	requirePrometheus(t)
	path := sdtBinary(t)
	a := startSDTBinary(t, path)
	counter := startTool(t, "usdt", "-count", "-p", strconv.Itoa(a.pid), path, "bpfkit:args")
	counter.waitFor("Ctrl-C to stop")
	top := startTool(t, "bpfkit", "top", "-d", "0.5", "-listen", "127.0.0.1:0",
		"-p", strconv.Itoa(counter.cmd.Process.Pid))
	addr := top.metricsAddr()
	top.waitFor("usdt(")
	checkMetrics(t, addr)
	p := scrapedByPrometheus(t, addr)
	a.send("fire 1000", "fired 1000")
	p.await(`sum(bpfkit_prog_runs_total{name="usdt"})`, func(s []promSample) bool {
		return len(s) == 1 && s[0].Value == 1000
	})
	if floor := p.sum("bpfkit_stats_floor_seconds"); floor <= 0 || floor > 1e-5 {
		t.Errorf("bpfkit_stats_floor_seconds %v", floor)
	}
	process := "usdt(" + strconv.Itoa(counter.cmd.Process.Pid) + ")"
	info := p.query(`bpfkit_prog_info{process="` + process + `"}`)
	if len(info) != 1 || !onUprobe(info[0].Labels["attached"], path) {
		t.Errorf("bpfkit_prog_info of the usdt's program: %+v", info)
	}
	top.stop()
}

// TestTopUsage: bad flags are one line and status 2, before anything is
// loaded.
func TestTopUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-o", "bogus"}, {"-type", "bogus"}, {"-name", "["},
		{"-d", "0"}, {"-d", "x"}, {"-n", "-1"}, {"-d", "1", "2"}, {"-n", "3", "1", "4"},
		{"-p", "0"}, {"-listen", "nohost:x"}, {"1", "2", "3"},
	} {
		_, errOut, status := runTool(t, "bpfkit", append([]string{"top"}, args...)...)
		oneLine := strings.Count(errOut, "\n") == 1 && strings.HasPrefix(errOut, "bpfkit top: ")
		if status != 2 || !oneLine {
			t.Errorf("bpfkit top %q: exit %d, %q; want 2 and one line", args, status, errOut)
		}
	}
}
