// Command funccount counts events: tracepoints matching group:name
// patterns ('syscalls:sys_enter_*', 't:sched:*') or kernel functions
// ('vfs_read', 'k:tcp_*'), as bcc's funccount does, with bpftrace's
// prefixes too (tracepoint:, kprobe:).
//
// It attaches as few programs as it can, so that it starts and lets go
// fast whatever the patterns match (bpf.go has the programs):
//   - syscalls:sys_enter_* and sys_exit_* through one raw tracepoint on
//     raw_syscalls:sys_enter and one on sys_exit, the wanted system call
//     numbers in a map. The syscalls:* tracepoints skip the calls of
//     compat (32-bit) tasks on a 64-bit kernel, and so does funccount,
//     from their registers; one call differs, on x86-64: int $0x80 made
//     by 64-bit code, which the tracepoints skip and funccount counts
//     under the 64-bit call of that number.
//   - other tracepoints through a raw tracepoint each, which makes no perf
//     record and filters none for other perf users; where there is no raw
//     tracepoint of that name, through a perf event whose program returns
//     1, so that other perf users still see every event.
//   - kernel functions through one kprobe_multi link (5.18 with
//     CONFIG_FPROBE), one attachment for all; elsewhere a kprobe each.
//
// Attachments of one kind are told apart by bpf_cookie where the kernel
// carries one (perf links 5.15, raw tracepoints 6.10), else each has a
// program of its own; the start line says what was used.
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

func main() {
	t := tool.New("funccount", "count tracepoints or kernel functions, a counter each",
		"[-p PID] [-max N] [-listen ADDR] [-json] pattern... [interval [count]]",
		"funccount 'syscalls:sys_enter_*'        # every system call, every second",
		"funccount 't:sched:sched_process_*'     # tracepoints, as bcc and bpftrace write them",
		"funccount -p 1234 'vfs_*' 5 3           # kernel functions vfs_* of process 1234, 3 times 5 s",
		"funccount tcp_sendmsg k:tcp_recvmsg     # two kernel functions",
		"funccount -listen :9102 'syscalls:*' 60 # serve /metrics to Prometheus, print every minute",
	).Periodic(time.Second).TakesArgs()
	pid := t.PIDFlag("p", "count in process `PID` only")
	maxEvents := t.Flags.Int("max", 1000, "refuse patterns that match more than `N` events")
	listen := t.ListenFlag()
	t.ParseOrExit()
	switch {
	case len(t.Args) == 0:
		t.Exit(tool.Usagef("no pattern: give tracepoints (group:name) or kernel functions, " +
			"globs allowed"))
	case *maxEvents < 1:
		t.Exit(tool.Usagef("-max %d: want 1 or more", *maxEvents))
	}
	var patterns []pattern
	for _, text := range t.Args {
		p, err := parsePattern(text)
		if err != nil {
			t.Exit(err)
		}
		patterns = append(patterns, p)
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, options{patterns, *pid, *maxEvents, *listen}))
}

// options are what the arguments ask for.
type options struct {
	patterns  []pattern
	pid       uint32 // 0: every process
	maxEvents int
	listen    string // -listen's address, or ""
}

// run expands the patterns, attaches, and prints the counts every
// interval until ctx ends or the count is reached; with -listen it
// serves them to Prometheus too.
func run(ctx context.Context, t *tool.Tool, o options) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	server, err := t.ListenMetrics(o.listen) // bound before anything is loaded
	if err != nil {
		return err
	}
	defer server.Close()
	events, err := expand(o.patterns, o.maxEvents)
	if err != nil {
		return err
	}
	c, err := newCounter(events, o.pid)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.attach(); err != nil {
		return err
	}
	if server != nil {
		m, err := eventMetrics(c)
		if err != nil {
			return err
		}
		server.Serve(m)
	}
	t.Started("counting %s: %s", plural(len(events), "event"), joinHow(c.how))
	r, err := newReader(c)
	if err != nil {
		return err
	}
	return t.Every(ctx, func(final bool) error { return r.report(t) })
}

// joinHow lists what counts the events, "nothing" for none.
func joinHow(how []string) string {
	if len(how) == 0 {
		return "nothing"
	}
	return strings.Join(how, "; ")
}

// reader reads the counts and prints what each interval added.
type reader struct {
	c      *counter
	perCPU []uint64
	seen   []uint64 // each event's count at the last report
	header string   // EVENT, or FUNC when every event is a kernel function
}

func newReader(c *counter) (*reader, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	header := "FUNC"
	for _, e := range c.events {
		if e.tracepoint {
			header = "EVENT"
		}
	}
	return &reader{
		c:      c,
		perCPU: make([]uint64, ncpu),
		seen:   make([]uint64, len(c.events)),
		header: header,
	}, nil
}

// row is one event's count in an interval, as -json prints it too.
type row struct {
	Name  string `json:"name"`
	Count uint64 `json:"count"`
}

// report prints the events counted since the last report, most first.
func (r *reader) report(t *tool.Tool) error {
	var rows []row
	for i, e := range r.c.events {
		if err := r.c.counts.LookupPerCPU(uint32(i), r.perCPU); err != nil {
			return err
		}
		sum := tool.Sum(r.perCPU)
		if d := sum - r.seen[i]; d > 0 {
			rows = append(rows, row{e.name, d})
		}
		r.seen[i] = sum
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Count > rows[j].Count })
	now := time.Now()
	if t.JSON {
		return t.Emit(struct {
			Time   string `json:"time"`
			Counts []row  `json:"counts"`
		}{now.Format(time.RFC3339Nano), append([]row{}, rows...)})
	}
	fmt.Fprintf(t.Stdout, "\n%s\n%-40s %8s\n", now.Format("15:04:05"), r.header, "COUNT")
	for _, row := range rows {
		fmt.Fprintf(t.Stdout, "%-40s %8d\n", row.Name, row.Count)
	}
	return nil
}
