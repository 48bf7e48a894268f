package tool

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Metrics is a set of metric families written in Prometheus's text
// exposition format, version 0.0.4. Each family has a callback that reads
// its values when the family is written (at every scrape), so that what
// Prometheus sees is what the kernel's maps hold at that moment.
//
// The zero value is an empty set, ready to use. Families are written in
// the order they were added, their series sorted by their label sets as
// written, so that the text is the same for the same values.
type Metrics struct {
	mu       sync.Mutex // one scrape at a time: the callbacks need not be safe for concurrent use
	families []*family
}

// Collect reads a counter's or a gauge's series at a scrape, reporting
// each through add; an error it returns fails the scrape.
type Collect func(add AddValue) error

// CollectHistograms reads a histogram's series at a scrape, reporting each
// through add; an error it returns fails the scrape.
type CollectHistograms func(add AddHistogram) error

// AddValue reports one series of a counter or a gauge: its value, and
// its label values in the order of the family's label names.
type AddValue func(value float64, labelValues ...string)

// AddHistogram reports one series of a histogram: its counts, and its
// label values in the order of the family's label names.
type AddHistogram func(h Log2Histogram, labelValues ...string)

// Log2Histogram is one series of a histogram the tools count as bcc's
// log2 histograms are counted: Slots[i] counts the values v with
// Log2Slot(v) == i (0 and 1 in slot 1, 2 to 3 in slot 2, 4 to 7 in slot
// 3, ...), as Log2Hist takes them.
//
// In the exposition, slot i is the bucket le="2^i - 1" (1, 3, 7, 15, ...)
// converted to the base unit, one bucket for each slot from 1 to
// len(Slots)-1 at every scrape, so that the buckets of a series stay the
// same over time; slot 0, which Log2Slot never gives, counts in the
// first.
type Log2Histogram struct {
	Slots []uint64
	Sum   float64 // the sum of the values counted, in the family's Unit
}

// Unit is what a histogram's values are counted in. Prometheus's
// conventions want base units, seconds and bytes: the exposition
// converts bucket bounds and sums to them, and the family's name ends in
// the base unit (_seconds, _bytes).
type Unit int

const (
	Number       Unit = iota + 1 // a count of something, no unit: no suffix asked
	Bytes                        // written as bytes, the name ending in _bytes
	Nanoseconds                  // written as seconds, the name ending in _seconds
	Microseconds                 // written as seconds
	Milliseconds                 // written as seconds
	Seconds                      // written as seconds
)

// perBase is how many of the unit make one of its base unit.
func (u Unit) perBase() float64 {
	switch u {
	case Nanoseconds:
		return 1e9
	case Microseconds:
		return 1e6
	case Milliseconds:
		return 1e3
	}
	return 1
}

// suffix is what a family's name in the unit must end with.
func (u Unit) suffix() string {
	switch u {
	case Bytes:
		return "_bytes"
	case Nanoseconds, Microseconds, Milliseconds, Seconds:
		return "_seconds"
	}
	return ""
}

// family is one metric family: its name, help, type and label names, and
// collect, which writes its series.
type family struct {
	name, help, kind string // kind: counter, gauge or histogram
	labels           []string
	unit             Unit
	bounds           []float64 // a BucketHistogram's upper bounds, in unit; nil for log2 slots
	collect          func(s *scrape) error
}

// series is one series of a family being written: its label set as
// written (a="x",b="y", the values escaped), and its value or its
// histogram.
type series struct {
	set   string
	value float64
	hist  []uint64 // cumulative counts per bucket, then the count of all
	sum   float64
}

// scrape collects the series of one family.
type scrape struct {
	f      *family
	series []series
	err    error
}

// Counter adds a counter family, the total of something since the tool
// started (drops, calls): Prometheus's conventions want its name to end
// in _total. collect is called at every scrape.
func (m *Metrics) Counter(name, help string, labels []string, collect Collect) error {
	if !strings.HasSuffix(name, "_total") {
		return fmt.Errorf("counter %q: the name of a counter ends in _total", name)
	}
	return m.addValues(name, help, "counter", labels, collect)
}

// Gauge adds a gauge family, a value that goes up and down (entries in a
// map, a queue's length). collect is as for Counter.
func (m *Metrics) Gauge(name, help string, labels []string, collect Collect) error {
	if strings.HasSuffix(name, "_total") {
		return fmt.Errorf("gauge %q: _total is for counters", name)
	}
	return m.addValues(name, help, "gauge", labels, collect)
}

// addValues adds a counter or gauge family.
func (m *Metrics) addValues(name, help, kind string, labels []string, collect Collect) error {
	f := &family{name: name, help: help, kind: kind, labels: labels}
	f.collect = func(s *scrape) error {
		return collect(func(value float64, labelValues ...string) {
			if s.check(labelValues) {
				s.series = append(s.series, s.labelled(labelValues, series{value: value}))
			}
		})
	}
	return m.add(f)
}

