//go:build !bpfkit_nethttp

package tool

import (
	"errors"
	"net"
	"time"
)

// accept accepts connections until the listener is closed. When accepting
// fails otherwise (no fd left: EMFILE), it waits, longer each time, as
// net/http does, rather than spin.
func (s *MetricsServer) accept() {
	backoff := time.Duration(0)
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.admit(c)
	}
}
