package main

import (
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// latencyMetrics is what -listen serves: tracex3_block_latency_seconds,
// a histogram of the requests' latencies by device, in tracex3's buckets
// (le="0.000001", "0.000002", ... "0.001", ...), read from the kernel's
// counts at each scrape. A bucket holds the latencies from its lower
// bound up to, not including, its upper one (le): only a latency of
// exactly a bound, to the nanosecond, is counted one bucket up.
func latencyMetrics(o *objects, ncpu int) (*tool.Metrics, error) {
	bounds := make([]float64, buckets-1)
	for i := range bounds {
		bounds[i] = float64(bucketFloor(i + 1))
	}
	var m tool.Metrics
	err := m.BucketHistogram("tracex3_block_latency_seconds",
		"Block I/O requests by latency, from block_rq_issue to block_rq_complete, "+
			"by device (MAJOR:MINOR).",
		tool.Nanoseconds, bounds, []string{"device"}, func(add tool.AddBuckets) error {
			counts, err := o.counts(ncpu)
			devs := map[uint32]*tool.Buckets{}
			for k, v := range counts {
				b := devs[k.Dev]
				if b == nil {
					b = &tool.Buckets{Counts: make([]uint64, buckets)}
					devs[k.Dev] = b
				}
				b.Counts[k.Bucket] += v.Count
				b.Sum += float64(v.Sum)
			}
			for dev, b := range devs {
				add(*b, devName(dev))
			}
			return err
		})
	return &m, err
}

// devName is a device's MAJOR:MINOR, from the dev_t the block
// tracepoints record (MKDEV: major << 20 | minor).
func devName(dev uint32) string { return fmt.Sprintf("%d:%d", dev>>20, dev&(1<<20-1)) }
