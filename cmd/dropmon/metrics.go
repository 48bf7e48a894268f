package main

import (
	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// dropMetrics is what -listen serves: one counter, dropmon_drops_total,
// labelled by location and reason, from the totals that totals reads at
// each scrape.
func dropMetrics(totals func() ([]drop, error)) (*tool.Metrics, error) {
	var m tool.Metrics
	help := "Packets the kernel dropped (skb:kfree_skb), by location and reason."
	collect := func(add tool.AddValue) error {
		rows, err := totals()
		for _, r := range rows {
			add(float64(r.Drops), r.Location, r.Reason)
		}
		return err
	}
	err := m.Counter("dropmon_drops_total", help, []string{"location", "reason"}, collect)
	return &m, err
}
