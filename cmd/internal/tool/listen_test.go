package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestListenFlag: -listen's syntax is checked when the arguments are
// parsed; a bad address is a usage error quoting it.
func TestListenFlag(t *testing.T) {
	for _, c := range []struct{ addr, err string }{
		{":9101", ""},
		{"127.0.0.1:0", ""},
		{"[::1]:9101", ""},
		{"[fe80::1%eth0]:80", ""},
		{"localhost:9101", ""},
		{"node-1.example.com.:65535", ""},
		{"127.0.0.1", `"127.0.0.1": want HOST:PORT or :PORT, the port a number up to 65535`},
		{":99999", `-listen ":99999": want HOST:PORT`},
		{"localhost:http", `-listen "localhost:http": want HOST:PORT`},
		{":-1", `-listen ":-1": want HOST:PORT`},
		{"[::1]", `-listen "[::1]": want HOST:PORT`},
		{"", `-listen "": want HOST:PORT`},
		{"a\nb:80", `-listen "a\nb:80": the host is neither a name nor an IP address`},
		{"a b:80", `-listen "a b:80": the host`},
		{"-x:80", `-listen "-x:80": the host`},
		{"x..y:80", `-listen "x..y:80": the host`},
		{strings.Repeat("a", 64) + ":80", `the host is neither`},
	} {
		tl := New("x", "test", "")
		addr := tl.ListenFlag()
		err := tl.Parse([]string{"-listen", c.addr})
		switch {
		case c.err == "" && (err != nil || *addr != c.addr):
			t.Errorf("-listen %q: %q, %v", c.addr, *addr, err)
		case c.err != "" && (!errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.err)),
			c.err != "" && *addr != "":
			t.Errorf("-listen %q: %q, %v; want a usage error with %q", c.addr, *addr, err, c.err)
		}
	}
}

// TestListenMetrics: no address gives a nil server that does nothing; an
// address in use is an error naming it (the caller exits 1); a free one
// is bound at once, and served once Serve says where on Stderr.
func TestListenMetrics(t *testing.T) {
	tl := New("x", "test", "")
	var stderr bytes.Buffer
	tl.Stderr = &stderr
	if s, err := tl.ListenMetrics(""); s != nil || err != nil {
		t.Errorf("no address: %v, %v", s, err)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, err = tl.ListenMetrics(busy.Addr().String())
	quoted := fmt.Sprintf("-listen %q", busy.Addr().String())
	if err == nil || errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), quoted) ||
		!strings.Contains(err.Error(), "address already in use") {
		t.Errorf("an address in use: %v", err)
	}

	s, err := tl.ListenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Bound already: a connection waits in the backlog until Serve.
	if conn, err := net.Dial("tcp", s.Addr().String()); err != nil {
		t.Errorf("not bound before Serve: %v", err)
	} else {
		conn.Close()
	}
	if stderr.Len() != 0 {
		t.Errorf("said %q before Serve", stderr.String())
	}
	m := withCounter(t, func(add AddValue) error { add(3, "y"); return nil })
	s.Serve(m)
	if want := "x: serving http://" + s.Addr().String() + "/metrics\n"; stderr.String() != want {
		t.Errorf("Serve said %q, want %q", stderr.String(), want)
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "c_total{l=\"y\"} 3\n") {
		t.Errorf("scraped %q", body)
	}
}
