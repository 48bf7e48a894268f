package tool

import (
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestEventTime: CLOCK_MONOTONIC's reading of now is now on the wall
// clock, to within a millisecond, and an event a second earlier a second
// earlier.
func TestEventTime(t *testing.T) {
	var mono unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	now := uint64(mono.Nano())
	if got := EventTime(now); !within(got, before, after) {
		t.Errorf("EventTime(now) = %v, want between %v and %v", got, before, after)
	}
	d := EventTime(now).Sub(EventTime(now - uint64(time.Second)))
	if d < time.Second-time.Millisecond || d > time.Second+time.Millisecond {
		t.Errorf("an event a second earlier is %v earlier", d)
	}
}

// within says whether t is between before and after, give or take a
// millisecond.
func within(t, before, after time.Time) bool {
	return !t.Before(before.Add(-time.Millisecond)) && !t.After(after.Add(time.Millisecond))
}

// TestWallTime: the offset is read between the two wall-clock readings,
// and each conversion takes the offset of its moment: after the wall
// clock was stepped an hour back, the same kernel time reads an hour
// earlier.
func TestWallTime(t *testing.T) {
	base := time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC).UnixNano()
	mono := int64(5000 * time.Second)
	second := uint64(mono - int64(time.Second))
	got := clockReading{base, mono, base + 200}.wallTime(second)
	if want := time.Unix(0, base+100-int64(time.Second)); !got.Equal(want) {
		t.Errorf("one second before the reading: %v, want %v", got, want)
	}
	stepped := base - int64(time.Hour)
	later := clockReading{stepped + 110, mono + 10, stepped + 110}.wallTime(second)
	if d := got.Sub(later); d != time.Hour {
		t.Errorf("after stepping the clock an hour back: %v apart, want 1h", d)
	}
}

// TestTightest: a reading of the clocks that a preemption spread over
// 5 ms is read again, and the tightest of the readings is kept; one tight
// enough at once is read once; an error is returned as it is.
func TestTightest(t *testing.T) {
	readings := []clockReading{
		{wall1: 0, mono: 100, wall2: 5_000_000},
		{wall1: 6_000_000, mono: 6_000_100, wall2: 6_050_000},
		{wall1: 7_000_000, mono: 7_000_100, wall2: 7_000_200},
		{wall1: 8_000_000, mono: 8_000_100, wall2: 8_000_150},
	}
	reads := 0
	read := func() (clockReading, error) {
		reads++
		return readings[reads-1], nil
	}
	if r, err := tightest(read); err != nil || r != readings[2] || reads != 3 {
		t.Errorf("tightest: %+v, %v after %d reads; want %+v after 3", r, err, reads, readings[2])
	}
	readings, reads = readings[2:], 0
	if r, err := tightest(read); err != nil || r != readings[0] || reads != 1 {
		t.Errorf("tightest of a tight reading: %+v, %v after %d reads; want one read", r, err, reads)
	}
	failing := func() (clockReading, error) { return clockReading{}, unix.EPERM }
	if _, err := tightest(failing); err != unix.EPERM {
		t.Errorf("tightest of a failing read: %v, want EPERM", err)
	}
}

// TestEventTimeBPF: the time a BPF program read with bpf_ktime_get_ns()
// is, converted, between the wall-clock times before and after the
// program ran.
func TestEventTimeBPF(t *testing.T) {
	testutil.RequireRoot(t)
	stampsSpec := mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "stamp"}
	stamps, err := mapfd.CreateTyped[uint32, uint64](stampsSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer stamps.Close()
	program := []insn.Item{
		// stamps[0] = bpf_ktime_get_ns()
		insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.StoreMem(insn.BPF_DW, insn.R10, -8, insn.R0),
		insn.StoreImm(insn.BPF_W, insn.R10, -12, 0),
		insn.LoadMapFD(insn.R1, stamps.Map()),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -12),
		insn.Mov64Reg(insn.R3, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, -8),
		insn.Mov64Imm(insn.R4, 0),
		insn.Call(insn.BPF_FUNC_map_update_elem),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	}
	spec := prog.Spec{Type: prog.SocketFilter, Name: "stamp", License: "GPL", Insns: program}
	p, err := prog.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := time.Now()
	if _, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	stamp, err := stamps.Lookup(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := EventTime(stamp); !within(got, before, after) {
		t.Errorf("the program ran between %v and %v; EventTime says %v", before, after, got)
	}
}