// Histogram adds a histogram family of log2 slots counted in unit; its
// name ends in the unit's base (_seconds for Microseconds, _bytes for
// Bytes), and the exposition gives its buckets' bounds and its sum in
// that base unit. collect is called at every scrape.
func (m *Metrics) Histogram(name, help string, unit Unit, labels []string,
	collect CollectHistograms) error {
	if err := checkHistogram(name, unit, labels); err != nil {
		return err
	}
	f := &family{name: name, help: help, kind: "histogram", labels: labels, unit: unit}
	f.collect = func(s *scrape) error {
		return collect(func(h Log2Histogram, labelValues ...string) {
			if !s.check(labelValues) {
				return
			}
			// A bucket for each slot from 1 to 64 there is, then +Inf.
			buckets := max(min(len(h.Slots), maxLog2Slot+1)-1, 1)
			counts := make([]uint64, buckets+1)
			for i, n := range h.Slots {
				counts[min(max(i, 1)-1, buckets)] += n
			}
			s.series = append(s.series, s.labelled(labelValues, cumulative(counts, h.Sum)))
		})
	}
	return m.add(f)
}

// Buckets is one series of a BucketHistogram: Counts[i] counts the values
// of bucket i, above bound i-1 and up to bound i; the one past the last
// bound, those above every bound (Counts past it count there too).
type Buckets struct {
	Counts []uint64
	Sum    float64 // the sum of the values counted, in the family's Unit
}

// AddBuckets reports one series of a BucketHistogram: its counts, and its
// label values in the order of the family's label names.
type AddBuckets func(h Buckets, labelValues ...string)

// CollectBuckets reads a BucketHistogram's series at a scrape, reporting
// each through add; an error it returns fails the scrape.
type CollectBuckets func(add AddBuckets) error

// BucketHistogram adds a histogram family as Histogram does, for values
// counted in buckets of bounds of their own rather than log2 slots:
// bounds are the buckets' upper bounds in unit, increasing, and +Inf
// follows them (tracex3's latencies: 1, 2, 4 ... 512 µs, then 1 ms ...).
func (m *Metrics) BucketHistogram(name, help string, unit Unit, bounds []float64,
	labels []string, collect CollectBuckets) error {
	if err := checkHistogram(name, unit, labels); err != nil {
		return err
	}
	for i := range bounds {
		if math.IsNaN(bounds[i]) || math.IsInf(bounds[i], 0) || i > 0 && bounds[i] <= bounds[i-1] {
			return fmt.Errorf("histogram %q: bounds %v: want finite numbers, increasing", name, bounds)
		}
	}
	bounds = slices.Clone(bounds)
	f := &family{name: name, help: help, kind: "histogram", labels: labels, unit: unit, bounds: bounds}
	f.collect = func(s *scrape) error {
		return collect(func(h Buckets, labelValues ...string) {
			if !s.check(labelValues) {
				return
			}
			counts := make([]uint64, len(bounds)+1)
			for i, n := range h.Counts {
				counts[min(i, len(bounds))] += n
			}
			s.series = append(s.series, s.labelled(labelValues, cumulative(counts, h.Sum)))
		})
	}
	return m.add(f)
}

// checkHistogram says why a histogram family's name, unit or labels are
// refused, if they are.
func checkHistogram(name string, unit Unit, labels []string) error {
	switch {
	case unit < Number || unit > Seconds:
		return fmt.Errorf("histogram %q: unit %d is none of tool's units", name, unit)
	case !strings.HasSuffix(name, unit.suffix()):
		return fmt.Errorf("histogram %q: the name of a histogram in that unit ends in %s",
			name, unit.suffix())
	case slices.Contains(labels, "le"):
		return fmt.Errorf("histogram %q: the label le is the buckets'", name)
	}
	for _, suffix := range []string{"_total", "_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, suffix) {
			return fmt.Errorf("histogram %q: %s is a name of its own", name, suffix)
		}
	}
	return nil
}

// cumulative is a histogram's series of counts per bucket, +Inf's last:
// each bucket's count with those below it, as the exposition writes them.
func cumulative(counts []uint64, sum float64) series {
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	return series{hist: counts, sum: sum}
}

// maxLog2Slot is the last slot of a u64's log2 histogram, 2^63 and up.
const maxLog2Slot = 64

