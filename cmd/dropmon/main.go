// Command dropmon shows the packets the kernel drops, by where and why. A
// program on the skb:kfree_skb tracepoint counts each drop under its
// location and, on kernels that record it (5.17+), its drop reason, and
// dropmon prints the busiest every interval. -stacks counts by kernel
// stack instead (bpf_get_stackid), -events streams each drop through a
// perf ring, -listen serves the counts to Prometheus.
//
//	15:04:05  drops  reason              location
//	             97  NO_SOCKET           __udp4_lib_rcv+0x4bc
//
// The record's fields are found by name in the tracepoint's format, and the
// reason names come from its __print_symbolic table, so dropmon needs no
// kernel headers or BTF.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

type options struct {
	top    int
	stacks bool
	events bool
	listen string
}

func main() {
	t := tool.New("dropmon", "the packets the kernel drops (skb:kfree_skb), by location and reason, by kernel stack, or one by one",
		"[-top N] [-stacks | -events] [-listen ADDR] [-json] [interval [count]]",
		"dropmon                      # the busiest drop sites every second, until Ctrl-C",
		"dropmon -stacks 5 1          # the kernel stacks that dropped most in 5 s",
		"dropmon -events              # every drop as it happens: time, CPU, pid, comm, protocol, where, why",
		"dropmon -listen :9101 60     # serve /metrics to Prometheus, print every minute",
	).Periodic(time.Second)
	var o options
	t.Flags.IntVar(&o.top, "top", 10, "show the `N` most frequent drop sites or stacks")
	t.Flags.BoolVar(&o.stacks, "stacks", false, "count by kernel stack, printed symbolized, most frequent first")
	t.Flags.BoolVar(&o.events, "events", false, "print each drop as it happens instead of counting")
	listen := t.ListenFlag()
	t.ParseOrExit()
	o.listen = *listen
	switch {
	case o.top < 1:
		t.Exit(tool.Usagef("-top %d: want 1 or more", o.top))
	case o.stacks && o.events:
		t.Exit(tool.Usagef("-stacks and -events: choose one"))
	case o.listen != "" && (o.stacks || o.events):
		t.Exit(tool.Usagef("-listen serves the counts by location and reason: not with -stacks or -events"))
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, o))
}

// key is what a drop is counted under: where and why, or the stack.
type key struct {
	Location uint64 // or the stack id, with -stacks
	Reason   uint32
	_        uint32
}

// dropmon is what the modes share: the tracepoint's fields, the symbols
// and the reason names.
type dropmon struct {
	t       *tool.Tool
	o       options
	loc     tracefs.Field
	reason  *tracefs.Field // nil before 5.17
	reasons map[uint64]string
	syms    *prog.Symbols
	metrics *tool.MetricsServer // -listen's, bound before anything is loaded; nil without -listen
}

func run(ctx context.Context, t *tool.Tool, o options) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	metrics, err := t.ListenMetrics(o.listen)
	if err != nil {
		return err
	}
	defer metrics.Close()
	format, err := tracefs.TracepointFormat("skb", "kfree_skb")
	if err != nil {
		return err
	}
	d := &dropmon{t: t, o: o, reasons: format.Symbols["reason"], metrics: metrics}
	if d.loc, err = format.Field("location"); err != nil {
		return err
	}
	if f, err := format.Field("reason"); err == nil {
		d.reason = &f
	}
	if d.syms, err = prog.Kallsyms(); err != nil {
		return err
	}
	if o.events {
		return d.stream(ctx, format)
	}
	return d.count(ctx)
}

// keyItems stores the key of the drop at fp-16: the location, or the
// stack id in r7 with -stacks, and the reason where the kernel has one.
func (d *dropmon) keyItems() ([]Item, error) {
	load, err := tool.LoadField(R2, R6, d.loc)
	if err != nil {
		return nil, err
	}
	items := []Item{load, StoreMem(BPF_DW, R10, -16, R2), StoreImm(BPF_DW, R10, -8, 0)}
	if d.o.stacks {
		items = []Item{StoreMem(BPF_DW, R10, -16, R7), StoreImm(BPF_DW, R10, -8, 0)}
	}
	if d.reason != nil {
		load, err := tool.LoadField(R2, R6, *d.reason)
		if err != nil {
			return nil, err
		}
		items = append(items, load, StoreMem(BPF_W, R10, -8, R2))
	}
	return items, nil
}

