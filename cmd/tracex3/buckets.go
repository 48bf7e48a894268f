package main

import (
	"fmt"
	"math"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// buckets is the size of the latency histograms: bucket 0 counts the
// requests that took less than 1µs, then each unit of units has buckets of
// 1, 2, 4, ... 512 of it, the last unit's going on to the last bucket,
// which counts everything from 2^18 s up.
const buckets = 40

// units are the latency buckets' units: bucket base+k holds latencies of
// 2^k to 2^(k+1) of the unit, and the last of a unit's ten buckets stops
// at the next unit (512µs to 1ms), so every edge is a round figure.
var units = []struct {
	name string
	ns   uint64 // the unit in nanoseconds
	base int    // its first bucket
}{
	{"us", 1e3, 1},
	{"ms", 1e6, 11},
	{"s", 1e9, 21},
}

// bucketFloor is the least latency bucket i holds, in nanoseconds.
func bucketFloor(i int) uint64 {
	if i <= 0 {
		return 0
	}
	u := units[0]
	for _, v := range units {
		if i >= v.base {
			u = v
		}
	}
	return u.ns << (i - u.base)
}

// bucketLabel names bucket i by the least latency it holds: "0", "1us",
// "512us", "1ms", ...
func bucketLabel(i int) string {
	if i <= 0 {
		return "0"
	}
	for k := len(units) - 1; k >= 0; k-- {
		if u := units[k]; i >= u.base {
			return fmt.Sprintf("%d%s", uint64(1)<<(i-u.base), u.name)
		}
	}
	return ""
}

// histRows are the buckets from the first to the last that is not empty,
// as rows of whole microseconds: from the bucket's floor to the next one's
// less 1 (the last bucket's to the largest number), as bcc's histograms
// show µs.
func histRows(counts []uint64) []tool.HistSlot {
	first, last := -1, -1
	for i, n := range counts {
		if n > 0 {
			last = i
			if first < 0 {
				first = i
			}
		}
	}
	rows := []tool.HistSlot{}
	for i := max(first, 0); i <= last; i++ {
		to := uint64(math.MaxUint64)
		if i+1 < buckets {
			to = bucketFloor(i+1)/1000 - 1
		}
		rows = append(rows, tool.HistSlot{From: bucketFloor(i) / 1000, To: to, Count: counts[i]})
	}
	return rows
}
