package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	"golang.org/x/sys/unix"
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
	pipe, err := openPipe(filepath.Join(dir, "trace_pipe"))
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

// openPipe opens trace_pipe. Since 6.6 the kernel lets one process read it
// at a time (commit c2489bb7e6be) and answers others EBUSY: the error
// then says who reads it.
func openPipe(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("%s is being read by %s, and the kernel lets one process "+
			"read it at a time: %w", path, pipeReaders(path), err)
	}
	return f, err
}

// pipeReaders names the processes that have path open, from their fds in
// /proc: "process 1234 (cat)", or "another process" when none shows (one
// in another PID namespace).
func pipeReaders(path string) string {
	want, err := os.Stat(path)
	if err != nil {
		return "another process"
	}
	var found []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if st, err := os.Stat(fd); err == nil && os.SameFile(st, want) {
			pid := strings.Split(fd, "/")[2]
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			found = append(found, fmt.Sprintf("process %s (%s)", pid, strings.TrimSpace(string(comm))))
		}
	}
	if len(found) == 0 {
		return "another process"
	}
	return strings.Join(found, ", ")
}

// readPipe copies the lines of dev's packets until the pipe is closed, as
// text or, with -json, parsed; and reports each loss the kernel notes in
// the pipe ("CPU:1 [LOST 4511 EVENTS]": the trace buffer of that CPU was
// full, its oldest events overwritten), returning their sum.
func readPipe(t *tool.Tool, pipe *os.File, dev string, out *printer) (uint64, error) {
	s := bufio.NewScanner(pipe)
	msg := []byte("tracex1: dev " + dev + " ns ")
	lost := uint64(0)
	for s.Scan() {
		line := s.Bytes()
		if cpu, n, ok := lostEvents(line); ok {
			lost += n
			if err := t.LostIn(cpu, n, "trace events", "trace buffer"); err != nil {
				return lost, err
			}
			continue
		}
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

// lostEvents reads the line trace_pipe writes where it lost events,
// "CPU:%d [LOST %lu EVENTS]" (kernel/trace/trace.c, print_trace_line).
func lostEvents(line []byte) (cpu int, n uint64, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte("CPU:"))
	c, rest, found2 := bytes.Cut(rest, []byte(" [LOST "))
	count, found3 := bytes.CutSuffix(rest, []byte(" EVENTS]"))
	if !found || !found2 || !found3 {
		return 0, 0, false
	}
	cpu, err1 := strconv.Atoi(string(c))
	n, err2 := strconv.ParseUint(string(count), 10, 64)
	return cpu, n, err1 == nil && err2 == nil
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
	p := packet{
		Time:   tool.EventTime(when),
		TID:    tid,
		Comm:   task[:max(k, 0)],
		Device: dev,
		Len:    uint32(n),
	}
	_, err4 := fmt.Sscanf(line[j+2:], "%d]", &p.CPU)
	return p, k > 0 && found && err1 == nil && err2 == nil && err3 == nil && err4 == nil
}
