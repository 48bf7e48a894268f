package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
)

// topOptions are bpfkit top's flags.
type topOptions struct {
	interval, count *setOnce[int64] // -d and -n, top's forms of the interval and count
	once            bool            // -once: one interval, printed as text or JSON
	sortBy          string          // -o COLUMN
	pid             *uint32         // -p PID: programs held by the process
	comms           []string        // -comm NAME,...: programs held by a process of those names
	types           []string        // -type TYPE,...: programs of those types
	name            string          // -name GLOB: programs whose name matches
	hideIdle        bool            // -i: programs that did not run in the interval are left out
	listen          *string         // -listen ADDR
}

var topOpts topOptions

// topCommand is bpfkit top's entry in the command table.
var topCommand = command{
	words: "top",
	usage: "[-d SECONDS] [-n COUNT] [-once] [-o COLUMN] [-p PID] [-comm NAME,...] " +
		"[-type TYPE,...] [-name GLOB] [-i] [-listen ADDR] [-json] [interval [count]]",
	summary: "which programs cost the machine how much CPU, live, like top: events a second, " +
		"time per event, CPU share, recursion misses, attachments, processes",
	examples: []string{
		"bpfkit top                        # every program, every second, until Ctrl-C",
		"bpfkit top -d 5 -o events         # every 5 s, the busiest programs first",
		"bpfkit top -p 1234 -i             # the programs process 1234 holds, those that ran",
		"bpfkit top -once -json            # one interval, one JSON object per program",
		"bpfkit top -listen :9102 -n 0     # serve /metrics to Prometheus",
	},
	setup: func(t *tool.Tool) { t.Periodic(time.Second) },
	flags: defineTopFlags,
	check: checkTopFlags,
	run:   top,
}

// defineTopFlags defines top's flags.
func defineTopFlags(t *tool.Tool) {
	o := &topOpts
	o.interval = &setOnce[int64]{parse: func(s string) (int64, error) {
		d, err := tool.ParseInterval(s)
		if err != nil {
			return 0, fmt.Errorf("want seconds (1, 0.5) or a duration with its unit (500ms), "+
				"more than 0 and at most %v", tool.MaxInterval)
		}
		return int64(d), nil
	}}
	o.count = &setOnce[int64]{parse: func(s string) (int64, error) {
		return strconv.ParseInt(s, 10, 32)
	}}
	t.Flags.Var(o.interval, "d", "refresh every `SECONDS` (or a duration: 500ms), as top's -d; "+
		"the same as the positional interval")
	t.Flags.Var(o.count, "n", "stop after `COUNT` refreshes, as top's -n (0: until Ctrl-C)")
	t.Flags.BoolVar(&o.once, "once", false, "one interval, printed as text (or -json), then exit")
	t.Flags.StringVar(&o.sortBy, "o", "cpu", "sort by `COLUMN`: "+strings.Join(sortKeys(), ", "))
	o.pid = t.PIDFlag("p", "only the programs process `PID` holds "+
		"(an fd of it, of a link or of a perf event)")
	t.Flags.Func("comm", "only the programs a process of one of these `NAME`s holds, "+
		"comma-separated",
		func(s string) error {
			o.comms = append(o.comms, strings.Split(s, ",")...)
			return nil
		})
	t.Flags.Func("type", "only programs of `TYPE`s, by name (kprobe, tracepoint, ...), "+
		"comma-separated",
		func(s string) error {
			o.types = append(o.types, strings.Split(s, ",")...)
			return nil
		})
	t.Flags.StringVar(&o.name, "name", "", "only programs whose name matches `GLOB` (tracex*)")
	t.Flags.BoolVar(&o.hideIdle, "i", false,
		"leave out programs that did not run in the interval, as top's -i")
	o.listen = t.ListenFlag()
}

// checkTopFlags checks what the flags hold, once parsed, and sets the
// tool's interval and count from -d, -n and -once.
func checkTopFlags(t *tool.Tool) error {
	o := &topOpts
	if o.interval.set {
		if t.Interval != time.Second && t.Interval != time.Duration(o.interval.value) {
			return tool.Usagef("-d and a positional interval: give the interval once")
		}
		t.Interval = time.Duration(o.interval.value)
	}
	if o.count.set {
		if o.count.value < 0 {
			return tool.Usagef("-n %d: want 0 (until Ctrl-C) or more", o.count.value)
		}
		if t.Count != 0 && int64(t.Count) != o.count.value {
			return tool.Usagef("-n and a positional count: give the count once")
		}
		t.Count = int(o.count.value)
	}
	if o.once {
		t.Count = 1
	}
	if !slices.Contains(sortKeys(), o.sortBy) {
		return tool.Usagef("-o %q: sort by one of %s", o.sortBy, strings.Join(sortKeys(), ", "))
	}
	for _, typ := range o.types {
		short := slices.Contains(slices.Collect(maps.Values(shortTypes)), typ)
		if _, ok := progType(typ); !ok && !short {
			return tool.Usagef("-type %q: not a program type (kprobe, tracepoint, xdp, ...)", typ)
		}
	}
	if _, err := path.Match(o.name, ""); err != nil {
		return tool.Usagef("-name %q: %v", o.name, err)
	}
	return nil
}

