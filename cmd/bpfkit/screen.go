package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// topOutput is where top shows its snapshots: a terminal, redrawn in
// place; text, one frame after another; or JSON.
type topOutput interface {
	// show shows the rows of the snapshot the flags keep; final says it
	// is the last.
	show(snap *snapshot, rows []*row, final bool) error
	redraw()      // draws the last snapshot again, at the terminal's size now
	close() error // leaves the terminal as it was
}

// newTopOutput picks top's output: JSON with -json; a screen redrawn in
// place where stdout is a terminal, unless -once; else text.
func newTopOutput(t *tool.Tool, how string, cost prog.StatsCost, cpus int) topOutput {
	h := &header{how: how, cost: cost, cpus: cpus, interval: t.Interval}
	switch _, _, tty := terminalSize(t.Stdout); {
	case t.JSON:
		return &jsonOutput{t: t}
	case tty && !topOpts.once:
		s := &screen{w: t.Stdout, header: h}
		io.WriteString(s.w, enterScreen)
		return s
	}
	return &textOutput{w: t.Stdout, header: h}
}

// terminalSize is the size of w's terminal, if w is one.
func terminalSize(w io.Writer) (cols, lines int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile {
		return 0, 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}

// The terminal's escape sequences (ECMA-48 and xterm's): the alternate
// screen, which keeps what the terminal showed before for when top
// ends; the cursor hidden; the cursor home; erase to the end of the line
// and of the screen.
const (
	enterScreen = "\x1b[?1049h\x1b[?25l"
	leaveScreen = "\x1b[?25h\x1b[?1049l"
	cursorHome  = "\x1b[H"
	eraseLine   = "\x1b[K"
	eraseBelow  = "\x1b[J"
)

// screen is a terminal top redraws in place, on the alternate screen, at
// the terminal's size at each frame; at the end it leaves the alternate
// screen and prints the last frame where the shell is, to stay in view.
type screen struct {
	w      io.Writer
	header *header
	snap   *snapshot
	rows   []*row
	left   bool // the alternate screen is left: nothing more to draw
}

func (s *screen) show(snap *snapshot, rows []*row, final bool) error {
	s.snap, s.rows = snap, rows
	if final {
		return s.close()
	}
	s.redraw()
	return nil
}

func (s *screen) redraw() {
	if s.snap == nil || s.left {
		return
	}
	cols, lines, ok := terminalSize(s.w)
	if !ok {
		return
	}
	frame := s.header.frame(s.snap, s.rows, cols)
	frame = frame[:min(len(frame), lines)]
	var b strings.Builder
	b.WriteString(cursorHome)
	for i, line := range frame {
		b.WriteString(line)
		if len([]rune(line)) < cols { // a full line erased after would lose its last column
			b.WriteString(eraseLine)
		}
		if i < len(frame)-1 { // a newline on the last line would scroll the screen
			b.WriteString("\r\n")
		}
	}
	b.WriteString(eraseBelow)
	io.WriteString(s.w, b.String())
}

func (s *screen) close() error {
	if s.left {
		return nil
	}
	s.left = true
	io.WriteString(s.w, leaveScreen)
	if s.snap == nil {
		return nil
	}
	cols, _, _ := terminalSize(s.w)
	_, err := io.WriteString(s.w, strings.Join(s.header.frame(s.snap, s.rows, cols), "\n")+"\n")
	return err
}

// textOutput prints each frame whole, all its rows and columns, with a
// blank line after: for a file, a pipe, or -once.
type textOutput struct {
	w      io.Writer
	header *header
}

func (o *textOutput) show(snap *snapshot, rows []*row, _ bool) error {
	_, err := io.WriteString(o.w, strings.Join(o.header.frame(snap, rows, 0), "\n")+"\n\n")
	return err
}

func (o *textOutput) redraw()      {}
func (o *textOutput) close() error { return nil }

// jsonOutput emits one object per program per interval.
type jsonOutput struct{ t *tool.Tool }

func (o *jsonOutput) show(_ *snapshot, rows []*row, _ bool) error {
	for _, r := range rows {
		if err := o.t.Emit(r); err != nil {
			return err
		}
	}
	return nil
}

func (o *jsonOutput) redraw()      {}
func (o *jsonOutput) close() error { return nil }

// header is what top says above its table.
type header struct {
	how      string         // what turned the statistics on
	cost     prog.StatsCost // what they cost a run
	cpus     int
	interval time.Duration
}

// frame is the header lines and the table of rows, width columns wide
// (0: as wide as they are).
func (h *header) frame(snap *snapshot, rows []*row, width int) []string {
	var events, cpu, machine, allEvents float64
	var misses uint64
	for _, r := range rows {
		events += r.EventsPerSec
		cpu += r.CPUPercent
		machine += r.MachinePercent
		misses += r.Misses
	}
	for _, r := range snap.rows {
		allEvents += r.EventsPerSec
	}
	lines := []string{
		fmt.Sprintf("bpfkit top - %s - every %v - %d programs, %d shown - %d CPUs",
			snap.at.Format("15:04:05"), h.interval, len(snap.rows), len(rows), h.cpus),
		fmt.Sprintf("total %s events/s, %s%% of a CPU, %s%% of the machine, %d recursion misses",
			formatRate(events), formatPercent(cpu), formatPercent(machine), misses),
		h.statsLine(allEvents),
		"",
	}
	shown, widths := layout(width, rows)
	lines = append(lines, tableLines(rows, shown, widths)...)
	if width > 0 {
		for i, line := range lines {
			if len([]rune(line)) > width {
				lines[i] = pad(line, width, false)
			}
		}
	}
	return lines
}

// statsLine says what the statistics cost: what each run takes longer
// with them on, that over every program's runs now (events a second),
// and the floor left out of each program's time.
func (h *header) statsLine(events float64) string {
	floor := fmt.Sprintf("%s of measuring left out", formatNs(float64(h.cost.Floor), 1))
	if h.cost.Added == 0 {
		return fmt.Sprintf("statistics were on already: cost not measured; %s", floor)
	}
	now := events * float64(h.cost.Added) / 1e9 * 100
	return fmt.Sprintf("statistics cost +%s a run (%s%% of a CPU now); %s",
		formatNs(float64(h.cost.Added), 1), formatPercent(now), floor)
}
