package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startCase is one command BenchmarkToolStart runs: a tool of cmd/ with
// its arguments, or the reference beside it, and what it watches.
type startCase struct {
	name     string
	tool     []string // cmd/'s tool and its arguments
	ref      []string // the same work by bpftrace (or bpftool), if any
	workload func(testing.TB)
}

// BenchmarkToolStart runs every tool of cmd/ as an operator would, beside
// bpftrace doing the same (bpftool for the inspector), alternating, three
// rounds each: the time from exec to its first line of output (stdout or
// stderr), and its peak resident set size over a run that makes a small
// workload, prints one interval's report and ends on SIGINT (ru_maxrss,
// what /usr/bin/time -f %M prints). The figures are the medians.
func BenchmarkToolStart(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	loop, minor := loopDevice(b)
	sdt := sdtBinary(b)
	sdtRunning := startSDTBinary(b, sdt)
	dev := "7:" + strconv.Itoa(minor)
	bt := func(prog string) []string { return []string{"bpftrace", "-e", prog} }
	cases := []startCase{
		{"dropmon", []string{"dropmon", "1"},
			bt(`tracepoint:skb:kfree_skb { @[args->location, args->reason] = count(); } interval:s:1 { print(@); }`), udpDrops(1000)},
		{"dropmon-stacks", []string{"dropmon", "-stacks", "1"},
			bt(`tracepoint:skb:kfree_skb { @[kstack, args->reason] = count(); } interval:s:1 { print(@); }`), udpDrops(1000)},
		{"dropmon-events", []string{"dropmon", "-events"},
			bt(`tracepoint:skb:kfree_skb { printf("%d %s %d %s\n", pid, comm, args->protocol, ksym(args->location)); }`), udpDrops(1000)},
		{"tracex1", []string{"tracex1", "1"},
			bt(`tracepoint:net:netif_receive_skb /str(args->name) == "lo"/ { printf("%s %d\n", str(args->name), args->len); }`), loPackets(1000)},
		{"tracex2", []string{"tracex2", "1"},
			bt(`tracepoint:skb:kfree_skb { @freed[ksym(args->location)] = count(); }
			tracepoint:syscalls:sys_enter_write { @bytes = hist(args->count); } interval:s:1 { print(@freed); print(@bytes); }`),
			func(tb testing.TB) { writes(1000)(tb); udpDrops(1000)(tb) }},
		{"tracex3", []string{"tracex3", "-dev", dev, "1"},
			bt(`tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
			tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
				@us = hist((nsecs - @start[args->dev, args->sector]) / 1000); delete(@start[args->dev, args->sector]); }
			interval:s:1 { print(@us); }`),
			func(tb testing.TB) { directReads(tb, loop, 100) }},
		{"tracex4", []string{"tracex4", "1"},
			bt(`kprobe:vfs_write { @asked = hist(arg2); } kretprobe:vfs_write { @written = hist(retval); } interval:s:1 { print(@asked); }`),
			writes(1000)},
		{"tracex5", []string{"tracex5", "1"},
			bt(`tracepoint:syscalls:sys_enter_write { printf("write %d\n", args->count); }`), writes(100)},
		{"funccount", []string{"funccount", "syscalls:sys_enter_getppid", "1"},
			bt(`tracepoint:syscalls:sys_enter_getppid { @[probe] = count(); } interval:s:1 { print(@); }`), getppids(1000)},
		{"usdt", []string{"usdt", sdt, "bpfkit:args", "-a", "1,5", "-count", "1"},
			bt(fmt.Sprintf(`usdt:%s:bpfkit:args { @[arg1, arg5] = count(); } interval:s:1 { print(@); }`, sdt)),
			sdtFirings(sdtRunning, 1000)},
		{"bpfkit", []string{"bpfkit", "features"}, []string{"bpftool", "feature", "probe", "kernel"}, nil},
		{"example", []string{"example"}, nil, nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var first, rss, refFirst, refRSS []float64
			for range 3 {
				tool := append([]string{toolPath(b, c.tool[0])}, c.tool[1:]...)
				ms, mb, err := startRun(b, tool, c.workload)
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
				if ms, mb, err := startRun(b, c.ref, c.workload); err == nil {
					refFirst, refRSS = append(refFirst, ms), append(refRSS, mb)
				}
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

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
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
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	lines := make(chan struct{}, 2)
	tails := make(chan string, 2)
	read := func(r io.Reader) {
		s := bufio.NewScanner(r)
		last := ""
		for n := 0; s.Scan(); n++ {
			if n == 0 {
				lines <- struct{}{}
			}
			last = s.Text()
		}
		tails <- last
	}
	// The run before may have detached the last program of a tracepoint
	// this one attaches to: the kernel's attach then waits for an RCU
	// grace period (tracepoint_add_func's 1->0->1 transition), some 10 ms
	// no operator starting a tool sees. Let one pass first.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	go read(stdout)
	go read(stderr)
	var tail []string
	select {
	case <-lines:
		ms = float64(time.Since(start).Microseconds()) / 1000
	case t := <-tails: // one stream ended without a line: the other holds it, or none does
		tail = append(tail, t)
		select {
		case <-lines:
			ms = float64(time.Since(start).Microseconds()) / 1000
		case t := <-tails:
			tail = append(tail, t)
		}
	}
	if workload != nil {
		workload(b)
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	}
	for len(tail) < 2 {
		tail = append(tail, <-tails)
	}
	if err := cmd.Wait(); err != nil {
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
