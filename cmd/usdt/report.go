package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// counts counts the firings of the probe by the values of the arguments
// chosen, and prints the counts of each interval.
func (tr tracer) counts(ctx context.Context) error {
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
		if d := n - r.seen[key]; d > 0 {
			vs := r.l.values([]byte(key))
			rows = append(rows, row{Args: jsons(vs), Count: d, text: texts(vs)})
		}
		r.seen[key] = n
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.text, b.text))
	})
	lost := missed - r.seenMissed
	r.seenMissed = missed
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
