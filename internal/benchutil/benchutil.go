// Package benchutil measures bpfkit against a bare system call in the same
// benchmark: the two run interleaved in short blocks, so that a noisy,
// shared machine slows both alike, and the ratio is reported.
package benchutil

import (
	"testing"
	"time"
)

// Compare runs bare(i) and lib(i) b.N times each, in alternating blocks of
// block calls. It alternates which of the two goes first too: the second
// would otherwise find the caches warmed by the first for the same i. It
// reports lib's ns/op, bare's as "bare-ns/op", and their ratio as "x-bare".
// Allocations reported by b are lib's and bare's together.
func Compare(b *testing.B, block int, bare, lib func(i int)) {
	b.ReportAllocs()
	var tBare, tLib time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += block {
		n := min(block, b.N-i)
		first, second, tFirst, tSecond := bare, lib, &tBare, &tLib
		if i/block%2 == 1 {
			first, second, tFirst, tSecond = lib, bare, &tLib, &tBare
		}
		t0 := time.Now()
		for j := range n {
			first(i + j)
		}
		t1 := time.Now()
		for j := range n {
			second(i + j)
		}
		*tFirst += t1.Sub(t0)
		*tSecond += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tLib.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(tBare.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(tLib)/float64(tBare), "x-bare")
}
