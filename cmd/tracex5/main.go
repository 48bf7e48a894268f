// Command tracex5 is the kernel's samples/bpf/tracex5 dispatcher: one
// program on the raw tracepoint sys_enter (raw_syscalls:sys_enter)
// tail-calls, through a prog array indexed by the system call number, a
// program per call it knows (write, read, openat, mmap), each of which
// reports the call's own arguments, read from the task's registers,
// through a perf ring; calls without a program fall through the tail call
// to a per-CPU count by number. -swap replaces the write program with
// another, and back, at every interval while the tracing goes on: the
// kernel swaps a prog array's slot atomically, so no call is missed.
//
// A raw tracepoint builds no perf record, so perf users of
// raw_syscalls:sys_enter see every call while tracex5 runs. The calls of a
// 32-bit process on a 64-bit kernel are numbered by its own table, and
// are dispatched (and named) as if they were the kernel's own.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
)

func main() {
	t := tool.New("tracex5", "system calls dispatched by a tail call to a program per call "+
		"(write, read, openat, mmap) that reports its arguments",
		"[-p PID] [-swap] [-json] [interval [count]]",
		"tracex5 -p 1234          # the calls of process 1234, until Ctrl-C",
		"tracex5 -swap 2          # replace the write program every 2 s while tracing",
		"tracex5 -json 5 1        # five seconds of every process's calls, as JSON",
	).Periodic(time.Second)
	pid := t.PIDFlag("p", "trace process `PID` only (tracex5 never traces itself)")
	swap := t.Flags.Bool("swap", false, "replace the write program with one that also shows "+
		"the bytes written, and back, every interval")
	t.ParseOrExit()
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid, *swap))
}

// run loads the programs, attaches the dispatcher, and prints each event
// and, every interval, the other calls' counts, until ctx ends or, with a
// count, for count intervals.
func run(ctx context.Context, t *tool.Tool, pid uint32, swap bool) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	regs, err := prog.KernelPtRegs()
	if err != nil {
		return err
	}
	tab, err := prog.KernelSyscalls()
	if err != nil {
		return err
	}
	o, err := load(pid, regs, tab)
	if err != nil {
		return err
	}
	defer o.Close()
	// A ring wakes tracex5 only once a quarter full: a wake-up per event
	// was most of a handler's cost. Read looks at the rings every Flush
	// anyway, and each event has its time. A batch copies what the rings
	// held to sort it: 256 KiB a ring (bcc's default) bounds that copy,
	// where 1 MiB rings made a burst's batches most of tracex5's memory.
	t.Flush = 100 * time.Millisecond
	ring := perfring.Options{RingBytes: 1 << 18, Watermark: 1 << 16}
	r, err := perfring.NewPerfReader(o.events, ring)
	if err != nil {
		return err
	}
	defer r.Close()
	l, err := prog.AttachRawTracepoint(o.dispatch, "sys_enter", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()

	rep, err := newReporter(t, o, tab, swap)
	if err != nil {
		return err
	}
	t.Batch = rep.batch
	t.Started("system calls through a tail call per call (%s)", o.handled())
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %7s %-16s %s\n", "TIME", "PID", "COMM", "CALL")
	}
	return t.Read(ctx, r, "events", rep.event, rep.interval)
}
