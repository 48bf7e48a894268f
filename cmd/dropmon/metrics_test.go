package main

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// TestMetrics: the exposition text, against a golden file checked against
// the Prometheus text format 0.0.4: HELP and TYPE once, one sample per
// location and reason in a stable order, label values escaped.
func TestMetrics(t *testing.T) {
	totals := []drop{
		{Location: "__udp4_lib_rcv+0x4bc", Reason: "NO_SOCKET", Drops: 100},
		{Location: "tcp_v4_rcv+0x1a0", Reason: "TCP_CSUM", Drops: 3},
		{Location: `odd"name\x`, Reason: "", Drops: 1},
		{Location: "__udp4_lib_rcv+0x4bc", Reason: "SOCKET_FILTER", Drops: 7},
	}
	m, err := dropMetrics(func() ([]drop, error) { return totals, nil })
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		os.WriteFile("testdata/metrics.golden", b.Bytes(), 0o644)
	}
	want, err := os.ReadFile("testdata/metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
