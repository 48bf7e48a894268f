package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

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
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(strings.ReplaceAll(s, `"`, `\"`), "\n", `\n`)
}

// checkListen checks the syntax of -listen's address: host:port, the
// port a number (0 for any free one).
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return tool.Usagef("-listen %q: want HOST:PORT or :PORT, the port a number up to 65535", addr)
	}
	return nil
}

// serveMetrics serves GET /metrics on ln with the totals of the moment,
// until ln is closed. It speaks just enough HTTP/1.1 for a scraper, one
// request per connection: net/http would make dropmon several times larger.
func serveMetrics(ln net.Listener, totals func() ([]drop, error)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveOne(c, totals)
		}
	}()
}

// serveOne answers one request: /metrics, or 404, or 405 for what is not
// a GET or HEAD.
func serveOne(c net.Conn, totals func() ([]drop, error)) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(io.LimitReader(c, 64<<10))
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	for { // the headers, up to the empty line
		h, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.TrimRight(h, "\r\n") == "" {
			break
		}
	}
	method, rest, _ := strings.Cut(line, " ")
	target, _, _ := strings.Cut(rest, " ")
	path, _, _ := strings.Cut(target, "?")
	status, ctype, body := "200 OK", "text/plain; version=0.0.4; charset=utf-8", ""
	switch {
	case method != "GET" && method != "HEAD":
		status, ctype, body = "405 Method Not Allowed", "text/plain", "GET /metrics\n"
	case path != "/metrics":
		status, ctype, body = "404 Not Found", "text/plain", "dropmon serves /metrics\n"
	default:
		var b strings.Builder
		rows, err := totals()
		if err == nil {
			err = writeMetrics(&b, rows)
		}
		body = b.String()
		if err != nil {
			status, ctype, body = "500 Internal Server Error", "text/plain", err.Error()+"\n"
		}
	}
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", status, ctype, len(body))
	if method != "HEAD" {
		io.WriteString(c, body)
	}
}
