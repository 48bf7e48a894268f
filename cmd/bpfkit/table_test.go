package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLayout: at 80 columns the first eight columns fit exactly; wider,
// the others too, the last flexible one reaching the edge; narrower, the
// columns kept longest; in a file or a pipe every column, as wide as its
// cells.
func TestLayout(t *testing.T) {
	rows := []*row{{
		ID: 123456, Type: "raw_tracepoint", Name: "a_long_name_15c",
		procs:    []proc{{PID: 4194304, Comm: "a-long-command-"}},
		Attached: []string{"uprobe /usr/lib/x86_64-linux-gnu/libc.so.6+0x1234", "kprobe vfs_read"},
		Events:   5, EventsPerSec: 12.5, AvgNs: 1234, CPUPercent: 0.5,
		history: []float64{0, 1, 2},
	}}
	for _, c := range []struct {
		width int
		keys  string
	}{
		{80, "id type name events avg cpu history process"},
		{200, "id type name events avg cpu machine misses history process attached"},
		{40, "id name events cpu"},
		{0, "id type name events avg cpu machine misses history process attached"},
	} {
		shown, widths := layout(c.width, rows)
		var keys []string
		for _, col := range shown {
			keys = append(keys, col.key)
		}
		if strings.Join(keys, " ") != c.keys {
			t.Errorf("width %d: columns %v, want %s", c.width, keys, c.keys)
		}
		for i, line := range tableLines(rows, shown, widths) {
			n := utf8.RuneCountInString(line)
			if c.width > 0 && n > c.width || c.width == 80 && i == 1 && n != 80 {
				t.Errorf("width %d: a line of %d: %q", c.width, n, line)
			}
		}
		row := tableLines(rows, shown, widths)[1]
		if c.width == 0 && !strings.Contains(row, "libc.so.6+0x1234 +1") {
			t.Errorf("in a pipe, the attachments are cut: %q", row)
		}
	}
}

// TestCells: numbers, sparklines and text as the table shows them.
func TestCells(t *testing.T) {
	for got, want := range map[string]string{
		formatRate(0): "0", formatRate(2.54): "2.5", formatRate(1234.4): "1234",
		formatRate(12345678): "12.3M",
		formatNs(85.4, 3):    "85ns", formatNs(1234, 1): "1.2µs", formatNs(3.4e6, 1): "3.4ms",
		formatNs(0, 0):       "-",
		formatPercent(0.004): "0.00", formatPercent(3.254): "3.25", formatPercent(12.54): "12.5",
		formatPercent(150.2):                   "150",
		sparkline([]float64{0, 1, 2, 4, 8}, 6): "  ▁▂▄█", sparkline(nil, 3): "   ",
		pad("abcdef", 4, false): "abc…", pad("ab", 4, true): "  ab", pad("ab", 4, false): "ab  ",
		printable("a\x1b[2Jb\nc\xffé"): "a?[2Jb?c??", firstAndMore(nil): "-",
		firstAndMore([]string{"a", "b", "c"}): "a +2", shortType("raw_tracepoint"): "raw_tp",
		displayName(""): "(unnamed)",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
