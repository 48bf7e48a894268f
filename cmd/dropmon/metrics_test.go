package main

import (
	"bytes"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

var totals = []drop{
	{Location: "__udp4_lib_rcv+0x4bc", Reason: "NO_SOCKET", Drops: 100},
	{Location: "tcp_v4_rcv+0x1a0", Reason: "TCP_CSUM", Drops: 3},
	{Location: `odd"name\x`, Reason: "", Drops: 1},
	{Location: "__udp4_lib_rcv+0x4bc", Reason: "SOCKET_FILTER", Drops: 7},
}

// TestMetrics: the exposition text, against a golden file checked against
// the Prometheus text format 0.0.4: HELP and TYPE once, one sample per
// location and reason in a stable order, label values escaped.
func TestMetrics(t *testing.T) {
	var b bytes.Buffer
	if err := writeMetrics(&b, totals); err != nil {
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

// TestServeMetrics: GET /metrics through Go's HTTP client returns the same
// text with the exposition format's content type; other paths are 404 and
// other methods 405.
func TestServeMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serveMetrics(ln, func() ([]drop, error) { return totals, nil })
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var want bytes.Buffer
	writeMetrics(&want, totals)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" || string(body) != want.String() {
		t.Fatalf("%s %q:\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/", 404}, {"GET", "/metrics?x=1", 200}, {"POST", "/metrics", 405}, {"HEAD", "/metrics", 200}} {
		req, _ := http.NewRequest(c.method, "http://"+ln.Addr().String()+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %s, want %d", c.method, c.path, resp.Status, c.status)
		}
	}
}
