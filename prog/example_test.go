package prog_test

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// A socket filter returns how many bytes of the packet to keep: here all
// of them, skb->len. TestRun runs it on a packet without attaching it.
func Example() {
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "keep_all", License: "GPL", Insns: []insn.Item{
		insn.LoadMem(insn.BPF_W, insn.R0, insn.R1, 0), // r0 = skb->len
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// The filter sees the packet after its 14-byte Ethernet header.
	r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), p.Type(), "returned", r.Retval)

	// As root, it prints:
	// keep_all socket_filter returned 50
}

// Load takes the items of a program, or with Instructions one assembled
// already, to load many times.
func ExampleLoad() {
	insns, err := insn.Assemble([]insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"drop_a", "drop_b"} {
		p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: name, License: "GPL", Instructions: insns})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p.Name(), p.Type())
		p.Close()
	}

	// As root, it prints:
	// drop_a socket_filter
	// drop_b socket_filter
}

// A program the verifier refuses is a *VerifierError: the log, and the
// instruction the verifier stopped at.
func ExampleVerifierError() {
	_, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "bad", License: "GPL", Insns: []insn.Item{
		insn.Mov64Imm(insn.R2, 16),
		insn.LoadMem(insn.BPF_DW, insn.R0, insn.R2, 0), // r2 is a number, not a pointer
		insn.Exit(),
	}})
	var ve *prog.VerifierError
	if !errors.As(err, &ve) {
		fmt.Println(err)
		return
	}
	first, _, _ := strings.Cut(err.Error(), "\n") // the log's last lines follow
	fmt.Println(first)
	fmt.Println("instruction", ve.Insn, "EACCES:", errors.Is(err, unix.EACCES))
	fmt.Println("the log says why:", strings.Contains(ve.Log, "R2 invalid mem access"))

	// As root, it prints:
	// prog: load "bad": BPF_PROG_LOAD: permission denied: the verifier rejected it at instruction 1: r0 = *(u64 *)(r2 +0)
	// instruction 1 EACCES: true
	// the log says why: true
}

// TestRun gives a program a packet, and returns the packet as the program
// left it.
func ExampleProgram_TestRun() {
	p, err := prog.Load(prog.Spec{Type: prog.XDP, License: "GPL", Insns: []insn.Item{
		insn.LoadMem(insn.BPF_W, insn.R2, insn.R1, 0), // ctx->data
		insn.LoadMem(insn.BPF_W, insn.R3, insn.R1, 4), // ctx->data_end
		insn.Mov64Reg(insn.R4, insn.R2),
		insn.ALU64Imm(insn.BPF_ADD, insn.R4, 1),
		insn.Mov64Imm(insn.R0, 1), // XDP_DROP a packet shorter than a byte
		insn.JumpReg(insn.BPF_JGT, insn.R4, insn.R3, "out"),
		insn.StoreImm(insn.BPF_B, insn.R2, 0, 0xff), // the first byte becomes 0xff
		insn.Mov64Imm(insn.R0, 2),                   // XDP_PASS
		insn.Label("out"),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	r, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64), DataOut: make([]byte, 128)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("returned %d, %d bytes out: % x ...\n", r.Retval, len(r.DataOut), r.DataOut[:4])

	// As root, it prints:
	// returned 2, 64 bytes out: ff 00 00 00 ...
}

// Listing is the program as the verifier left it, which bpftool prints as
// "prog dump xlated".
func ExampleInfo_Listing() {
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "answer", License: "GPL", Insns: []insn.Item{
		insn.Mov64Imm(insn.R0, 2),
		insn.ALU64Imm(insn.BPF_MUL, insn.R0, 21),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Name, info.Type, len(info.Tag), "hex digits of tag")
	fmt.Print(info.Listing())

	// As root, it prints:
	// answer socket_filter 16 hex digits of tag
	//    0: (b7) r0 = 2
	//    1: (27) r0 *= 21
	//    2: (95) exit
}

// A tracepoint program runs at every hit of the tracepoint; the cookie
// given at attach time tells it which attachment it runs for. This one
// records its cookie when this process calls getppid.
func ExampleAttachTracepoint() {
	seen, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "seen"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer seen.Close()
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "getppid", License: "GPL", Insns: []insn.Item{
		insn.Call(insn.BPF_FUNC_get_attach_cookie), // r1 is still the context
		insn.Mov64Reg(insn.R6, insn.R0),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32), // the process id
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, seen),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R6), // seen[0] = cookie
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1), // keep the record for other perf users of the tracepoint,
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, "syscalls", "sys_enter_getppid", prog.AttachOptions{Cookie: 0xc0ffee})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	os.Getppid()
	cookie, err := seen.Lookup(0)
	fmt.Printf("%#x %v\n", cookie, err)

	// As root, it prints:
	// 0xc0ffee <nil>
}

