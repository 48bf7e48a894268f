// Package prog is where a program meets the kernel: Load assembles an
// insn program and hands it to the verifier, and when the verifier says no,
// loads it again with a log and returns a *VerifierError that shows the
// log's last lines and the failing instruction in the verifier's own syntax.
// A loaded Program can be test-run (BPF_PROG_TEST_RUN), pinned, and asked
// for its Info, including the instructions as the kernel rewrote them.
//
// Attaching to events (tracepoints, kprobes, uprobes, raw tracepoints, perf
// links with a cookie) builds on this package; see its attach files.
package prog
