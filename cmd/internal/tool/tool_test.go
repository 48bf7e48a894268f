package tool

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
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
		{[]string{"2", "-json"}, "", 2 * time.Second, 0},
		{[]string{"2", "-json", "3"}, "", 2 * time.Second, 3},
		{[]string{"2", "--json=true", "3"}, "", 2 * time.Second, 3},
		{[]string{"--", "2", "3"}, "", 2 * time.Second, 3},
		{[]string{"2", "--", "-json"}, "count \"-json\"", 0, 0},
		{[]string{"0"}, "must be more than zero", 0, 0},
		{[]string{"-1"}, `unknown flag "-1"`, 0, 0},
		{[]string{"--", "-1"}, "must be more than zero", 0, 0},
		{[]string{"5x"}, "want seconds", 0, 0},
		{[]string{"1", "-3"}, `unknown flag "-3"`, 0, 0},
		{[]string{"1", "--", "-3"}, "count \"-3\"", 0, 0},
		{[]string{"1", "0"}, "count \"0\"", 0, 0},
		{[]string{"1", "2", "3"}, "unexpected argument \"3\"", 0, 0},
		{[]string{"-bogus"}, `unknown flag "-bogus"`, 0, 0},
		{[]string{"1e300"}, "at most 24h", 0, 0},
		{[]string{"86400"}, "", 24 * time.Hour, 0},
		{[]string{"24h"}, "", 24 * time.Hour, 0},
		{[]string{"86400.5"}, "at most 24h", 0, 0},
		{[]string{"24h1s"}, "at most 24h", 0, 0},
		{[]string{"1000000h"}, "at most 24h", 0, 0},
		{[]string{"NaN"}, "want seconds", 0, 0},
		{[]string{"-Inf"}, `unknown flag "-Inf"`, 0, 0},
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

// TestParseAnywhere: flags before, between and after the positional
// arguments, in each of their forms, as bcc's users type them; "--" ends
// the flags.
func TestParseAnywhere(t *testing.T) {
	for _, c := range []struct {
		args     []string
		pos      []string
		p        int
		json     bool
		interval time.Duration
		count    int
	}{
		{[]string{"vfs_*", "-p", "5", "1"}, []string{"vfs_*"}, 5, false, time.Second, 0},
		{[]string{"PATH", "PROBE", "-p", "1"}, []string{"PATH", "PROBE"}, 1, false, time.Second, 0},
		{[]string{"-p=7", "a", "-json", "b", "3", "2"}, []string{"a", "b"},
			7, true, 3 * time.Second, 2},
		{[]string{"--p", "7", "a", "--json"}, []string{"a"}, 7, true, time.Second, 0},
		{[]string{"--p=7", "a", "5", "-json=false"}, []string{"a"}, 7, false, 5 * time.Second, 0},
		{[]string{"a", "--", "b", "2"}, []string{"a", "b"}, 0, false, 2 * time.Second, 0},
	} {
		tl := New("x", "test", "").Periodic(time.Second).TakesArgs()
		p := tl.Flags.Int("p", 0, "a number")
		if err := tl.Parse(c.args); err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		got := fmt.Sprint(tl.Args, *p, tl.JSON, tl.Interval, tl.Count)
		if want := fmt.Sprint(c.pos, c.p, c.json, c.interval, c.count); got != want {
			t.Errorf("%q: args, -p, -json, interval and count %s, want %s", c.args, got, want)
		}
	}
	tl := New("x", "test", "").TakesArgs()
	p := tl.Flags.Int("p", 0, "a number")
	err := tl.Parse([]string{"-", "-p", "3", "--", "-json", "-p"})
	if err != nil || *p != 3 || tl.JSON ||
		fmt.Sprint(tl.Args) != "[- -json -p]" {
		t.Errorf("\"-\" and \"--\": args %q -p %d -json %v: %v", tl.Args, *p, tl.JSON, err)
	}
}

// TestParseErrors: every mistake is a usage error of one line that quotes
// what the user typed, a newline or an escape sequence included; -h and
// -version are found wherever they are.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want error
		msg  string
	}{
		{[]string{"a", "-h"}, flag.ErrHelp, ""},
		{[]string{"-p", "1", "--help"}, flag.ErrHelp, ""},
		{[]string{"a", "-version"}, ErrVersion, ""},
		{[]string{"--version", "a"}, ErrVersion, ""},
		{[]string{"a", "-p"}, ErrUsage, "flag -p needs a value"},
		{[]string{"a", "-p", "x\ny"}, ErrUsage, `-p "x\ny": parse error`},
		{[]string{"a", "-q\x1b[2J"}, ErrUsage, `unknown flag "-q\x1b[2J"`},
		{[]string{"a", "-=1"}, ErrUsage, `unknown flag "-=1"`},
		{[]string{"a", "---p", "1"}, ErrUsage, `unknown flag "---p"`},
		{[]string{"a", "-json=maybe"}, ErrUsage, `-json "maybe": parse error`},
		{[]string{"a", "-1"}, ErrUsage, `"-1" (an argument that begins with '-' goes after --)`},
	} {
		tl := New("x", "test", "").TakesArgs()
		tl.Flags.Int("p", 0, "a number")
		err := tl.Parse(c.args)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%q: %v; want %v with %q", c.args, err, c.want, c.msg)
		}
		var b bytes.Buffer
		tl.Stderr = &b
		status := tl.Report(err)
		line, rest, _ := strings.Cut(b.String(), "\n")
		oneLine := rest == "" && !strings.ContainsFunc(line, unicode.IsControl)
		if c.want == ErrUsage && (status != 2 || !oneLine) {
			t.Errorf("%q: status %d, %q; want 2 and one line without a control character",
				c.args, status, b.String())
		}
	}
}

// TestReport: the status and message of each kind of error; a usage
// error's message stays one line even when a raw newline or escape
// reached it, another error's lines are indented.
func TestReport(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		out    string
	}{
		{nil, 0, ""},
		{Usagef("-p %d: want a process id", -3), 2, "x: -p -3: want a process id\n"},
		{Usagef("pattern %s", "a\nb\x1b[31m"), 2, `x: pattern a\nb\x1b[31m` + "\n"},
		{fmt.Errorf("the verifier said:\n0: r0 = 1"), 1, "x: the verifier said:\n  0: r0 = 1\n"},
	} {
		var b bytes.Buffer
		tl := New("x", "test", "")
		tl.Stderr = &b
		if status := tl.Report(c.err); status != c.status || b.String() != c.out {
			t.Errorf("%v: status %d, %q; want %d, %q", c.err, status, b.String(), c.status, c.out)
		}
	}
}

// TestPlain: a Plain tool has no -json, and says so as of any unknown flag.
func TestPlain(t *testing.T) {
	tl := New("x", "test", "").Plain()
	if err := tl.Parse([]string{"-json"}); !errors.Is(err, ErrUsage) {
		t.Errorf("-json on a Plain tool: %v", err)
	}
	var b bytes.Buffer
	tl.PrintUsage(&b)
	if strings.Contains(b.String(), "-json") || !strings.Contains(b.String(), "-version") {
		t.Errorf("Plain tool's usage:\n%s", b.String())
	}
}
