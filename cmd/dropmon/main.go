// Command dropmon shows the packets the kernel drops, by where and why. A
// program on the kfree_skb raw tracepoint counts each drop under its
// location and, on kernels that record it (5.17+), its drop reason, and
// dropmon prints the busiest every interval that had drops. -stacks counts
// by kernel stack instead (bpf_get_stackid), -events streams each drop
// through a perf ring, -listen serves the counts to Prometheus; -p and
// -reason keep only the drops of one process or of some reasons.
//
//	TIME      DROPS  REASON              LOCATION
//	15:04:05     97  NO_SOCKET           __udp4_lib_rcv+0x4bc
//
// Counting attaches a raw tracepoint program, which builds no perf record
// and filters nothing: perf and other tracers of skb:kfree_skb see every
// drop while dropmon runs. -events needs the record's protocol, so its
// program runs on the perf tracepoint, and returns 1 to leave the record
// to perf's other users. The reason names come from the tracepoint's
// format, so dropmon needs no kernel headers or BTF. Kernel addresses are
// named at the first report that shows them, one pass over /proc/kallsyms
// for all those of a report (prog.Symbolizer).
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
)

// options are dropmon's flags.
type options struct {
	top     int
	stacks  bool
	events  bool
	listen  *string
	pid     *uint32
	reasons string
}

func main() {
	t := tool.New("dropmon", "the packets the kernel drops (skb:kfree_skb), by location and reason, by kernel stack, or one by one",
		"[-top N] [-stacks | -events] [-p PID] [-reason NAME,...] [-listen ADDR] [-json] "+
			"[interval [count]]",
		"dropmon                      # the busiest drop sites, every second with drops",
		"dropmon -stacks 5 1          # the kernel stacks that dropped most in 5 s",
		"dropmon -events              # every drop as it happens: time, CPU, pid, comm, protocol, where, why",
		"dropmon -events -reason NO_SOCKET,TCP_CSUM -p 1234  # only these reasons, in process 1234",
		"dropmon -listen :9101 60     # serve /metrics to Prometheus, print every minute",
	).Periodic(time.Second)
	var o options
	t.Flags.IntVar(&o.top, "top", 10, "show the `N` most frequent drop sites or stacks")
	t.Flags.BoolVar(&o.stacks, "stacks", false, "count by kernel stack, printed symbolized, most frequent first")
	t.Flags.BoolVar(&o.events, "events", false, "print each drop as it happens instead of counting")
	o.listen = t.ListenFlag()
	o.pid = t.PIDFlag("p", "only drops while process `PID` runs (the sender's, on loopback)")
	t.Flags.StringVar(&o.reasons, "reason", "",
		"only drops for one of these reasons, as the tracepoint's format names them: "+
			"`NO_SOCKET,TCP_CSUM`")
	t.ParseOrExit()
	if err := o.check(); err != nil {
		t.Exit(err)
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, o))
}

// check refuses flags that contradict each other or are out of range.
func (o options) check() error {
	switch {
	case o.top < 1:
		return tool.Usagef("-top %d: want 1 or more", o.top)
	case o.stacks && o.events:
		return tool.Usagef("-stacks and -events: choose one")
	case *o.listen != "" && (o.stacks || o.events):
		return tool.Usagef("-listen serves the counts by location and reason: " +
			"not with -stacks or -events")
	}
	return nil
}

// dropmon is what the modes share.
type dropmon struct {
	t       *tool.Tool
	o       options
	k       kfreeSkb
	filter  filter
	syms    *prog.Symbolizer
	metrics *tool.MetricsServer // -listen's, bound before anything is loaded; nil without
}

func run(ctx context.Context, t *tool.Tool, o options) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	metrics, err := t.ListenMetrics(*o.listen)
	if err != nil {
		return err
	}
	defer metrics.Close()
	k, err := readKfreeSkb()
	if err != nil {
		return err
	}
	d := &dropmon{
		t:       t,
		o:       o,
		k:       k,
		filter:  filter{pid: *o.pid},
		syms:    prog.NewSymbolizer(),
		metrics: metrics,
	}
	if d.filter.reasons, err = k.reasonNumbers(o.reasons); err != nil {
		return err
	}
	if o.events {
		return d.stream(ctx)
	}
	return d.count(ctx)
}

// reasonNumbers reads -reason's list of names, as the tracepoint's format
// has them (NO_SOCKET), in any case.
func (k kfreeSkb) reasonNumbers(list string) ([]uint32, error) {
	if list == "" {
		return nil, nil
	}
	if k.reason == nil {
		return nil, fmt.Errorf("-reason %s: this kernel's skb:kfree_skb records no drop reason "+
			"(Linux 5.17 and later do)", list)
	}
	var numbers []uint32
next:
	for _, want := range strings.Split(upper(list), ",") {
		for n, name := range k.reasons {
			if name == want {
				numbers = append(numbers, uint32(n))
				continue next
			}
		}
		return nil, tool.Usagef("-reason %q: no such drop reason in skb:kfree_skb's format "+
			"(NO_SOCKET, TCP_CSUM, ...)", want)
	}
	return numbers, nil
}

// upper is s with its ASCII letters in upper case, as the reasons' names
// are: strings.ToUpper would link Unicode's tables into dropmon.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// reasonName is the name of a drop reason, from the tracepoint's
// __print_symbolic table, or its number; "" on kernels without reasons.
func (d *dropmon) reasonName(r uint32) string {
	if d.k.reason == nil {
		return ""
	}
	if name, ok := d.k.reasons[uint64(r)]; ok {
		return name
	}
	return fmt.Sprint(r)
}

// orDash is s, or "-" for an empty column.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
