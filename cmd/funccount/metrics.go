package main

import (
	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

// eventMetrics is what -listen serves: one counter family,
// funccount_events_total, a series per event, its label event the name
// funccount prints ("syscalls:sys_enter_read", "vfs_read"). Each scrape
// reads the kernel's counts, the totals since funccount attached.
func eventMetrics(c *counter) (*tool.Metrics, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	perCPU := make([]uint64, ncpu) // this scrape's own: the printing loop has another
	collect := func(add tool.AddValue) error {
		for i, e := range c.events {
			if err := c.counts.LookupPerCPU(uint32(i), perCPU); err != nil {
				return err
			}
			add(float64(tool.Sum(perCPU)), e.name)
		}
		return nil
	}
	var m tool.Metrics
	help := "Events funccount counted since it attached: tracepoints (group:name) " +
		"and kernel functions."
	err = m.Counter("funccount_events_total", help, []string{"event"}, collect)
	return &m, err
}
