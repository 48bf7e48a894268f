package main

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestEventLayout test-runs the openat handler (a raw tracepoint program
// can be, 5.10) and reads what it sent: as many bytes as event holds
// (the perf ring pads to 8), each field where the struct has it: this
// process, the handler's id, this thread's name, a time of now on
// CLOCK_MONOTONIC; and zeros for the arguments and the path, which the
// handler could not read through the null pt_regs pointer it was given.
func TestEventLayout(t *testing.T) {
	testutil.RequireRoot(t)
	regs, err := prog.KernelPtRegs()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := prog.KernelSyscalls()
	if err != nil {
		t.Fatal(err)
	}
	o, err := load(0, regs, tab)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	r, err := perfring.NewPerfReader(o.events, perfring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ctx [16]byte // u64 args[2]: no pt_regs, then openat's number
	binary.NativeEndian.PutUint64(ctx[8:], uint64(o.nrs[hOpenat]))
	var before, after unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	if _, err := o.handlers[hOpenat].TestRun(prog.RunOptions{Ctx: ctx[:]}); err != nil {
		t.Fatal(err)
	}
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := r.Read(rctx)
	if err != nil {
		t.Fatal(err)
	}
	size := int(unsafe.Sizeof(event{}))
	if len(rec.Sample) < size || len(rec.Sample) >= size+8 {
		t.Fatalf("the handler sent %d bytes; event is %d", len(rec.Sample), size)
	}
	var ev event
	if err := perfring.Decode(rec.Sample, &ev); err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/thread-self/comm")
	switch {
	case ev.PID != uint32(os.Getpid()) || ev.Handler != hOpenat:
		t.Errorf("pid %d, handler %d; want %d, %d", ev.PID, ev.Handler, os.Getpid(), hOpenat)
	case unix.ByteSliceToString(ev.Comm[:])+"\n" != string(comm):
		t.Errorf("comm %q, want %q", ev.Comm, comm)
	case ev.Time < uint64(before.Nano()) || ev.Time > uint64(after.Nano()):
		t.Errorf("time %d, want between %d and %d", ev.Time, before.Nano(), after.Nano())
	case ev.Args != [6]uint64{} || ev.Data != [dataSize]byte{}:
		t.Errorf("arguments %#x, path %q; want zeros", ev.Args, ev.Data)
	}
}
