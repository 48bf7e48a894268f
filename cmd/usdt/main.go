// Command usdt lists the USDT probes of a binary or shared library (-l),
// or traces one: each firing with its time, process and the arguments
// asked for, numbers (-a) or strings (-s), or counts of the firings by
// those arguments' values (-count), which -listen serves to Prometheus.
//
//	usdt /usr/bin/python3 python:function__entry -s 0,1 -a 2
//	TIME             PID COMM             ARGS
//	15:04:05.120    4242 python3          /tmp/x.py f 1
//
// One program serves every call site of the probe where the kernel has
// bpf_cookie (5.15), attached to all of them by one uprobe_multi link
// where the kernel has those (6.6), else by a uprobe per site; before
// 5.15, a program per site. usdt says which.
//
// The programs are built in bpf.go; the records and keys they write are
// laid out in layout.go; -count's table of counts is in counts.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/usdt"
)

// options are the flags and arguments.
type options struct {
	list, count bool
	pid         *uint32 // 0: every process
	nums, strs  string  // -a and -s: argument numbers
	listen      *string // -listen: where to serve -count's counts
	path, probe string  // the positional arguments
}

func main() {
	t, o := parseArgs()
	ctx, stop := tool.Context()
	defer stop()
	var err error
	if o.list {
		err = list(t, o.path)
	} else {
		err = trace(ctx, t, o)
	}
	if err != nil && strings.HasPrefix(err.Error(), "usdt: ") {
		err = errors.New(err.Error()[len("usdt: "):]) // the library's prefix is the tool's name
	}
	t.Exit(err)
}

// parseArgs parses the flags and arguments, or exits: status 0 for -h and
// -version, 2 for a bad one.
func parseArgs() (*tool.Tool, options) {
	t := tool.New("usdt", "list the USDT probes of a binary, or trace one: each firing with its "+
		"arguments, or counts by their values",
		"-l PATH | [-p PID] [-a N,...] [-s N,...] [-count [-listen ADDR]] [-json] "+
			"PATH provider:name [interval [count]]",
		"usdt -l /usr/bin/python3                                     # the probes, their call sites, semaphores and arguments",
		"usdt /usr/bin/python3 python:function__entry -s 0,1 -a 2     # file, function and line of every Python function called",
		"usdt -count -s 1 /usr/bin/python3 python:function__entry 5  # calls by function name, every 5 s",
		"usdt -count -s 1 -listen :9101 /usr/bin/python3 python:function__entry  "+
			"# the same for Prometheus",
		"usdt -p 1234 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 libstdcxx:throw  # C++ exceptions thrown by process 1234",
	).Periodic(time.Second).TakesArgs()
	var o options
	t.Flags.BoolVar(&o.list, "l", false, "list the probes of PATH")
	o.pid = t.PIDFlag("p", "trace process `PID` only")
	t.Flags.StringVar(&o.nums, "a", "", "print arguments `N,...` (from 0) as numbers")
	t.Flags.StringVar(&o.strs, "s", "", "print arguments `N,...` as strings they point to")
	t.Flags.BoolVar(&o.count, "count", false, "count firings by the values of the arguments chosen, every interval")
	o.listen = t.ListenFlag()
	t.ParseOrExit()
	if err := o.check(t.Args); err != nil {
		t.Exit(err)
	}
	return t, o
}

// check reads the positional arguments into o and checks what the flags
// cannot: a path with -l, else a path and a probe named provider:name.
func (o *options) check(args []string) error {
	switch n := len(args); {
	case o.list && n != 1:
		return tool.Usagef("-l takes one path")
	case o.list:
		o.path = args[0]
		return nil
	case n != 2:
		return tool.Usagef("want a path and a probe (provider:name), or -l and a path")
	case *o.listen != "" && !o.count:
		return tool.Usagef("-listen serves the counts of -count")
	}
	o.path, o.probe = args[0], args[1]
	provider, name, _ := strings.Cut(o.probe, ":")
	bad := func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }
	if provider == "" || name == "" || strings.ContainsFunc(o.probe, bad) {
		return tool.Usagef("probe %q: want provider:name, as usdt -l PATH lists them", o.probe)
	}
	return nil
}

// tracer is what tracing a probe needs: the tool, the options, the
// probe and the file it is in, and the arguments chosen.
type tracer struct {
	t *tool.Tool
	o options
	f *usdt.File
	p *usdt.Probe
	l argLayout
}

// trace traces the probe until ctx ends or the intervals asked for are
// over: its events, or with -count their counts.
func trace(ctx context.Context, t *tool.Tool, o options) error {
	tr := tracer{t: t, o: o}
	var err error
	if tr.f, err = usdt.Open(o.path); err != nil {
		return err
	}
	if tr.p, err = tr.f.Probe(o.probe); err != nil {
		return err
	}
	sites, err := tr.p.ParseArgs()
	if err != nil {
		return err
	}
	if tr.l, err = newArgLayout(o.nums, o.strs, sites); err != nil {
		return err
	}
	if err := t.NeedRoot(); err != nil {
		return err
	}
	server, err := t.ListenMetrics(*o.listen) // before loading: an address in use is said first
	if err != nil {
		return err
	}
	defer server.Close()
	if o.count {
		return tr.counts(ctx, server)
	}
	return tr.events(ctx)
}

// attach runs build's program at every call site of the probe and says
// how; detach undoes it. It also enables python:line where the probe is
// one of CPython's function probes: CPython 3.11 to 3.14 fire
// function__entry and __return only while python:line is enabled
// (gh-98894).
func (tr tracer) attach(build usdt.Builder) (detach func() error, err error) {
	uo := usdt.Options{PID: int(*tr.o.pid)}
	a, err := usdt.Attach(tr.p, uo, build)
	if err != nil {
		return nil, err
	}
	detach = a.Close
	line, err := tr.f.Probe("python:line")
	if err == nil && strings.HasPrefix(tr.p.String(), "python:function__") {
		if e, err := usdt.Enable(line, uo); err != nil {
			fmt.Fprintf(tr.t.Stderr, "usdt: %s may not fire: %v\n", tr.p,
				strings.TrimPrefix(err.Error(), "usdt: "))
		} else {
			detach = func() error { return errors.Join(e.Close(), a.Close()) }
		}
	}
	how := "one program and one uprobe_multi link, told apart by bpf_cookie"
	if !a.Multi {
		why := "this kernel has no uprobe_multi links (Linux 6.6)"
		if have, _ := prog.HaveUprobeMulti(); have {
			why = "this kernel's uprobe_multi links trace a pid's main thread only (fixed in 6.10)"
		}
		how = "one program, told apart by bpf_cookie, a uprobe per site: " + why
	}
	if !a.Cookies {
		how = "one program per call site: this kernel has no bpf_cookie (Linux 5.15)"
	}
	tr.t.Started("tracing %s in %s (call sites: %d; %s)", tr.p, tr.f.Path, len(tr.p.Sites), how)
	return detach, nil
}
