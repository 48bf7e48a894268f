package main

import (
	"strconv"
	"sync"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
)

// published is the rows of top's last snapshot, for -listen's scrapes,
// which come from the server's goroutines.
type published struct {
	mu   sync.Mutex
	rows []*row
}

func (p *published) set(rows []*row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows = rows
}

// each calls add for every row of the last snapshot.
func (p *published) each(add func(r *row)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rows {
		add(r)
	}
}

// topMetrics is what -listen serves: the kernel's counters of each
// program the flags keep, as of top's last snapshot (the table's), and
// what the statistics cost. Rates are Prometheus's to compute:
// rate(bpfkit_prog_run_time_seconds_total[1m]) is a program's share of
// a CPU, minus rate(bpfkit_prog_runs_total[1m]) times
// bpfkit_stats_floor_seconds for its own time.
func topMetrics(p *published, cost prog.StatsCost) (*tool.Metrics, error) {
	var m tool.Metrics
	labels := []string{"id", "name", "type"}
	counter := func(name, help string, value func(r *row) float64) error {
		return m.Counter(name, help, labels, func(add tool.AddValue) error {
			p.each(func(r *row) {
				add(value(r), strconv.FormatUint(uint64(r.ID), 10), r.Name, r.Type)
			})
			return nil
		})
	}
	gauge := func(name, help string, value float64) error {
		return m.Gauge(name, help, nil, func(add tool.AddValue) error {
			add(value)
			return nil
		})
	}
	for _, err := range []error{
		counter("bpfkit_prog_runs_total",
			"Runs of the program, counted while BPF statistics were on.",
			func(r *row) float64 { return float64(r.RunCnt) }),
		counter("bpfkit_prog_run_time_seconds_total",
			"Time the program ran, counted while BPF statistics were on, the measuring included.",
			func(r *row) float64 { return float64(r.RunTimeNs) / 1e9 }),
		counter("bpfkit_prog_recursion_misses_total",
			"Runs the kernel skipped because the program was running on that CPU already.",
			func(r *row) float64 { return float64(r.RecursionMisses) }),
		m.Gauge("bpfkit_prog_info",
			"A program's tag, the first process holding it and the first thing it is attached to.",
			[]string{"id", "name", "type", "tag", "process", "attached"},
			func(add tool.AddValue) error {
				p.each(func(r *row) {
					add(1, strconv.FormatUint(uint64(r.ID), 10), r.Name, r.Type, r.Tag,
						firstAndMore(procNames(r.procs)), firstAndMore(r.Attached))
				})
				return nil
			}),
		gauge("bpfkit_stats_floor_seconds",
			"Run time BPF statistics count for each run of a program that does nothing.",
			cost.Floor.Seconds()),
		gauge("bpfkit_stats_added_seconds",
			"How much longer each run of every program takes with BPF statistics on "+
				"(0: not measured).",
			cost.Added.Seconds()),
	} {
		if err != nil {
			return nil, err
		}
	}
	return &m, nil
}
