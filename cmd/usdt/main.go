// Command usdt lists the USDT probes of a binary or shared library (-l),
// or traces one: each firing with its time, process and the arguments
// asked for, numbers (-a) or strings (-s), or counts of the firings by
// those arguments' values (-count).
//
//	usdt /usr/bin/python3 python:function__entry -s 0,1 -a 2
//	TIME         PID     COMM             ARGS
//	15:04:05.120 4242    python3          /tmp/x.py f 1
//
// One program serves every call site of the probe where the kernel has
// bpf_cookie (5.15), else one program per site; usdt says which.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/usdt"
	"golang.org/x/sys/unix"
)

// strSize is the bytes kept of each string argument, with its NUL.
const strSize = 128

// header is what each record starts with: u64 time, u32 pid, u32 pad,
// char comm[16]; the arguments follow, 8 bytes for a number, strSize for
// a string.
const header = 32

type options struct {
	list, count bool
	pid         int
	nums, strs  string
}

func main() {
	t := tool.New("usdt", "list the USDT probes of a binary, or trace one: each firing with its arguments, or counts by their values",
		"-l PATH | [-p PID] [-a N,...] [-s N,...] [-count] [-json] PATH provider:name [interval [count]]",
		"usdt -l /usr/bin/python3                                     # the probes, their call sites, semaphores and arguments",
		"usdt /usr/bin/python3 python:function__entry -s 0,1 -a 2     # file, function and line of every Python function called",
		"usdt -count -s 1 /usr/bin/python3 python:function__entry 5  # calls by function name, every 5 s",
		"usdt -p 1234 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 libstdcxx:throw  # C++ exceptions thrown by process 1234",
	).Periodic(time.Second).TakesArgs()
	var o options
	t.Flags.BoolVar(&o.list, "l", false, "list the probes of PATH")
	pid := t.PIDFlag("p", "trace process `PID` only")
	t.Flags.StringVar(&o.nums, "a", "", "print arguments `N,...` (from 0) as numbers")
	t.Flags.StringVar(&o.strs, "s", "", "print arguments `N,...` as strings they point to")
	t.Flags.BoolVar(&o.count, "count", false, "count firings by the values of the arguments chosen, every interval")
	t.ParseOrExit()
	o.pid = int(*pid)
	switch n := len(t.Args); {
	case o.list && n != 1:
		t.Exit(tool.Usagef("-l takes one path"))
	case !o.list && n != 2:
		t.Exit(tool.Usagef("want a path and a probe (provider:name), or -l and a path"))
	}
	ctx, stop := tool.Context()
	defer stop()
	var err error
	if o.list {
		err = list(t, t.Args[0])
	} else {
		err = run(ctx, t, o)
	}
	if err != nil && strings.HasPrefix(err.Error(), "usdt: ") {
		err = errors.New(err.Error()[6:]) // the library's prefix, the tool's name
	}
	t.Exit(err)
}

func list(t *tool.Tool, path string) error {
	f, err := usdt.Open(path)
	if err != nil {
		return err
	}
	for _, p := range f.Probes {
		if t.JSON {
			t.Emit(struct {
				Probe string      `json:"probe"`
				Sites []usdt.Site `json:"sites"`
			}{p.String(), p.Sites})
			continue
		}
		sem := "no semaphore"
		if a := p.Sites[0].Semaphore; a != 0 {
			sem = fmt.Sprintf("semaphore %#x", a)
		}
		fmt.Fprintf(t.Stdout, "%s  %d site%s  %s\n", p, len(p.Sites), map[bool]string{true: "s"}[len(p.Sites) > 1], sem)
		for _, s := range p.Sites {
			fmt.Fprintf(t.Stdout, "    %#x  %s\n", s.Address, s.Args)
		}
	}
	return nil
}

// field is one argument printed: a number or a string, at off in the
// record.
type field struct {
	n, off      int
	str, signed bool
}

func (f field) end() int { return f.off + map[bool]int{false: 8, true: strSize}[f.str] }

