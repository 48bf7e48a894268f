package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// dropLine is one drop, as -events prints it.
type dropLine struct {
	Time     time.Time `json:"time"`
	CPU      uint32    `json:"cpu"`
	PID      uint32    `json:"pid"`
	Comm     string    `json:"comm"`
	Protocol string    `json:"protocol"`
	Reason   string    `json:"reason,omitempty"`
	Location string    `json:"location"`
}

// stream sends every drop through a perf event array and prints it, until
// Ctrl-C or, with a count, count intervals.
func (d *dropmon) stream(ctx context.Context) error {
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "drop_events"})
	if err != nil {
		return err
	}
	defer events.Close()
	insns, err := eventProgram(events, &d.k, d.filter)
	if err != nil {
		return err
	}
	spec := prog.Spec{Type: prog.Tracepoint, Name: "dropmon_events", License: "GPL", Insns: insns}
	p, err := prog.Load(spec)
	if err != nil {
		return err
	}
	defer p.Close()
	r, err := perfring.NewPerfReader(events, perfring.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	l, err := prog.AttachTracepoint(p, "skb", "kfree_skb", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()

	d.t.Started("streaming drops at skb:kfree_skb")
	if !d.t.JSON {
		// the columns of printEvent's "%-12s %3d %7d %-16s %-6s %-18s %s"
		io.WriteString(d.t.Stdout, "TIME         CPU     PID COMM             PROTO  "+
			"REASON             LOCATION\n")
	}
	var drops uint64
	err = d.t.Read(ctx, r, "drops", func(rec perfring.Record) error {
		var ev dropEvent
		if err := perfring.Decode(rec.Sample, &ev); err != nil {
			return err
		}
		drops++
		return d.printEvent(ev)
	}, nil)
	if err != nil || d.t.JSON {
		return err
	}
	lost := ""
	if n := tool.Sum(r.Lost()); n > 0 {
		lost = fmt.Sprintf(", %d lost", n)
	}
	_, err = fmt.Fprintf(d.t.Stdout, "%d drops%s\n", drops, lost)
	return err
}

// printEvent prints one drop: a line, or with -json an object. Its time
// is the drop's, from the program's bpf_ktime_get_ns.
func (d *dropmon) printEvent(ev dropEvent) error {
	where, err := d.syms.Names([]uint64{ev.Location})
	if err != nil {
		return err
	}
	e := dropLine{
		Time: tool.EventTime(ev.Time), PID: ev.PID, CPU: ev.CPU,
		Reason: d.reasonName(ev.Reason), Protocol: protocolName(ev.Protocol),
		Comm: unix.ByteSliceToString(ev.Comm[:]), Location: where[0],
	}
	if d.t.JSON {
		return d.t.Emit(e)
	}
	_, err = fmt.Fprintf(d.t.Stdout, "%-12s %3d %7d %-16s %-6s %-18s %s\n",
		e.Time.Format("15:04:05.000"), e.CPU, e.PID, e.Comm, e.Protocol, orDash(e.Reason),
		e.Location)
	return err
}

// protocolName names the ETH_P_* values kfree_skb records (in host
// order), else writes the number.
func protocolName(p uint16) string {
	switch p {
	case 0x0800:
		return "IP"
	case 0x86dd:
		return "IPv6"
	case 0x0806:
		return "ARP"
	case 0x8100:
		return "802.1Q"
	case 0x88cc:
		return "LLDP"
	}
	return fmt.Sprintf("0x%04x", p)
}
