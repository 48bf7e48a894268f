// Command dropmon counts the packets the kernel drops, by where and why:
// a program on the skb:kfree_skb tracepoint counts each drop under its
// location and, on kernels that record it (5.17+), its drop reason, and
// dropmon prints the top of the table every interval.
//
//	dropmon [-i 1s] [-n 0] [-top 10]
//
//	15:04:05  drops  reason              location
//	             97  NO_SOCKET           __udp4_lib_rcv+0x8f4
//
// The record's fields are found by name in the tracepoint's format, and the
// reason names come from its __print_symbolic table, so dropmon needs no
// kernel headers or BTF. Run it as root; stop it with Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

type options struct {
	interval time.Duration
	count    int // intervals to print; 0 until stopped
	top      int
}

func main() {
	var o options
	flag.DurationVar(&o.interval, "i", time.Second, "print every `interval`")
	flag.IntVar(&o.count, "n", 0, "stop after `n` intervals (0: until Ctrl-C)")
	flag.IntVar(&o.top, "top", 10, "show the `n` most frequent drops")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dropmon:", err)
		os.Exit(1)
	}
}

// key is what a drop is counted under.
type key struct {
	Location uint64
	Reason   uint32
	_        uint32
}

func run(ctx context.Context, o options, w io.Writer) error {
	format, err := tracefs.TracepointFormat("skb", "kfree_skb")
	if err != nil {
		return err
	}
	loc, err := format.Field("location")
	if err != nil {
		return err
	}
	reason, errReason := format.Field("reason") // absent before 5.17
	syms, err := prog.Kallsyms()
	if err != nil {
		return err
	}
	counts, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 16, ValueSize: 8, MaxEntries: 10240, Name: "drops"})
	if err != nil {
		return err
	}
	defer counts.Close()
	table, err := mapfd.NewTyped[key, uint64](counts)
	if err != nil {
		return err
	}

	items := []Item{
		Mov64Reg(R6, R1),
		LoadMem(BPF_DW, R2, R6, int16(loc.Offset)), // location
		StoreMem(BPF_DW, R10, -16, R2),
		StoreImm(BPF_DW, R10, -8, 0), // reason and padding
	}
	if errReason == nil {
		var size Size
		switch reason.Size {
		case 1:
			size = BPF_B
		case 2:
			size = BPF_H
		case 4:
			size = BPF_W
		default:
			return fmt.Errorf("kfree_skb's reason is %d bytes, not 1, 2 or 4", reason.Size)
		}
		items = append(items, LoadMem(size, R2, R6, int16(reason.Offset)), StoreMem(BPF_W, R10, -8, R2))
	}
	items = append(items, MapIncrement(counts, -16, -24)...) // counts[key at r10-16]++, r10-24 scratch
	items = append(items, Mov64Imm(R0, 0), Exit())
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

	reasons := format.Symbols["reason"]
	seen := map[key]uint64{}
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	fmt.Fprintln(w, "counting drops at skb:kfree_skb; Ctrl-C to stop")
	for n := 0; o.count == 0 || n < o.count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		type row struct {
			k     key
			drops uint64
		}
		var rows []row
		var iterErr error
		for k, total := range table.All(&iterErr) {
			if d := total - seen[k]; d > 0 {
				rows = append(rows, row{k, d})
			}
			seen[k] = total
		}
		if iterErr != nil {
			return iterErr
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].drops > rows[j].drops })
		fmt.Fprintf(w, "%s  %5s  %-18s  %s\n", time.Now().Format("15:04:05"), "drops", "reason", "location")
		for _, r := range rows[:min(len(rows), o.top)] {
			why := "-"
			if errReason == nil {
				why = reasons[uint64(r.k.Reason)]
				if why == "" {
					why = fmt.Sprint(r.k.Reason)
				}
			}
			fmt.Fprintf(w, "%8s  %5d  %-18s  %s\n", "", r.drops, why, syms.Name(r.k.Location))
		}
	}
	return nil
}