// fields reads -a and -s against the probe's arguments at its sites.
func fields(o options, sites [][]usdt.Arg) ([]field, error) {
	args := sites[0]
	var out []field
	for _, l := range []struct {
		flag, list string
		str        bool
	}{{"a", o.nums, false}, {"s", o.strs, true}} {
		for s := range strings.SplitSeq(l.list, ",") {
			n, err := strconv.Atoi(s)
			switch {
			case l.list == "":
			case err != nil || n < 0 || n >= len(args):
				return nil, tool.Usagef("-%s %s: the probe has %d arguments, from 0", l.flag, l.list, len(args))
			case slices.ContainsFunc(out, func(f field) bool { return f.n == n }):
				return nil, tool.Usagef("argument %d is chosen twice", n)
			default:
				// Load would refuse it too, but after the maps are made,
				// and for a user without root only after NeedRoot.
				for _, site := range sites {
					if site[n].Err != nil {
						return nil, site[n].Err
					}
				}
				out = append(out, field{n: n, str: l.str, signed: args[n].Signed})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	end := header
	for i := range out {
		out[i].off = end
		end = out[i].end()
	}
	if end > 512-usdt.Scratch {
		return nil, tool.Usagef("the arguments chosen take %d bytes of stack: more than the %d there are (a string takes %d)", end, 512-usdt.Scratch, strSize)
	}
	return out, nil
}

func run(ctx context.Context, t *tool.Tool, o options) error {
	f, err := usdt.Open(t.Args[0])
	if err != nil {
		return err
	}
	p, err := f.Probe(t.Args[1])
	if err != nil {
		return err
	}
	args, err := p.ParseArgs()
	if err != nil {
		return err
	}
	fs, err := fields(o, args)
	if err != nil {
		return err
	}
	if err := t.NeedRoot(); err != nil {
		return err
	}
	size := header
	if len(fs) > 0 {
		size = fs[len(fs)-1].end()
	} else if o.count {
		size += 8 // a key of zero: the total
	}
	rec := int16(-usdt.Scratch - size)
	var out *mapfd.Map // the perf event array, or the counts by argument values
	if o.count {
		out, err = mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: uint32(size - header), ValueSize: 8, MaxEntries: 10240, Name: "usdt_counts"})
	} else {
		out, err = mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "usdt_events"})
	}
	if err != nil {
		return err
	}
	defer out.Close()
	build := func(a *usdt.Args) ([]Item, error) {
		items := []Item{Mov64Reg(R6, R1)}
		for off := 0; off < size; off += 8 {
			items = append(items, StoreImm(BPF_DW, R10, rec+int16(off), 0))
		}
		for _, f := range fs {
			var load []Item
			if f.str {
				load, err = a.String(R6, f.n, rec+int16(f.off), strSize)
			} else if load, err = a.Load(R7, R6, f.n); err == nil {
				load = append(load, StoreMem(BPF_DW, R10, rec+int16(f.off), R7))
			}
			items = append(items, load...)
			if err != nil {
				return nil, err
			}
		}
		if o.count {
			return append(append(items, MapIncrement(out, rec+header, -8)...), Mov64Imm(R0, 0), Exit()), nil
		}
		return append(items, Call(BPF_FUNC_ktime_get_ns), StoreMem(BPF_DW, R10, rec, R0),
			Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32), StoreMem(BPF_W, R10, rec+8, R0),
			Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, int32(rec+16)), Mov64Imm(R2, 16), Call(BPF_FUNC_get_current_comm),
			Mov64Reg(R1, R6), LoadMapFD(R2, out), LoadImm64(R3, BPF_F_CURRENT_CPU),
			Mov64Reg(R4, R10), ALU64Imm(BPF_ADD, R4, int32(rec)), Mov64Imm(R5, int32(size)), Call(BPF_FUNC_perf_event_output),
			Mov64Imm(R0, 0), Exit()), nil
	}
	var r *perfring.PerfReader
	if !o.count {
		if r, err = perfring.NewPerfReader(out, perfring.Options{}); err != nil {
			return err
		}
		defer r.Close()
	}
	a, err := usdt.Attach(p, usdt.Options{PID: o.pid}, build)
	if err != nil {
		return err
	}
	defer a.Close()
	// CPython 3.11 to 3.14 fire function__entry and __return only while
	// python:line is enabled (gh-98894): set its semaphore too.
	if line, err := f.Probe("python:line"); err == nil && strings.HasPrefix(p.String(), "python:function__") {
		if e, err := usdt.Enable(line, usdt.Options{PID: o.pid}); err != nil {
			fmt.Fprintf(t.Stderr, "usdt: %s may not fire: %v\n", p, strings.TrimPrefix(err.Error(), "usdt: "))
		} else {
			defer e.Close()
		}
	}
	how := "one program, told apart by bpf_cookie"
	if !a.Cookies {
		how = "one program per call site: this kernel has no bpf_cookie (Linux 5.15)"
	}
	msg := fmt.Sprintf("tracing %s in %s (call sites: %d; %s); Ctrl-C to stop\n", p, f.Path, len(p.Sites), how)
	if t.JSON {
		fmt.Fprint(t.Stderr, msg)
	} else {
		fmt.Fprint(t.Stdout, msg)
	}
	if o.count {
		return counts(ctx, t, out, fs)
	}
	return events(ctx, t, r, fs)
}

