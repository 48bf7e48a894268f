// Command tracex3 shows block I/O latency as a live heatmap, as the
// kernel's samples/bpf/tracex3 does: a program on block:block_rq_issue
// notes when each request (device and sector) is issued, one on
// block:block_rq_complete counts its latency in a log2 slot of
// microseconds, and every interval adds a column to the map: time runs
// across, latency down, and a cell is darker the more requests of its
// column took that long. At exit it prints the latency histogram of the
// whole run.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

func main() {
	t := tool.New("tracex3", "block I/O latency, from block_rq_issue to block_rq_complete, as a live heatmap",
		"[-dev MAJ:MIN] [-text] [-json] [interval [count]]",
		"tracex3                  # every 2 s until Ctrl-C, all devices",
		"tracex3 -dev 8:0 1 30    # /dev/sda only, every second, 30 times",
		"tracex3 -text 5          # symbols instead of colours, every 5 s",
	).Periodic(2 * time.Second)
	dev := t.Flags.String("dev", "", "only the block device `MAJ:MIN` (ls -l /dev shows them; 7:0 is loop0)")
	text := t.Flags.Bool("text", false, "shade with symbols, not colours (the default when not on a terminal)")
	t.ParseOrExit()
	filter, err := parseDev(*dev)
	if err != nil {
		t.Exit(err)
	}
	ctx, stop := tool.Context()
	defer stop()
	color := !*text && isTerminal(os.Stdout)
	t.Exit(run(ctx, t, filter, color))
}

// parseDev turns MAJ:MIN into the kernel's dev_t as the block tracepoints
// record it (MKDEV: major << 20 | minor); "" is every device, 0.
func parseDev(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	ma, mi, ok := strings.Cut(s, ":")
	major, err1 := strconv.ParseUint(ma, 10, 12)
	minor, err2 := strconv.ParseUint(mi, 10, 20)
	if !ok || err1 != nil || err2 != nil || major == 0 && minor == 0 {
		return 0, tool.Usagef("-dev %q: want MAJOR:MINOR, such as 8:0", s)
	}
	return uint32(major<<20 | minor), nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// slots is the size of the latency histogram: slot i holds latencies of
// 2^(i-1) to 2^i - 1 µs (slot 1 is 0 and 1 µs), as bcc counts.
const slots = 64

// rows are the slots the heatmap shows at least: up to 8-16 s.
const rows = 24

type key struct {
	Dev    uint32
	_      uint32
	Sector uint64
}

func run(ctx context.Context, t *tool.Tool, filter uint32, color bool) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	var loads [2][2]Item // dev and sector, of issue and complete
	for i, tp := range []string{"block_rq_issue", "block_rq_complete"} {
		for j, name := range []string{"dev", "sector"} {
			f, err := tool.Field("block", tp, name)
			if err == nil {
				loads[i][j], err = tool.LoadField(R2, R6, f)
			}
			if err != nil {
				return err
			}
		}
	}
	start, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 16, ValueSize: 8, MaxEntries: 10240, Name: "rq_start"})
	if err != nil {
		return err
	}
	defer start.Close()
	lat, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: slots, Name: "lat_us"})
	if err != nil {
		return err
	}
	defer lat.Close()

	// Both programs build the key {dev, sector} at fp-16, skipping other
	// devices when filtering.
	keyOf := func(l [2]Item) []Item {
		items := []Item{Mov64Reg(R6, R1), l[0]}
		if filter != 0 {
			items = append(items, Jump32Imm(BPF_JNE, R2, int32(filter), "out")) // dev_t is 32 bits
		}
		return append(items, StoreMem(BPF_W, R10, -16, R2), StoreImm(BPF_W, R10, -12, 0), l[1], StoreMem(BPF_DW, R10, -8, R2))
	}
	issue := append(keyOf(loads[0]),
		Call(BPF_FUNC_ktime_get_ns), StoreMem(BPF_DW, R10, -24, R0),
		LoadMapFD(R1, start), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -16), Mov64Reg(R3, R10), ALU64Imm(BPF_ADD, R3, -24),
		Mov64Imm(R4, BPF_ANY), Call(BPF_FUNC_map_update_elem),
		Label("out"), Mov64Imm(R0, 0), Exit())
	complete := append(keyOf(loads[1]),
		LoadMapFD(R1, start), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -16), Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		// r8 = µs since the request was issued
		LoadMem(BPF_DW, R7, R0, 0),
		Call(BPF_FUNC_ktime_get_ns), Mov64Reg(R8, R0), ALU64Reg(BPF_SUB, R8, R7), ALU64Imm(BPF_DIV, R8, 1000),
		LoadMapFD(R1, start), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -16), Call(BPF_FUNC_map_delete_elem),
	)
	complete = append(complete, Log2(R9, R8, R2)...)
	complete = append(complete,
		ALU64Imm(BPF_ADD, R9, 1), JumpImm(BPF_JLT, R9, slots, "slot"), Mov64Imm(R9, slots-1),
		Label("slot"), StoreMem(BPF_W, R10, -20, R9),
		LoadMapFD(R1, lat), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -20), Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		LoadMem(BPF_DW, R1, R0, 0), ALU64Imm(BPF_ADD, R1, 1), StoreMem(BPF_DW, R0, 0, R1), // this CPU's value
		Label("out"), Mov64Imm(R0, 0), Exit())

	for _, p := range []struct {
		name  string
		insns []Item
	}{{"block_rq_issue", issue}, {"block_rq_complete", complete}} {
		pr, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "tracex3", License: "GPL", Insns: p.insns})
		if err != nil {
			return err
		}
		defer pr.Close()
		l, err := prog.AttachTracepoint(pr, "block", p.name, prog.AttachOptions{})
		if err != nil {
			return err
		}
		defer l.Close()
	}

	h := &heatmap{lat: lat, color: color, out: t.Stdout, width: 60}
	t.Started("block I/O latency: one column per %v, darker is more requests of that latency", t.Interval)
	err = t.Every(ctx, func(final bool) error {
		col, err := h.read()
		if err != nil {
			return err
		}
		if t.JSON {
			return t.Emit(jsonColumn(col, false))
		}
		h.cols = append(h.cols, col)
		if len(h.cols) > h.width {
			h.cols = h.cols[1:]
		}
		h.draw()
		return nil
	})
	if err != nil {
		return err
	}
	if t.JSON {
		return t.Emit(jsonColumn(h.total[:], true))
	}
	fmt.Fprintln(t.Stdout)
	tool.Log2Hist(t.Stdout, "usecs", h.total[:])
	return nil
}

