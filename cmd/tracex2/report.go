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
	perCPU    []sizeCount // one slot's counts, by CPU
}

func (x *tracex2) newReport() (*report, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	return &report{tracex2: x, seenFreed: map[freedKey]uint64{}, perCPU: make([]sizeCount, ncpu)}, nil
}

// print writes the interval's busiest locations and its histogram.
func (r *report) print() error {
	rows, err := r.freedRows()
	if err != nil {
		return err
	}
	hist, err := r.sizeSlots()
	if err != nil {
		return err
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

// freedRows reads the packets freed since the last report, the busiest
// top locations first, named: all in one pass over /proc/kallsyms for
// those not named before.
func (r *report) freedRows() ([]location, error) {
	var addrs []uint64
	var counts []uint64
	var err error
	for k, total := range r.freed.All(&err) {
		if n := total.Packets - r.seenFreed[k]; n > 0 {
			addrs, counts = append(addrs, k.Location), append(counts, n)
		}
		r.seenFreed[k] = total.Packets
	}
	if err != nil {
		return nil, err
	}
	names, err := r.syms.Names(addrs)
	if err != nil {
		return nil, err
	}
	rows := make([]location, len(addrs))
	for i := range addrs {
		rows[i] = location{names[i], counts[i]}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Freed > rows[j].Freed || rows[i].Freed == rows[j].Freed && rows[i].Location < rows[j].Location
	})
	return rows[:min(len(rows), r.o.top)], nil
}

// sizeSlots reads the writes counted since the last report in each log2
// slot, summed over the CPUs: a lookup per slot (GET_NEXT_KEY would add
// one per slot).
func (r *report) sizeSlots() ([slots]uint64, error) {
	var hist [slots]uint64
	for i := range uint32(slots) {
		if err := r.sizes.LookupPerCPU(sizeSlot{i}, r.perCPU); err != nil {
			return hist, err
		}
		sum := uint64(0)
		for _, c := range r.perCPU {
			sum += c.Writes
		}
		hist[i], r.seenSizes[i] = sum-r.seenSizes[i], sum
	}
	return hist, nil
}
