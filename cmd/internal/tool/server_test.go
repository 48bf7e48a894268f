package tool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile clients' tests run the server in a child process, this test
// binary started again with serverChildEnv set, so that its memory (RSS,
// and the Go heap it reports as a gauge) is the server's alone.
const serverChildEnv = "BPFKIT_TOOL_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverChildEnv) != "" {
		serverChild()
		return
	}
	os.Exit(m.Run())
}

// childMetrics is what the child serves: 200 counters, a body of about
// 12 KB as a busy dropmon's, and its own memory and goroutines: the heap
// in use, and the live heap, what a garbage collection leaves.
func childMetrics() *Metrics {
	var m Metrics
	drops := func(add AddValue) error {
		for i := range 200 {
			add(float64(i), fmt.Sprintf("function_%d+0x%x", i, i*16), "NO_SOCKET")
		}
		return nil
	}
	m.Counter("test_drops_total", "Drops.", []string{"location", "reason"}, drops)
	m.Gauge("test_heap_bytes", "The Go heap in use.", nil, func(add AddValue) error {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		add(float64(ms.HeapInuse))
		return nil
	})
	liveHeap := func(add AddValue) error {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		add(float64(ms.HeapAlloc))
		return nil
	}
	m.Gauge("test_live_heap_bytes", "The Go heap a collection leaves.", nil, liveHeap)
	m.Gauge("test_goroutines", "Goroutines.", nil, func(add AddValue) error {
		add(float64(runtime.NumGoroutine()))
		return nil
	})
	return &m
}

// serverChild serves childMetrics on 127.0.0.1, with the timeouts
// serverChildEnv gives ("write=1s,header=1s"; "default" keeps the
// server's), prints the address, and exits when its stdin closes.
func serverChild() {
	limits := defaultLimits
	for setting := range strings.SplitSeq(os.Getenv(serverChildEnv), ",") {
		name, value, _ := strings.Cut(setting, "=")
		d, _ := time.ParseDuration(value)
		switch name {
		case "write":
			limits.writeTimeout = d
		case "header":
			limits.headerTimeout = d
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	s := newMetricsServer(ln, limits)
	s.Serve(childMetrics())
	fmt.Println(s.Addr())
	io.Copy(io.Discard, os.Stdin)
	s.Close()
}

// child is a server in a child process.
type child struct {
	t    *testing.T
	addr string
	pid  int
}

// startChild starts a server child with timeouts as serverChild takes
// them.
func startChild(t *testing.T, timeouts string) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverChildEnv+"="+timeouts)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "127.0.0.1:") {
		t.Fatalf("server child: %q, %v", line, err)
	}
	return &child{t: t, addr: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

// memory is the child's resident set and its peak so far, in KiB, from
// /proc/PID/status.
func (c *child) memory() (rss, peak int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid))
	if err != nil {
		c.t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "VmRSS:" {
			rss, _ = strconv.Atoi(f[1])
		}
		if len(f) == 3 && f[0] == "VmHWM:" {
			peak, _ = strconv.Atoi(f[1])
		}
	}
	return rss, peak
}

// scrape is GET /metrics through Go's HTTP client, a fresh connection,
// within timeout; it returns the body and how long the answer took.
func (c *child) scrape(timeout time.Duration) (string, time.Duration, error) {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return "", time.Since(start), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	ok := resp.StatusCode == 200 && strings.Contains(string(body), "test_drops_total{")
	if err == nil && !ok {
		err = fmt.Errorf("%s:\n%s", resp.Status, body)
	}
	return string(body), took, err
}