// values reads the fields of a record's arguments, at their offsets less
// skip.
func values(b []byte, fs []field, skip int) []any {
	var out []any
	for _, f := range fs {
		b := b[f.off-skip:]
		v := binary.LittleEndian.Uint64(b)
		switch {
		case f.str:
			out = append(out, unix.ByteSliceToString(b[:strSize]))
		case f.signed:
			out = append(out, int64(v))
		default:
			out = append(out, v)
		}
	}
	return out
}

func text(vs []any) string { return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(vs), "["), "]") }

func events(ctx context.Context, t *tool.Tool, r *perfring.PerfReader, fs []field) error {
	// bpf_ktime_get_ns is CLOCK_MONOTONIC: wall time is its offset from now.
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	boot := time.Now().Add(-time.Duration(mono.Nano()))
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %-7s %-16s %s\n", "TIME", "PID", "COMM", "ARGS")
	}
	return t.Read(ctx, r, "firings", func(rec perfring.Record) error {
		s := rec.Sample
		if len(s) < header {
			return fmt.Errorf("a record of %d bytes", len(s))
		}
		at := boot.Add(time.Duration(binary.LittleEndian.Uint64(s)))
		pid, comm, vs := binary.LittleEndian.Uint32(s[8:]), unix.ByteSliceToString(s[16:32]), values(s, fs, 0)
		if t.JSON {
			return t.Emit(struct {
				Time time.Time `json:"time"`
				PID  uint32    `json:"pid"`
				Comm string    `json:"comm"`
				Args []any     `json:"args"`
			}{at, pid, comm, vs})
		}
		_, err := fmt.Fprintf(t.Stdout, "%-12s %-7d %-16s %s\n", at.Format("15:04:05.000"), pid, comm, text(vs))
		return err
	}, nil)
}

func counts(ctx context.Context, t *tool.Tool, m *mapfd.Map, fs []field) error {
	seen := map[string]uint64{}
	type row struct {
		Args  []any  `json:"args"`
		Count uint64 `json:"count"`
	}
	return t.Every(ctx, func(final bool) error {
		var rows []row
		var err error
		for key, v := range m.All(&err) {
			n := binary.LittleEndian.Uint64(v)
			if d := n - seen[string(key)]; d > 0 {
				rows = append(rows, row{values(key, fs, header), d})
			}
			seen[string(key)] = n
		}
		if err != nil {
			return err
		}
		sort.Slice(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			return a.Count > b.Count || a.Count == b.Count && text(a.Args) < text(b.Args)
		})
		if t.JSON {
			return t.Emit(struct {
				Time   string `json:"time"`
				Counts []row  `json:"counts"`
			}{time.Now().Format(time.RFC3339Nano), append([]row{}, rows...)})
		}
		fmt.Fprintf(t.Stdout, "\n%s\n%8s  %s\n", time.Now().Format("15:04:05"), "COUNT", "ARGS")
		for _, r := range rows {
			fmt.Fprintf(t.Stdout, "%8d  %s\n", r.Count, text(r.Args))
		}
		return nil
	})
}
