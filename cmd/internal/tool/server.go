package tool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MetricsServer serves a Metrics at http://ADDR/metrics to Prometheus. It
// speaks the part of HTTP/1.1 a scraper uses (GET and HEAD, persistent
// connections, pipelined requests, HTTP/1.0 clients) and holds against
// clients that do not play along:
//
//   - it serves at most maxConns connections at once; a new one past that
//     closes the connection that has waited longest for a whole request,
//     so idle connections (slowloris) cannot keep a scrape out;
//   - a request's line and headers must arrive within headerTimeout, in
//     at most maxHeaderBytes; a response must be taken within
//     writeTimeout, so a client that never reads is let go;
//   - each connection reads through one fixed buffer and builds one
//     response at a time, whatever the client sends.
//
// It exists, instead of net/http's server, to keep the tools small:
// BENCHMARKS.md has what net/http would add to dropmon.
type MetricsServer struct {
	ln      net.Listener
	limits  serverLimits
	serving func() // says where Serve serves; nil says nothing

	mu      sync.Mutex
	metrics *Metrics
	conns   map[*serverConn]struct{}
	closed  bool
}

// serverLimits bound what a client can make the server hold.
type serverLimits struct {
	maxConns       int           // connections served at once
	headerTimeout  time.Duration // to receive a request's line and headers
	writeTimeout   time.Duration // to send a response
	maxHeaderBytes int           // of a request's line and headers
	maxRequests    int           // on one connection, then it is closed
}

// defaultLimits are generous for Prometheus, which scrapes each target
// from one connection at a time and sends a request of a few hundred
// bytes, and tight for anyone else.
var defaultLimits = serverLimits{
	maxConns:       32,
	headerTimeout:  5 * time.Second,
	writeTimeout:   10 * time.Second,
	maxHeaderBytes: 16 << 10,
	maxRequests:    1000,
}

// readBufferSize is each connection's read buffer: a line longer than it
// is refused.
const readBufferSize = 4 << 10

// readers and buffers are the connections' read buffers and the buffers
// responses are built in, reused: a burst of connections or of requests
// makes little garbage, and the process's peak memory stays near its usual.
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}
	buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// serverConn is one connection and since when it has waited for a whole
// request (zero while one is being answered).
type serverConn struct {
	c            net.Conn
	waitingSince time.Time
}

func newMetricsServer(ln net.Listener, limits serverLimits) *MetricsServer {
	return &MetricsServer{ln: ln, limits: limits, conns: map[*serverConn]struct{}{}}
}

// Addr is the address the server is bound to, its port chosen if it was 0.
func (s *MetricsServer) Addr() net.Addr {
	return s.ln.Addr()
}

// Serve serves m at /metrics, in the background, until Close. A nil
// server (no address was given) serves nothing.
func (s *MetricsServer) Serve(m *Metrics) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.metrics = m
	s.mu.Unlock()
	if s.serving != nil {
		s.serving()
	}
	go s.accept()
}

// Close stops the server: it closes the listener and every connection.
// A nil server has nothing to close.
func (s *MetricsServer) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	for sc := range s.conns {
		sc.c.Close()
	}
	clear(s.conns)
	s.mu.Unlock()
	return s.ln.Close()
}

// admit serves c, making room for it if maxConns are served: the
// connection that has waited longest for a whole request is closed; if
// every one is being answered, c is.
func (s *MetricsServer) admit(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return
	}
	if len(s.conns) >= s.limits.maxConns {
		var oldest *serverConn
		for sc := range s.conns {
			waiting := !sc.waitingSince.IsZero()
			if waiting && (oldest == nil || sc.waitingSince.Before(oldest.waitingSince)) {
				oldest = sc
			}
		}
		if oldest == nil {
			c.Close()
			return
		}
		oldest.c.Close()
		delete(s.conns, oldest)
	}
	sc := &serverConn{c: c, waitingSince: time.Now()}
	s.conns[sc] = struct{}{}
	go s.serve(sc)
}

// waiting marks sc as waiting for a request, or not.
func (s *MetricsServer) waiting(sc *serverConn, waiting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc.waitingSince = time.Time{}
	if waiting {
		sc.waitingSince = time.Now()
	}
}

