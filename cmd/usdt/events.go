package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"golang.org/x/sys/unix"
)

// event is one firing as -json writes it.
type event struct {
	Time time.Time `json:"time"`
	PID  uint32    `json:"pid"`
	Comm string    `json:"comm"`
	Args []any     `json:"args"`
}

// events prints each firing of the probe, with the arguments chosen, as
// its record comes from the perf ring.
func (tr tracer) events(ctx context.Context) error {
	t := tr.t
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "usdt_events"})
	if err != nil {
		return err
	}
	defer events.Close()
	r, err := perfring.NewPerfReader(events, perfring.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	detach, err := tr.attach(eventProgram(tr.l, events))
	if err != nil {
		return err
	}
	defer detach()
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %7s %-16s %s\n", "TIME", "PID", "COMM", "ARGS")
	}
	return t.Read(ctx, r, "firings", func(rec perfring.Record) error {
		return printEvent(t, tr.l, rec.Sample)
	}, nil)
}

// printEvent prints the firing of a record: its time (the event's, from
// its stamp), process, thread name and arguments. The thread's name is
// the process's to choose, and quoted if it is not printable.
func printEvent(t *tool.Tool, l argLayout, sample []byte) error {
	var h eventHeader
	if err := perfring.Decode(sample, &h); err != nil {
		return err
	}
	if len(sample) < headerSize+l.size {
		return fmt.Errorf("a record of %d bytes, want %d", len(sample), headerSize+l.size)
	}
	at, comm := tool.EventTime(h.Time), unix.ByteSliceToString(h.Comm[:])
	vs := l.values(sample[headerSize:])
	if t.JSON {
		return t.Emit(event{Time: at, PID: h.PID, Comm: comm, Args: jsons(vs)})
	}
	_, err := fmt.Fprintf(t.Stdout, "%-12s %7d %-16s %s\n",
		at.Format("15:04:05.000"), h.PID, printable(comm), texts(vs))
	return err
}
