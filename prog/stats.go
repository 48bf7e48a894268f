package prog

import (
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Stats keeps the kernel's run statistics on: while it is open, the
// kernel counts every program's runs, run time and recursion misses
// (Info's RunCount, RunTime and RecursionMisses).
type Stats struct{ fd sys.FD }

// EnableStats turns the statistics on until Close (BPF_ENABLE_STATS, 5.8).
func EnableStats() (*Stats, error) {
	fd, err := sys.EnableStats(&sys.EnableStatsAttr{Type: unix.BPF_STATS_RUN_TIME})
	if err != nil {
		return nil, wrap(err, "enable statistics")
	}
	s := &Stats{}
	s.fd.Set(fd)
	return s, nil
}

// Close turns the statistics off, unless something else keeps them on.
func (s *Stats) Close() error { return wrap(s.fd.Close(), "disable statistics") }
