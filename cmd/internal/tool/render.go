package tool

import (
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// Log2Slot is the slot of v in a log2 histogram as bcc's bpf_log2l counts
// it: 1 for 0 and 1, then 2 for 2-3, 3 for 4-7, ... 64 for 2^63 and up.
func Log2Slot(v uint64) int { return max(bits.Len64(v), 1) }

// Log2Hist writes slots (slots[i] counting the values of Log2Slot i) in
// the layout of bcc's print_log2_hist (Hist), one row per slot from 1 up
// to the last one that is not empty.
func Log2Hist(w io.Writer, valType string, slots []uint64) {
	idxMax := -1
	for i, v := range slots {
		if v > 0 {
			idxMax = i
		}
	}
	var rows []HistSlot
	for i := 1; i <= idxMax; i++ {
		lo, hi := uint64(1)<<i>>1, uint64(1)<<i-1
		if i == 64 {
			hi = ^uint64(0)
		}
		if lo == hi {
			lo--
		}
		rows = append(rows, HistSlot{From: lo, To: hi, Count: slots[i]})
	}
	Hist(w, valType, rows)
}

// Hist writes the rows of a histogram in the layout of bcc's
// print_log2_hist: a "valType : count distribution" header, then one
// "from -> to : count |****|" line per row, the bar 40 stars wide for the
// largest count; the columns widen, and the bar narrows to 20, when a row
// reaches 2^32. No rows, nothing written.
func Hist(w io.Writer, valType string, rows []HistSlot) {
	valMax, wide := uint64(0), false
	for _, r := range rows {
		valMax = max(valMax, r.Count)
		wide = wide || r.To >= 1<<32
	}
	header := "     %-19s : count     distribution\n"
	body, stars := "%10d -> %-10d : %-8d |%s|\n", 40
	if wide {
		header = "               %-29s : count     distribution\n"
		body, stars = "%20d -> %-20d : %-8d |%s|\n", 20
	}
	if len(rows) > 0 {
		fmt.Fprintf(w, header, valType)
	}
	for _, r := range rows {
		fmt.Fprintf(w, body, r.From, r.To, r.Count, starBar(r.Count, valMax, stars))
	}
}

// starBar is bcc's _stars: val/valMax of width stars, padded with spaces.
func starBar(val, valMax uint64, width int) string {
	n := 0
	if valMax > 0 {
		n = min(int(uint64(width)*val/valMax), width)
	}
	return strings.Repeat("*", n) + strings.Repeat(" ", width-n)
}

// The shades of the kernel's samples/bpf/tracex3_user.c, lightest first:
// 256-colour backgrounds, and the symbols its -t (text only) mode prints.
var (
	shadeColors = [...]int{255, 252, 250, 248, 246, 244, 242, 240, 238, 236, 234, 232}
	shadeSyms   = [...]byte{' ', ' ', '.', '.', '*', '*', 'o', 'o', 'O', 'O', '#', '#'}
)

// Heatmap draws cols, one column per interval (oldest on the left, and
// cols[c][r] the count of row r in it), rows top to bottom as labels
// names them. A cell is shaded by its count against its column's largest,
// as tracex3's sample shades its rows: with 256-colour backgrounds when
// color is set, else with its symbols. Each row ends with its total over
// the columns drawn; a first line names the rows (axis) and the totals
// (total) above them.
func Heatmap(w io.Writer, cols [][]uint64, labels []string, color bool, axis, total string) {
	width := len(axis)
	for _, l := range labels {
		width = max(width, len(l))
	}
	colMax := make([]uint64, len(cols))
	for c, col := range cols {
		for _, v := range col {
			colMax[c] = max(colMax[c], v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%*s |%s| %s\n", width, axis, strings.Repeat(" ", len(cols)), total)
	for r, label := range labels {
		fmt.Fprintf(&b, "%*s |", width, label)
		total := uint64(0)
		for c, col := range cols {
			v := uint64(0)
			if r < len(col) {
				v = col[r]
			}
			total += v
			shade := int(uint64(len(shadeColors)) * v / (colMax[c] + 1))
			if color {
				fmt.Fprintf(&b, "\033[48;5;%dm \033[0m", shadeColors[shade])
			} else {
				b.WriteByte(shadeSyms[shade])
			}
		}
		fmt.Fprintf(&b, "| %d\n", total)
	}
	io.WriteString(w, b.String())
}

// HistSlot is one slot of a log2 histogram with what it counted, for
// -json: the values From to To, Count times.
type HistSlot struct {
	From  uint64 `json:"from"`
	To    uint64 `json:"to"`
	Count uint64 `json:"count"`
}

// HistSlots lists the slots of a log2 histogram (as Log2Hist takes them)
// that are not empty.
func HistSlots(slots []uint64) []HistSlot {
	out := []HistSlot{}
	for i, n := range slots {
		if n == 0 || i == 0 || i > 64 {
			continue
		}
		lo, hi := uint64(1)<<i>>1, uint64(1)<<i-1
		if i == 1 {
			lo = 0
		}
		if i == 64 {
			hi = ^uint64(0)
		}
		out = append(out, HistSlot{lo, hi, n})
	}
	return out
}
