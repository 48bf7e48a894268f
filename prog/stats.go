package prog

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Stats keeps the kernel's run statistics on: while it is open, the
// kernel counts every program's runs, run time and recursion misses
// (Info's RunCount, RunTime and RecursionMisses). They cost every run of
// every program on the machine (MeasureStatsCost says how much), so hold
// them only as long as they are read.
type Stats struct {
	fd     sys.FD
	sysctl bool   // on through kernel.bpf_stats_enabled, which Close sets back to 0
	how    string // what turned them on, for How
}

// statsSysctl turns the statistics on and off on kernels before 5.8,
// which have no BPF_ENABLE_STATS (from 5.1).
const statsSysctl = "/proc/sys/kernel/bpf_stats_enabled"

// EnableStats turns the statistics on until Close. It holds a
// BPF_ENABLE_STATS fd (5.8), which the kernel closes when the process
// ends however it ends. Before 5.8 it sets the sysctl
// kernel.bpf_stats_enabled to 1, unless it is 1 already, and Close sets
// it back to 0: a process killed meanwhile (SIGKILL) leaves it on.
func EnableStats() (*Stats, error) {
	fd, err := sys.EnableStats(&sys.EnableStatsAttr{Type: unix.BPF_STATS_RUN_TIME})
	if errors.Is(err, unix.EINVAL) { // no such command: before 5.8
		return enableStatsSysctl()
	}
	if err != nil {
		return nil, wrap(err, "enable statistics")
	}
	s := &Stats{how: "BPF_ENABLE_STATS"}
	s.fd.Set(fd)
	return s, nil
}

// enableStatsSysctl turns the statistics on through the sysctl, if they
// are not on already.
func enableStatsSysctl() (*Stats, error) {
	b, err := os.ReadFile(statsSysctl)
	if errors.Is(err, os.ErrNotExist) { // 5.0 and before
		return nil, wrap(sys.ErrNotSupported, "enable statistics: no BPF_ENABLE_STATS (5.8) "+
			"and no %s (5.1)", statsSysctl)
	}
	if err != nil {
		return nil, wrap(err, "enable statistics")
	}
	s := &Stats{how: "kernel.bpf_stats_enabled"}
	s.fd.Set(-1)
	if strings.TrimSpace(string(b)) != "0" {
		s.how += ", on already"
		return s, nil
	}
	if err := sys.WriteControl(statsSysctl, "1\n"); err != nil {
		return nil, wrap(err, "enable statistics")
	}
	s.sysctl = true
	return s, nil
}

// How says what turned the statistics on: "BPF_ENABLE_STATS",
// "kernel.bpf_stats_enabled", or "kernel.bpf_stats_enabled, on already"
// (which Close leaves on).
func (s *Stats) How() string { return s.how }

// Close turns the statistics off, unless something else keeps them on:
// another process's BPF_ENABLE_STATS fd, or the sysctl set by another.
// Closing twice is harmless.
func (s *Stats) Close() error {
	if s.sysctl {
		s.sysctl = false
		return wrap(sys.WriteControl(statsSysctl, "0\n"), "disable statistics")
	}
	return wrap(s.fd.Close(), "disable statistics")
}

// StatsCost is what the run statistics cost each run of a program,
// measured on this machine by MeasureStatsCost.
type StatsCost struct {
	// Floor is the run time the statistics count for a run of a program
	// that does nothing: the measuring itself, part of every program's
	// RunTime. RunTime minus Floor per run is a program's own time.
	Floor time.Duration
	// Added is how much longer a run takes with the statistics on than
	// off: what holding them costs every run of every program. It is
	// zero when they were on already, held by another process, so that
	// there was nothing to compare with.
	Added time.Duration
}

// The runs of MeasureStatsCost: costRounds rounds, each costRuns test
// runs with the statistics off and as many on, the median of each kept;
// about 50 ms in all.
const (
	costRounds = 9
	costRuns   = 20000
)

// MeasureStatsCost measures what the run statistics cost, with a socket
// filter that does nothing, test-run with the statistics off and on in
// turn: the kernel's time per run each way, and what the statistics
// counted of it. It turns the statistics on and off itself, so call it
// before EnableStats; a run where they were on anyway (another process
// holds them) is not compared.
func MeasureStatsCost() (StatsCost, error) {
	p, err := Load(Spec{Type: SocketFilter, Name: "stats_cost", License: "GPL", Insns: retZero})
	if err != nil {
		return StatsCost{}, wrap(err, "measure the statistics' cost")
	}
	defer p.Close()
	var floors, added []time.Duration
	for range costRounds {
		floor, extra, err := p.costRound()
		if err != nil {
			return StatsCost{}, wrap(err, "measure the statistics' cost")
		}
		floors = append(floors, floor)
		if extra != nil {
			added = append(added, *extra)
		}
	}
	return StatsCost{Floor: median(floors), Added: median(added)}, nil
}

// costRound test-runs p costRuns times with the statistics off, then as
// many times on. It returns the run time they counted per run (floor), and
// how much longer a run took with them on (added). added is nil if the
// statistics were on already, as the run count growing in the first runs
// says.
func (p *Program) costRound() (floor time.Duration, added *time.Duration, err error) {
	data := make([]byte, 64) // a packet of 14 bytes or more
	start, err := p.runStats()
	if err != nil {
		return 0, nil, err
	}
	off, err := p.TestRun(RunOptions{Data: data, Repeat: costRuns})
	if err != nil {
		return 0, nil, err
	}
	mid, err := p.runStats()
	if err != nil {
		return 0, nil, err
	}
	s, err := EnableStats()
	if err != nil {
		return 0, nil, err
	}
	defer s.Close()
	on, err := p.TestRun(RunOptions{Data: data, Repeat: costRuns})
	if err != nil {
		return 0, nil, err
	}
	end, err := p.runStats()
	if err != nil {
		return 0, nil, err
	}
	if end.RunCnt == mid.RunCnt {
		return 0, nil, errors.New("statistics on, but the test runs were not counted")
	}
	floor = time.Duration((end.RunTimeNs - mid.RunTimeNs) / (end.RunCnt - mid.RunCnt))
	if mid.RunCnt == start.RunCnt { // off indeed
		d := on.Duration - off.Duration
		added = &d
	}
	return floor, added, nil
}

// runStats is the kernel's info of p, for its run statistics.
func (p *Program) runStats() (sys.ProgInfo, error) {
	var si sys.ProgInfo
	return si, sys.InfoByFD(p.fd.Int(), &si)
}

// median is the middle of ds, 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
