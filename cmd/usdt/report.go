package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/usdt"
)

// counts counts the firings of the probe by the values of the arguments
// chosen, and prints the counts of each interval; with -listen the server
// serves their totals to Prometheus.
func (tr tracer) counts(ctx context.Context, server *tool.MetricsServer) error {
	c, err := newCounter(tr.l.keySize())
	if err != nil {
		return err
	}
	defer c.Close()
	detach, err := tr.attach(countProgram(tr.l, c))
	if err != nil {
		return err
	}
	defer detach()
	r := &reporter{t: tr.t, c: c, l: tr.l, seen: map[string]uint64{}}
	if server != nil {
		m, err := countMetrics(tr.p, tr.l, c)
		if err != nil {
			return err
		}
		server.Serve(m)
	}
	return tr.t.Every(ctx, func(bool) error { return r.report() })
}

// row is a key's count in an interval, as -json writes it.
type row struct {
	Args  []any  `json:"args"`
	Count uint64 `json:"count"`
	text  string // the arguments as the text output writes them
}

// reporter prints the counts of each interval: the totals read less those
// read at the interval before.
type reporter struct {
	t          *tool.Tool
	c          counter
	l          argLayout
	seen       map[string]uint64 // the totals by key
	seenMissed uint64
}

// totals reads the counter's totals by key, adding up those of a key
// counted in two slots.
func totals(c counter) (map[string]uint64, error) {
	all := map[string]uint64{}
	err := c.read(func(key []byte, n uint64) { all[string(key)] += n })
	return all, err
}

// report prints the interval's counts: most first, then in the order of
// their arguments; and the firings missed, if any.
func (r *reporter) report() error {
	all, err := totals(r.c)
	if err != nil {
		return err
	}
	missed, err := r.c.missed()
	if err != nil {
		return err
	}
	rows := []row{}
	for key, n := range all {
		// A count only grows: one read no higher than before is unchanged,
		// or a copy the kernel made while the program added to it (a copy
		// of 8 bytes is not atomic), which the next interval reads again.
		if n <= r.seen[key] {
			continue
		}
		vs := r.l.values([]byte(key))
		rows = append(rows, row{Args: jsons(vs), Count: n - r.seen[key], text: texts(vs)})
		r.seen[key] = n
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.text, b.text))
	})
	lost := uint64(0)
	if missed > r.seenMissed {
		lost, r.seenMissed = missed-r.seenMissed, missed
	}
	return r.print(rows, lost)
}

// print writes an interval's rows, and the firings missed in it.
func (r *reporter) print(rows []row, missed uint64) error {
	now := time.Now()
	if r.t.JSON {
		return r.t.Emit(struct {
			Time   string `json:"time"`
			Counts []row  `json:"counts"`
			Missed uint64 `json:"missed,omitempty"`
		}{now.Format(time.RFC3339Nano), rows, missed})
	}
	fmt.Fprintf(r.t.Stdout, "\n%s\n%8s  %s\n", now.Format("15:04:05"), "COUNT", "ARGS")
	for _, row := range rows {
		fmt.Fprintf(r.t.Stdout, "%8d  %s\n", row.Count, row.text)
	}
	if missed > 0 {
		fmt.Fprintf(r.t.Stdout, "%d firings not counted: no room for more keys\n", missed)
	}
	return nil
}

// countMetrics is what -listen serves: usdt_firings_total, the firings
// counted, labelled by the probe and the value of each argument chosen
// (arg1, arg5, ...), and usdt_missed_firings_total, those not counted.
// Each is the highest total read, as report takes them: Prometheus reads
// a counter that falls as one that was reset.
func countMetrics(p *usdt.Probe, l argLayout, c counter) (*tool.Metrics, error) {
	var m tool.Metrics
	top := map[string]uint64{} // the scrapes take turns: Metrics holds a lock
	labels := []string{"probe"}
	for _, f := range l.fields {
		labels = append(labels, "arg"+strconv.Itoa(f.N))
	}
	help := "Firings of the USDT probe, by the values of the arguments chosen."
	err := m.Counter("usdt_firings_total", help, labels, func(add tool.AddValue) error {
		all, err := totals(c)
		for key, n := range all {
			n = max(n, top[key])
			top[key] = n
			vs := l.values([]byte(key))
			values := []string{p.String()}
			for _, v := range vs {
				values = append(values, v.label())
			}
			add(float64(n), values...)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	help = "Firings of the USDT probe not counted: no room for more keys."
	missed := func(add tool.AddValue) error {
		n, err := c.missed()
		n = max(n, top[""]) // no key is empty: the smallest is 8 bytes
		top[""] = n
		add(float64(n), p.String())
		return err
	}
	err = m.Counter("usdt_missed_firings_total", help, []string{"probe"}, missed)
	return &m, err
}
