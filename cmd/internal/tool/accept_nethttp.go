//go:build bpfkit_nethttp

package tool

import (
	"bytes"
	"net/http"
)

// accept serves with net/http's server in place of this package's own,
// in a build with the tag bpfkit_nethttp, which make bench makes of
// dropmon to measure what net/http would add to a tool (BENCHMARKS.md).
// It answers as the package's own server does and has its timeouts and
// header limit; it has no cap on connections.
func (s *MetricsServer) accept() {
	srv := &http.Server{
		ReadHeaderTimeout: s.limits.headerTimeout,
		WriteTimeout:      s.limits.writeTimeout,
		MaxHeaderBytes:    s.limits.maxHeaderBytes,
		Handler:           http.HandlerFunc(s.handle),
	}
	srv.Serve(s.ln)
}

// handle answers one request as respond does.
func (s *MetricsServer) handle(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != "GET" && r.Method != "HEAD":
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET /metrics", http.StatusMethodNotAllowed)
		return
	case r.URL.Path != "/metrics":
		http.Error(w, "the metrics are at /metrics", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	m := s.metrics
	s.mu.Unlock()
	var body bytes.Buffer
	if err := m.write(&body); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(body.Bytes())
}
