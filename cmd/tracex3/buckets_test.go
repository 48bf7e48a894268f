package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestBuckets: the buckets' labels are round figures of µs, ms and s, each
// bucket starting where the one before ends.
func TestBuckets(t *testing.T) {
	var labels []string
	for i := range 24 {
		labels = append(labels, bucketLabel(i))
	}
	want := "0 1us 2us 4us 8us 16us 32us 64us 128us 256us 512us " +
		"1ms 2ms 4ms 8ms 16ms 32ms 64ms 128ms 256ms 512ms 1s 2s 4s"
	if got := strings.Join(labels, " "); got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
	floors := map[int]uint64{
		0:  0,
		1:  1000,
		10: 512_000,
		11: 1_000_000,
		20: 512_000_000,
		21: 1e9,
		39: 1e9 << 18,
	}
	for i, want := range floors {
		if got := bucketFloor(i); got != want {
			t.Errorf("bucket %d starts at %d ns, want %d", i, got, want)
		}
	}
	counts := make([]uint64, buckets)
	counts[2], counts[10], counts[11] = 3, 5, 7
	rows := fmt.Sprint(histRows(counts))
	want = "[{2 3 3} {4 7 0} {8 15 0} {16 31 0} {32 63 0} {64 127 0} {128 255 0} " +
		"{256 511 0} {512 999 5} {1000 1999 7}]"
	if rows != want {
		t.Errorf("rows %s, want %s", rows, want)
	}
}
