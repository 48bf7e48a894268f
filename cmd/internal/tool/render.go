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
// the layout of bcc's print_log2_hist: a "valType : count distribution"
// header, then one "lo -> hi : count |****|" row per slot up to the last
// one that is not empty, 40 stars wide (20 past slot 32).
func Log2Hist(w io.Writer, valType string, slots []uint64) {
	idxMax, valMax := -1, uint64(0)
	for i, v := range slots {
		if v > 0 {
			idxMax = i
		}
		valMax = max(valMax, v)
	}
	header, body, stars := "     %-19s : count     distribution\n", "%10d -> %-10d : %-8d |%s|\n", 40
	if idxMax > 32 {
		header, body, stars = "               %-29s : count     distribution\n", "%20d -> %-20d : %-8d |%s|\n", 20
	}
	if idxMax > 0 {
		fmt.Fprintf(w, header, valType)
	}
	for i := 1; i <= idxMax; i++ {
		lo, hi := uint64(1)<<i>>1, uint64(1)<<i-1
		if i == 64 {
			hi = ^uint64(0)
		}
		if lo == hi {
			lo--
		}
		fmt.Fprintf(w, body, lo, hi, slots[i], starBar(slots[i], valMax, stars))
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
// color is set, else with its symbols. Each row ends with its total.
func Heatmap(w io.Writer, cols [][]uint64, labels []string, color bool) {
	width := 0
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
