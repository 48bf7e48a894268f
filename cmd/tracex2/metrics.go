package main

import (
	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

// metrics is what -listen serves, the totals since tracex2 started, read
// from the maps at each scrape: tracex2_freed_packets_total, a counter by
// location, and tracex2_write_size_bytes, a histogram of the sizes
// write(2) was asked for, its buckets at the log2 slots' upper bounds.
func (x *tracex2) metrics() (*tool.Metrics, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	perCPU := make([]sizeCount, ncpu) // scrapes come one at a time
	var m tool.Metrics
	err = m.Counter("tracex2_freed_packets_total",
		"Packets the kernel freed (skb:kfree_skb), by the kernel function that freed them.",
		[]string{"location"}, func(add tool.AddValue) error {
			rows, err := x.freedSince(nil)
			for _, r := range rows {
				add(float64(r.Freed), r.Location)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	err = m.Histogram("tracex2_write_size_bytes",
		"Sizes write(2) was asked to write (syscalls:sys_enter_write), in bytes.",
		tool.Bytes, nil, func(add tool.AddHistogram) error {
			h, err := x.sizeTotals(perCPU)
			add(h)
			return err
		})
	return &m, err
}

// sizeTotals reads the write_sizes array: the writes of each log2 slot and
// the bytes of all, summed over the CPUs, perCPU holding one slot's
// values as it is read.
func (x *tracex2) sizeTotals(perCPU []sizeCount) (tool.Log2Histogram, error) {
	h := tool.Log2Histogram{Slots: make([]uint64, slots)}
	for i := range uint32(slots) {
		if err := x.sizes.LookupPerCPU(sizeSlot{i}, perCPU); err != nil {
			return h, err
		}
		for _, c := range perCPU {
			h.Slots[i] += c.Writes
			h.Sum += float64(c.Bytes)
		}
	}
	return h, nil
}
