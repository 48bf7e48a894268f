package tests

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// BenchmarkTracingCost sets fentry, a kprobe, a kprobe_multi link and a
// raw tracepoint beside each other on the same call: umask(2), setting
// the mask it has, its kernel function (__x64_sys_umask,
// __arm64_sys_umask) for the first three, raw_syscalls' sys_enter for the
// last. (A system call without arguments, getppid, has no FUNC of its
// handler in BTF.) Each program does the same work, counting this
// process's calls (the raw tracepoint also tells umask by its number, as
// it runs at every system call). For each, in alternating rounds (medians
// of 5):
//
//   - ns/run: the program's run time per run, from the kernel's
//     statistics (BPF_ENABLE_STATS: run_time_ns over run_cnt);
//   - added-ns/call: what it adds to a umask call, the loop's wall time
//     with it attached less without, per call: the mechanism's cost too;
//   - x-fentry: ns/run over fentry's; added-x-fentry: added-ns/call over
//     fentry's.
//
// It needs kprobes, kprobe_multi (CONFIG_FPROBE) and fentry: make bench
// runs it in a 6.12 x86-64 VM, which has all three.
func BenchmarkTracingCost(b *testing.B) {
	testutil.RequireRoot(b)
	for what, have := range map[string]func() (bool, error){
		"fentry":       func() (bool, error) { return prog.HaveTracing(prog.BPF_TRACE_FENTRY) },
		"kprobes":      func() (bool, error) { return prog.HavePMU(tracefs.Kprobe) },
		"kprobe_multi": prog.HaveKprobeMulti,
	} {
		if ok, err := have(); !ok {
			b.Skipf("this kernel has no %s (%v): tests/bench/run.sh runs this in a 6.12 VM", what,
				err)
		}
	}
	stats, err := prog.EnableStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	sym, err := prog.SyscallSymbol("umask")
	if err != nil {
		b.Fatal(err)
	}
	m, tm := newArray(b, 1)
	kinds := []struct {
		name   string
		attach func(b *testing.B) (*prog.Program, func())
	}{
		{"fentry", func(b *testing.B) (*prog.Program, func()) {
			p := costProgram(b, prog.Spec{Type: prog.Tracing, AttachTo: prog.Fentry(sym)}, m, nil)
			return p, mustLink(b, func() (closer, error) {
				return prog.AttachTracing(p,
					prog.AttachOptions{})
			})
		}},
		{"kprobe", func(b *testing.B) (*prog.Program, func()) {
			p := costProgram(b, prog.Spec{Type: prog.Kprobe}, m, nil)
			return p, mustLink(b, func() (closer, error) {
				return prog.AttachKprobe(p, sym,
					prog.KprobeOptions{})
			})
		}},
		{"kprobe_multi", func(b *testing.B) (*prog.Program, func()) {
			p := costProgram(b, prog.Spec{Type: prog.Kprobe,
				ExpectedAttachType: unix.BPF_TRACE_KPROBE_MULTI}, m, nil)
			return p, mustLink(b, func() (closer, error) {
				return prog.AttachKprobeMulti(p, prog.KprobeMultiOptions{Symbols: []string{sym}})
			})
		}},
		{"raw_tp", func(b *testing.B) (*prog.Program, func()) {
			umask := []Item{LoadMem(BPF_DW, R7, R6, 8), JumpImm(BPF_JNE, R7, unix.SYS_UMASK,
				"out")} // args[1], the id
			p := costProgram(b, prog.Spec{Type: prog.RawTracepoint}, m, umask)
			return p, mustLink(b, func() (closer, error) {
				return prog.AttachRawTracepoint(p,
					"sys_enter", prog.AttachOptions{})
			})
		}},
	}
	const calls = 20_000
	mask := unix.Umask(0) // what each call sets: the process's own
	unix.Umask(mask)
	perRun, added := map[string][]float64{}, map[string][]float64{}
	for range 5 {
		for _, k := range kinds {
			base := timeUmask(calls, mask)
			p, detach := k.attach(b)
			tm.Update(0, 0, mapfd.BPF_ANY)
			before, err := p.Info()
			if err != nil {
				b.Fatal(err)
			}
			with := timeUmask(calls, mask)
			after, err := p.Info()
			if err != nil {
				b.Fatal(err)
			}
			detach()
			p.Close()
			if n, err := tm.Lookup(0); err != nil || n != calls {
				b.Fatalf("%s counted %d umask calls (%v), want %d", k.name, n, err, calls)
			}
			runs := after.RunCount - before.RunCount
			perRun[k.name] = append(perRun[k.name],
				float64(after.RunTime-before.RunTime)/float64(runs))
			added[k.name] = append(added[k.name], float64(with-base)/calls)
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	fentryRun, fentryAdded := median(perRun["fentry"]), median(added["fentry"])
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			run, add := median(perRun[k.name]), median(added[k.name])
			b.ReportMetric(run, "ns/run")
			b.ReportMetric(add, "added-ns/call")
			b.ReportMetric(run/fentryRun, "x-fentry")
			b.ReportMetric(add/fentryAdded, "added-x-fentry")
		})
	}
}

type closer interface{ Close() error }

// mustLink attaches and returns the detach.
func mustLink(b *testing.B, attach func() (closer, error)) func() {
	l, err := attach()
	if err != nil {
		b.Fatal(err)
	}
	return func() { l.Close() }
}

// costProgram loads spec with the body every kind shares: for this
// process, after filter, counts[0]++.
func costProgram(b *testing.B, spec prog.Spec, m *mapfd.Map, filter []Item) *prog.Program {
	items := append([]Item{Mov64Reg(R6, R1)}, filter...)
	items = append(items, Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"), StoreImm(BPF_W, R10, -4, 0))
	items = append(items, testutil.AddOne(m, "out")...)
	spec.Name, spec.License, spec.Insns = "cost", "GPL", append(items, Label("out"), Mov64Imm(R0,
		0), Exit())
	p, err := prog.Load(spec)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// timeUmask is the wall time of n umask calls on one thread, each
// setting mask, the one the process has.
func timeUmask(n, mask int) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for range n {
		unix.RawSyscall(unix.SYS_UMASK, uintptr(mask), 0, 0)
	}
	return time.Since(start)
}
