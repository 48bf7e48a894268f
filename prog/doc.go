// Package prog is where a program meets the kernel.
//
// Load assembles an insn program and hands it to the verifier. When the
// verifier says no, Load loads it again with a log and returns a
// *VerifierError with the log's last lines and the failing instruction;
// what fails after the verifier said yes, EMFILE say, is a plain error. A
// Program can be test-run, pinned, and asked for its Info, including the
// instructions as the kernel rewrote them.
//
// The Attach functions run a program on an event: tracepoints, and kprobes
// and uprobes (and their return probes) through a perf event of the perf
// PMUs where the kernel has them, of tracefs otherwise; and raw
// tracepoints. A perf event takes a BPF perf link (5.15), which carries a
// bpf_cookie, or PERF_EVENT_IOC_SET_BPF before (HavePerfLink). A
// kprobe_multi link (AttachKprobeMulti, 5.18 with CONFIG_FPROBE) runs a
// program on many kernel functions at once, a cookie each, attached and
// detached in one call; a uprobe_multi link (AttachUprobeMulti, 6.6) does
// the same for many places of one binary. Tracing programs (fentry,
// fexit, tp_btf) name their target in Spec.AttachTo, which Load looks up
// in the kernel's BTF (package btf: the one use of BTF in bpfkit; the
// programs carry none). AttachTracing links them with BPF_LINK_CREATE,
// which carries a cookie, or BPF_RAW_TRACEPOINT_OPEN before
// (HaveTracingLink). A *Link's Close undoes all the attachment created.
// A tracepoint program's return value filters the event for every perf
// user of the tracepoint: a program that only counts returns 1.
//
// EnableStats keeps the kernel's run statistics on (BPF_ENABLE_STATS, or
// the sysctl kernel.bpf_stats_enabled before 5.8, set back at Close), and
// StatsByID reads a program's runs, run time and recursion misses in one
// call. The statistics cost every run. MeasureStatsCost measures how much,
// so that a program's own time can be told from the measuring: the time
// they count for a program that does nothing, and how much longer a run
// takes with them on.
//
// Feature probes (HaveProgType, HaveMapType, HaveHelper, HaveTracing, ...,
// Features for all) try once and cache the answer with the errno it rests
// on, and a note where the errno does not say enough (Probed). NextID,
// NextLinkID, LinkByID and QueryFD walk what is loaded and attached.
// A Symbolizer names kernel addresses ("__udp4_lib_rcv+0x8f4") on demand,
// reading /proc/kallsyms once per batch of new addresses and keeping only
// their names; Kallsyms reads the whole table once and keeps it, for
// lookups by name too. SyscallSymbol names the kernel function of a system
// call of this process. KernelSyscalls numbers the system calls as
// raw_syscalls passes them, named as the syscalls:* tracepoints name them.
// KernelPtRegs says where a program finds arguments, a system call's
// number, and whether it came from a compat task.
package prog