// heatmap keeps the columns drawn and the totals read so far.
type heatmap struct {
	lat   *mapfd.Typed[uint32, uint64]
	total [slots]uint64 // every request since the start, per slot
	cols  [][]uint64    // what each interval added, oldest first
	color bool
	out   io.Writer
	width int // columns kept
	drawn int // lines of the last frame, to draw over on a terminal
}

// read sums every CPU's count of each slot and returns what the interval
// added.
func (h *heatmap) read() ([]uint64, error) {
	n, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	perCPU := make([]uint64, n)
	col := make([]uint64, slots)
	for i := range uint32(slots) {
		if err := h.lat.LookupPerCPU(i, perCPU); err != nil {
			return nil, err
		}
		sum := uint64(0)
		for _, v := range perCPU {
			sum += v
		}
		col[i], h.total[i] = sum-h.total[i], sum
	}
	return col, nil
}

// draw prints the heatmap, over the previous one on a terminal, below it
// otherwise.
func (h *heatmap) draw() {
	last := rows
	for _, col := range h.cols {
		for i := rows; i < slots; i++ {
			if col[i] > 0 {
				last = max(last, i+1)
			}
		}
	}
	labels := make([]string, 0, last)
	var view [][]uint64
	for i := 1; i < last; i++ {
		labels = append(labels, slotLabel(i))
	}
	for _, col := range h.cols {
		view = append(view, col[1:last])
	}
	if h.color && h.drawn > 0 {
		fmt.Fprintf(h.out, "\033[%dA", h.drawn)
	} else {
		fmt.Fprintf(h.out, "%s\n", time.Now().Format("15:04:05"))
	}
	tool.Heatmap(h.out, view, labels, h.color, "latency", "requests")
	h.drawn = len(labels)
}

// slotLabel names a slot by the least latency it holds.
func slotLabel(i int) string {
	us := uint64(1) << (i - 1)
	switch {
	case i == 1:
		return "0us"
	case us < 1000:
		return fmt.Sprintf("%dus", us)
	case us < 1000_000:
		return fmt.Sprintf("%.3gms", float64(us)/1e3)
	}
	return fmt.Sprintf("%.3gs", float64(us)/1e6)
}

// jsonColumn is one interval as JSON: the time, the requests completed
// and the latency slots that hold some, in µs; or, with total set, the
// same of the whole run, which tracex3 prints last.
func jsonColumn(col []uint64, total bool) any {
	return struct {
		Time      string          `json:"time"`
		Requests  uint64          `json:"requests"`
		LatencyUs []tool.HistSlot `json:"latency_us"`
		Total     bool            `json:"total,omitempty"`
	}{time.Now().Format(time.RFC3339Nano), tool.Sum(col), tool.HistSlots(col), total}
}
