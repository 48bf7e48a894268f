package perfring_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if n := os.Getenv("BPFKIT_PRODUCER"); n != "" {
		produce(n)
		return
	}
	os.Exit(testutil.LeakMain(m))
}

const recordSize = 64

// emitter attaches, to sys_enter_getppid, a program that sends a 64-byte
// record for every getppid of process pid: the CPU's sequence number, the
// CPU, then bytes 16..63 equal to their index. ringbuf selects
// bpf_ringbuf_output into out instead of bpf_perf_event_output.
func emitter(t testing.TB, out *mapfd.Map, pid int, ringbuf bool) *emitted {
	t.Helper()
	// seq[1] is the process followed, seq[2] the outputs that failed (a
	// full ring); seq[0] is unused.
	seq, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 3, Name: "seq"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seq.Close() })
	// The sequence numbers are per CPU: fetching atomics need 5.12, and a
	// tracepoint program never interrupts itself on a CPU.
	pcpu, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "pcpu_seq"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pcpu.Close() })
	typed, _ := mapfd.NewTyped[uint32, uint64](seq)
	e := &emitted{typed}
	e.follow(pid)
	group, event, check := getppidEvent()
	items := append(check,
		Mov64Reg(R6, R1),
		StoreImm(BPF_W, R10, -4, 1),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, seq),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		LoadMem(BPF_DW, R7, R0, 0),
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpReg(BPF_JNE, R0, R7, "out"),
		StoreImm(BPF_W, R10, -4, 0),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, pcpu),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		LoadMem(BPF_DW, R7, R0, 0), // r7 = this CPU's seq++
		Mov64Reg(R8, R7),
		ALU64Imm(BPF_ADD, R8, 1),
		StoreMem(BPF_DW, R0, 0, R8),
		StoreMem(BPF_DW, R10, -64, R7),
		Call(BPF_FUNC_get_smp_processor_id),
		StoreMem(BPF_DW, R10, -56, R0),
	)
	for i := 16; i < recordSize; i += 8 {
		var v [8]byte
		for j := range v {
			v[j] = byte(i + j)
		}
		items = append(items, LoadImm64(R1, int64(binary.NativeEndian.Uint64(v[:]))), StoreMem(BPF_DW, R10, int16(-64+i), R1))
	}
	if ringbuf {
		items = append(items, LoadMapFD(R1, out), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -64),
			Mov64Imm(R3, recordSize), Mov64Imm(R4, 0), Call(BPF_FUNC_ringbuf_output))
	} else {
		items = append(items, Mov64Reg(R1, R6), LoadMapFD(R2, out), LoadImm64(R3, BPF_F_CURRENT_CPU),
			Mov64Reg(R4, R10), ALU64Imm(BPF_ADD, R4, -64), Mov64Imm(R5, recordSize), Call(BPF_FUNC_perf_event_output))
	}
	items = append(items,
		JumpImm(BPF_JEQ, R0, 0, "out"), // the output failed: count it in seq[2]
		StoreImm(BPF_W, R10, -4, 2))
	items = append(items, testutil.AddOne(seq, "out")...)
	// Return 1: 0 would drop the tracepoint's record for every other perf
	// user of it, other tests running at the same time among them.
	items = append(items, Label("out"), Mov64Imm(R0, 1), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "emit", License: "GPL", Insns: items})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	l, err := prog.AttachTracepoint(p, group, event, prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return e
}

// getppidEvent is the tracepoint the test programs attach to, and the check
// that starts them. In a 32-bit binary on a 64-bit kernel sys_enter_getppid
// never fires: the per-syscall tracepoints ignore compat system calls
// (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS, kernel/trace/trace_syscalls.c). There
// the programs attach to raw_syscalls:sys_enter, which sees every call, and
// check its number (the long at offset 8).
func getppidEvent() (group, event string, check []Item) {
	if strconv.IntSize == 64 {
		return "syscalls", "sys_enter_getppid", nil
	}
	return "raw_syscalls", "sys_enter", []Item{LoadMem(BPF_DW, R2, R1, 8), JumpImm(BPF_JNE, R2, unix.SYS_GETPPID, "out")}
}

// emitted controls and reads the emitter's state.
type emitted struct{ state *mapfd.Typed[uint32, uint64] }

// follow makes the emitter send records for process pid.
func (e *emitted) follow(pid int) { e.state.Update(1, uint64(pid), mapfd.BPF_ANY) }

// failed counts the outputs the program saw fail.
func (e *emitted) failed() uint64 { n, _ := e.state.Lookup(2); return n }

