// Package prog is where a program meets the kernel.
//
// Load assembles an insn program and hands it to the verifier; when the
// verifier says no, it loads it again with a log and returns a
// *VerifierError that shows the log's last lines and the failing
// instruction in the verifier's own syntax. A loaded Program can be
// test-run (BPF_PROG_TEST_RUN), pinned, and asked for its Info, including
// the instructions as the kernel rewrote them.
//
// The Attach functions make a program run on an event: tracepoints and
// kprobes, kretprobes, uprobes and uretprobes through a perf event (the perf
// kprobe and uprobe PMUs where the kernel has them, tracefs events
// otherwise), and raw tracepoints. Through a perf event the program is
// attached with a BPF perf link (5.15), which carries a bpf_cookie, or with
// PERF_EVENT_IOC_SET_BPF on older kernels; which one is decided by trying
// once (HavePerfLink). Every attachment is a *Link whose Close undoes all
// it created.
//
// What the kernel supports is found by trying, once, and cached with the
// errno the answer rests on: program and map types, helpers by program
// type, perf links, kprobe_multi, the kprobe and uprobe PMUs, ISA versions,
// BTF, the tail-call limit (HaveProgType, HaveMapType, HaveHelper, ...,
// Features for them all). NextID, NextLinkID, LinkByID and QueryFD walk
// what is loaded and attached, for inspectors.
//
// Kallsyms reads the kernel's symbols once, to name kernel addresses
// ("__udp4_lib_rcv+0x8f4"); SyscallSymbol names the function that handles
// a system call of this process on this kernel and architecture.
package prog
