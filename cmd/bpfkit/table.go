package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// column is one column of top's table.
type column struct {
	key    string // what -o names it by
	header string
	width  int  // its width; for a flexible column, the least it takes
	flex   bool // it takes what the terminal has left, up to maxWidth
	right  bool // numbers are aligned right
	// keep orders the columns for a narrow terminal: those of the lowest
	// keep fit first, the others as far as they fit.
	keep int
	cell func(r *row) string
}

// maxFlexWidth bounds a flexible column where another one wants room too.
const maxFlexWidth = 40

// columns are top's columns in their order on the screen. At 80 columns
// the first eight fit; the machine's share, the recursion misses and
// what a program is attached to need a wider terminal (and are always
// in -json).
var columns = []column{
	{key: "id", header: "ID", width: 6, right: true, keep: 1,
		cell: func(r *row) string { return strconv.FormatUint(uint64(r.ID), 10) }},
	{key: "type", header: "TYPE", width: 10, keep: 6,
		cell: func(r *row) string { return shortType(r.Type) }},
	{key: "name", header: "NAME", width: 15, keep: 2,
		cell: func(r *row) string { return printable(displayName(r.Name)) }},
	{key: "events", header: "EVENTS/s", width: 8, right: true, keep: 4,
		cell: func(r *row) string { return formatRate(r.EventsPerSec) }},
	{key: "avg", header: "AVG", width: 7, right: true, keep: 5,
		cell: func(r *row) string { return formatNs(r.AvgNs, r.Events) }},
	{key: "cpu", header: "%CPU", width: 5, right: true, keep: 3,
		cell: func(r *row) string { return formatPercent(r.CPUPercent) }},
	{key: "machine", header: "%MACH", width: 5, right: true, keep: 9,
		cell: func(r *row) string { return formatPercent(r.MachinePercent) }},
	{key: "misses", header: "MISSES", width: 6, right: true, keep: 10,
		cell: func(r *row) string { return strconv.FormatUint(r.Misses, 10) }},
	{key: "history", header: "HISTORY", width: 8, keep: 8}, // the sparkline: no cell
	{key: "process", header: "PROCESS", width: 14, flex: true, keep: 7,
		cell: func(r *row) string { return printable(firstAndMore(procNames(r.procs))) }},
	{key: "attached", header: "ATTACHED", width: 16, flex: true, keep: 11,
		cell: func(r *row) string { return printable(firstAndMore(r.Attached)) }},
}

// layout picks the columns that fit in width, by their keep order, and
// returns them in screen order with their widths; width 0 is a file or a
// pipe, where every column fits, flexible ones as wide as their cells.
func layout(width int, rows []*row) ([]column, []int) {
	byKeep := slices.Clone(columns)
	slices.SortStableFunc(byKeep, func(a, b column) int { return a.keep - b.keep })
	used, kept := -1, map[string]bool{}
	for _, c := range byKeep {
		if width == 0 || used+1+c.width <= width {
			used += 1 + c.width
			kept[c.key] = true
		}
	}
	var shown []column
	var widths []int
	for _, c := range columns {
		if kept[c.key] {
			shown = append(shown, c)
			widths = append(widths, c.width)
		}
	}
	// Flexible columns grow to their widest cell, the last of them to the
	// terminal's edge.
	spare, last := width-used, -1
	for i, c := range shown {
		if c.flex {
			last = i
		}
	}
	for i, c := range shown {
		switch {
		case !c.flex:
		case width == 0:
			widths[i] = max(c.width, widest(c, rows))
		case i == last:
			widths[i] += spare
		default:
			grow := max(0, min(spare, maxFlexWidth-c.width, widest(c, rows)-c.width))
			widths[i] += grow
			spare -= grow
		}
	}
	return shown, widths
}

// widest is the width of the widest cell of c.
func widest(c column, rows []*row) int {
	w := 0
	for _, r := range rows {
		w = max(w, utf8.RuneCountInString(c.cell(r)))
	}
	return w
}