func perfArray(t testing.TB) *mapfd.Map {
	t.Helper()
	n, _ := sys.PossibleCPUs()
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: uint32(n), Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// getppidOn makes n getppid calls from CPU cpu (or wherever, for cpu < 0).
func getppidOn(t testing.TB, cpu, n int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		var set, old unix.CPUSet
		unix.SchedGetaffinity(0, &old)
		defer unix.SchedSetaffinity(0, &old)
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	}
}

// thisCPU is the CPU the calling thread runs on (getcpu(2)).
func thisCPU(t testing.TB) int {
	var cpu uint32
	_, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0)
	if errno != 0 {
		t.Fatalf("getcpu: %v", errno)
	}
	return int(cpu)
}

// checker verifies records: intact payload, increasing sequence per CPU.
type checker struct {
	t       testing.TB
	lastSeq map[int]int64
	seen    map[uint64]bool
	lost    uint64
}

func newChecker(t testing.TB) *checker {
	return &checker{t: t, lastSeq: map[int]int64{}, seen: map[uint64]bool{}}
}

func (c *checker) check(rec perfring.Record) error {
	if rec.Sample == nil {
		c.lost += rec.Lost
		return nil
	}
	s := rec.Sample
	if len(s) < recordSize {
		c.t.Fatalf("sample of %d bytes", len(s))
	}
	seq, cpu := binary.NativeEndian.Uint64(s), int(binary.NativeEndian.Uint64(s[8:]))
	if cpu != rec.CPU {
		c.t.Fatalf("record from CPU %d says CPU %d", rec.CPU, cpu)
	}
	for i := 16; i < recordSize; i++ {
		if s[i] != byte(i) {
			c.t.Fatalf("record %d byte %d = %d", seq, i, s[i])
		}
	}
	if last, ok := c.lastSeq[cpu]; ok && int64(seq) <= last {
		c.t.Fatalf("CPU %d: sequence %d after %d", cpu, seq, last)
	}
	c.lastSeq[cpu] = int64(seq)
	if key := uint64(cpu)<<48 | seq; c.seen[key] {
		c.t.Fatalf("CPU %d: sequence %d twice", cpu, seq)
	} else {
		c.seen[key] = true
	}
	return nil
}

