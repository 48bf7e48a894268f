package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// tracePrintk attaches the program that writes a line for each of dev's
// packets with bpf_trace_printk, and copies trace_pipe's lines (with
// -json, parses them), reporting what the trace buffer lost.
func tracePrintk(ctx context.Context, t *tool.Tool, f recordFields, dev string) error {
	p, err := printkProgram(f, dev)
	if err != nil {
		return err
	}
	defer p.Close()
	dir, err := tracefs.Path()
	if err != nil {
		return err
	}
	pipe, err := os.Open(filepath.Join(dir, "trace_pipe"))
	if err != nil {
		return err
	}
	defer pipe.Close()
	if t.Count > 0 && int64(t.Count) <= math.MaxInt64/int64(t.Interval) { // past that, never
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t.Count)*t.Interval)
		defer cancel()
	}
	// trace_pipe can be polled: Go's poller makes Close end a blocked Read.
	stop := context.AfterFunc(ctx, func() { pipe.Close() })
	defer stop()
	l, err := prog.AttachTracepoint(p, "net", "netif_receive_skb", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()
	t.Started("bpf_trace_printk lines from %s/trace_pipe", dir)
	out := &printer{t: t}
	lost, err := readPipe(t, pipe, dev, out)
	if err != nil && ctx.Err() == nil {
		return err
	}
	return out.summary(lost, "trace events")
}

// readPipe copies the lines of dev's packets until the pipe is closed, as
// text or, with -json, parsed.
func readPipe(t *tool.Tool, pipe *os.File, dev string, out *printer) (uint64, error) {
	s := bufio.NewScanner(pipe)
	msg := []byte("tracex1: dev " + dev + " ns ")
	lost := uint64(0)
	for s.Scan() {
		line := s.Bytes()
		if !bytes.Contains(line, msg) {
			continue // another program's, or another tracex1's
		}
		if !t.JSON {
			out.packets++
			if _, err := fmt.Fprintf(t.Stdout, "%s\n", line); err != nil {
				return lost, err
			}
		} else if pk, ok := parsePrintk(string(line), dev); ok {
			if err := out.packet(pk); err != nil {
				return lost, err
			}
		}
	}
	return lost, s.Err()
}

// parsePrintk reads a packet from a line of trace_pipe, "comm-tid [cpu]
// flags seconds: bpf_trace_printk: tracex1: dev lo ns 5022347823 len 805"
// (the process id in parentheses may follow the thread's; before 5.9 "0:
// " comes in place of "bpf_trace_printk: "). Its time is the one the
// program wrote, bpf_ktime_get_ns.
func parsePrintk(line, dev string) (packet, bool) {
	msg := "tracex1: dev " + dev + " ns "
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
	ns, length, found := strings.Cut(line[i+len(msg):], " len ")
	when, err2 := strconv.ParseUint(ns, 10, 64)
	n, err3 := strconv.ParseUint(length, 10, 32)
	p := packet{Time: eventTime(when), TID: tid, Comm: task[:max(k, 0)], Device: dev, Len: uint32(n)}
	_, err4 := fmt.Sscanf(line[j+2:], "%d]", &p.CPU)
	return p, k > 0 && found && err1 == nil && err2 == nil && err3 == nil && err4 == nil
}
