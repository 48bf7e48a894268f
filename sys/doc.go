// Package sys is bpfkit's only door to the kernel: one Go function per bpf(2)
// command (MapCreate, ProgLoad, LinkCreate, ...), perf_event_open(2) and the
// perf ioctls that attach and enable programs.
//
// Each command takes a struct laid out exactly as its member of the kernel's
// union bpf_attr, padded to AttrSize: at least the union of every kernel we
// know, so nothing the kernel may read or write lies outside it. The size
// passed is the running kernel's own sizeof(union bpf_attr), learned once by
// trying: the kernel gets all of its union, never a short one (it writes
// some answers past a short attr: see AttrSize), and is not made to check a
// tail it does not know for zeroes.
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
// The journal records every call for security review, one line each in
// strace's shape, call(arguments) = result <duration>, where the result is
// what the call returned or -1 with the errno's name and text (from a run of
// make example):
//
//	bpf(BPF_MAP_CREATE, map_type=hash key_size=4 value_size=8 max_entries=256 map_flags=0x0 name="proto_counts") = 5 <69.7µs>
//	bpf(BPF_PROG_LOAD, prog_type=socket_filter insn_cnt=23 license="GPL" name="classify" kern_version=0x0 prog_flags=0x0 log_level=0) = 6 <133.6µs>
//	bpf(BPF_MAP_GET_NEXT_KEY, map_fd=5 flags=0x0) = -1 ENOENT (no such file or directory) <2µs>
//
// Enable it with SetJournal, or with BPFKIT_JOURNAL=1 (or stderr) for stderr
// or BPFKIT_JOURNAL=/absolute/path to append to a file. It fails closed: any
// other value of BPFKIT_JOURNAL, or a file that cannot be opened, makes every
// call fail, and so does a line that cannot be written (ErrJournal), unless
// the program chose SetJournalBestEffort. When it is off, a call costs one
// atomic load more than the bare syscall.
package sys
