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

	"github.com/bpfkit/bpfkit/internal/testutil"
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
	loop, minor := testutil.LoopDevice(b)
	sdt := sdtBinary(b)
	sdtRunning := startSDTBinary(b, sdt)
	firings := func(testing.TB) { // i from 0 to 199 over and over: 200 keys of argument 1
		for range events / 200 {
			sdtRunning.send("fire 200", "fired 200")
		}
	}
	blockIO := func(tb testing.TB) { testutil.DirectReads(tb, loop, 4096) }
	for _, c := range []struct {
		name     string
		tool     []string // the tool and its arguments
		bpftrace string   // the equivalent one-liner
		workload func(tb testing.TB)
	}{
		{"dropmon", []string{"dropmon", "60"}, `tracepoint:skb:kfree_skb { @[args->location, args->reason] = count(); }`, udpDrops},
		{"tracex1", []string{"tracex1", "-json", "60"}, `tracepoint:net:netif_receive_skb /str(args->name) == "lo"/ { printf("%s %d\n", str(args->name), args->len); }`, loPackets},
		{"tracex3", []string{"tracex3", "-dev", "7:" + strconv.Itoa(minor), "60"},
			`tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
			tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
				@us = hist((nsecs - @start[args->dev, args->sector]) / 1000); delete(@start[args->dev, args->sector]); }`, blockIO},
		{"tracex2", []string{"tracex2", "60"}, `tracepoint:syscalls:sys_enter_write { @ = hist(args->count); }`, writes},
		{"funccount", []string{"funccount", "syscalls:sys_enter_getppid", "60"}, `tracepoint:syscalls:sys_enter_getppid { @[probe] = count(); }`, getppids},
		// arguments 1 and 5: a register, and memory at a register plus an
		// offset (2 and 3 are constants, which cost nothing to read;
		// bpftrace takes no argument past 5 on x86_64)
		{"usdt", []string{"usdt", sdt, "bpfkit:args", "-a", "1,5", "-count", "60"},
			fmt.Sprintf(`usdt:%s:bpfkit:args { @[arg1, arg5] = count(); }`, sdt), firings},
		// bpfkit:str's two sites pass argument 1 in a register and as a
		// constant: it is read through the cookie's description
		{"usdt-sites", []string{"usdt", sdt, "bpfkit:str", "-a", "0,1", "-count", "60"},
			fmt.Sprintf(`usdt:%s:bpfkit:str { @[arg0, arg1] = count(); }`, sdt), firings},
		// this process's system calls, by number: tracex5 counts those it has
		// no handler for (getppid), where bpftrace's one-liner counts all
		{"tracex5", []string{"tracex5", "-json", "-p", strconv.Itoa(os.Getpid()), "60"},
			fmt.Sprintf(`tracepoint:raw_syscalls:sys_enter /pid == %d/ { @[args->id] = count(); }`, os.Getpid()), getppids},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ours, theirs []float64
			for range 5 {
				ours = append(ours, perEvent(b, exec.Command(toolPath(b, c.tool[0]), c.tool[1:]...), c.workload))
				theirs = append(theirs, perEvent(b, exec.Command("bpftrace", "-e", c.bpftrace), c.workload))
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

func udpDrops(tb testing.TB) {
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
	for range events {
		s.WriteTo([]byte("x"), closed)
	}
}

func loPackets(tb testing.TB) {
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
	for range events / 4 {
		s.WriteTo(make([]byte, 100), rcv.LocalAddr())
	}
}

func writes(tb testing.TB) {
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer null.Close()
	buf := make([]byte, 100)
	for range events {
		null.Write(buf)
	}
}

func getppids(testing.TB) {
	for range events {
		syscall.Getppid()
	}
}