// gauge reads a gauge's value from a scrape's body.
func gauge(body, name string) int {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// attack runs a hostile client against the child and checks, while the
// client's connections are still open, that a scrape is answered within a
// second, that the server's live heap (what a garbage collection leaves)
// grew by less than maxLive KiB, and that its peak resident set grew by
// less than maxPeak KiB; the peak also holds garbage the collector had
// not reached, up to the Go runtime's 4 MB minimum heap goal.
func (c *child) attack(name string, maxLive, maxPeak int, hostile func() (cleanup func())) {
	c.t.Helper()
	body, _, err := c.scrape(5 * time.Second) // the server has built what it builds once
	if err != nil {
		c.t.Fatalf("%s: the first scrape: %v", name, err)
	}
	liveBefore := gauge(body, "test_live_heap_bytes")
	_, peakBefore := c.memory()
	cleanup := hostile()
	body, took, err := c.scrape(time.Second)
	_, peak := c.memory()
	cleanup()
	live := gauge(body, "test_live_heap_bytes")
	liveGrowth, peakGrowth := (live-liveBefore)>>10, peak-peakBefore
	goroutines := gauge(body, "test_goroutines")
	c.t.Logf("%s: live heap %d KiB before, %d KiB during it (%+d); "+
		"peak RSS %d KiB before, %d KiB after (%+d); %d goroutines; a scrape took %v",
		name, liveBefore>>10, live>>10, liveGrowth, peakBefore, peak, peakGrowth,
		goroutines, took.Round(time.Millisecond))
	if err != nil {
		c.t.Errorf("%s: a scrape during it: %v after %v", name, err, took)
	}
	if liveGrowth > maxLive {
		c.t.Errorf("%s: the server's live heap grew by %d KiB, more than %d",
			name, liveGrowth, maxLive)
	}
	if peakGrowth > maxPeak && !raceBuild {
		c.t.Errorf("%s: the server's peak RSS grew by %d KiB, more than %d",
			name, peakGrowth, maxPeak)
	}
	if goroutines > defaultLimits.maxConns+8 {
		c.t.Errorf("%s: %d goroutines in the server, for at most %d connections",
			name, goroutines, defaultLimits.maxConns)
	}
}

// dial opens a connection to the child.
func (c *child) dial() net.Conn {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	return conn
}

// closedBy reads conn until the server closes it (EOF, or a reset when
// it closed with bytes of ours unread), within timeout; it returns what
// was read, or fails the test if the connection is still open.
func closedBy(t *testing.T, conn net.Conn, timeout time.Duration) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(timeout))
	var got bytes.Buffer
	_, err := io.Copy(&got, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection is still open after %v; read %.200q", timeout, got.String())
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading: %v", err)
	}
	return got.String()
}

// exchange sends request on a new connection, from another goroutine (the
// server may stop reading it), and returns what the server answered by
// the time it closed the connection, within timeout.
func (c *child) exchange(request string, timeout time.Duration) string {
	conn := c.dial()
	defer conn.Close()
	go io.WriteString(conn, request)
	return closedBy(c.t, conn, timeout)
}

// TestServerSlowloris: 1,000 connections that send nothing, or a request
// line and a header and then nothing, do not stop a scrape from being
// answered within a second; the server keeps at most maxConns of them.
func TestServerSlowloris(t *testing.T) {
	c := startChild(t, "default")
	c.attack("1000 idle connections", 1024, 4096, func() func() {
		conns := make([]net.Conn, 1000)
		for i := range conns {
			conns[i] = c.dial()
			if i%2 == 1 {
				io.WriteString(conns[i], "GET /metrics HTTP/1.1\r\nHost: x\r\n")
			}
		}
		time.Sleep(100 * time.Millisecond) // the server has accepted them
		return func() {
			for _, conn := range conns {
				conn.Close()
			}
		}
	})
}