// count counts drops by location and reason, or by stack, and prints
// what each interval added.
func (d *dropmon) count(ctx context.Context) error {
	counts, err := mapfd.CreateTyped[key, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 10240, Name: "drops"})
	if err != nil {
		return err
	}
	defer counts.Close()
	items := []Item{Mov64Reg(R6, R1)}
	var stacks *mapfd.Map
	if d.o.stacks {
		stacks, err = mapfd.Create(mapfd.Spec{Type: mapfd.StackTrace, KeySize: 4, ValueSize: 8 * maxDepth, MaxEntries: 4096, Name: "drop_stacks"})
		if err != nil {
			return err
		}
		defer stacks.Close()
		// r7 = bpf_get_stackid(ctx, stacks, 0): the kernel stack
		items = append(items, Mov64Reg(R1, R6), LoadMapFD(R2, stacks), Mov64Imm(R3, 0), Call(BPF_FUNC_get_stackid),
			JumpImm(BPF_JSLT, R0, 0, "out"), Mov64Reg(R7, R0))
	}
	k, err := d.keyItems()
	if err != nil {
		return err
	}
	items = append(append(items, k...), MapIncrement(counts, -16, -24)...)
	items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "dropmon", License: "GPL", Insns: items})
	if err != nil {
		return err
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, "skb", "kfree_skb", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()

	if d.metrics != nil {
		m, err := dropMetrics(func() ([]drop, error) { return d.rows(counts, stacks, nil) })
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
	seen := map[key]uint64{}
	return d.t.Every(ctx, func(final bool) error {
		rows, err := d.rows(counts, stacks, seen)
		if err != nil {
			return err
		}
		sort.Slice(rows, func(i, j int) bool { // most first, then by name: the same order every time
			a, b := rows[i], rows[j]
			return a.Drops > b.Drops || a.Drops == b.Drops && a.Location+a.Reason < b.Location+b.Reason
		})
		rows = rows[:min(len(rows), d.o.top)]
		if d.t.JSON {
			return d.t.Emit(struct {
				Time  string `json:"time"`
				Drops []drop `json:"drops"`
			}{time.Now().Format(time.RFC3339Nano), append([]drop{}, rows...)})
		}
		if d.o.stacks {
			fmt.Fprintf(d.t.Stdout, "%s\n", time.Now().Format("15:04:05"))
			for _, r := range rows {
				fmt.Fprintf(d.t.Stdout, "%8d  %s\n", r.Drops, cmpOr(r.Reason, "-"))
				for _, f := range r.Stack {
					fmt.Fprintf(d.t.Stdout, "          %s\n", f)
				}
			}
			return nil
		}
		fmt.Fprintf(d.t.Stdout, "%s  %5s  %-18s  %s\n", time.Now().Format("15:04:05"), "drops", "reason", "location")
		for _, r := range rows {
			fmt.Fprintf(d.t.Stdout, "%8s  %5d  %-18s  %s\n", "", r.Drops, cmpOr(r.Reason, "-"), r.Location)
		}
		return nil
	})
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// maxDepth is PERF_MAX_STACK_DEPTH, the frames a stack map keeps.
const maxDepth = 127

// rows reads the counts: totals when seen is nil, else what came since
// seen, which it updates.
func (d *dropmon) rows(counts *mapfd.Typed[key, uint64], stacks *mapfd.Map, seen map[key]uint64) ([]drop, error) {
	var rows []drop
	var err error
	for k, total := range counts.All(&err) {
		n := total
		if seen != nil {
			n -= seen[k]
			seen[k] = total
		}
		if n == 0 {
			continue
		}
		r := drop{Reason: d.reasonName(k.Reason), Drops: n}
		if stacks == nil {
			r.Location = d.syms.Name(k.Location)
		} else if r.Stack, err = d.stack(stacks, uint32(k.Location)); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, err
}

// stack reads and symbolizes the stack of id.
func (d *dropmon) stack(stacks *mapfd.Map, id uint32) ([]string, error) {
	buf := make([]byte, 8*maxDepth)
	k := []byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
	err := stacks.Lookup(k, buf)
	if errors.Is(err, mapfd.ErrKeyNotExist) {
		return []string{"(stack gone: the stack map was full)"}, nil
	}
	if err != nil {
		return nil, err
	}
	var frames []string
	for i := 0; i < len(buf); i += 8 {
		addr := uint64(buf[i]) | uint64(buf[i+1])<<8 | uint64(buf[i+2])<<16 | uint64(buf[i+3])<<24 |
			uint64(buf[i+4])<<32 | uint64(buf[i+5])<<40 | uint64(buf[i+6])<<48 | uint64(buf[i+7])<<56
		if addr == 0 {
			break
		}
		frames = append(frames, d.syms.Name(addr))
	}
	return frames, nil
}

// reasonName is the name of a drop reason, from the tracepoint's
// __print_symbolic table, or its number; "" on kernels without reasons.
func (d *dropmon) reasonName(r uint32) string {
	if d.reason == nil {
		return ""
	}
	if name, ok := d.reasons[uint64(r)]; ok {
		return name
	}
	return fmt.Sprint(r)
}

// protocols names the ETH_P_* values kfree_skb records (in host order).
var protocols = map[uint16]string{0x0800: "IP", 0x86dd: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q", 0x88cc: "LLDP"}

func protocolName(p uint16) string {
	if name, ok := protocols[p]; ok {
		return name
	}
	return fmt.Sprintf("0x%04x", p)
}
