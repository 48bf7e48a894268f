package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

// location is a row of the freed packets' table.
type location struct {
	Location string `json:"location"`
	Freed    uint64 `json:"freed"`
}

// report prints what each interval added to the maps.
type report struct {
	*tracex2
	seenFreed map[freedKey]uint64
	seenSizes [slots]uint64
	perCPU    []sizeCount // one slot's values, by CPU
}

func (x *tracex2) newReport() (*report, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	r := &report{tracex2: x, seenFreed: map[freedKey]uint64{}, perCPU: make([]sizeCount, ncpu)}
	return r, nil
}

// print writes the interval's busiest locations and its histogram.
func (r *report) print() error {
	rows, err := r.freedSince(r.seenFreed)
	if err != nil {
		return err
	}
	rows = rows[:min(len(rows), r.o.top)]
	totals, err := r.sizeTotals(r.perCPU)
	if err != nil {
		return err
	}
	var hist [slots]uint64
	for i, n := range totals.Slots {
		hist[i], r.seenSizes[i] = n-r.seenSizes[i], n
	}
	if r.t.JSON {
		return r.t.Emit(struct {
			Time       string          `json:"time"`
			Freed      []location      `json:"freed"`
			WriteBytes []tool.HistSlot `json:"write_bytes"`
		}{time.Now().Format(time.RFC3339Nano), rows, tool.HistSlots(hist[:])})
	}
	w := r.t.Stdout
	fmt.Fprintf(w, "\n%s\n%8s  %s\n", time.Now().Format("15:04:05"), "FREED", "LOCATION")
	for _, l := range rows {
		fmt.Fprintf(w, "%8d  %s\n", l.Freed, l.Location)
	}
	fmt.Fprintln(w)
	tool.Log2Hist(w, "write bytes", hist[:])
	return nil
}

// freedSince reads the packets freed at each location, named, the busiest
// first: the totals with seen nil, else what came since seen, which it
// updates. The locations are named together, one pass over /proc/kallsyms
// for those not named before.
func (x *tracex2) freedSince(seen map[freedKey]uint64) ([]location, error) {
	var addrs []uint64
	var counts []uint64
	var err error
	for k, total := range x.freed.All(&err) {
		n := total.Packets
		if seen != nil {
			n -= seen[k]
			seen[k] = total.Packets
		}
		if n > 0 {
			addrs, counts = append(addrs, k.Location), append(counts, n)
		}
	}
	if err != nil {
		return nil, err
	}
	names, err := x.syms.Names(addrs)
	if err != nil {
		return nil, err
	}
	rows := make([]location, len(addrs))
	for i := range addrs {
		rows[i] = location{names[i], counts[i]}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		return a.Freed > b.Freed || a.Freed == b.Freed && a.Location < b.Location
	})
	return rows, nil
}
