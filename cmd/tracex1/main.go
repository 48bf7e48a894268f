// Command tracex1 prints the packets one network device receives, as the
// kernel's samples/bpf/tracex1 does, with its mechanism: the BPF program
// is the filter of a perf event on net:netif_receive_skb. For each packet
// the kernel runs it, and keeps the tracepoint's own record (its
// PERF_SAMPLE_RAW sample) in the perf event's ring only when the program
// returns 1: when the packet's device is the one asked for. tracex1 reads
// the rings with perfring and decodes each record with the tracepoint's
// parsed format. With -printk the program instead calls bpf_trace_printk,
// and tracex1 prints what it wrote, read back from tracefs's trace_pipe
// (with -json, parsed into the fields of the perf ring's packets).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

func main() {
	t := tool.New("tracex1", "the packets a network device receives (net:netif_receive_skb), filtered in the kernel by a BPF program",
		"[-dev NAME] [-printk] [-json] [interval [count]]",
		"tracex1                  # packets received on lo, until Ctrl-C",
		"tracex1 -dev eth0 1 10   # on eth0, for ten seconds",
		"tracex1 -printk          # through bpf_trace_printk and trace_pipe, as the kernel's sample",
	).Periodic(time.Second)
	dev := t.Flags.String("dev", "lo", "the network device `NAME`")
	printk := t.Flags.Bool("printk", false, "print through bpf_trace_printk and tracefs's trace_pipe instead of a perf ring")
	t.ParseOrExit()
	if *dev == "" || len(*dev) > unix.IFNAMSIZ-1 || strings.ContainsAny(*dev, "/%: \t\n\x00") {
		t.Exit(tool.Usagef("-dev %q: not a network device name", *dev))
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *dev, *printk))
}

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
	name, err := format.Field("name")
	if err != nil {
		return err
	}
	length, err := format.Field("len")
	if err != nil {
		return err
	}
	filter, err := devFilter(name, dev)
	if err != nil {
		return err
	}
	if printk {
		return traceprintk(ctx, t, filter, length, dev)
	}

	// The filter: keep the record (1) for dev's packets, drop it (0) else.
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "tracex1", License: "GPL",
		Insns: append(filter, Mov64Imm(R0, 1), Exit(), Label("other"), Mov64Imm(R0, 0), Exit())})
	if err != nil {
		return err
	}
	defer p.Close()
	r, err := perfring.NewEventReader(perfring.Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: format.ID}, perfring.Options{})
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
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %3s %-16s %6s\n", "TIME", "CPU", "DEVICE", "LEN")
	}
	var packets uint64
	err = t.Read(ctx, r, "records", func(rec perfring.Record) error {
		d, n, err := decode(rec.Sample, name, length)
		if err != nil {
			return err
		}
		packets++
		if t.JSON {
			return t.Emit(packet{Time: time.Now().Format(time.RFC3339Nano), CPU: rec.CPU, Device: d, Len: n})
		}
		_, err = fmt.Fprintf(t.Stdout, "%-12s %3d %-16s %6d\n", time.Now().Format("15:04:05.000"), rec.CPU, d, n)
		return err
	}, nil)
	if err != nil || t.JSON {
		return err
	}
	fmt.Fprintf(t.Stdout, "%d packets", packets)
	if lost := tool.Sum(r.Lost()); lost > 0 {
		fmt.Fprintf(t.Stdout, ", %d records lost", lost)
	}
	fmt.Fprintln(t.Stdout)
	return nil
}

// packet is one packet as -json prints it; -printk adds the task (the
// thread) the kernel was in when the packet came, as trace_pipe says.
type packet struct {
	Time   string `json:"time"`
	CPU    int    `json:"cpu"`
	TID    int    `json:"tid,omitempty"`
	Comm   string `json:"comm,omitempty"`
	Device string `json:"device"`
	Len    uint32 `json:"len"`
}

// devFilter returns instructions that fall through when the record's
// device name is dev, and jump to "other" when it is not. The name is a
// __data_loc string: the 32 bits at its offset hold where it lies in the
// record (low 16) and its length with the NUL (high 16). A tracepoint
// program may not read its record at a variable offset, so the name is
// copied to the stack with bpf_probe_read_kernel and compared 8 bytes at a
// time, masked to the length of dev and its NUL.
func devFilter(name tracefs.Field, dev string) ([]Item, error) {
	if !name.DataLoc {
		return nil, fmt.Errorf("netif_receive_skb's name is %s, not a __data_loc string", name.Type)
	}
	var want [16]byte
	copy(want[:], dev)
	items := []Item{
		Mov64Reg(R6, R1),
		LoadMem(BPF_W, R3, R6, int16(name.Offset)),
		Mov64Reg(R4, R3), ALU64Imm(BPF_RSH, R4, 16), JumpImm(BPF_JNE, R4, int32(len(dev)+1), "other"),
		ALU64Imm(BPF_AND, R3, 0xffff), ALU64Reg(BPF_ADD, R3, R6),
		Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, -16), Mov64Imm(R2, 16), Call(BPF_FUNC_probe_read_kernel),
		JumpImm(BPF_JNE, R0, 0, "other"),
	}
	for w := range 2 {
		var mask [8]byte
		for i := range mask {
			if w*8+i <= len(dev) {
				mask[i] = 0xff
			}
		}
		items = append(items, LoadMem(BPF_DW, R1, R10, int16(-16+8*w)),
			LoadImm64(R2, int64(binary.NativeEndian.Uint64(mask[:]))), ALU64Reg(BPF_AND, R1, R2),
			LoadImm64(R2, int64(binary.NativeEndian.Uint64(want[8*w:]))), JumpReg(BPF_JNE, R1, R2, "other"))
	}
	return items, nil
}

