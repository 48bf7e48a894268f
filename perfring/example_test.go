package perfring_test

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// A program sends "getppid!" through a perf event array each time this
// process calls getppid; ReadFunc hands the records over in place, a
// batch at a time.
func ExampleNewPerfReader() {
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "events"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer events.Close()
	r, err := perfring.NewPerfReader(events, perfring.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	msg := binary.NativeEndian.Uint64([]byte("getppid!"))
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "send", License: "GPL", Insns: []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1), // the context, which perf_event_output takes
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.LoadImm64(insn.R1, int64(msg)),
		insn.StoreMem(insn.BPF_DW, insn.R10, -8, insn.R1),
		insn.Mov64Reg(insn.R1, insn.R6),
		insn.LoadMapFD(insn.R2, events),
		insn.LoadImm64(insn.R3, insn.BPF_F_CURRENT_CPU), // this CPU's ring
		insn.Mov64Reg(insn.R4, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R4, -8),
		insn.Mov64Imm(insn.R5, 8),
		insn.Call(insn.BPF_FUNC_perf_event_output),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1), // keep the record for other perf users of the tracepoint,
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, "syscalls", "sys_enter_getppid", prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	for range 3 {
		os.Getppid()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for read := 0; read < 3; {
		n, err := r.ReadFunc(ctx, func(rec perfring.Record) error {
			if rec.Lost != 0 {
				fmt.Println("lost", rec.Lost)
				return nil
			}
			fmt.Printf("%q\n", rec.Sample) // 8 bytes, then the kernel's padding
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		read += n
	}

	// As root, it prints:
	// "getppid!\x00\x00\x00\x00"
	// "getppid!\x00\x00\x00\x00"
	// "getppid!\x00\x00\x00\x00"
}

// A program sends "getppid!" through a BPF ring buffer, shared by every
// CPU, each time this process calls getppid; Read returns the records one
// by one, copied.
func ExampleNewRingBufReader() {
	ring, err := mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 64 << 10, Name: "ring"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ring.Close()
	r, err := perfring.NewRingBufReader(ring)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	msg := binary.NativeEndian.Uint64([]byte("getppid!"))
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "send", License: "GPL", Insns: []insn.Item{
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.LoadImm64(insn.R1, int64(msg)),
		insn.StoreMem(insn.BPF_DW, insn.R10, -8, insn.R1),
		insn.LoadMapFD(insn.R1, ring),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -8),
		insn.Mov64Imm(insn.R3, 8),
		insn.Mov64Imm(insn.R4, 0),
		insn.Call(insn.BPF_FUNC_ringbuf_output),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1), // keep the record for other perf users of the tracepoint,
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, "syscalls", "sys_enter_getppid", prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	for range 3 {
		os.Getppid()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		rec, err := r.Read(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (%d bytes)\n", rec.Sample, len(rec.Sample))
	}

	// As root, it prints:
	// getppid! (8 bytes)
	// getppid! (8 bytes)
	// getppid! (8 bytes)
}

// NewEventReader samples a tracepoint's own records, as perf record does:
// here sys_enter_getppid's, kept by a Tracepoint program attached to the
// reader's event only when this process made the call. Decode reads each
// record into a struct laid out as the tracepoint's format says. Such a
// filter drops the record for every perf user of the tracepoint while it
// is attached, not only for this reader (the kernel builds one record).
func ExampleNewEventReader() {
	id, err := tracefs.TracepointID("syscalls", "sys_enter_getppid")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := perfring.NewEventReader(perfring.Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: id}, perfring.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "mine", License: "GPL", Insns: []insn.Item{
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32), // the process id
		insn.Mov64Reg(insn.R1, insn.R0),
		insn.Mov64Imm(insn.R0, 0), // drop the record,
		insn.JumpImm(insn.BPF_JNE, insn.R1, int32(os.Getpid()), "out"),
		insn.Mov64Imm(insn.R0, 1), // or keep it
		insn.Label("out"),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// One attachment filters the records of every CPU's event.
	l, err := prog.AttachPerfEvent(p, r.FDs()[0], prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	if err := r.Enable(); err != nil {
		fmt.Println(err)
		return
	}

	for range 3 {
		os.Getppid()
	}
	type sysEnter struct { // events/syscalls/sys_enter_getppid/format
		Type         uint16
		Flags        uint8
		PreemptCount uint8
		PID          int32 // the thread's
		NR           int32 // the system call's number
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for read := 0; read < 3; {
		n, err := r.ReadFunc(ctx, func(rec perfring.Record) error {
			var e sysEnter
			if rec.Lost != 0 {
				fmt.Println("lost", rec.Lost)
			} else if err := perfring.Decode(rec.Sample, &e); err != nil {
				return err
			} else {
				fmt.Println("sys_enter_getppid:", e.Type == uint16(id), e.NR == unix.SYS_GETPPID)
			}
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		read += n
	}

	// As root, it prints:
	// sys_enter_getppid: true true
	// sys_enter_getppid: true true
	// sys_enter_getppid: true true
}

// Decode copies a sample into a value of a Go type laid out as the program
// wrote it: here a u32, 4 bytes of padding and a u64. A sample too short,
// or a type with pointers, is an error.
func ExampleDecode() {
	type event struct {
		PID   uint32
		_     uint32
		Bytes uint64
	}
	sample := binary.NativeEndian.AppendUint32(nil, 42)
	sample = binary.NativeEndian.AppendUint32(sample, 0)
	sample = binary.NativeEndian.AppendUint64(sample, 1500)
	var e event
	err := perfring.Decode(sample, &e)
	fmt.Println(e.PID, e.Bytes, err)
	fmt.Println(perfring.Decode(sample[:12], &e))
	var named struct{ Name string }
	fmt.Println(perfring.Decode(sample, &named))
	// Output:
	// 42 1500 <nil>
	// perfring: a sample of 12 bytes is shorter than perfring_test.event (16 bytes)
	// perfring: Decode into struct { Name string }: sys: string is not fixed-size plain data
}

// rootExamples are the examples that need root: TestExamples runs them.
func rootExamples(t *testing.T) []testutil.RootExample {
	compat := ""
	if long, _ := sys.KernelLongSize(); strconv.IntSize == 32 && long == 8 {
		// The syscalls: tracepoints ignore compat system calls
		// (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS).
		compat = "sys_enter_getppid does not fire for a 32-bit process on a 64-bit kernel"
	}
	return []testutil.RootExample{{F: ExampleNewPerfReader, Skip: compat}, {F: ExampleNewRingBufReader, Skip: compat},
		{F: ExampleNewEventReader, Skip: compat}}
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
