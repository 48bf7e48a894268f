// Package perfring reads what BPF programs send to user space: the per-CPU
// perf rings of a perf event array (bpf_perf_event_output) and the BPF ring
// buffer (bpf_ringbuf_output, 5.8).
//
// # Memory ordering
//
// The kernel writes records, then publishes data_head (producer_pos in the
// BPF ring buffer); we load it with acquire, read the records, and store
// data_tail (consumer_pos) with release to hand the space back. A BPF ring
// buffer record also has a busy bit that the producer clears with release
// on commit; we load it with acquire. The positions are 64-bit words at
// 8-byte aligned offsets of page-aligned mappings, as sync/atomic's 64-bit
// functions need on 32-bit ports.
//
// # Cost
//
// ReadFunc hands records to its callback in place and the space back once
// per batch; a perf record that wraps around its ring is copied once into
// a reused scratch buffer (the BPF ring buffer maps its data twice in a
// row, so its records never wrap). Read copies each record into a reused
// buffer, since Close may unmap the ring while the caller holds it. No
// read path allocates per record. As in libbpf, a perf ring is read only
// when the kernel has woken the reader for it: one that looks again
// whenever it catches up chases the producer through cache lines still
// being written. BENCHMARKS.md compares the cost with libbpf's.
//
// Every system call the readers make goes through package sys and its
// journal. When a perf ring is full the kernel drops the sample and counts
// it, reporting the count as a PERF_RECORD_LOST record at the next write
// that fits; Read delivers it in order with the samples.
package perfring
