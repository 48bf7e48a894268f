package main

import (
	"fmt"
	"io"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// latencies keeps what the histograms have counted.
type latencies struct {
	o    *objects
	ncpu int                // possible CPUs: a per-CPU value's count
	seen map[histKey]uint64 // each slot's requests at the last read
	all  [buckets]uint64    // the run's requests per bucket, over every device
}

// read returns what the interval added to each bucket, over every
// device.
func (l *latencies) read() ([]uint64, error) {
	now, err := l.o.counts(l.ncpu)
	if err != nil {
		return nil, err
	}
	added := make([]uint64, buckets)
	for k, v := range now {
		added[k.Bucket] += v.Count - l.seen[k]
		l.seen[k] = v.Count
	}
	for i, n := range added {
		l.all[i] += n
	}
	return added, nil
}

// untimed is how many requests went untimed, their table slots all taken.
func (l *latencies) untimed() (uint64, error) {
	perCPU := make([]uint64, l.ncpu)
	err := l.o.stats.LookupPerCPU(statUntimed, perCPU)
	return tool.Sum(perCPU), err
}

// heatmap keeps the columns drawn.
type heatmap struct {
	cols  [][]uint64 // what each interval added, by bucket, oldest first
	color bool
	out   io.Writer
	width int // columns kept
	drawn int // lines of the last frame, to draw over on a terminal
}

// add keeps an interval's column, and the last width.
func (h *heatmap) add(col []uint64) {
	h.cols = append(h.cols, col)
	if len(h.cols) > h.width {
		h.cols = h.cols[1:]
	}
}

// draw prints the heatmap, over the previous one on a terminal, below it
// otherwise, with a row for each bucket from the fastest to the slowest
// that some column counted.
func (h *heatmap) draw() {
	first, last := buckets, -1
	for _, col := range h.cols {
		for i, n := range col {
			if n > 0 {
				first, last = min(first, i), max(last, i)
			}
		}
	}
	var labels []string
	view := make([][]uint64, len(h.cols))
	for i := first; i <= last; i++ {
		labels = append(labels, bucketLabel(i))
	}
	for c, col := range h.cols {
		view[c] = col[min(first, last+1) : last+1]
	}
	if h.color && h.drawn > 0 {
		fmt.Fprintf(h.out, "\033[%dA\033[J", h.drawn) // up over the last frame, and clear it
	} else {
		fmt.Fprintf(h.out, "%s\n", time.Now().Format("15:04:05"))
	}
	tool.Heatmap(h.out, view, labels, h.color, "latency", "requests")
	h.drawn = 1 + len(labels)
}

// jsonColumn is one interval as JSON: the time, the requests completed
// and the latency buckets that hold some, in µs; or, with total set, the
// same of the whole run, which tracex3 prints last, with the requests
// that went untimed.
func jsonColumn(col []uint64, total bool, untimed uint64) any {
	slots := []tool.HistSlot{}
	for _, r := range histRows(col) {
		if r.Count > 0 {
			slots = append(slots, r)
		}
	}
	return struct {
		Time      string          `json:"time"`
		Requests  uint64          `json:"requests"`
		LatencyUs []tool.HistSlot `json:"latency_us"`
		Untimed   uint64          `json:"untimed,omitempty"`
		Total     bool            `json:"total,omitempty"`
	}{time.Now().Format(time.RFC3339Nano), tool.Sum(col), slots, untimed, total}
}
