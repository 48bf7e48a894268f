// Command tracex2 is the kernel's samples/bpf/tracex2 on tracepoints: a
// program on the kfree_skb raw tracepoint counts the packets freed at each
// kernel location, and one on syscalls:sys_enter_write counts write()
// sizes in log2 slots. Every interval it prints the busiest locations,
// symbolized, and the size histogram in bcc's layout; -listen serves both
// to Prometheus, the freed packets as a counter by location, the sizes as
// a histogram in bytes.
//
// Neither program hides anything from other tracers: the raw tracepoint
// builds no perf record, and the perf tracepoint's program returns 1,
// leaving sys_enter_write's record to perf's other users. Kernel addresses
// are named at the first report that shows them, all of a report's in one
// pass over /proc/kallsyms (prog.Symbolizer).
package main

import (
	"context"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// options are tracex2's flags.
type options struct {
	pid    *uint32
	top    int
	listen *string
}

func main() {
	t := tool.New("tracex2", "packets freed per kernel location (skb:kfree_skb) and a log2 histogram of write() sizes",
		"[-p PID] [-top N] [-listen ADDR] [-json] [interval [count]]",
		"tracex2                 # every second until Ctrl-C",
		"tracex2 -p 1234 5 3     # write sizes of process 1234 only, every 5 s, three times",
		"tracex2 -json 10        # one JSON object every 10 s",
		"tracex2 -listen :9102 60  # serve /metrics to Prometheus, print every minute",
	).Periodic(time.Second)
	var o options
	o.pid = t.PIDFlag("p", "count the writes of process `PID` only "+
		"(packets are freed in any context: all are counted)")
	t.Flags.IntVar(&o.top, "top", 10, "show the `N` busiest locations")
	o.listen = t.ListenFlag()
	t.ParseOrExit()
	if o.top < 1 {
		t.Exit(tool.Usagef("-top %d: want 1 or more", o.top))
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, o))
}

// tracex2 is the maps the programs count in and what the reports need.
type tracex2 struct {
	t     *tool.Tool
	o     options
	freed *mapfd.Typed[freedKey, freedCount]
	sizes *mapfd.Typed[sizeSlot, sizeCount]
	syms  *prog.Symbolizer
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
	count, err := tool.Field("syscalls", "sys_enter_write", "count")
	if err != nil {
		return err
	}
	x := &tracex2{t: t, o: o, syms: prog.NewSymbolizer()}
	x.freed, err = mapfd.CreateTyped[freedKey, freedCount](mapfd.Spec{
		Type:       mapfd.Hash,
		MaxEntries: 10240,
		Name:       "freed",
	})
	if err != nil {
		return err
	}
	defer x.freed.Close()
	x.sizes, err = mapfd.CreateTyped[sizeSlot, sizeCount](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: slots,
		Name:       "write_sizes",
	})
	if err != nil {
		return err
	}
	defer x.sizes.Close()
	write, err := writeProgram(x.sizes, count, *o.pid)
	if err != nil {
		return err
	}
	links, err := attach(freedProgram(x.freed), write)
	if err != nil {
		return err
	}
	defer tool.Detach(links)

	if metrics != nil {
		m, err := x.metrics()
		if err != nil {
			return err
		}
		metrics.Serve(m)
	}
	t.Started("counting freed packets (skb:kfree_skb) and write() sizes")
	r, err := x.newReport()
	if err != nil {
		return err
	}
	return t.Every(ctx, func(bool) error { return r.print() })
}

// attach loads the programs and attaches them: freed to the kfree_skb raw
// tracepoint, write to the sys_enter_write perf tracepoint. The links
// hold the programs.
func attach(freed, write tool.Program) ([]*prog.Link, error) {
	var links []*prog.Link
	for _, a := range []struct {
		typ    prog.Type
		name   string
		insns  tool.Program
		attach func(*prog.Program) (*prog.Link, error)
	}{
		{prog.RawTracepoint, "tracex2_freed", freed, func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachRawTracepoint(p, "kfree_skb", prog.AttachOptions{})
		}},
		{prog.Tracepoint, "tracex2_write", write, func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachTracepoint(p, "syscalls", "sys_enter_write", prog.AttachOptions{})
		}},
	} {
		p, err := prog.Load(prog.Spec{Type: a.typ, Name: a.name, License: "GPL", Insns: a.insns})
		var l *prog.Link
		if err == nil {
			l, err = a.attach(p)
			p.Close() // the link holds the program
		}
		if err != nil {
			tool.Detach(links)
			return nil, err
		}
		links = append(links, l)
	}
	return links, nil
}
