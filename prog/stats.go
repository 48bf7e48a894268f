package prog

import (
	"errors"
	"os"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Stats keeps the kernel's run statistics on: while it is open, the
// kernel counts every program's runs, run time and recursion misses
// (Info's RunCount, RunTime and RecursionMisses). They cost every run of
// every program on the machine, so hold them only as long as they are
// read.
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