// serve answers the requests of one connection, one after another, until
// the client or a limit closes it.
func (s *MetricsServer) serve(sc *serverConn) {
	defer func() {
		sc.c.Close()
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
	r := readers.Get().(*bufio.Reader)
	r.Reset(sc.c)
	defer func() {
		r.Reset(nil)
		readers.Put(r)
	}()
	for n := 1; n <= s.limits.maxRequests; n++ {
		s.waiting(sc, true)
		sc.c.SetReadDeadline(time.Now().Add(s.limits.headerTimeout))
		req, err := readRequest(r, s.limits.maxHeaderBytes)
		s.waiting(sc, false)
		if refused, ok := err.(*httpError); ok {
			sc.c.SetWriteDeadline(time.Now().Add(s.limits.writeTimeout))
			answer := response{status: refused.status, body: []byte(refused.why + "\n")}
			answer.close = true
			answer.write(sc.c)
			return
		}
		if err != nil { // the client left, or took too long: nothing to answer
			return
		}
		keep := !req.close && !req.body && n < s.limits.maxRequests
		sc.c.SetWriteDeadline(time.Now().Add(s.limits.writeTimeout))
		if err := s.respond(sc.c, req, keep); err != nil || !keep {
			return
		}
	}
}

// respond answers one request: the metrics for GET or HEAD of /metrics,
// else 404 or 405.
func (s *MetricsServer) respond(w io.Writer, req request, keep bool) error {
	answer := response{close: !keep, head: req.method == "HEAD"}
	switch {
	case req.method != "GET" && !answer.head:
		answer.status, answer.body = "405 Method Not Allowed", []byte("GET /metrics\n")
		answer.allow = true
		return answer.write(w)
	case req.path() != "/metrics":
		answer.status, answer.body = "404 Not Found", []byte("the metrics are at /metrics\n")
		return answer.write(w)
	}
	s.mu.Lock()
	m := s.metrics
	s.mu.Unlock()
	body := buffers.Get().(*bytes.Buffer)
	defer buffers.Put(body)
	body.Reset()
	if err := m.write(body); err != nil {
		answer.status, answer.body = "500 Internal Server Error", []byte(err.Error()+"\n")
		return answer.write(w)
	}
	answer.status, answer.exposition, answer.body = "200 OK", true, body.Bytes()
	return answer.write(w)
}

// response is what the server answers.
type response struct {
	status     string // "200 OK"
	exposition bool   // the body is in the exposition format, else plain text
	allow      bool   // says which methods are allowed, for a 405
	body       []byte
	close      bool // the connection ends after it
	head       bool // it answers a HEAD: no body, the headers as for a GET
}

// write writes the response in one write: the status line and headers,
// and the body unless it answers a HEAD.
func (r response) write(w io.Writer) error {
	contentType := "text/plain; charset=utf-8"
	if r.exposition {
		contentType = "text/plain; version=0.0.4; charset=utf-8"
	}
	b := buffers.Get().(*bytes.Buffer)
	defer buffers.Put(b)
	b.Reset()
	fmt.Fprintf(b, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n",
		r.status, contentType, len(r.body))
	if r.allow {
		b.WriteString("Allow: GET, HEAD\r\n")
	}
	if r.close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	if !r.head {
		b.Write(r.body)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// request is what the server needs of a request.
type request struct {
	method, target string
	close          bool // Connection: close, or HTTP/1.0
	body           bool // it has a body, which the server does not read: the connection ends
}

// path is the request's path: the target without its query, and without
// scheme and host in the absolute form (http://host/metrics).
func (r request) path() string {
	p, _, _ := strings.Cut(r.target, "?")
	if rest, ok := strings.CutPrefix(p, "http://"); ok {
		_, p, _ = strings.Cut(rest, "/")
		p = "/" + p
	}
	return p
}

// httpError is a request the server refuses with status, and closes.
type httpError struct {
	status, why string
}

func (e *httpError) Error() string { return e.status + ": " + e.why }

// readRequest reads a request's line and headers from r, at most limit
// bytes of them (RFC 9112, sections 2 to 5). A request that breaks the
// syntax or a limit is an *httpError; another error is the connection's.
func readRequest(r *bufio.Reader, limit int) (request, error) {
	line, err := readLine(r, &limit)
	if err == nil && line == "" { // an empty line before a request is ignored (RFC 9112, 2.2)
		line, err = readLine(r, &limit)
	}
	if err != nil {
		return request{}, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !isToken(method) || target == "" || strings.Contains(proto, " ") {
		return request{}, &httpError{"400 Bad Request", "not an HTTP request line"}
	}
	req := request{method: method, target: target}
	switch {
	case proto == "HTTP/1.1":
	case proto == "HTTP/1.0":
		req.close = true
	case len(proto) == 8 && strings.HasPrefix(proto, "HTTP/") && proto[6] == '.':
		return request{}, &httpError{"505 HTTP Version Not Supported", "HTTP/1.1 or HTTP/1.0 only"}
	default:
		return request{}, &httpError{"400 Bad Request", "not an HTTP request line"}
	}
	for {
		h, err := readLine(r, &limit)
		if err != nil {
			return request{}, err
		}
		if h == "" {
			return req, nil
		}
		name, value, ok := strings.Cut(h, ":")
		if !ok || !isToken(name) { // a line folded onto the previous (obs-fold) starts with a space
			return request{}, &httpError{"400 Bad Request", "not an HTTP header line"}
		}
		value = strings.Trim(value, " \t")
		switch strings.ToLower(name) {
		case "connection":
			for _, option := range strings.Split(value, ",") {
				req.close = req.close || strings.EqualFold(strings.TrimSpace(option), "close")
			}
		case "content-length":
			n, err := strconv.ParseUint(value, 10, 63)
			if err != nil {
				return request{}, &httpError{"400 Bad Request", "bad Content-Length"}
			}
			req.body = req.body || n > 0
		case "transfer-encoding":
			req.body = true
		}
	}
}

// readLine reads a line ending in LF (CRLF, or a bare LF, RFC 9112 2.2)
// and takes its length from *budget. A line longer than the read buffer
// or the budget is refused (431), as is a control character in it (400).
func readLine(r *bufio.Reader, budget *int) (string, error) {
	b, err := r.ReadSlice('\n')
	*budget -= len(b)
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || *budget < 0:
		why := "the request's line and headers are too long"
		return "", &httpError{"431 Request Header Fields Too Large", why}
	case err != nil:
		return "", err
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return "", &httpError{"400 Bad Request", "a control character in the request"}
		}
	}
	return string(b), nil
}

// isToken says whether s is an HTTP token (RFC 9110 5.6.2): a method or a
// header name.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}
