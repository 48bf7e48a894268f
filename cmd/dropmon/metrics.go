package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
)

// drop is one row of dropmon's table: where (a location, or with -stacks
// a stack) and why, and how many.
type drop struct {
	Location string   `json:"location,omitempty"`
	Stack    []string `json:"stack,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Drops    uint64   `json:"drops"`
}

// writeMetrics writes totals in the Prometheus text exposition format
// (version 0.0.4): one counter, labelled by location and reason, in a
// stable order.
func writeMetrics(w io.Writer, totals []drop) error {
	rows := append([]drop(nil), totals...)
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Location != rows[j].Location {
			return rows[i].Location < rows[j].Location
		}
		return rows[i].Reason < rows[j].Reason
	})
	var b strings.Builder
	b.WriteString("# HELP dropmon_drops_total Packets the kernel dropped (skb:kfree_skb), by location and reason.\n")
	b.WriteString("# TYPE dropmon_drops_total counter\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "dropmon_drops_total{location=\"%s\",reason=\"%s\"} %d\n", labelValue(r.Location), labelValue(r.Reason), r.Drops)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// labelValue escapes a label value as the exposition format asks:
// backslash, double quote and newline.
func labelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// serveMetrics serves GET /metrics on addr with the totals of the moment,
// until the listener is closed; it returns the listener once it listens.
func serveMetrics(addr string, totals func() ([]drop, error)) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		rows, err := totals()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		writeMetrics(w, rows)
	})
	go http.Serve(ln, mux)
	return ln, nil
}