// tableLines is the header and rows of the table in the columns shown,
// with their widths. Cells hold text from outside (names, paths) made
// printable.
func tableLines(rows []*row, shown []column, widths []int) []string {
	header := make([]string, len(shown))
	for i, c := range shown {
		header[i] = pad(c.header, widths[i], c.right)
	}
	lines := []string{strings.TrimRight(strings.Join(header, " "), " ")}
	for _, r := range rows {
		cells := make([]string, len(shown))
		for i, c := range shown {
			if c.cell == nil {
				cells[i] = sparkline(r.history, widths[i])
				continue
			}
			cells[i] = pad(c.cell(r), widths[i], c.right)
		}
		lines = append(lines, strings.TrimRight(strings.Join(cells, " "), " "))
	}
	return lines
}

// pad fits s to width: cut with an ellipsis if longer, padded with spaces
// on the left (right) or the right.
func pad(s string, width int, right bool) string {
	n := utf8.RuneCountInString(s)
	if n > width {
		return string([]rune(s)[:max(0, width-1)]) + "…"
	}
	if right {
		return strings.Repeat(" ", width-n) + s
	}
	return s + strings.Repeat(" ", width-n)
}

// sparkBars are the eight heights of a sparkline.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last width values of history, oldest left, each as
// a bar as tall as its share of the largest of them; an interval with
// nothing is a space, one with anything at all a bar.
func sparkline(history []float64, width int) string {
	h := history[max(0, len(history)-width):]
	top := slices.Max(append([]float64{0}, h...))
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", width-len(h)))
	for _, v := range h {
		if v <= 0 || top <= 0 {
			b.WriteByte(' ')
			continue
		}
		level := int(v / top * float64(len(sparkBars)))
		b.WriteRune(sparkBars[min(max(level, 1), len(sparkBars))-1])
	}
	return b.String()
}

// shortTypes are the program types too long for the TYPE column.
var shortTypes = map[string]string{
	"socket_filter":           "socket",
	"raw_tracepoint":          "raw_tp",
	"raw_tracepoint_writable": "raw_tp_w",
	"cgroup_sock_addr":        "cg_sk_addr",
	"cgroup_device":           "cg_device",
	"cgroup_sockopt":          "cg_sockopt",
	"cgroup_sysctl":           "cg_sysctl",
	"flow_dissector":          "flow_diss",
	"lwt_seg6local":           "lwt_seg6",
	"sk_reuseport":            "sk_reuse",
}

// shortType is a program type's name as the TYPE column shows it.
func shortType(t string) string {
	if s, ok := shortTypes[t]; ok {
		return s
	}
	return t
}

// displayName is a program's name, or "(unnamed)".
func displayName(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return name
}

// procNames is "comm(pid)" for each process.
func procNames(ps []proc) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%s(%d)", p.Comm, p.PID)
	}
	return names
}

// firstAndMore is the first of s and how many more there are: "a +2";
// "-" for none.
func firstAndMore(s []string) string {
	switch len(s) {
	case 0:
		return "-"
	case 1:
		return s[0]
	}
	return fmt.Sprintf("%s +%d", s[0], len(s)-1)
}

// printable is s for a terminal: a control character or byte that is not
// UTF-8 becomes '?', so that a process or file name cannot move the
// cursor or forge a line; characters outside ASCII do too, whose width on
// the screen Go cannot tell.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

// formatRate is events a second: "0", "2.5", "1234", "12.3M".
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v < 1e7:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
}

// formatNs is a time per run: "85ns", "1.2µs", "3.4ms"; "-" without runs.
func formatNs(ns float64, runs uint64) string {
	switch {
	case runs == 0:
		return "-"
	case ns < 1e3:
		return strconv.FormatFloat(ns, 'f', 0, 64) + "ns"
	case ns < 1e6:
		return strconv.FormatFloat(ns/1e3, 'f', 1, 64) + "µs"
	case ns < 1e9:
		return strconv.FormatFloat(ns/1e6, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(ns/1e9, 'f', 1, 64) + "s"
}

// formatPercent is a share: "0.00", "3.25", "12.5", "150".
func formatPercent(p float64) string {
	switch {
	case p < 10:
		return strconv.FormatFloat(p, 'f', 2, 64)
	case p < 100:
		return strconv.FormatFloat(p, 'f', 1, 64)
	}
	return strconv.FormatFloat(p, 'f', 0, 64)
}
