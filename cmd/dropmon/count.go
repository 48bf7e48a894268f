package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

// Close releases the maps.
func (c *counter) Close() error {
	err := c.drops.Close()
	if c.stacks != nil {
		err = errors.Join(err, c.stacks.Close())
	}
	return err
}

// count counts drops by location and reason, or by stack, and prints
// what each interval added.
func (d *dropmon) count(ctx context.Context) error {
	var c counter
	var err error
	c.drops, err = mapfd.CreateTyped[dropKey, dropCount](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 10240, Name: "drops"})
	if err != nil {
		return err
	}
	defer c.Close()
	if d.o.stacks {
		c.stacks, err = mapfd.Create(mapfd.Spec{Type: mapfd.StackTrace, KeySize: 4, ValueSize: 8 * maxDepth,
			MaxEntries: 4096, Name: "drop_stacks"})
		if err != nil {
			return err
		}
	}
	insns := countProgram(c.drops, mapOrNil(c.stacks), d.k.reason != nil, d.filter)
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: "dropmon", License: "GPL", Insns: insns})
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
	what := "drops at skb:kfree_skb"
	if d.o.stacks {
		what += " by kernel stack"
	}
	d.t.Started("counting %s", what)
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
		a, b := rows[i], rows[j]
		return a.Drops > b.Drops || a.Drops == b.Drops && a.Location+a.Reason < b.Location+b.Reason
	})
}

// print writes an interval's rows: with -json one object, even with no
// rows, so that a reader sees time pass; as text nothing for an interval
// without drops, and the header before the first rows only.
func (d *dropmon) print(rows []drop, header *bool) error {
	now := time.Now()
	if d.t.JSON {
		return d.t.Emit(struct {
			Time  string `json:"time"`
			Drops []drop `json:"drops"`
		}{now.Format(time.RFC3339Nano), append([]drop{}, rows...)})
	}
	if len(rows) == 0 {
		return nil
	}
	w := d.t.Stdout
	if d.o.stacks {
		fmt.Fprintf(w, "%s\n", now.Format("15:04:05"))
		for _, r := range rows {
			fmt.Fprintf(w, "%8d  %s\n", r.Drops, orDash(r.Reason))
			for _, f := range r.Stack {
				fmt.Fprintf(w, "          %s\n", f)
			}
		}
		return nil
	}
	if !*header {
		fmt.Fprintf(w, "%-8s  %5s  %-18s  %s\n", "TIME", "DROPS", "REASON", "LOCATION")
		*header = true
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-8s  %5d  %-18s  %s\n", now.Format("15:04:05"), r.Drops, orDash(r.Reason), r.Location)
	}
	return nil
}

// rows reads the counts and names them: totals when seen is nil, else
// what came since seen, which it updates. The addresses of all the rows
// are named together: one pass over /proc/kallsyms for those not named
// before.
func (d *dropmon) rows(c *counter, seen map[dropKey]uint64) ([]drop, error) {
	var keys []dropKey
	var counts []uint64
	var err error
	for k, total := range c.drops.All(&err) {
		n := total.Drops
		if seen != nil {
			n -= seen[k]
			seen[k] = total.Drops
		}
		if n > 0 {
			keys, counts = append(keys, k), append(counts, n)
		}
	}
	if err != nil {
		return nil, err
	}
	stacks := make([][]uint64, len(keys))
	var addrs []uint64
	for i, k := range keys {
		if c.stacks == nil {
			addrs = append(addrs, k.Location)
			continue
		}
		if stacks[i], err = readStack(c.stacks, k.StackID); err != nil {
			return nil, err
		}
		addrs = append(addrs, stacks[i]...)
	}
	names, err := d.syms.Names(addrs)
	if err != nil {
		return nil, err
	}
	rows := make([]drop, len(keys))
	for i, k := range keys {
		rows[i] = drop{Reason: d.reasonName(k.Reason), Drops: counts[i]}
		if c.stacks == nil {
			rows[i].Location, names = names[0], names[1:]
		} else {
			rows[i].Stack, names = stackNames(k.StackID, names[:len(stacks[i])]), names[len(stacks[i]):]
		}
	}
	return rows, nil
}

// readStack reads the frames of stack id; none when the stack is gone or
// was never recorded (noStack).
func readStack(stacks *mapfd.Map, id uint32) ([]uint64, error) {
	if id == noStack {
		return nil, nil
	}
	buf := make([]byte, 8*maxDepth)
	err := stacks.Lookup(binary.NativeEndian.AppendUint32(nil, id), buf)
	if errors.Is(err, mapfd.ErrKeyNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var frames []uint64
	for i := 0; i < len(buf); i += 8 {
		addr := binary.NativeEndian.Uint64(buf[i:])
		if addr == 0 {
			break
		}
		frames = append(frames, addr)
	}
	return frames, nil
}

// stackNames is how a stack prints: its frames' names from the dropping
// function on, or why it has none. The frames the kernel records first
// are the tracing machinery's, the program itself and the function that
// runs it (bpf_trace_run2 and __bpf_trace_kfree_skb, or on 6.x
// bpf_trace_run4 alone): they say nothing of the drop.
func stackNames(id uint32, frames []string) []string {
	for len(frames) > 1 && isTracing(frames[0]) {
		frames = frames[1:]
	}
	if len(frames) > 0 {
		return frames
	}
	if id == noStack {
		return []string{"(stack not recorded: the stack map was full)"}
	}
	return []string{"(stack gone from the stack map)"}
}

// isTracing says whether a frame is the BPF program or what runs it.
func isTracing(frame string) bool {
	for _, p := range []string{"bpf_prog_", "bpf_trace_run", "__bpf_trace_"} {
		if strings.HasPrefix(frame, p) {
			return true
		}
	}
	return false
}
