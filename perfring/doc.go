// Package perfring reads what BPF programs send to user space: the per-CPU
// perf rings of a perf event array (bpf_perf_event_output) and the BPF ring
// buffer (bpf_ringbuf_output, 5.8). Every system call goes through sys,
// which journals it.
//
// # Memory ordering
//
// The kernel writes records, then publishes data_head (ring buffer:
// producer_pos); we load it with acquire, and hand space back by storing
// data_tail (consumer_pos) with release. A ring buffer record's busy bit,
// cleared with release on commit, is loaded with acquire. The positions are
// 8-byte aligned 64-bit words, as sync/atomic needs on 32-bit ports. The
// exception is the ring buffer's on a 32-bit kernel: its 4-byte unsigned
// longs (sys.KernelLongSize), which wrap at 4 GiB. They are read and stored
// as 4 bytes, and counted on in 64 bits.
//
// # Cost
//
// ReadFunc hands records to its callback in place, and the space back once
// per batch. A perf record that wraps around its ring is copied once into a
// reused buffer; the ring buffer maps its data twice in a row, and none of
// its records wraps.
// Read copies each record into a reused buffer, since Close may unmap the
// ring under the caller. No read path allocates per record. As in libbpf, a
// perf ring is read only when the kernel has woken the reader for it: a
// reader that looks whenever it catches up chases the producer through
// cache lines still being written. BENCHMARKS.md compares with libbpf.
//
// A full perf ring drops samples and counts them in a PERF_RECORD_LOST
// record at the next write that fits, which Read delivers in order.
package perfring
