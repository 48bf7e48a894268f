package tool

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ListenFlag defines -listen ADDR, to serve the tool's metrics at
// http://ADDR/metrics for Prometheus. Parse checks the address's syntax
// (HOST:PORT or :PORT, the host a name or an IP address, the port a
// number up to 65535, 0 for a free one): a bad one is a usage error.
// After Parse the returned string holds the address, "" when -listen was
// not given; ListenMetrics binds it.
func (t *Tool) ListenFlag() *string {
	addr := new(string)
	t.Flags.Var(listenValue{addr}, "listen",
		"serve the metrics at http://`ADDR`/metrics for Prometheus (HOST:PORT or :PORT)")
	return addr
}

// ListenMetrics binds addr (from ListenFlag) for a MetricsServer, which
// serves nothing before Serve and then says on Stderr where it serves.
// Call it before anything is loaded, so that an address in use is an
// error before anything was done. For "" it returns a nil server, whose
// Serve and Close do nothing.
func (t *Tool) ListenMetrics(addr string) (*MetricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-listen %q: %w", addr, err)
	}
	s := newMetricsServer(ln, defaultLimits)
	s.serving = func() {
		fmt.Fprintf(t.Stderr, "%s: serving http://%s/metrics\n", t.Name, s.Addr())
	}
	return s, nil
}

// listenValue is the flag.Value of -listen.
type listenValue struct{ addr *string }

func (v listenValue) String() string {
	if v.addr == nil { // the zero value flag.PrintDefaults makes to compare with
		return ""
	}
	return *v.addr
}

func (v listenValue) Set(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("want HOST:PORT or :PORT, the port a number up to 65535")
	}
	if !validHost(host) {
		return fmt.Errorf("the host is neither a name nor an IP address")
	}
	*v.addr = s
	return nil
}

// validHost says whether host is "" (every address), an IP address (an
// IPv6 one with a zone too: fe80::1%eth0) or a host name: labels of
// letters, digits and '-', 63 bytes at most, joined by dots (RFC 1123).
func validHost(host string) bool {
	ip, _, _ := strings.Cut(host, "%")
	if host == "" || net.ParseIP(ip) != nil {
		return true
	}
	if len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