// decode reads the device name and length from a netif_receive_skb record.
func decode(rec []byte, name, length tracefs.Field) (string, uint32, error) {
	if len(rec) < name.Offset+4 || len(rec) < length.Offset+4 {
		return "", 0, fmt.Errorf("a netif_receive_skb record of %d bytes", len(rec))
	}
	loc := binary.NativeEndian.Uint32(rec[name.Offset:])
	off, n := int(loc&0xffff), int(loc>>16)
	if off+n > len(rec) {
		return "", 0, fmt.Errorf("the device name lies outside its record")
	}
	return unix.ByteSliceToString(rec[off : off+n]), binary.NativeEndian.Uint32(rec[length.Offset:]), nil
}

// traceprintk attaches a program that prints the length of dev's packets
// with bpf_trace_printk, and copies trace_pipe's lines to stdout.
func traceprintk(ctx context.Context, t *tool.Tool, filter []Item, length tracefs.Field, dev string) error {
	format := fmt.Sprintf("tracex1: dev %s len %%u\n", dev)
	b := make([]byte, (len(format)+1+7)&^7)
	copy(b, format)
	items := filter
	for i := 0; i < len(b); i += 8 {
		items = append(items, LoadImm64(R1, int64(binary.NativeEndian.Uint64(b[i:]))), StoreMem(BPF_DW, R10, int16(-len(b)+i), R1))
	}
	loadLen, err := tool.LoadField(R3, R6, length)
	if err != nil {
		return err
	}
	items = append(items, loadLen, Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, int32(-len(b))), Mov64Imm(R2, int32(len(format)+1)),
		Call(BPF_FUNC_trace_printk), Label("other"), Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "tracex1_printk", License: "GPL", Insns: items})
	if err != nil {
		return err
	}
	defer p.Close()
	dir, err := tracefs.Path()
	if err != nil {
		return err
	}
	// trace_pipe can be polled: Go's poller makes Close end a blocked Read.
	pipe, err := os.Open(dir + "/trace_pipe")
	if err != nil {
		return err
	}
	if t.Count > 0 && int64(t.Count) <= math.MaxInt64/int64(t.Interval) { // past that, never
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t.Count)*t.Interval)
		defer cancel()
	}
	stop := context.AfterFunc(ctx, func() { pipe.Close() })
	defer stop()
	l, err := prog.AttachTracepoint(p, "net", "netif_receive_skb", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()
	t.Started("bpf_trace_printk lines from %s/trace_pipe", dir)
	s := bufio.NewScanner(pipe)
	msg := []byte("tracex1: dev " + dev + " len ")
	for s.Scan() {
		if !bytes.Contains(s.Bytes(), msg) {
			continue // another program's, or another tracex1's
		}
		if line := s.Text(); !t.JSON {
			fmt.Fprintln(t.Stdout, line)
		} else if p, ok := parsePrintk(line, dev); ok {
			if err := t.Emit(p); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return s.Err()
}

// parsePrintk reads a packet from a line of trace_pipe, "comm-tid [cpu]
// flags seconds: bpf_trace_printk: tracex1: dev lo len 805" (the process
// id in parentheses may follow the thread's; before 5.9 "0: " comes in
// place of "bpf_trace_printk: ").
func parsePrintk(line, dev string) (packet, bool) {
	msg := "tracex1: dev " + dev + " len "
	i := strings.Index(line, msg)
	j := strings.LastIndex(line[:max(i, 0)], " [")
	if i < 0 || j < 0 {
		return packet{}, false
	}
	task := strings.TrimSpace(line[:j])
	if k := strings.LastIndex(task, " ("); k > 0 && strings.HasSuffix(task, ")") {
		task = strings.TrimSpace(task[:k])
	}
	k := strings.LastIndex(task, "-")
	tid, err1 := strconv.Atoi(task[k+1:])
	n, err2 := strconv.ParseUint(line[i+len(msg):], 10, 32)
	p := packet{Time: time.Now().Format(time.RFC3339Nano), TID: tid, Comm: task[:max(k, 0)], Device: dev, Len: uint32(n)}
	_, err3 := fmt.Sscanf(line[j+2:], "%d]", &p.CPU)
	return p, k > 0 && err1 == nil && err2 == nil && err3 == nil
}
