package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// event is what the program sends for each drop, as it lays it out.
type event struct {
	Time     uint64 // CLOCK_MONOTONIC ns
	Location uint64
	PID, CPU uint32
	Reason   uint32
	Protocol uint16
	_        uint16
	Comm     [16]byte
}

const eventSize = 48 // unsafe.Sizeof(event{})

// dropEvent is one drop, as -events prints it.
type dropEvent struct {
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
func (d *dropmon) stream(ctx context.Context, format *tracefs.Format) error {
	proto, err := format.Field("protocol")
	if err != nil {
		return err
	}
	loadProto, err := tool.LoadField(R2, R6, proto)
	if err != nil {
		return err
	}
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "drop_events"})
	if err != nil {
		return err
	}
	defer events.Close()
	k, err := d.keyItems() // location at fp-16, reason at fp-8
	if err != nil {
		return err
	}
	items := append([]Item{Mov64Reg(R6, R1)}, k...)
	items = append(items,
		LoadMem(BPF_DW, R2, R10, -16), StoreMem(BPF_DW, R10, -56, R2), // location
		LoadMem(BPF_W, R2, R10, -8), StoreMem(BPF_W, R10, -40, R2), // reason
		Call(BPF_FUNC_ktime_get_ns), StoreMem(BPF_DW, R10, -64, R0),
		Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32), StoreMem(BPF_W, R10, -48, R0),
		Call(BPF_FUNC_get_smp_processor_id), StoreMem(BPF_W, R10, -44, R0),
		loadProto, StoreMem(BPF_H, R10, -36, R2), StoreImm(BPF_H, R10, -34, 0),
		Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, -32), Mov64Imm(R2, 16), Call(BPF_FUNC_get_current_comm),
		Mov64Reg(R1, R6), LoadMapFD(R2, events), LoadImm64(R3, BPF_F_CURRENT_CPU),
		Mov64Reg(R4, R10), ALU64Imm(BPF_ADD, R4, -64), Mov64Imm(R5, eventSize), Call(BPF_FUNC_perf_event_output),
		Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "dropmon_events", License: "GPL", Insns: items})
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

	// bpf_ktime_get_ns is CLOCK_MONOTONIC: wall time is its offset from now.
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	boot := time.Now().Add(-time.Duration(mono.Nano()))
	d.t.Started("streaming drops at skb:kfree_skb")
	if !d.t.JSON {
		fmt.Fprintf(d.t.Stdout, "%-12s %3s %7s %-16s %-6s %-18s %s\n", "TIME", "CPU", "PID", "COMM", "PROTO", "REASON", "LOCATION")
	}
	var drops uint64
	err = d.t.Read(ctx, r, "drops", func(rec perfring.Record) error {
		var ev event
		if err := perfring.Decode(rec.Sample, &ev); err != nil {
			return err
		}
		e := dropEvent{
			Time: boot.Add(time.Duration(ev.Time)), PID: ev.PID, CPU: ev.CPU,
			Reason: d.reasonName(ev.Reason), Protocol: protocolName(ev.Protocol),
			Comm: unix.ByteSliceToString(ev.Comm[:]), Location: d.syms.Name(ev.Location),
		}
		drops++
		if d.t.JSON {
			return d.t.Emit(e)
		}
		_, err := fmt.Fprintf(d.t.Stdout, "%-12s %3d %7d %-16s %-6s %-18s %s\n", e.Time.Format("15:04:05.000"),
			e.CPU, e.PID, e.Comm, e.Protocol, cmpOr(e.Reason, "-"), e.Location)
		return err
	}, nil)
	if err != nil || d.t.JSON {
		return err
	}
	fmt.Fprintf(d.t.Stdout, "%d drops", drops)
	if lost := tool.Sum(r.Lost()); lost > 0 {
		fmt.Fprintf(d.t.Stdout, ", %d lost", lost)
	}
	fmt.Fprintln(d.t.Stdout)
	return nil
}