func TestPerfRecordsIntact(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	array := perfArray(t)
	r, err := perfring.NewPerfReader(array, perfring.Options{RingBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	emitter(t, array, os.Getpid(), false)
	cpus, _ := sys.OnlineCPUs()
	const per = 3000
	for _, cpu := range cpus {
		getppidOn(t, cpu, per)
	}
	c := newChecker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Half through Read, the rest through ReadFunc.
	for len(c.seen) < per*len(cpus)/2 {
		rec, err := r.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.check(rec)
	}
	for len(c.seen) < per*len(cpus) {
		if _, err := r.ReadFunc(ctx, c.check); err != nil {
			t.Fatal(err)
		}
	}
	if c.lost != 0 || len(c.lastSeq) != len(cpus) {
		t.Fatalf("lost %d, records from %d CPUs", c.lost, len(c.lastSeq))
	}
	// No allocation per record, through ReadFunc or Read. (getppidOn may
	// allocate once or twice per batch.)
	allocs := testing.AllocsPerRun(20, func() {
		getppidOn(t, -1, 50)
		for n := 0; n < 50; {
			k, _ := r.ReadFunc(ctx, func(perfring.Record) error { return nil })
			n += k
		}
		getppidOn(t, -1, 50)
		for range 50 {
			r.Read(ctx)
		}
	})
	if allocs > 4 {
		t.Fatalf("%.1f allocations per 100 records", allocs)
	}
}

// readUntilDeadline reads into c through ReadFunc until d from now, then
// removes the deadline.
func readUntilDeadline(t testing.TB, r *perfring.PerfReader, c *checker, d time.Duration) {
	r.SetDeadline(time.Now().Add(d))
	for {
		if _, err := r.ReadFunc(context.Background(), c.check); errors.Is(err, os.ErrDeadlineExceeded) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	r.SetDeadline(time.Time{})
}

// TestPerfLostExact overflows a one-page ring on purpose, by not reading
// while the records are sent, and checks received + lost == sent exactly, after a
// flush write on each CPU makes the kernel report the losses.
func TestPerfLostExact(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	array := perfArray(t)
	r, err := perfring.NewPerfReader(array, perfring.Options{RingBytes: 4096, Watermark: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	emitter(t, array, os.Getpid(), false)
	cpus, _ := sys.OnlineCPUs()
	const per = 1000 // 80 bytes each: a 4 KiB ring holds about 50
	for _, cpu := range cpus {
		getppidOn(t, cpu, per)
	}
	c := newChecker(t)
	readUntilDeadline(t, r, c, 50*time.Millisecond)
	for _, cpu := range cpus { // one more write each: the kernel reports the losses before it
		getppidOn(t, cpu, 1)
	}
	readUntilDeadline(t, r, c, 50*time.Millisecond)
	sent := uint64(per+1) * uint64(len(cpus))
	if c.lost == 0 || uint64(len(c.seen))+c.lost != sent {
		t.Fatalf("received %d + lost %d != sent %d", len(c.seen), c.lost, sent)
	}
	var sum uint64
	for _, n := range r.Lost() {
		sum += n
	}
	if sum != c.lost {
		t.Fatalf("Lost() sums to %d, loss records to %d", sum, c.lost)
	}
	t.Logf("received %d, lost %d of %d", len(c.seen), c.lost, sent)
}

// TestPerfWatermark: records below the watermark wake nobody and wait for
// the deadline, which delivers them; crossing the watermark wakes the
// reader at once; a reader that has caught up does not look again until
// the kernel wakes it.
func TestPerfWatermark(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	array := perfArray(t)
	r, err := perfring.NewPerfReader(array, perfring.Options{RingBytes: 64 << 10, Watermark: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	emitter(t, array, os.Getpid(), false)
	c := newChecker(t)
	// The first read looks at every ring; nothing is there yet.
	r.SetDeadline(time.Now().Add(10 * time.Millisecond))
	if n, err := r.ReadFunc(context.Background(), c.check); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("first read of empty rings: %d, %v", n, err)
	}
	cpu := 0
	// 10 records of 80 bytes: below the watermark.
	getppidOn(t, cpu, 10)
	const wait = 200 * time.Millisecond
	start := time.Now()
	r.SetDeadline(start.Add(wait))
	n, err := r.ReadFunc(context.Background(), c.check)
	if err != nil || n != 10 || time.Since(start) < wait {
		t.Fatalf("below the watermark: %d records, %v, after %v; want 10 at the deadline (%v)", n, err, time.Since(start), wait)
	}
	// 100 more cross the watermark (51 records of 80 bytes): the reader
	// wakes long before the deadline.
	start = time.Now()
	r.SetDeadline(start.Add(10 * time.Second))
	done := make(chan error, 1)
	go func() {
		_, err := r.ReadFunc(context.Background(), c.check)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	getppidOn(t, cpu, 100)
	if err := <-done; err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("crossing the watermark: %v after %v", err, time.Since(start))
	}
	// What the wake-up did not cover comes at the deadline.
	readUntilDeadline(t, r, c, 100*time.Millisecond)
	if len(c.seen) != 110 || c.lost != 0 {
		t.Fatalf("received %d, lost %d; want 110, 0", len(c.seen), c.lost)
	}
}

func TestPerfPause(t *testing.T) {
	testutil.RequireRoot(t)
	array := perfArray(t)
	r, err := perfring.NewPerfReader(array, perfring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	emitter(t, array, os.Getpid(), false)
	c := newChecker(t)
	r.Pause()
	getppidOn(t, 0, 10)
	r.Resume()
	getppidOn(t, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(c.seen) < 5 {
		if _, err := r.ReadFunc(ctx, c.check); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.seen) != 5 || c.lost != 10 {
		t.Fatalf("after pausing for 10 and resuming for 5: received %d, lost %d", len(c.seen), c.lost)
	}
}

// TestPerfCloseUnblocks: Close from another goroutine, a cancelled context
// and a deadline each end a blocked read promptly, also with GOMAXPROCS=1,
// where a wait holds the only P; after Close the map's entries are cleared
// and it stays usable.
func TestPerfCloseUnblocks(t *testing.T) {
	for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			testPerfCloseUnblocks(t)
		})
	}
}

func testPerfCloseUnblocks(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	array := perfArray(t)
	r, err := perfring.NewPerfReader(array, perfring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := r.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	r.SetDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := r.Read(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	r.SetDeadline(time.Time{})
	done := make(chan error)
	go func() {
		_, err := r.ReadFunc(context.Background(), func(perfring.Record) error { return nil })
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, perfring.ErrClosed) || time.Since(start) > time.Second {
			t.Fatalf("blocked read ended with %v after %v", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock the reader")
	}
	r.Close()
	// User space cannot look perf event array entries up (ENOTSUPP), but
	// deleting an empty one answers ENOENT.
	if err := array.ClearFD(0); !errors.Is(err, mapfd.ErrKeyNotExist) {
		t.Fatalf("map entry for CPU 0 after Close: %v, want it cleared already", err)
	}
}

// TestPerfSampleTime: with SampleTime, each sample carries the kernel's
// time of it on CLOCK_MONOTONIC: a program on the raw tracepoint
// sys_enter sends, for each getppid call of this thread, its own
// bpf_ktime_get_ns; each sample is stamped at or after the time it holds,
// between two readings of the clock around the calls, in order. (Another
// clock would be off by more than the calls take, one way or the other.
// No tighter bound holds: under TCG a vCPU can stall for milliseconds
// between the program's clock reading and the sample's.) The program is
// on a raw tracepoint, which no other tracer's program can hide from this
// test, as a perf tracepoint program returning 0 would.
func TestPerfSampleTime(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	array := perfArray(t)
	items := []Item{
		Mov64Reg(R6, R1),
		LoadMem(BPF_DW, R2, R6, 8), // args[1], the call's number
		JumpImm(BPF_JNE, R2, unix.SYS_GETPPID, "out"),
		Call(BPF_FUNC_get_current_pid_tgid),
		Mov32Reg(R0, R0), // the thread
		JumpImm(BPF_JNE, R0, int32(unix.Gettid()), "out"),
		Call(BPF_FUNC_ktime_get_ns),
		StoreMem(BPF_DW, R10, -8, R0),
		Mov64Reg(R1, R6),
		LoadMapFD(R2, array),
		LoadImm64(R3, BPF_F_CURRENT_CPU),
		Mov64Reg(R4, R10),
		ALU64Imm(BPF_ADD, R4, -8),
		Mov64Imm(R5, 8),
		Call(BPF_FUNC_perf_event_output),
		Label("out"),
		Mov64Imm(R0, 0),
		Exit(),
	}
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: "stamp", License: "GPL", Insns: items})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := perfring.NewPerfReader(array, perfring.Options{SampleTime: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var before, after unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	// On one CPU, the one it runs on: ReadFunc reads the rings in turn, so
	// the calls' samples come in the order they were made only if they
	// share a ring.
	getppidOn(t, thisCPU(t), 10)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	var stamps [][2]uint64 // the program's time, the sample's
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(stamps) < 10 && ctx.Err() == nil {
		r.ReadFunc(ctx, func(rec perfring.Record) error {
			if len(rec.Sample) >= 8 {
				stamps = append(stamps, [2]uint64{binary.NativeEndian.Uint64(rec.Sample), rec.Time})
			}
			return nil
		})
	}
	if len(stamps) != 10 {
		t.Fatalf("%d samples of this thread's getppid calls, want 10", len(stamps))
	}
	for i, s := range stamps {
		if s[1] < s[0] || s[1] > uint64(after.Nano()) ||
			s[0] < uint64(before.Nano()) || i > 0 && s[1] < stamps[i-1][1] {
			t.Fatalf("the program's and the samples' times %d, want each sample at or after its "+
				"program's time, in order, between %d and %d", stamps, before.Nano(), after.Nano())
		}
	}
}

// TestPerfSecondReader: two readers on one array, the second taking the
// entries over; closing the first leaves the second's entries, and it
// receives every record (the first's Close cleared them: the outputs
// failed, and it received nothing). Closing the second clears them.
func TestPerfSecondReader(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	array := perfArray(t)
	e := emitter(t, array, os.Getpid(), false)
	first, err := perfring.NewPerfReader(array, perfring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := perfring.NewPerfReader(array, perfring.Options{})
	if err != nil {
		first.Close()
		t.Fatal(err)
	}
	defer second.Close()
	first.Close()
	cpus, _ := sys.OnlineCPUs()
	for _, cpu := range cpus {
		getppidOn(t, cpu, 10)
	}
	c := newChecker(t)
	readUntilDeadline(t, second, c, 200*time.Millisecond)
	if len(c.seen) != 10*len(cpus) || e.failed() != 0 {
		t.Fatalf("the second reader got %d records of %d, %d outputs failed",
			len(c.seen), 10*len(cpus), e.failed())
	}
	second.Close()
	for _, cpu := range cpus {
		if err := array.ClearFD(uint32(cpu)); !errors.Is(err, mapfd.ErrKeyNotExist) {
			t.Fatalf("CPU %d's entry after the second reader's Close: %v, want none", cpu, err)
		}
	}
}