// TestServerGarbage: request lines that are not HTTP, or a version other
// than 1.x, are answered 400 or 505 and the connection closed.
func TestServerGarbage(t *testing.T) {
	c := startChild(t, "default")
	for _, g := range []struct{ send, status string }{
		{"\x00\x01\x02\r\n\r\n", "400"},
		{"GET\r\n\r\n", "400"},
		{"GET /metrics\r\n\r\n", "400"},
		{"GET  /metrics HTTP/1.1\r\n\r\n", "400"},
		{"GET /metrics HTTP/1.1 x\r\n\r\n", "400"},
		{"G(T /metrics HTTP/1.1\r\n\r\n", "400"},
		{"GET /metrics HTTP/2.0\r\n\r\n", "505"},
		{"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", "400"},
		{"GET /metrics HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", "400"},
		{"GET /metrics HTTP/1.1\r\nX: a\x1b[2J\r\n\r\n", "400"},
		{"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "400"},
		{"SSH-2.0-OpenSSH_9.2\r\n", "400"},
		{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "400"},
		{strings.Repeat("x", 100<<10), "431"},
	} {
		c.attack(fmt.Sprintf("%.20q", g.send), 64, 3072, func() func() {
			got := c.exchange(g.send, 2*time.Second)
			// A reset, when the server closed with our bytes unread, may lose the answer.
			reset := g.status == "431" && got == ""
			if !strings.HasPrefix(got, "HTTP/1.1 "+g.status+" ") && !reset {
				t.Errorf("%.40q: %.100q, want %s and the connection closed", g.send, got, g.status)
			}
			return func() {}
		})
	}
}

// TestServerHugeHeader: a header of 1 MiB, in one line or in many, is
// refused (431) after 16 KiB and the connection closed; the server does
// not read the rest, let alone keep it.
func TestServerHugeHeader(t *testing.T) {
	c := startChild(t, "default")
	for name, header := range map[string]string{
		"one 1 MiB line":         "X-Big: " + strings.Repeat("a", 1<<20) + "\r\n",
		"1 MiB of short headers": strings.Repeat("X-Small: aaaaaaaaaaaaaaaaaaaaaaa\r\n", 1<<15),
	} {
		c.attack(name, 64, 1024, func() func() {
			got := c.exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n"+header+"\r\n", 2*time.Second)
			if got != "" && !strings.HasPrefix(got, "HTTP/1.1 431 ") {
				t.Errorf("%s: %.100q, want 431 and the connection closed", name, got)
			}
			return func() {}
		})
	}
}

// TestServerHTTP10: an HTTP/1.0 request is answered, in HTTP/1.1 as RFC
// 9110 2.5 allows, and the connection closed after it.
func TestServerHTTP10(t *testing.T) {
	c := startChild(t, "default")
	c.attack("HTTP/1.0", 64, 3072, func() func() {
		got := c.exchange("GET /metrics HTTP/1.0\r\n\r\n", 2*time.Second)
		if !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") ||
			!strings.Contains(got, "Connection: close\r\n") ||
			!strings.Contains(got, "test_drops_total{") {
			t.Errorf("HTTP/1.0: %.300q", got)
		}
		return func() {}
	})
}

// TestServerPipelined: 500 requests sent at once on one connection are
// answered in order, one at a time; the last asks to close.
func TestServerPipelined(t *testing.T) {
	c := startChild(t, "default")
	c.attack("500 pipelined requests", 64, 3072, func() func() {
		pair := "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nHEAD /nope HTTP/1.1\r\n\r\n"
		last := "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"
		got := c.exchange(strings.Repeat(pair, 250)+last, 10*time.Second)
		n := strings.Count(got, "HTTP/1.1 200 OK\r\n")
		m := strings.Count(got, "HTTP/1.1 404 Not Found\r\n")
		if n != 251 || m != 250 || !strings.HasSuffix(got, "\n") {
			t.Errorf("%d answers 200 and %d answers 404, want 251 and 250", n, m)
		}
		return func() {}
	})
}

// TestServerNeverReads: a client that sends requests and never reads the
// answers is let go once an answer has waited for it writeTimeout (1 s
// here), having made the server hold no more than one answer at a time.
func TestServerNeverReads(t *testing.T) {
	c := startChild(t, "write=1s")
	c.attack("a client that never reads", 64, 3072, func() func() {
		conn := c.dial()
		conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		req := []byte(strings.Repeat("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 100))
		sent := 0
		conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
		for {
			n, err := conn.Write(req)
			sent += n
			if err != nil {
				break
			}
		}
		t.Logf("sent %d KiB of requests before the server stopped reading them", sent>>10)
		start := time.Now()
		closedBy(t, conn, 5*time.Second)
		took := time.Since(start).Round(time.Millisecond)
		t.Logf("closed %v after the client stopped sending", took)
		return func() { conn.Close() }
	})
}

// TestServerDribble: a client that sends its request a byte at a time,
// each before the deadline of the one before, is let go once the header
// timeout (1 s here) has passed since it began: the deadline is for the
// whole request, not for each byte.
func TestServerDribble(t *testing.T) {
	c := startChild(t, "header=1s")
	c.attack("a request a byte every 100 ms", 64, 3072, func() func() {
		conn := c.dial()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			slow := "GET /metrics HTTP/1.1\r\nX-Slow: " + strings.Repeat("a", 100)
			for _, b := range []byte(slow) {
				if _, err := conn.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		closedBy(t, conn, 3*time.Second)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("closed after %v, want about 1 s", took)
		}
		t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
		return func() { conn.Close(); <-done }
	})
}

// TestServerProtocol: what a scraper sees, through Go's HTTP client and
// raw: the metrics with the exposition format's content type at /metrics
// (with a query too) for GET and HEAD, 404 elsewhere, 405 with Allow for
// other methods, two requests on one connection, and Close ending it all.
func TestServerProtocol(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newMetricsServer(ln, defaultLimits)
	m := sampleMetrics(t)
	s.Serve(m)
	defer s.Close()
	var want bytes.Buffer
	m.WriteTo(&want)
	url := "http://" + s.Addr().String()
	for _, c := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/metrics", 200, want.String()},
		{"GET", "/metrics?name[]=x", 200, want.String()},
		{"HEAD", "/metrics", 200, ""},
		{"GET", "/", 404, "the metrics are at /metrics\n"},
		{"GET", "/metricsx", 404, "the metrics are at /metrics\n"},
		{"POST", "/metrics", 405, "GET /metrics\n"},
		{"DELETE", "/metrics", 405, "GET /metrics\n"},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(""))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ctype := "text/plain; charset=utf-8"
		if c.status == 200 {
			ctype = "text/plain; version=0.0.4; charset=utf-8"
		}
		if resp.StatusCode != c.status || string(body) != c.body ||
			resp.Header.Get("Content-Type") != ctype ||
			c.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" ||
			c.method == "HEAD" && resp.ContentLength != int64(want.Len()) {
			t.Errorf("%s %s: %s %q %d bytes: %.100q",
				c.method, c.path, resp.Status, resp.Header, resp.ContentLength, body)
		}
	}

	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range 2 {
		// Bare LFs, as RFC 9112 2.2 allows.
		io.WriteString(conn, "GET /metrics HTTP/1.1\nHost: x\n\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Close || string(body) != want.String() {
			t.Fatalf("request %d on one connection: %s close %v", i, resp.Status, resp.Close)
		}
	}
	s.Close()
	if got := closedBy(t, conn, 2*time.Second); got != "" {
		t.Errorf("after Close: %q", got)
	}
	if _, err := net.Dial("tcp", s.Addr().String()); err == nil {
		t.Errorf("the listener is still open after Close")
	}
}

// TestServerFailingMetrics: a scrape whose metrics cannot be read is
// answered 500 with the reason, and the connection serves on.
func TestServerFailingMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newMetricsServer(ln, defaultLimits)
	s.Serve(withCounter(t, func(AddValue) error { return errors.New("the map is gone") }))
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || string(body) != "metric c_total: the map is gone\n" {
		t.Errorf("%s %q", resp.Status, body)
	}
}

// TestServerNil: a nil server, as when -listen was not given, serves and
// closes nothing.
func TestServerNil(t *testing.T) {
	var s *MetricsServer
	s.Serve(&Metrics{})
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}
