package tool

import (
	"bytes"
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// sampleMetrics is a set with each kind of family, labels that need
// escaping and series added out of order.
func sampleMetrics(t *testing.T) *Metrics {
	t.Helper()
	var m Metrics
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	help := "Packets dropped, by location and reason."
	must(m.Counter("test_drops_total", help, []string{"location", "reason"},
		func(add AddValue) error {
			add(100, "__udp4_lib_rcv+0x4bc", "NO_SOCKET")
			add(3, "tcp_v4_rcv+0x1a0", "TCP_CSUM")
			add(1, `odd"name\x`, "")
			add(7, "__udp4_lib_rcv+0x4bc", "SOCKET_FILTER")
			add(2, "two\nlines", "not UTF-8: \xff\xfe")
			add(1e19, "big", "")
			return nil
		}))
	must(m.Gauge("test_entries", "Entries in the map.\nA second line, and a backslash: \\.", nil,
		func(add AddValue) error {
			add(0.25)
			return nil
		}))
	must(m.Histogram("test_latency_seconds", "Block I/O latency.", Microseconds, []string{"device"},
		func(add AddHistogram) error {
			add(Log2Histogram{Slots: []uint64{0, 1, 0, 2, 0, 4, 0, 0, 1}, Sum: 300}, "8:0")
			add(Log2Histogram{Slots: make([]uint64, 9)}, "7:0")
			return nil
		}))
	must(m.Histogram("test_write_size_bytes", "Sizes of writes.", Bytes, nil,
		func(add AddHistogram) error {
			add(Log2Histogram{Slots: []uint64{0, 1, 0, 0, 0, 0, 0, 3}, Sum: 301})
			return nil
		}))
	return &m
}

// TestMetricsExposition: the text of each kind of family against a golden
// file checked by eye against the text format 0.0.4 and, where Debian's
// prometheus package is installed (make deps), by promtool check metrics.
func TestMetricsExposition(t *testing.T) {
	var b bytes.Buffer
	if _, err := sampleMetrics(t).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "metrics", b.String())
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("no promtool (Debian package prometheus, which make deps installs): " +
			"the text is checked against the golden file only")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsHistogram: log2 slots become cumulative buckets at the slots'
// upper edges (1, 3, 7, ... in the unit), in the base unit, with +Inf,
// _sum and _count; a slot past 64 counts in +Inf only.
func TestMetricsHistogram(t *testing.T) {
	for _, c := range []struct {
		unit  Unit
		slots []uint64
		sum   float64
		want  []string
	}{
		{Microseconds, []uint64{0, 1, 2, 0, 3}, 40, []string{
			`h_seconds_bucket{le="0.000001"} 1`,
			`h_seconds_bucket{le="0.000003"} 3`,
			`h_seconds_bucket{le="0.000007"} 3`,
			`h_seconds_bucket{le="0.000015"} 6`,
			`h_seconds_bucket{le="+Inf"} 6`,
			`h_seconds_sum 0.00004`,
			`h_seconds_count 6`,
		}},
		{Nanoseconds, []uint64{5, 0, 1}, 3, []string{
			`h_seconds_bucket{le="0.000000001"} 5`,
			`h_seconds_bucket{le="0.000000003"} 6`,
			`h_seconds_bucket{le="+Inf"} 6`,
			`h_seconds_sum 0.000000003`,
		}},
		{Bytes, append(make([]uint64, 64), 2, 9), 1 << 62, []string{
			`h_bytes_bucket{le="1"} 0`,
			`h_bytes_bucket{le="4503599627370495"} 0`,    // 2^52 - 1, exact as a float64
			`h_bytes_bucket{le="9223372036854776000"} 0`, // 2^63 - 1 as a float64
			`h_bytes_bucket{le="18446744073709552000"} 2`,
			`h_bytes_bucket{le="+Inf"} 11`,
			`h_bytes_sum 4611686018427388000`,
			`h_bytes_count 11`,
		}},
		{Bytes, nil, 0, []string{
			`h_bytes_bucket{le="1"} 0`,
			`h_bytes_bucket{le="+Inf"} 0`,
		}},
	} {
		var m Metrics
		name := "h" + c.unit.suffix()
		if err := m.Histogram(name, "h", c.unit, nil, func(add AddHistogram) error {
			add(Log2Histogram{Slots: c.slots, Sum: c.sum})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := m.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		for _, line := range c.want {
			if !strings.Contains(b.String(), "\n"+line+"\n") {
				t.Errorf("unit %d, %d slots: no line %q", c.unit, len(c.slots), line)
			}
		}
		want := max(min(len(c.slots), 65)-1, 1) + 1 // the slots from 1 to 64 there are, and +Inf
		if got := strings.Count(b.String(), "_bucket{"); got != want {
			t.Errorf("unit %d, %d slots: %d buckets, want %d", c.unit, len(c.slots), got, want)
		}
	}
}

// TestMetricsBucketHistogram: buckets of bounds of their own are written
// cumulative at those bounds, in the base unit, then +Inf with the counts
// past the last bound, _sum and _count; promtool (where installed) takes
// the text. Bounds that do not increase are refused.
func TestMetricsBucketHistogram(t *testing.T) {
	var m Metrics
	bounds := []float64{1000, 2000, 1e6} // ns: 1 µs, 2 µs, 1 ms
	err := m.BucketHistogram("lat_seconds", "Latency.", Nanoseconds, bounds, []string{"device"},
		func(add AddBuckets) error {
			add(Buckets{Counts: []uint64{2, 0, 5, 1, 3}, Sum: 4e9}, "8:0")
			add(Buckets{}, "7:0")
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`lat_seconds_bucket{device="8:0",le="0.000001"} 2`,
		`lat_seconds_bucket{device="8:0",le="0.000002"} 2`,
		`lat_seconds_bucket{device="8:0",le="0.001"} 7`,
		`lat_seconds_bucket{device="8:0",le="+Inf"} 11`,
		`lat_seconds_sum{device="8:0"} 4`,
		`lat_seconds_count{device="8:0"} 11`,
		`lat_seconds_bucket{device="7:0",le="0.001"} 0`,
		`lat_seconds_count{device="7:0"} 0`,
	} {
		if !strings.Contains(b.String(), "\n"+line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = &b
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
	}
	noBuckets := func(AddBuckets) error { return nil }
	for _, bad := range [][]float64{{2, 1}, {1, 1}, {math.NaN()}, {math.Inf(1)}} {
		if err := m.BucketHistogram("b_seconds", "", Seconds, bad, nil, noBuckets); err == nil {
			t.Errorf("bounds %v accepted", bad)
		}
	}
}

// TestMetricsRefused: names against Prometheus's conventions are refused
// when the family is added; a callback's error or a wrong number of label
// values fails the scrape, which then writes nothing.
func TestMetricsRefused(t *testing.T) {
	noValues := func(AddValue) error { return nil }
	noHists := func(AddHistogram) error { return nil }
	var m Metrics
	for _, c := range []struct {
		err  error
		want string
	}{
		{m.Counter("drops", "", nil, noValues), "ends in _total"},
		{m.Gauge("drops_total", "", nil, noValues), "_total is for counters"},
		{m.Counter("9drops_total", "", nil, noValues), `metric name "9drops_total"`},
		{m.Counter("drops-x_total", "", nil, noValues), `metric name "drops-x_total"`},
		{m.Counter("drops_total", "", []string{"a:b"}, noValues), `label name "a:b"`},
		{m.Counter("drops_total", "", []string{"__name"}, noValues), `label name "__name"`},
		{m.Counter("drops_total", "", []string{""}, noValues), `label name ""`},
		{m.Counter("drops_total", "", []string{"a", "a"}, noValues), `label "a" twice`},
		{m.Histogram("latency_us", "", Microseconds, nil, noHists), "ends in _seconds"},
		{m.Histogram("size", "", Bytes, nil, noHists), "ends in _bytes"},
		{m.Histogram("size_bytes", "", Bytes, []string{"le"}, noHists), "the label le"},
		{m.Histogram("args_count", "", Number, nil, noHists), "_count is a name of its own"},
		{m.Histogram("size_bytes", "", Unit(0), nil, noHists), "unit 0"},
		{m.Histogram("size_bytes", "", Seconds+1, nil, noHists), "unit 7"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want an error with %q", c.err, c.want)
		}
	}
	if err := m.Counter("a_total", "", nil, noValues); err != nil {
		t.Fatal(err)
	}
	if err := m.Gauge("a_total", "", nil, noValues); err == nil {
		t.Errorf("a family added twice")
	}

	failing := errors.New("the map is gone")
	for name, m := range map[string]*Metrics{
		"callback": withCounter(t, func(add AddValue) error { add(1, "x"); return failing }),
		"values":   withCounter(t, func(add AddValue) error { add(1, "x", "y"); return nil }),
	} {
		var b bytes.Buffer
		if n, err := m.WriteTo(&b); err == nil || n != 0 || b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes, %v; want an error and nothing written", name, n, err)
		}
	}
}

// withCounter is a set of one counter, labelled l, read by collect.
func withCounter(t *testing.T, collect func(AddValue) error) *Metrics {
	var m Metrics
	if err := m.Counter("c_total", "c", []string{"l"}, collect); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestMetricsMerged: series whose label values read the same once escaped
// (a byte that is not UTF-8, and the text Go quotes it as) are one series
// to Prometheus, written once with their sum; histograms likewise, unless
// their buckets differ.
func TestMetricsMerged(t *testing.T) {
	var b bytes.Buffer
	m := withCounter(t, func(add AddValue) error {
		add(1, "a\xff")
		add(2, `a\xff`)
		add(4, "b")
		return nil
	})
	want := "c_total{l=\"a\\\\xff\"} 3\nc_total{l=\"b\"} 4\n"
	if _, err := m.WriteTo(&b); err != nil || !strings.Contains(b.String(), want) {
		t.Errorf("%v:\n%s", err, b.String())
	}
	var h Metrics
	h.Histogram("h_bytes", "h", Bytes, []string{"l"}, func(add AddHistogram) error {
		add(Log2Histogram{Slots: []uint64{0, 1, 1}, Sum: 3}, "x")
		add(Log2Histogram{Slots: []uint64{0, 1, 1}, Sum: 4}, "x")
		return nil
	})
	b.Reset()
	_, err := h.WriteTo(&b)
	if err != nil || !strings.Contains(b.String(), "h_bytes_bucket{l=\"x\",le=\"3\"} 4\n") ||
		!strings.Contains(b.String(), "h_bytes_sum{l=\"x\"} 7\n") {
		t.Errorf("%v:\n%s", err, b.String())
	}
	var d Metrics
	d.Histogram("h_bytes", "h", Bytes, []string{"l"}, func(add AddHistogram) error {
		add(Log2Histogram{Slots: []uint64{0, 1, 1}}, "x")
		add(Log2Histogram{Slots: []uint64{0, 1}}, "x")
		return nil
	})
	if _, err := d.WriteTo(&b); err == nil || !strings.Contains(err.Error(), "buckets") {
		t.Errorf("histograms with different buckets added up: %v", err)
	}
}

// TestFormatValue: numbers as the exposition format reads them.
func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 100: "100", -3: "-3", 0.25: "0.25", 15e-6: "0.000015", 1e-10: "1e-10",
		1 << 53: "9007199254740992", 1e21: "1e+21",
		math.Inf(1): "+Inf", math.Inf(-1): "-Inf", math.NaN(): "NaN", math.Copysign(0, -1): "0",
	} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%g) = %q, want %q", v, got, want)
		}
	}
}