// A kprobe program runs when the kernel enters a function: here the one
// that handles getppid, counting the calls of this process. Kernels built
// without kprobes say so with sys.ErrNotSupported.
func ExampleAttachKprobe() {
	calls, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "calls"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer calls.Close()
	items := []insn.Item{
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
	}
	items = append(items, insn.MapIncrement(calls, -4, -16)...)
	items = append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: "getppid", License: "GPL", Insns: items})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fn, err := prog.SyscallSymbol("getppid") // __x64_sys_getppid on x86-64
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := prog.AttachKprobe(p, fn, prog.KprobeOptions{})
	if errors.Is(err, sys.ErrNotSupported) {
		fmt.Println("this kernel has no kprobes")
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for range 3 {
		os.Getppid()
	}
	n, err := calls.Lookup(0)
	fmt.Println("getppid calls:", n, err)

	// As root, on a kernel with kprobes, it prints:
	// getppid calls: 3 <nil>
}

// uprobed is the function ExampleAttachUprobe probes. It is nosplit: a
// function may start with a stack check (386 builds give uprobed one),
// which, when the runtime has asked the goroutine to stop (preemption, a
// GC's stack scan) or its stack must grow, calls morestack, and the
// function runs again from that first instruction when the goroutine
// resumes: the uprobe there fires twice for one call. The kernel repeats
// nothing: a signal arriving while it steps the probed instruction waits
// until the step is done (uprobe_deny_signal), and GODEBUG=asyncpreemptoff=1
// changed nothing.
//
//go:noinline
//go:nosplit
func uprobed(x int) int { return x*2 + 1 }

// A uprobe program runs when a process executes an instruction of a
// binary: here the first of a function of this program, in this process
// only. Where the binary has a symbol table UprobeOptions.Symbol names the
// function; go test strips it, so here funcOffset finds the function's
// file offset from the mapping of its address in /proc/self/maps.
func ExampleAttachUprobe() {
	calls, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "calls"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer calls.Close()
	items := append([]insn.Item{insn.StoreImm(insn.BPF_W, insn.R10, -4, 0)}, insn.MapIncrement(calls, -4, -16)...)
	p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: "uprobed", License: "GPL", Insns: append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit())})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	exe, off, err := funcOffset(uprobed)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, PID: os.Getpid()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for i := range 3 {
		_ = uprobed(i) // the call is what the uprobe counts
	}
	n, err := calls.Lookup(0)
	fmt.Println("uprobed calls:", n, err)

	// As root, it prints:
	// uprobed calls: 3 <nil>
}

// funcOffset returns the file that holds the code of the Go function fn
// and the offset of fn in it.
func funcOffset(fn any) (string, uint64, error) {
	addr := uint64(reflect.ValueOf(fn).Pointer())
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "", 0, err
	}
	for line := range strings.SplitSeq(string(maps), "\n") {
		f := strings.Fields(line) // start-end perms offset dev inode path
		if len(f) < 6 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		if addr >= start && addr < end {
			return f[5], addr - start + off, nil
		}
	}
	return "", 0, fmt.Errorf("address %#x is in no file mapping", addr)
}

// A raw tracepoint program gets the tracepoint's arguments as they are,
// without a tracefs record: sys_enter passes the registers and the system
// call's number.
func ExampleAttachRawTracepoint() {
	calls, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "calls"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer calls.Close()
	items := []insn.Item{
		insn.LoadMem(insn.BPF_DW, insn.R6, insn.R1, 8), // args[1], the system call number
		insn.JumpImm(insn.BPF_JNE, insn.R6, unix.SYS_GETPPID, "out"),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
	}
	items = append(items, insn.MapIncrement(calls, -4, -16)...)
	items = append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: "sys_enter", License: "GPL", Insns: items})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for range 3 {
		os.Getppid()
	}
	n, err := calls.Lookup(0)
	fmt.Println("getppid calls:", n, err)

	// As root, it prints:
	// getppid calls: 3 <nil>
}

