package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/usdt"
)

// fakeCounts is a counter whose reads give the totals set in it.
type fakeCounts struct {
	totals map[uint64]uint64 // by the key's one number
	miss   uint64
}

func (f *fakeCounts) count(int16) []insn.Item { return nil }

func (f *fakeCounts) read(add func(key []byte, n uint64)) error {
	for k, n := range f.totals {
		add(binary.LittleEndian.AppendUint64(nil, k), n)
	}
	return nil
}

func (f *fakeCounts) missed() (uint64, error) { return f.miss, nil }

func (f *fakeCounts) Close() error { return nil }

// TestReportNeverFalls: an interval prints what each count grew by; a
// total read lower than before (a copy the kernel made while the program
// added to it) prints nothing, and the next interval the growth from the
// highest total seen, never a count wrapped around below zero. Missed
// firings likewise.
func TestReportNeverFalls(t *testing.T) {
	var out bytes.Buffer
	tl := tool.New("usdt", "", "")
	tl.JSON, tl.Stdout = true, &out
	c := &fakeCounts{totals: map[uint64]uint64{}}
	l := argLayout{fields: []field{{N: 1}}, size: 8}
	r := &reporter{t: tl, c: c, l: l, seen: map[string]uint64{}}
	var got []string
	for _, step := range []struct{ total, missed uint64 }{{5, 2}, {3, 1}, {7, 4}} {
		c.totals[9], c.miss = step.total, step.missed
		out.Reset()
		if err := r.report(); err != nil {
			t.Fatal(err)
		}
		var interval struct {
			Counts []struct{ Count uint64 }
			Missed uint64
		}
		if err := json.Unmarshal(out.Bytes(), &interval); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(interval)
		got = append(got, string(b))
	}
	want := []string{`{"Counts":[{"Count":5}],"Missed":2}`, `{"Counts":[],"Missed":0}`,
		`{"Counts":[{"Count":2}],"Missed":2}`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("interval %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// TestMetricsNeverFall: -listen serves, at each scrape, the highest total
// read, so that Prometheus never sees a counter fall (it would read a
// reset): totals 5, 3, 7 are served as 5, 5, 7.
func TestMetricsNeverFall(t *testing.T) {
	c := &fakeCounts{totals: map[uint64]uint64{}}
	l := argLayout{fields: []field{{N: 1}}, size: 8}
	m, err := countMetrics(&usdt.Probe{Provider: "p", Name: "n"}, l, c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, step := range []struct{ total, missed uint64 }{{5, 2}, {3, 1}, {7, 4}} {
		c.totals[9], c.miss = step.total, step.missed
		var out bytes.Buffer
		if _, err := m.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(out.String(), "\n") {
			if strings.HasPrefix(line, "usdt_") {
				got = append(got, line)
			}
		}
	}
	want := []string{
		`usdt_firings_total{probe="p:n",arg1="9"} 5`, `usdt_missed_firings_total{probe="p:n"} 2`,
		`usdt_firings_total{probe="p:n",arg1="9"} 5`, `usdt_missed_firings_total{probe="p:n"} 2`,
		`usdt_firings_total{probe="p:n",arg1="9"} 7`, `usdt_missed_firings_total{probe="p:n"} 4`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("served:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
