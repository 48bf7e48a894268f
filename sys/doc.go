// Package sys is bpfkit's only door to the kernel: one Go function per bpf(2)
// command (MapCreate, ProgLoad, LinkCreate, ...), perf_event_open(2) and the
// perf ioctls that attach and enable programs.
//
// Each command takes a struct laid out exactly as its member of the kernel's
// union bpf_attr. Every struct is padded to AttrSize, at least the size of
// union bpf_attr on every kernel we know, and is passed whole: the kernel reads
// the prefix it knows and insists the rest is zero, so a zeroed struct is
// accepted by old kernels and is immune to new ones writing past a short attr.
//
// The package owns hygiene and nothing else: file descriptors are close-on-exec
// and never 0, 1 or 2; BPF_PROG_LOAD is retried on EAGAIN (the verifier gives
// up when a signal is pending, and Go's scheduler sends SIGURG); errors are
// *Error values that name the command, keep the errno for errors.Is, and say
// which capability is missing on EPERM. There is no other policy here: no
// fallbacks, no feature probes.
//
// The journal records every call for security review, one line each: the
// command, its meaningful fields, the result and the duration. Enable it with
// SetJournal, or with BPFKIT_JOURNAL=1 (stderr) or BPFKIT_JOURNAL=/path.
// When it is off, a call costs one atomic load more than the bare syscall.
package sys
