package tool

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of renderers without an outside oracle")

// golden compares got with testdata/name.golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name + ".golden"
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("%s differs:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestLog2Hist compares with output of bcc's own _print_log2_hist (the
// golden files were written by its Python code, run on these slots).
func TestLog2Hist(t *testing.T) {
	for name, c := range map[string]struct {
		slots   []uint64
		valType string
	}{
		"hist_bytes": {append([]uint64{0, 3, 0, 7, 100, 55, 1, 0, 0, 12}, make([]uint64, 55)...), "bytes"},
		"hist_wide":  {append(append(make([]uint64, 40), 5, 0, 9), make([]uint64, 22)...), "usecs"},
		"hist_empty": {make([]uint64, 65), "bytes"},
	} {
		var b bytes.Buffer
		Log2Hist(&b, c.valType, c.slots)
		golden(t, name, b.String())
	}
}

// TestLog2Slot: the slots of bcc's bpf_log2l(v) = bpf_log2(v) + 1.
func TestLog2Slot(t *testing.T) {
	for v, want := range map[uint64]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 3, 1023: 10, 1024: 11, 1 << 63: 64, ^uint64(0): 64} {
		if got := Log2Slot(v); got != want {
			t.Errorf("Log2Slot(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestHeatmap: three intervals over four latency rows, in both modes. The
// golden files were checked by eye: each column's largest count gets the
// darkest shade (# or colour 232), an empty cell the lightest.
func TestHeatmap(t *testing.T) {
	cols := [][]uint64{{0, 10, 5, 0}, {1, 1, 1, 1}, {100, 0, 0, 12}}
	labels := []string{"1us", "2us", "4us", "8us"}
	for _, color := range []bool{false, true} {
		var b bytes.Buffer
		Heatmap(&b, cols, labels, color, "latency", "requests")
		name := "heatmap_text"
		if color {
			name = "heatmap_color"
		}
		golden(t, name, b.String())
	}
}

// TestParse: bad intervals, counts and arguments are usage errors (exit
// status 2), good ones set Interval and Count.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args     []string
		err      string
		interval time.Duration
		count    int
	}{
		{nil, "", time.Second, 0},
		{[]string{"5", "3"}, "", 5 * time.Second, 3},
		{[]string{"0.5"}, "", 500 * time.Millisecond, 0},
		{[]string{"250ms", "1"}, "", 250 * time.Millisecond, 1},
		{[]string{"-json", "2"}, "", 2 * time.Second, 0},
		{[]string{"0"}, "must be more than zero", 0, 0},
		{[]string{"-1"}, "flag provided but not defined: -1", 0, 0},
		{[]string{"--", "-1"}, "must be more than zero", 0, 0},
		{[]string{"5x"}, "want seconds", 0, 0},
		{[]string{"1", "-3"}, "count \"-3\"", 0, 0},
		{[]string{"1", "0"}, "count \"0\"", 0, 0},
		{[]string{"1", "2", "3"}, "unexpected argument \"3\"", 0, 0},
		{[]string{"-bogus"}, "flag provided but not defined", 0, 0},
		{[]string{"1e300"}, "at most 24h", 0, 0},
		{[]string{"86400"}, "", 24 * time.Hour, 0},
		{[]string{"24h"}, "", 24 * time.Hour, 0},
		{[]string{"86400.5"}, "at most 24h", 0, 0},
		{[]string{"24h1s"}, "at most 24h", 0, 0},
		{[]string{"1000000h"}, "at most 24h", 0, 0},
		{[]string{"NaN"}, "want seconds", 0, 0},
		{[]string{"-Inf"}, "flag provided but not defined", 0, 0},
		{[]string{"--", "-Inf"}, "must be more than zero", 0, 0},
	} {
		tl := New("x", "test", "[interval [count]]").Periodic(time.Second)
		err := tl.Parse(c.args)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.err != "" && (!errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.err)
		case c.err == "" && (tl.Interval != c.interval || tl.Count != c.count):
			t.Errorf("%q: interval %v count %d", c.args, tl.Interval, tl.Count)
		}
	}
	tl := New("x", "test", "").Periodic(time.Second).TakesArgs()
	if err := tl.Parse([]string{"vfs_*", "syscalls:*", "5", "2"}); err != nil || len(tl.Args) != 2 || tl.Interval != 5*time.Second || tl.Count != 2 {
		t.Errorf("patterns then interval and count: %q %v %d %v", tl.Args, tl.Interval, tl.Count, err)
	}
	tl = New("x", "test", "").Periodic(time.Second).TakesArgs()
	if err := tl.Parse([]string{"vfs_*", "0"}); !errors.Is(err, ErrUsage) || len(tl.Args) != 1 {
		t.Errorf("pattern then interval 0: %q %v", tl.Args, err)
	}
	if err := New("x", "test", "").Parse([]string{"extra"}); !errors.Is(err, ErrUsage) {
		t.Errorf("a positional argument to a tool without any: %v", err)
	}
	if err := New("x", "test", "").Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}
