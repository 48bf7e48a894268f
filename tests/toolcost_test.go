package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/prog"
)

// BenchmarkToolCost measures what each tool's programs cost the kernel per
// event, from the kernel's own statistics (BPF_ENABLE_STATS: run time over
// run count of the programs a process holds), beside bpftrace's one-liner
// doing the same work, both under the same workload, alternating, three
// rounds each; the figures are the medians, and x-bpftrace their ratio.
func BenchmarkToolCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		b.Skip("no bpftrace (Debian package bpftrace): nothing to compare with")
	}
	stats, err := prog.EnableStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	for _, c := range toolCases(b, "60") {
		if !c.cost {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			workload := c.workload(events)
			if c.name == "tracex1" { // a packet is two events: lo sends it, lo receives it
				workload = c.workload(events / 4)
			}
			var ours, theirs []float64
			for range 5 {
				tool := exec.Command(toolPath(b, c.tool[0]), c.tool[1:]...)
				ours = append(ours, perEvent(b, tool, workload))
				theirs = append(theirs, perEvent(b, exec.Command(c.ref[0], c.ref[1:]...), workload))
			}
			slices.Sort(ours)
			slices.Sort(theirs)
			b.ReportMetric(ours[len(ours)/2], "ns/event")
			b.ReportMetric(theirs[len(theirs)/2], "bpftrace-ns/event")
			b.ReportMetric(ours[len(ours)/2]/theirs[len(theirs)/2], "x-bpftrace")
		})
	}
}

// perEvent starts cmd, waits until it holds programs, runs the workload and
// returns the run time per run of its programs over the workload.
// sdtFirings fires sdt's bpfkit:args n times (n a multiple of 200), i
// from 0 to 199 over and over: 200 keys of argument 1.
func sdtFirings(r *sdtRun, n int) func(testing.TB) {
	return func(testing.TB) {
		for range n / 200 {
			r.send("fire 200", "fired 200")
		}
	}
}

func perEvent(b *testing.B, cmd *exec.Cmd, workload func(testing.TB)) float64 {
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	var ids []uint32
	for deadline := time.Now().Add(30 * time.Second); len(ids) == 0; ids = progIDs(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			b.Fatalf("%s holds no program after 30 s", cmd.Path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // attached, and what it does at start done
	cnt0, ns0 := runStats(b, progIDs(cmd.Process.Pid))
	workload(b)
	cnt1, ns1 := runStats(b, progIDs(cmd.Process.Pid))
	if cnt1 <= cnt0 {
		b.Fatalf("%s: its programs did not run", cmd.Path)
	}
	return float64(ns1-ns0) / float64(cnt1-cnt0)
}

// progIDs lists the ids of the programs process pid holds, from the
// prog_id lines of /proc/pid/fdinfo.
func progIDs(pid int) []uint32 {
	var ids []uint32
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(fh)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "prog_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil && !slices.Contains(ids, uint32(id)) {
					ids = append(ids, uint32(id))
				}
			}
		}
		fh.Close()
	}
	return ids
}

// runStats sums the run counts and run times of the programs.
func runStats(tb testing.TB, ids []uint32) (cnt, ns uint64) {
	for _, id := range ids {
		p, err := prog.OpenID(id)
		if err != nil {
			continue // gone meanwhile
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			tb.Fatal(err)
		}
		cnt += info.RunCount
		ns += uint64(info.RunTime)
	}
	return cnt, ns
}

const events = 100_000

// The workloads make n events each; BenchmarkToolCost makes events of them.

func udpDrops(n int) func(testing.TB) {
	return func(tb testing.TB) {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		closed := c.LocalAddr()
		c.Close()
		s, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer s.Close()
		for range n {
			s.WriteTo([]byte("x"), closed)
		}
	}
}

// loPackets sends n datagrams of 100 bytes over lo to a socket that reads them.
func loPackets(n int) func(testing.TB) {
	return func(tb testing.TB) {
		rcv, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer rcv.Close()
		go func() {
			buf := make([]byte, 2048)
			for {
				if _, _, err := rcv.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		s, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer s.Close()
		for range n {
			s.WriteTo(make([]byte, 100), rcv.LocalAddr())
		}
	}
}

// writes makes n writes of 100 bytes to /dev/null.
func writes(n int) func(testing.TB) {
	return func(tb testing.TB) {
		null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
		if err != nil {
			tb.Fatal(err)
		}
		defer null.Close()
		buf := make([]byte, 100)
		for range n {
			null.Write(buf)
		}
	}
}

func getppids(n int) func(testing.TB) {
	return func(testing.TB) {
		for range n {
			syscall.Getppid()
		}
	}
}