// top samples every program's statistics at each interval and shows
// what each cost: on a terminal as a table redrawn in place, else as
// text or JSON, and to Prometheus with -listen. The statistics are on
// only while it runs, and left as they were however it ends (Ctrl-C,
// SIGTERM, an error).
func top(t *tool.Tool, _ []uint32) error {
	ctx, stop := tool.Context() // first: a signal from now on ends the loop, not the process
	defer stop()
	server, err := t.ListenMetrics(*topOpts.listen)
	if err != nil {
		return err
	}
	defer server.Close()
	cost, err := prog.MeasureStatsCost() // before the statistics go on: it turns them on and off
	if err != nil {
		return err
	}
	stats, err := prog.EnableStats()
	if err != nil {
		return err
	}
	defer stats.Close()
	s, err := newSampler(cost)
	if err != nil {
		return err
	}
	if _, err := s.sample(); err != nil { // the baseline of the first interval
		return err
	}
	pub := &published{}
	if server != nil {
		m, err := topMetrics(pub, cost)
		if err != nil {
			return err
		}
		server.Serve(m)
	}
	out := newTopOutput(t, stats.How(), cost, s.cpus)
	defer out.close()
	return topLoop(ctx, t, s, out, pub)
}

// topLoop samples at each interval, Count times or until ctx ends, and
// shows each snapshot; when ctx ends it shows the interval in progress.
// A change of the terminal's size redraws the last snapshot at once.
func topLoop(ctx context.Context, t *tool.Tool, s *sampler, out topOutput, pub *published) error {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	tick := time.NewTicker(t.Interval)
	defer tick.Stop()
	for shown := 1; ; shown++ {
		select {
		case <-ctx.Done():
		case <-winch:
			shown--
			out.redraw()
			continue
		case <-tick.C:
		}
		snap, err := s.sample()
		if err != nil {
			return err
		}
		rows := topOpts.view(snap.rows)
		pub.set(rows)
		final := ctx.Err() != nil || shown == t.Count
		if err := out.show(snap, rows, final); err != nil || final {
			return err
		}
	}
}

// view is the rows the flags ask for, in the order -o asks for.
func (o *topOptions) view(rows []*row) []*row {
	var out []*row
	for _, r := range rows {
		if o.wants(r) {
			out = append(out, r)
		}
	}
	key := sortOrders[o.sortBy]
	slices.SortFunc(out, func(a, b *row) int { return cmp.Or(key(a, b), cmp.Compare(a.ID, b.ID)) })
	return out
}

// wants says whether the flags keep r.
func (o *topOptions) wants(r *row) bool {
	switch {
	case o.hideIdle && r.Events == 0:
		return false
	case len(o.types) > 0 && !slices.Contains(o.types, r.Type) &&
		!slices.Contains(o.types, shortType(r.Type)):
		return false
	case o.name != "":
		if ok, _ := path.Match(o.name, r.Name); !ok {
			return false
		}
	}
	if *o.pid == 0 && len(o.comms) == 0 {
		return true
	}
	return slices.ContainsFunc(r.procs, func(p proc) bool {
		pidOK := *o.pid == 0 || p.PID == int(*o.pid)
		return pidOK && (len(o.comms) == 0 || slices.Contains(o.comms, p.Comm))
	})
}

// sortOrders are -o's columns: numbers largest first, text in order.
var sortOrders = map[string]func(a, b *row) int{
	"cpu":     func(a, b *row) int { return cmp.Compare(b.CPUPercent, a.CPUPercent) },
	"machine": func(a, b *row) int { return cmp.Compare(b.MachinePercent, a.MachinePercent) },
	"events":  func(a, b *row) int { return cmp.Compare(b.EventsPerSec, a.EventsPerSec) },
	"avg":     func(a, b *row) int { return cmp.Compare(b.AvgNs, a.AvgNs) },
	"misses":  func(a, b *row) int { return cmp.Compare(b.Misses, a.Misses) },
	"runs":    func(a, b *row) int { return cmp.Compare(b.RunCnt, a.RunCnt) },
	"runtime": func(a, b *row) int { return cmp.Compare(b.RunTimeNs, a.RunTimeNs) },
	"id":      func(a, b *row) int { return cmp.Compare(a.ID, b.ID) },
	"name":    func(a, b *row) int { return strings.Compare(a.Name, b.Name) },
	"type":    func(a, b *row) int { return strings.Compare(a.Type, b.Type) },
	"process": func(a, b *row) int {
		return strings.Compare(firstAndMore(procNames(a.procs)), firstAndMore(procNames(b.procs)))
	},
}

// sortKeys is -o's columns in order.
func sortKeys() []string {
	return slices.Sorted(maps.Keys(sortOrders))
}

// setOnce is a flag's value that remembers whether it was given.
type setOnce[T any] struct {
	value T
	set   bool
	parse func(string) (T, error)
}

func (v *setOnce[T]) String() string { return "" }

func (v *setOnce[T]) Set(s string) error {
	value, err := v.parse(s)
	if err != nil {
		return err
	}
	v.value, v.set = value, true
	return nil
}
