package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/prog"
)

// BenchmarkTopCost measures what BPF run statistics cost, as bpfkit top
// measures it before turning them on (prog.MeasureStatsCost: the run
// time they count for a program that does nothing, and how much longer
// every run takes with them on; medians of 5 measurements), and what
// bpfkit top itself costs while it runs: its CPU time and its resident
// memory over 20 one-second intervals, with 200 programs of the
// benchmark's own loaded beside the machine's.
func BenchmarkTopCost(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	b.Run("statistics", func(b *testing.B) {
		// What statistics add can be measured only while no other process
		// holds them on (another benchmark may, for minutes): measurements
		// are taken until 5 could compare, for up to two minutes.
		var floors, added []float64
		for deadline := time.Now().Add(2 * time.Minute); len(added) < 5; {
			c, err := prog.MeasureStatsCost()
			if err != nil {
				b.Fatal(err)
			}
			floors = append(floors, float64(c.Floor))
			if c.Added > 0 {
				added = append(added, float64(c.Added))
			}
			if time.Now().After(deadline) {
				b.Fatalf("statistics held on by another process for two minutes: "+
					"what they add could not be measured (%d of 5)", len(added))
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.ReportMetric(median(floors), "floor-ns/run")
		b.ReportMetric(median(added), "added-ns/run")
	})
	b.Run("top", func(b *testing.B) {
		for range 200 {
			p, err := prog.Load(prog.Spec{
				Type:    prog.SocketFilter,
				Name:    "bk_top_bench",
				License: "GPL",
				Insns:   retZeroInsns,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
		}
		top := exec.Command(toolPath(b, "bpfkit"), "top", "-d", "1")
		out, err := top.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := top.Start(); err != nil {
			b.Fatal(err)
		}
		defer top.Wait()
		defer top.Process.Kill()
		frames := bufio.NewScanner(out)
		programs := nextFrame(b, frames) // the first: calibration and the baseline are done
		cpu0, start := cpuTicks(b, top.Process.Pid), time.Now()
		const intervals = 20
		for range intervals {
			programs = nextFrame(b, frames)
		}
		cpu := float64(cpuTicks(b, top.Process.Pid)-cpu0) / clockTicks
		elapsed := time.Since(start).Seconds()
		b.ReportMetric(100*cpu/elapsed, "cpu-%")
		b.ReportMetric(1000*cpu/intervals, "cpu-ms/interval")
		b.ReportMetric(float64(statusKiB(b, top.Process.Pid, "VmHWM")), "peak-rss-KiB")
		b.ReportMetric(float64(programs), "programs")
	})
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux port.
const clockTicks = 100

// nextFrame reads top's text output up to the end of a frame (its blank
// line) and returns how many programs the frame's header counted.
func nextFrame(b *testing.B, frames *bufio.Scanner) int {
	b.Helper()
	programs := -1
	for frames.Scan() {
		line := frames.Text()
		if rest, ok := strings.CutPrefix(line, "bpfkit top - "); ok {
			fields := strings.Split(rest, " - ")
			fmt.Sscanf(fields[2], "%d programs", &programs)
		}
		if line == "" && programs >= 0 {
			return programs
		}
	}
	b.Fatalf("bpfkit top ended: %v", frames.Err())
	return 0
}

// cpuTicks is the user and system CPU time of process pid, in clock
// ticks: fields 14 and 15 of /proc/PID/stat, counted after the command
// name (which may hold spaces) ends with ')'.
func cpuTicks(b *testing.B, pid int) int {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return utime + stime
}

// statusKiB reads a "Name: N kB" line of /proc/PID/status.
func statusKiB(b *testing.B, pid int, name string) int {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kib
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, name)
	return 0
}