// add checks a family's names and adds it.
func (m *Metrics) add(f *family) error {
	if !validName(f.name, true) {
		return fmt.Errorf("metric name %q: want letters, digits, '_' and ':', not a digit first",
			f.name)
	}
	for i, l := range f.labels {
		if !validName(l, false) || strings.HasPrefix(l, "__") {
			return fmt.Errorf("%s: label name %q: want letters, digits and '_', "+
				"not a digit or __ first", f.name, l)
		}
		if slices.Contains(f.labels[:i], l) {
			return fmt.Errorf("%s: label %q twice", f.name, l)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.families {
		if g.name == f.name {
			return fmt.Errorf("metric %q added twice", f.name)
		}
	}
	m.families = append(m.families, f)
	return nil
}

// validName says whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*),
// or with colon false a label name, which has no ':'.
func validName(s string, colon bool) bool {
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		digit := r >= '0' && r <= '9'
		if !letter && !(colon && r == ':') && !(i > 0 && digit) {
			return false
		}
	}
	return s != ""
}

// check says whether a series has as many label values as its family has
// names; the first that has not fails the scrape.
func (s *scrape) check(labelValues []string) bool {
	if len(labelValues) == len(s.f.labels) {
		return true
	}
	if s.err == nil {
		s.err = fmt.Errorf("metric %s: %d label values for the labels %q",
			s.f.name, len(labelValues), s.f.labels)
	}
	return false
}

// labelled is x with its label set, the label values escaped.
func (s *scrape) labelled(labelValues []string, x series) series {
	pairs := make([]string, len(labelValues))
	for i, v := range labelValues {
		pairs[i] = s.f.labels[i] + `="` + labelValue(v) + `"`
	}
	x.set = strings.Join(pairs, ",")
	return x
}

// WriteTo writes every family in the text exposition format, reading
// each through its callback. It writes nothing if a callback fails, nor
// for a nil Metrics.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		return 0, err
	}
	return b.WriteTo(w)
}

// write appends the exposition to b; if a callback fails, what it
// appended is partial, for the caller to drop.
func (m *Metrics) write(b *bytes.Buffer) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.families {
		s := &scrape{f: f}
		err := f.collect(s)
		if err != nil {
			err = fmt.Errorf("metric %s: %w", f.name, err)
		} else if s.err != nil {
			err = s.err
		}
		all, mergeErr := merge(s.series)
		if err == nil && mergeErr != nil {
			err = fmt.Errorf("metric %s: %w", f.name, mergeErr)
		}
		if err != nil {
			return err
		}
		f.write(b, all)
	}
	return nil
}

// merge sorts a family's series by their label sets as written and adds
// up those whose label values read the same once escaped: to Prometheus
// they are one series. Histograms added up must have the same buckets.
func merge(all []series) ([]series, error) {
	sort.Slice(all, func(i, j int) bool { return all[i].set < all[j].set })
	var out []series
	for _, s := range all {
		last := len(out) - 1
		if last < 0 || out[last].set != s.set {
			out = append(out, s)
			continue
		}
		if len(out[last].hist) != len(s.hist) {
			return nil, fmt.Errorf("two series {%s} with %d and %d buckets",
				s.set, len(out[last].hist), len(s.hist))
		}
		out[last].value += s.value
		out[last].sum += s.sum
		for i, n := range s.hist {
			out[last].hist[i] += n
		}
	}
	return out, nil
}

// write writes a family: its HELP and TYPE lines, then its series.
func (f *family) write(b *bytes.Buffer, all []series) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
	for _, s := range all {
		set := s.set
		if f.kind != "histogram" {
			writeSample(b, f.name, set, s.value)
			continue
		}
		perBase := f.unit.perBase()
		for i, n := range s.hist[:len(s.hist)-1] {
			le := `le="` + formatValue(f.bound(i)/perBase) + `"`
			writeSample(b, f.name+"_bucket", joinLabels(set, le), float64(n))
		}
		count := float64(s.hist[len(s.hist)-1])
		writeSample(b, f.name+"_bucket", joinLabels(set, `le="+Inf"`), count)
		writeSample(b, f.name+"_sum", set, s.sum/perBase)
		writeSample(b, f.name+"_count", set, count)
	}
}

// bound is the upper bound of a histogram's bucket i, in its unit: its
// own, or the largest value of log2 slot i+1.
func (f *family) bound(i int) float64 {
	if f.bounds != nil {
		return f.bounds[i]
	}
	if i+1 == maxLog2Slot {
		return float64(uint64(math.MaxUint64))
	}
	return float64(uint64(1)<<(i+1) - 1)
}

// joinLabels joins two label sets written as `a="x",b="y"`.
func joinLabels(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// writeSample writes one sample line: name{labels} value.
func writeSample(b *bytes.Buffer, name, labels string, value float64) {
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(b, "%s%s %s\n", name, labels, formatValue(value))
}

// formatValue writes a value as the exposition format reads it: whole
// numbers without a point or exponent, small and large ones in decimal
// (a bucket of 15 µs is le="0.000015"), and +Inf, -Inf and NaN.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatInt(int64(v), 10)
	case math.Abs(v) >= 1e-9 && math.Abs(v) < 1e21:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// labelValue escapes a label value as the exposition format asks
// (backslash, double quote and newline). Prometheus refuses a value that
// is not UTF-8, and with it the whole scrape: a byte that is not is
// written as \xNN, as Go quotes it.
func labelValue(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = fmt.Appendf(b, `\\x%02x`, s[i])
		case r == '\\':
			b = append(b, `\\`...)
		case r == '"':
			b = append(b, `\"`...)
		case r == '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// escapeHelp escapes a HELP text: backslash and newline.
func escapeHelp(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "\n", `\n`)
}
