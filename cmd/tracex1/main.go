// Command tracex1 prints the packets one network device receives, as the
// kernel's samples/bpf/tracex1 does, with its mechanism: the BPF program
// is the filter of a perf event on net:netif_receive_skb. For each packet
// the kernel runs it, and keeps the tracepoint's own record (its
// PERF_SAMPLE_RAW sample) only when the program returns 1: when the
// packet's device is the one asked for. tracex1 reads the rings with
// perfring and decodes each record with the tracepoint's parsed format,
// stamped by the kernel with the packet's time (PERF_SAMPLE_TIME).
//
// The filter is the tracepoint's, not tracex1's own: while tracex1 runs,
// every perf user of net:netif_receive_skb (perf record, perf stat,
// another tracer) sees only the packets of the device tracex1 watches.
//
// With -printk the program instead calls bpf_trace_printk, and tracex1
// prints what it wrote, read back from tracefs's trace_pipe (with -json,
// parsed into the fields of the perf ring's packets); it filters nothing
// for anyone else.
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

func main() {
	t := tool.New("tracex1", "the packets a network device receives (net:netif_receive_skb), "+
		"filtered in the kernel by a BPF program, the tracepoint's filter: while tracex1 runs, "+
		"every perf user of netif_receive_skb sees that device's packets only (not with -printk)",
		"[-dev NAME] [-printk] [-json] [interval [count]]",
		"tracex1                  # packets received on lo, until Ctrl-C",
		"tracex1 -dev eth0 1 10   # on eth0, for ten seconds",
		"tracex1 -printk          # through bpf_trace_printk and trace_pipe, as the kernel's sample",
	).Periodic(time.Second)
	dev := t.Flags.String("dev", "lo", "the network device `NAME`")
	printk := t.Flags.Bool("printk", false,
		"print through bpf_trace_printk and tracefs's trace_pipe instead of a perf ring")
	t.ParseOrExit()
	if *dev == "" || len(*dev) > unix.IFNAMSIZ-1 || strings.ContainsAny(*dev, "/%: \t\n\x00") {
		t.Exit(tool.Usagef("-dev %q: not a network device name", *dev))
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *dev, *printk))
}

// run checks the device, reads the tracepoint's format, and prints the
// packets through the perf ring or, with printk, through trace_pipe.
func run(ctx context.Context, t *tool.Tool, dev string, printk bool) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	if _, err := net.InterfaceByName(dev); err != nil {
		return fmt.Errorf("no network device %q: %w", dev, err)
	}
	format, err := tracefs.TracepointFormat("net", "netif_receive_skb")
	if err != nil {
		return err
	}
	var f recordFields
	if f.name, err = format.Field("name"); err != nil {
		return err
	}
	if f.length, err = format.Field("len"); err != nil {
		return err
	}
	if printk {
		return tracePrintk(ctx, t, f, dev)
	}
	return traceRecords(ctx, t, f, format.ID, dev)
}

// traceRecords filters the tracepoint's perf events with the program and
// prints each record the kernel keeps.
func traceRecords(ctx context.Context, t *tool.Tool, f recordFields, id uint64, dev string) error {
	p, err := filterProgram(f, dev)
	if err != nil {
		return err
	}
	defer p.Close()
	ev := perfring.Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: id}
	r, err := perfring.NewEventReader(ev, perfring.Options{SampleTime: true})
	if err != nil {
		return err
	}
	defer r.Close()
	// One attachment filters the event on every CPU (NewEventReader says why).
	l, err := prog.AttachPerfEvent(p, r.FDs()[0], prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()
	if err := r.Enable(); err != nil {
		return err
	}
	t.Started("packets received on %s", dev)
	out := &printer{t: t}
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %3s %-16s %6s\n", "TIME", "CPU", "DEVICE", "LEN")
	}
	err = t.Read(ctx, r, "records", func(rec perfring.Record) error {
		name, length, err := decode(rec.Sample, f)
		if err != nil {
			return err
		}
		pk := packet{Time: tool.EventTime(rec.Time), CPU: rec.CPU, Device: name, Len: length}
		return out.packet(pk)
	}, nil)
	if err != nil {
		return err
	}
	return out.summary(tool.Sum(r.Lost()), "records")
}

// decode reads the device name and length from a netif_receive_skb record.
func decode(rec []byte, f recordFields) (string, uint32, error) {
	if len(rec) < f.name.Offset+4 || len(rec) < f.length.Offset+4 {
		return "", 0, fmt.Errorf("a netif_receive_skb record of %d bytes", len(rec))
	}
	loc := binary.NativeEndian.Uint32(rec[f.name.Offset:])
	off, n := int(loc&0xffff), int(loc>>16)
	if off+n > len(rec) {
		return "", 0, fmt.Errorf("the device name lies outside its record")
	}
	length := binary.NativeEndian.Uint32(rec[f.length.Offset:])
	return unix.ByteSliceToString(rec[off : off+n]), length, nil
}

// packet is one packet as -json prints it; -printk adds the task (the
// thread) the kernel was in when the packet came, as trace_pipe says.
type packet struct {
	Time   time.Time `json:"time"`
	CPU    int       `json:"cpu"`
	TID    int       `json:"tid,omitempty"`
	Comm   string    `json:"comm,omitempty"`
	Device string    `json:"device"`
	Len    uint32    `json:"len"`
}

// printer prints the packets, and counts them for the summary.
type printer struct {
	t       *tool.Tool
	packets uint64
}

// packet prints a packet as a line of text, or of JSON.
func (p *printer) packet(pk packet) error {
	p.packets++
	if p.t.JSON {
		return p.t.Emit(pk)
	}
	_, err := fmt.Fprintf(p.t.Stdout, "%-12s %3d %-16s %6d\n",
		pk.Time.Format("15:04:05.000"), pk.CPU, pk.Device, pk.Len)
	return err
}

// summary ends the text: the packets printed and, if the kernel lost any,
// how many of what.
func (p *printer) summary(lost uint64, what string) error {
	if p.t.JSON {
		return nil
	}
	msg := fmt.Sprintf("%d packets", p.packets)
	if lost > 0 {
		msg += fmt.Sprintf(", %d %s lost", lost, what)
	}
	_, err := fmt.Fprintln(p.t.Stdout, msg)
	return err
}
