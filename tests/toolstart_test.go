package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// BenchmarkToolStart runs every tool of cmd/ as an operator would, beside
// bpftrace doing the same (bpftool for the inspector), alternating, three
// rounds each: the time from exec to its first line of output (stdout or
// stderr), and its peak resident set size over a run that makes a small
// workload, prints one interval's report and ends on SIGINT (ru_maxrss,
// what /usr/bin/time -f %M prints). The figures are the medians.
func BenchmarkToolStart(b *testing.B) {
	testutil.RequireRoot(b)
	cases := toolCases(b, "1")
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var first, rss, refFirst, refRSS []float64
			for range 3 {
				tool := append([]string{toolPath(b, c.tool[0])}, c.tool[1:]...)
				var workload func(testing.TB)
				if c.workload != nil {
					workload = c.workload(1000)
				}
				ms, mb, err := startRun(b, tool, workload)
				if err != nil {
					b.Skipf("%s: %v", c.tool[0], err)
				}
				first, rss = append(first, ms), append(rss, mb)
				if c.ref == nil {
					continue
				}
				if _, err := exec.LookPath(c.ref[0]); err != nil {
					continue
				}
				ms, mb, err = startRun(b, c.ref, workload)
				if err != nil {
					b.Logf("%s: %v", c.ref[0], err)
					continue
				}
				refFirst, refRSS = append(refFirst, ms), append(refRSS, mb)
			}
			b.ReportMetric(median(first), "first-line-ms")
			b.ReportMetric(median(rss), "peak-RSS-MB")
			if len(refFirst) > 0 {
				b.ReportMetric(median(refFirst), c.ref[0]+"-first-line-ms")
				b.ReportMetric(median(refRSS), c.ref[0]+"-peak-RSS-MB")
			}
		})
	}
}

// startRun runs cmd under /usr/bin/time and returns the milliseconds to
// its first line and its peak RSS in MB: once the line is out it makes the
// workload, waits for an interval's report (1.5 s after the start) and
// sends SIGINT to the command (time ignores it); a command that ends by
// itself is waited for. The peak is time's, not the rusage of a child of
// this process: Go starts commands with vfork, and exec records the
// parent's peak as the child's. A command that fails (tracex4 without
// kprobes) returns its error and last line.
func startRun(b *testing.B, args []string, workload func(testing.TB)) (ms, mb float64, err error) {
	rss := b.TempDir() + "/rss"
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rss}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := watchOutput(cmd)
	// The run before may have detached the last program of a tracepoint
	// this one attaches to: the kernel's attach then waits for an RCU
	// grace period (tracepoint_add_func's 1->0->1 transition), some 10 ms
	// no operator starting a tool sees. Let one pass first.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	out.start()
	if out.firstLine() {
		ms = float64(time.Since(start).Microseconds()) / 1000
	}
	if workload != nil {
		workload(b)
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		stop(cmd.Process.Pid, out)
	}
	tail := out.lastLines()
	// 130: killed by the SIGINT before it set its handler (bpftrace says
	// its first line before it attaches), and measured all the same
	if err := cmd.Wait(); err != nil && !(workload != nil && cmd.ProcessState.ExitCode() == 130) {
		return 0, 0, fmt.Errorf("%w: %q", err, tail)
	}
	kb, err := os.ReadFile(rss)
	if err == nil {
		mb, err = strconv.ParseFloat(strings.TrimSpace(string(kb)), 64)
	}
	if ms == 0 {
		err = fmt.Errorf("no line of output")
	}
	return ms, mb / 1024, err
}

// stop sends SIGINT to the process group of pid until its output ends:
// bpftrace loses a SIGINT that comes while it starts (under load it takes
// more than the 1.5 s), and waits for ever.
func stop(pid int, out *output) {
	for {
		syscall.Kill(-pid, syscall.SIGINT)
		select {
		case t := <-out.tails:
			out.tail = append(out.tail, t)
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// output reads a command's stdout and stderr as it runs: when the first
// line comes on either, and the last line of each.
type output struct {
	streams []io.Reader
	lines   chan struct{} // one for each stream's first line
	tails   chan string   // each stream's last line, once it ends
	tail    []string
}

// watchOutput takes cmd's stdout and stderr, before it starts.
func watchOutput(cmd *exec.Cmd) *output {
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	return &output{
		streams: []io.Reader{stdout, stderr},
		lines:   make(chan struct{}, 2),
		tails:   make(chan string, 2),
	}
}

// start reads the streams, once the command has started.
func (o *output) start() {
	for _, r := range o.streams {
		go func() {
			s := bufio.NewScanner(r)
			last := ""
			for n := 0; s.Scan(); n++ {
				if n == 0 {
					o.lines <- struct{}{}
				}
				last = s.Text()
			}
			o.tails <- last
		}()
	}
}

// firstLine waits for the first line on either stream; false if both
// ended without one, or none came in 30 s.
func (o *output) firstLine() bool {
	timeout := time.After(30 * time.Second)
	for len(o.tail) < 2 {
		select {
		case <-o.lines:
			return true
		case t := <-o.tails: // this one ended without a line: the other may have one
			o.tail = append(o.tail, t)
		case <-timeout:
			return false
		}
	}
	return false
}

// lastLines waits for both streams to end and returns their last lines.
func (o *output) lastLines() []string {
	for len(o.tail) < 2 {
		o.tail = append(o.tail, <-o.tails)
	}
	return o.tail
}