// A Tracing program names its target, looked up in the kernel's BTF at
// load: here tp_btf on
// the sys_enter tracepoint, whose arguments (struct pt_regs *regs, long
// id) it reads as they are passed, FuncArg(1) the system call's number. It
// counts this process's getppid calls.
func ExampleAttachTracing() {
	calls, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "calls"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer calls.Close()
	items := []insn.Item{
		insn.FuncArg(insn.R6, insn.R1, 1), // id
		insn.JumpImm(insn.BPF_JNE, insn.R6, unix.SYS_GETPPID, "out"),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
	}
	items = append(items, insn.MapIncrement(calls, -4, -16)...)
	items = append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracing, Name: "sys_enter", License: "GPL",
		Insns:    items,
		AttachTo: prog.TpBTF("sys_enter")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachTracing(p, prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for range 3 {
		os.Getppid()
	}
	n, err := calls.Lookup(0)
	fmt.Println(l, "getppid calls:", n, err)

	// As root, it prints:
	// tp_btf sys_enter getppid calls: 3 <nil>
}

// An fexit program sees the function's arguments and its return value,
// the slot after the last argument: here vfs_read(file, buf, count, pos)
// reading 5 bytes of /dev/zero, for this process. The verifier checks the
// slots against the function's prototype in BTF; the program has no BTF.
func ExampleAttachTracing_fexit() {
	reads, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 2,
		Name: "reads"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reads.Close()
	items := []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.FuncArg(insn.R7, insn.R6, 2), // count
		insn.JumpImm(insn.BPF_JNE, insn.R7, 5, "out"),
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
		insn.Mov64Reg(insn.R2, insn.R10), insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, reads), insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.FuncRet(insn.R7, insn.R6, 4), // what vfs_read returned
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R7),
		insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit(),
	}
	p, err := prog.Load(prog.Spec{Type: prog.Tracing, Name: "vfs_read_ret", License: "GPL",
		Insns:    items,
		AttachTo: prog.Fexit("vfs_read")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachTracing(p, prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	zero, err := os.Open("/dev/zero")
	if err != nil {
		fmt.Println(err)
		return
	}
	zero.Read(make([]byte, 5))
	zero.Close()
	n, err := reads.Lookup(0)
	fmt.Println(l, "returned", n, err)

	// As root, it prints:
	// fexit vfs_read returned 5 <nil>
}

// A PerfEvent program runs at each sample of a perf event the caller
// opened, as a profiler's does: here every millisecond this thread spends
// on a CPU (task-clock), while it spins until the program has counted 10.
// A Tracepoint program attached so filters the event's records instead
// (perfring.NewEventReader).
func ExampleAttachPerfEvent() {
	samples, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "samples"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer samples.Close()
	items := append([]insn.Item{insn.StoreImm(insn.BPF_W, insn.R10, -4, 0)}, insn.MapIncrement(samples, -4, -16)...)
	p, err := prog.Load(prog.Spec{Type: prog.PerfEvent, Name: "sample", License: "GPL", Insns: append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit())})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	runtime.LockOSThread() // the event follows one thread
	defer runtime.UnlockOSThread()
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK,
		Sample: 1_000_000, Bits: unix.PerfBitDisabled} // a sample every 1,000,000 ns; AttachPerfEvent enables it
	fd, err := sys.PerfEventOpen(&attr, unix.Gettid(), -1, -1, 0) // this thread, on any CPU
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unix.Close(fd) // the Link holds a copy
	l, err := prog.AttachPerfEvent(p, fd, prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	var n uint64
	for deadline := time.Now().Add(5 * time.Second); n < 10 && time.Now().Before(deadline); {
		n, err = samples.Lookup(0)
	}
	fmt.Println("10 samples:", n >= 10, err)

	// As root, it prints:
	// 10 samples: true <nil>
}

// A tool picks how to send its records by what the kernel has: a BPF ring
// buffer (5.8) where it creates one and the program may write to it, a
// perf event array else. The probes try once, with a tiny map or program,
// and remember the answer.
func ExampleHaveMapType() {
	ringbuf, err := prog.HaveMapType(mapfd.RingBuf)
	if err != nil {
		fmt.Println(err)
		return
	}
	output, err := prog.HaveHelper(prog.Kprobe, insn.BPF_FUNC_ringbuf_output)
	if err != nil {
		fmt.Println(err)
		return
	}
	kind := mapfd.PerfEventArray
	if ringbuf && output {
		kind = mapfd.RingBuf
	}
	fmt.Println(kind)
	// bpf_probe_read is for tracing programs only.
	fmt.Println(prog.HaveHelper(prog.SocketFilter, insn.BPF_FUNC_probe_read))

	// As root, on Linux 5.8 or later, it prints:
	// ringbuf
	// false <nil>
}

// Features runs every probe that takes no arguments and lists the
// answers, cached, by name: what bpfkit features prints.
func ExampleFeatures() {
	for _, f := range prog.Features() {
		switch f.Name {
		case "btf_vmlinux", "isa_v3", "map_type ringbuf", "prog_type raw_tracepoint", "tail_call_limit":
			fmt.Println(f.Name, f.OK, f.Value, f.Err)
		}
	}

	// As root, on Linux 5.8 or later with BTF, it prints:
	// btf_vmlinux true 0 <nil>
	// isa_v3 true 0 <nil>
	// map_type ringbuf true 0 <nil>
	// prog_type raw_tracepoint true 0 <nil>
	// tail_call_limit true 33 <nil>
}

// SyscallSymbol is the kernel function to probe for a system call of this
// process.
func ExampleSyscallSymbol() {
	fn, err := prog.SyscallSymbol("getppid")
	fmt.Println(fn, err)

	// As root on x86-64, it prints:
	// __x64_sys_getppid <nil>
}

// Name turns a kernel address (from a stack trace, or kfree_skb's
// location) into a function and an offset in it.
func ExampleSymbols_Name() {
	syms, err := prog.Kallsyms()
	if err != nil {
		fmt.Println(err)
		return
	}
	addr, ok := syms.Address("schedule")
	fmt.Println(syms.Name(addr+0x10), ok)

	// As root, it prints:
	// schedule+0x10 true
}

// A kprobe program's context is the kernel's struct pt_regs: KernelPtRegs
// says where the running kernel keeps a function's arguments in it.
func ExampleKernelPtRegs() {
	regs, err := prog.KernelPtRegs()
	if err != nil {
		fmt.Println(err)
		return
	}
	arg, err := regs.Arg(insn.R6, insn.R1, 0) // r6 = the first argument
	if err != nil {
		fmt.Println(err)
		return
	}
	ret := regs.Return(insn.R7, insn.R1) // r7 = the return value, in a kretprobe
	insns, _ := insn.Assemble([]insn.Item{arg, ret})
	fmt.Println(regs.Arch)
	fmt.Print(insn.Disassemble(insns))

	// On x86-64, it prints:
	// x86_64
	//    0: (79) r6 = *(u64 *)(r1 +112)
	//    1: (79) r7 = *(u64 *)(r1 +80)
}

// PtRegsOf gives the layout of an architecture by its uname machine name.
func ExamplePtRegsOf() {
	regs, err := prog.PtRegsOf("aarch64")
	if err != nil {
		fmt.Println(err)
		return
	}
	arg, _ := regs.Arg(insn.R6, insn.R1, 2)
	insns, _ := insn.Assemble([]insn.Item{arg})
	fmt.Print(insn.Disassemble(insns))
	_, err = regs.Arg(insn.R6, insn.R1, 8)
	fmt.Println(err)
	// Output:
	//    0: (79) r6 = *(u64 *)(r1 +16)
	// prog: kprobe argument 8: aarch64 passes 8 in registers
}

// rootExamples are the examples that need root: TestExamples runs them.
func rootExamples(t *testing.T) []testutil.RootExample {
	noKprobes := ""
	if prog.ProbesSupported(tracefs.Kprobe) != nil {
		noKprobes = "this kernel has no kprobes\n"
	}
	cookies := ""
	if ok, _ := prog.HavePerfLink(); !ok {
		cookies = "cookies need BPF perf links (5.15)"
	}
	if long, _ := sys.KernelLongSize(); strconv.IntSize == 32 && long == 8 {
		// The syscalls: tracepoints ignore compat system calls
		// (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS).
		cookies = "sys_enter_getppid does not fire for a 32-bit process on a 64-bit kernel"
	}
	fentry := ""
	if ok, _ := prog.HaveTracing(prog.BPF_TRACE_FEXIT); !ok {
		f, _ := prog.Probed("tracing trace_fexit")
		fentry = "fexit: " + f.Note
	}
	var u unix.Utsname
	unix.Uname(&u)
	notX86 := ""
	if unix.ByteSliceToString(u.Machine[:]) != "x86_64" || runtime.GOARCH != "amd64" {
		notX86 = "the output shown is x86-64's"
	}
	return []testutil.RootExample{
		{F: Example}, {F: ExampleLoad}, {F: ExampleVerifierError}, {F: ExampleProgram_TestRun},
		{F: ExampleInfo_Listing}, {F: ExampleAttachTracepoint, Skip: cookies},
		{F: ExampleAttachKprobe, Want: noKprobes}, {F: ExampleAttachUprobe}, {F: ExampleAttachRawTracepoint},
		{F: ExampleSyscallSymbol, Skip: notX86}, {F: ExampleSymbols_Name}, {F: ExampleKernelPtRegs, Skip: notX86},
		{F: ExampleAttachPerfEvent}, {F: ExampleHaveMapType}, {F: ExampleFeatures},
		{F: ExampleAttachTracing}, {F: ExampleAttachTracing_fexit, Skip: fentry},
	}
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
