package main

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/bpfkit/bpfkit/cmd/internal/perftest"
	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// rawWriteProgram is the other way tracex2 could count write sizes, kept
// here to measure against writeProgram: on the raw_syscalls:sys_enter raw
// tracepoint (args: the registers, the system call's number), which runs
// for every system call of every process; it keeps writes (nr) of process
// pid and reads the size from the registers with bpf_probe_read_kernel,
// at countAt in struct pt_regs. It does not tell 32-bit processes apart,
// whose numbers are another table's: tracex2 would need to (their cs on
// x86-64, pstate on arm64).
func rawWriteProgram(sizes insn.MapFD, pid uint32, nr int32, countAt int16) tool.Program {
	var p tool.Program
	// only write(2), args[1], then only process pid
	p.Add(insn.Mov64Reg(insn.R6, insn.R1),
		insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, 8),
		insn.JumpImm(insn.BPF_JNE, insn.R2, nr, "out"),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(pid), "out"))
	// r6 = regs->dx (x86-64's third argument), read from the registers, args[0]
	p.Add(insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, -8),
		insn.Mov64Imm(insn.R2, 8),
		insn.LoadMem(insn.BPF_DW, insn.R3, insn.R6, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, int32(countAt)),
		insn.Call(insn.BPF_FUNC_probe_read_kernel),
		insn.LoadMem(insn.BPF_DW, insn.R6, insn.R10, -8),
		insn.Mov64Reg(insn.R9, insn.R6))
	// the slot and the increment, as writeProgram's
	p.Add(insn.Log2(insn.R7, insn.R6, insn.R8)...)
	p.Add(insn.ALU64Imm(insn.BPF_ADD, insn.R7, 1),
		insn.StoreMem(insn.BPF_W, insn.R10, sizeSlotAt, insn.R7),
		insn.LoadMapFD(insn.R1, sizes),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(sizeSlotAt)),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 8),
		insn.ALU64Reg(insn.BPF_ADD, insn.R1, insn.R9),
		insn.StoreMem(insn.BPF_DW, insn.R0, 8, insn.R1))
	p.Add(insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	return p
}

// writeCounter is one way of counting write sizes, attached or not.
type writeCounter struct {
	name   string
	p      *prog.Program
	attach func(*prog.Program) (*prog.Link, error)
}

// BenchmarkWriteSizes compares the two ways of counting write(2) sizes
// for one process, this one: writeProgram on the syscalls:sys_enter_write
// perf tracepoint, returning 1, and rawWriteProgram on raw_syscalls's
// sys_enter raw tracepoint. For each, alternating with nothing attached,
// eleven rounds: the CPU time of a write(2) of 100 bytes to /dev/null and
// of a getppid(2) (which the raw tracepoint's program also runs for, and
// rejects), beside their time with nothing attached; and from the
// kernel's BPF statistics, during each loop, the program's runs per call
// and its run time per run. The CPU times hold what BPF's statistics
// leave out: the perf record the kernel builds for the tracepoint, what
// returning 1 passes it on to, the raw tracepoint's dispatch. The
// perf-tracepoint-sampling case attaches writeProgram to a sampling perf
// event, where prog.AttachTracepoint's counts (perftest.AttachSampling).
func BenchmarkWriteSizes(b *testing.B) {
	testutil.RequireRoot(b)
	regs, err := prog.KernelPtRegs()
	if err != nil || regs.Arch != "x86_64" || runtime.GOARCH != "amd64" {
		b.Skip("the raw tracepoint's program reads x86-64's registers")
	}
	stats, err := prog.EnableStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	counters := writeCounters(b, regs)
	results := map[string]*[6][]float64{}
	for range 11 {
		for _, c := range counters {
			r := measureWrites(b, c)
			if results[c.name] == nil {
				results[c.name] = new([6][]float64)
			}
			for i := range r {
				results[c.name][i] = append(results[c.name][i], r[i])
			}
		}
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	none := results["none"]
	for _, c := range counters {
		b.Run(c.name, func(b *testing.B) {
			r := results[c.name]
			b.ReportMetric(med(r[0])-med(none[0]), "added-ns/write")
			b.ReportMetric(med(r[1]), "bpf-runs/write")
			b.ReportMetric(med(r[2]), "bpf-ns/run-in-writes")
			b.ReportMetric(med(r[3])-med(none[3]), "added-ns/getppid")
			b.ReportMetric(med(r[4]), "bpf-runs/getppid")
			b.ReportMetric(med(r[5]), "bpf-ns/run-in-getppids")
		})
	}
}

// writeCounters loads the programs BenchmarkWriteSizes compares, counting
// the writes of this process, and says how each attaches; the first
// attaches nothing. The programs go when the benchmark ends.
func writeCounters(b *testing.B, regs prog.PtRegs) []writeCounter {
	count, err := tool.Field("syscalls", "sys_enter_write", "count")
	if err != nil {
		b.Fatal(err)
	}
	spec := mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: slots}
	sizes, err := mapfd.CreateTyped[sizeSlot, sizeCount](spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sizes.Close() })
	pid := uint32(os.Getpid())
	perf, err := writeProgram(sizes, count, pid)
	if err != nil {
		b.Fatal(err)
	}
	raw := rawWriteProgram(sizes, pid, syscall.SYS_WRITE, regs.Args[2])
	load := func(typ prog.Type, insns tool.Program) *prog.Program {
		spec := prog.Spec{Type: typ, Name: "tracex2_bench", License: "GPL", Insns: insns}
		p, err := prog.Load(spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		return p
	}
	perfProg, rawProg := load(prog.Tracepoint, perf), load(prog.RawTracepoint, raw)
	return []writeCounter{
		{name: "none"},
		{"perf-tracepoint", perfProg, func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachTracepoint(p, "syscalls", "sys_enter_write", prog.AttachOptions{})
		}},
		{"raw-syscalls", rawProg, func(p *prog.Program) (*prog.Link, error) {
			return prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
		}},
		{"perf-tracepoint-sampling", perfProg, func(p *prog.Program) (*prog.Link, error) {
			return perftest.AttachSampling(p, "syscalls", "sys_enter_write")
		}},
	}
}

// writes is how many writes and getppids measureWrites makes.
const writes = 200_000

// measureWrites attaches c (if it has a program), makes writes of 100
// bytes to /dev/null, then as many getppids, on one thread, and returns
// the CPU nanoseconds of each call, and for each loop the program's runs
// per call made and its run time per run.
func measureWrites(b *testing.B, c writeCounter) [6]float64 {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	if c.p != nil {
		l, err := c.attach(c.p)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 100)
	fd := int(null.Fd())
	var r [6]float64
	loop := func(call func(), out []float64) {
		runs0, ns0 := runStats(b, c.p)
		start := threadTime()
		for range writes {
			call()
		}
		out[0] = float64(threadTime()-start) / writes
		runs, ns := runStats(b, c.p)
		out[1] = float64(runs-runs0) / writes
		out[2] = float64(ns-ns0) / float64(max(runs-runs0, 1))
	}
	loop(func() { syscall.Write(fd, buf) }, r[0:3])
	loop(func() { syscall.Getppid() }, r[3:6])
	return r
}

// threadTime is the CPU time this thread has run, in nanoseconds: on a
// shared machine the wall time also holds what other processes ran.
func threadTime() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// runStats is the program's run count and run time so far; none without
// a program.
func runStats(b *testing.B, p *prog.Program) (runs, ns uint64) {
	if p == nil {
		return 0, 0
	}
	info, err := p.Info()
	if err != nil {
		b.Fatal(err)
	}
	return info.RunCount, uint64(info.RunTime)
}
