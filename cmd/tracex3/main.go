// Command tracex3 shows block I/O latency as a live heatmap, as the
// kernel's samples/bpf/tracex3 does: a program on block:block_rq_issue
// notes when each request (device and sector) is issued, in a table of
// the requests in flight, one on block:block_rq_complete counts its
// latency in a bucket (one on block:block_rq_requeue forgets a request
// the driver gave back, to be issued again), and every interval adds a
// column to the map: time runs across, latency down, and a cell is darker
// the more requests of its column took that long. The buckets are log2
// steps of µs, ms and s (1us, 2us, ... 512us, 1ms, ...). At exit it
// prints the latency histogram of the whole run.
//
// Both programs return 1, so that perf users of the two tracepoints get
// every record while tracex3 runs (a tracepoint program that returns 0
// hides the event from all of them).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

func main() {
	t := tool.New("tracex3", "block I/O latency, from block_rq_issue to block_rq_complete, as a live heatmap",
		"[-dev MAJ:MIN] [-text] [-json] [interval [count]]",
		"tracex3                  # every 2 s until Ctrl-C, all devices",
		"tracex3 -dev 8:0 1 30    # /dev/sda only, every second, 30 times",
		"tracex3 -text 5          # symbols instead of colours, every 5 s",
		"tracex3 -listen :9102    # serve the latencies to Prometheus at /metrics too",
	).Periodic(2 * time.Second)
	dev := t.Flags.String("dev", "", "only the block device `MAJ:MIN` (ls -l /dev shows them; 7:0 is loop0)")
	text := t.Flags.Bool("text", false, "shade with symbols, not colours (the default when not on a terminal)")
	listen := t.ListenFlag()
	t.ParseOrExit()
	filter, err := parseDev(*dev)
	if err != nil {
		t.Exit(err)
	}
	ctx, stop := tool.Context()
	defer stop()
	color := !*text && isTerminal(os.Stdout)
	t.Exit(run(ctx, t, filter, color, *listen))
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

// run loads and attaches the programs, draws the heatmap every interval
// until ctx ends or, with a count, count times, then prints the run's
// histogram.
func run(ctx context.Context, t *tool.Tool, filter uint32, color bool, listen string) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	server, err := t.ListenMetrics(listen) // before anything is loaded: an address in use stops here
	if err != nil {
		return err
	}
	defer server.Close()
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return err
	}
	o, err := load(filter, server != nil)
	if err != nil {
		return err
	}
	defer o.Close()
	for i, p := range []*prog.Program{o.issue, o.complete, o.requeue} {
		l, err := prog.AttachTracepoint(p, "block", tracepoints[i], prog.AttachOptions{})
		if err != nil {
			return err
		}
		defer l.Close()
	}
	if server != nil {
		m, err := latencyMetrics(o, ncpu)
		if err != nil {
			return err
		}
		server.Serve(m)
	}

	lat := &latencies{o: o, ncpu: ncpu, seen: map[histKey]uint64{}}
	h := &heatmap{color: color, out: t.Stdout, width: 60}
	t.Started("block I/O latency: one column per %v, darker is more requests of that latency",
		t.Interval)
	err = t.Every(ctx, func(final bool) error {
		col, err := lat.read()
		switch {
		case err != nil:
			return err
		case t.JSON:
			return t.Emit(jsonColumn(col, false, 0))
		}
		h.add(col)
		h.draw()
		return nil
	})
	if err != nil {
		return err
	}
	return summary(t, lat)
}

// summary prints the latency histogram of the whole run, and how many
// requests went untimed if any did.
func summary(t *tool.Tool, lat *latencies) error {
	untimed, err := lat.untimed()
	if err != nil {
		return err
	}
	if t.JSON {
		return t.Emit(jsonColumn(lat.all[:], true, untimed))
	}
	fmt.Fprintln(t.Stdout)
	tool.Hist(t.Stdout, "usecs", histRows(lat.all[:]))
	if untimed > 0 {
		fmt.Fprintf(t.Stdout, "%d requests not timed: the %d slots of the in-flight table "+
			"where each could go were taken\n", untimed, probes)
	}
	return nil
}
