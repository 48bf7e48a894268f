package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// drop is one row of dropmon's table: where (a location, or with -stacks
// a stack) and why, and how many.
type drop struct {
	Location string   `json:"location,omitempty"`
	Stack    []string `json:"stack,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Drops    uint64   `json:"drops"`
}

// maxDepth is PERF_MAX_STACK_DEPTH, the frames a stack map keeps.
const maxDepth = 127

// counter is the counting mode's maps.
type counter struct {
	drops  *mapfd.Typed[dropKey, dropCount]
	stacks *mapfd.Map // -stacks: the kernel stacks by id; else nil
}

// count counts drops by location and reason, or by stack, and prints
// what each interval added.
func (d *dropmon) count(ctx context.Context) error {
	var c counter
	var err error
	drops := mapfd.Spec{Type: mapfd.Hash, MaxEntries: 10240, Name: "drops"}
	c.drops, err = mapfd.CreateTyped[dropKey, dropCount](drops)
	if err != nil {
		return err
	}
	defer c.drops.Close()
	if d.o.stacks {
		c.stacks, err = mapfd.Create(mapfd.Spec{
			Type:       mapfd.StackTrace,
			KeySize:    4,
			ValueSize:  8 * maxDepth,
			MaxEntries: 4096,
			Name:       "drop_stacks",
		})
		if err != nil {
			return err
		}
		defer c.stacks.Close()
	}
	insns := countProgram(c.drops, mapOrNil(c.stacks), d.k.reason != nil, d.filter)
	spec := prog.Spec{Type: prog.RawTracepoint, Name: "dropmon", License: "GPL", Insns: insns}
	p, err := prog.Load(spec)
	if err != nil {
		return err
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "kfree_skb", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()

	if d.metrics != nil {
		m, err := dropMetrics(func() ([]drop, error) { return d.rows(&c, nil) })
		if err != nil {
			return err
		}
		d.metrics.Serve(m)
	}
	by := ""
	if d.o.stacks {
		by = " by kernel stack"
	}
	d.t.Started("counting drops at skb:kfree_skb%s", by)
	seen := map[dropKey]uint64{}
	header := false
	return d.t.Every(ctx, func(bool) error {
		rows, err := d.rows(&c, seen)
		if err != nil {
			return err
		}
		sortRows(rows)
		return d.print(rows[:min(len(rows), d.o.top)], &header)
	})
}

// mapOrNil is m as the program builder takes it: a nil *mapfd.Map would
// be a non-nil interface.
func mapOrNil(m *mapfd.Map) insn.MapFD {
	if m == nil {
		return nil
	}
	return m
}

// sortRows puts the most drops first, then orders by name: the same order
// every time.
func sortRows(rows []drop) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.Drops != b.Drops {
			return a.Drops > b.Drops
		}
		return a.Location < b.Location || a.Location == b.Location && a.Reason < b.Reason
	})
}

// print writes an interval's rows: with -json one object, even with no
// rows, so that a reader sees time pass; as text nothing for an interval
// without drops, and the header before the first rows only.
func (d *dropmon) print(rows []drop, header *bool) error {
	now := time.Now()
	if d.t.JSON {
		if rows == nil {
			rows = []drop{} // [], not null
		}
		return d.t.Emit(struct {
			Time  string `json:"time"`
			Drops []drop `json:"drops"`
		}{now.Format(time.RFC3339Nano), rows})
	}
	if len(rows) == 0 {
		return nil
	}
	w, hms := d.t.Stdout, now.Format("15:04:05")
	if d.o.stacks {
		fmt.Fprintf(w, "%s\n", hms)
		for _, r := range rows {
			fmt.Fprintf(w, "%8d  %s\n", r.Drops, orDash(r.Reason))
			for _, f := range r.Stack {
				fmt.Fprintf(w, "          %s\n", f)
			}
		}
		return nil
	}
	if !*header {
		io.WriteString(w, "TIME      DROPS  REASON              LOCATION\n") // as the rows below
		*header = true
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-8s  %5d  %-18s  %s\n", hms, r.Drops, orDash(r.Reason), r.Location)
	}
	return nil
}

// rows reads the counts and names them: totals when seen is nil, else
// what came since seen, which it updates. The addresses of all the rows
// are named together: one pass over /proc/kallsyms for those not named
// before.
func (d *dropmon) rows(c *counter, seen map[dropKey]uint64) ([]drop, error) {
	var rows []drop
	var addrs []uint64 // every row's: its location, or its stack's frames
	var ends []int     // where each row's addresses end
	var err error
	for k, total := range c.drops.All(&err) {
		n := total.Drops
		if seen != nil {
			n -= seen[k]
			seen[k] = total.Drops
		}
		if n == 0 {
			continue
		}
		if c.stacks == nil {
			addrs = append(addrs, k.Location)
		} else if addrs, err = appendStack(addrs, c.stacks, k.StackID); err != nil {
			return nil, err
		}
		rows = append(rows, drop{Reason: d.reasonName(k.Reason), Drops: n})
		ends = append(ends, len(addrs))
	}
	if err != nil {
		return nil, err
	}
	names, err := d.syms.Names(addrs)
	if err != nil {
		return nil, err
	}
	start := 0
	for i, end := range ends {
		if c.stacks == nil {
			rows[i].Location = names[start]
		} else {
			rows[i].Stack = stackNames(names[start:end])
		}
		start = end
	}
	return rows, nil
}

// appendStack appends the frames of stack id to addrs: none when the
// stack was never recorded (an errno, negative) or is gone from the map.
func appendStack(addrs []uint64, stacks *mapfd.Map, id uint32) ([]uint64, error) {
	if int32(id) < 0 {
		return addrs, nil
	}
	var key [4]byte
	binary.NativeEndian.PutUint32(key[:], id)
	buf := make([]byte, 8*maxDepth)
	err := stacks.Lookup(key[:], buf)
	if errors.Is(err, mapfd.ErrKeyNotExist) {
		return addrs, nil
	}
	for i := 0; err == nil && i < len(buf); i += 8 {
		addr := binary.NativeEndian.Uint64(buf[i:])
		if addr == 0 {
			break
		}
		addrs = append(addrs, addr)
	}
	return addrs, err
}

// stackNames is how a stack prints: its frames' names from the dropping
// function on, or why it has none. The frames the kernel records first
// are the tracing machinery's, the program itself and what runs it
// (bpf_trace_run2 and __bpf_trace_kfree_skb, or on 6.x bpf_trace_run4
// alone): they say nothing of the drop.
func stackNames(frames []string) []string {
	for len(frames) > 1 && (strings.HasPrefix(frames[0], "bpf_prog_") ||
		strings.HasPrefix(frames[0], "bpf_trace_run") ||
		strings.HasPrefix(frames[0], "__bpf_trace_")) {
		frames = frames[1:]
	}
	if len(frames) == 0 {
		return []string{"(no stack: the stack map was full)"}
	}
	return frames
}
