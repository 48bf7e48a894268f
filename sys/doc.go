// Package sys is bpfkit's only door to the kernel: one Go function per bpf(2)
// command (MapCreate, ProgLoad, LinkCreate, ...), perf_event_open(2) and the
// perf ioctls that attach and enable programs.
//
// Each command takes a struct laid out exactly as its member of the kernel's
// union bpf_attr, padded to AttrSize: at least the union of every kernel we
// know, so nothing the kernel may read or write lies outside it. The size
// passed is the running kernel's own sizeof(union bpf_attr), learned once by
// trying: the kernel reads all of its union, never a short one (6.17 to 7.2
// write past a short BPF_PROG_QUERY attr), and is not made to check a tail
// it does not know for zeroes.
//
// The package owns hygiene and nothing else: file descriptors are
// close-on-exec and never 0, 1 or 2; errors are *Error values that name the
// command, keep the errno for errors.Is, and say which capability is missing
// on EPERM. The Go runtime's own signals (SIGURG, SIGPROF) make the kernel
// abandon a verification (EAGAIN) or a repeated test run (EINTR): ProgLoad
// retries with them blocked, ProgTestRun blocks them. MapElemNoSleep and
// EpollWaitHoldingP skip the runtime's system call bookkeeping where the
// caller knows it is not needed. There is no other policy here: no
// fallbacks, no feature probes.
//
// The journal records every call for security review, one line each: the
// command, its meaningful fields, the result and the duration. Enable it with
// SetJournal, or with BPFKIT_JOURNAL=1 (stderr) or BPFKIT_JOURNAL=/path.
// When it is off, a call costs one atomic load more than the bare syscall.
package sys
