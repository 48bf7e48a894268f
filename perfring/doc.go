// Package perfring reads what BPF programs send to user space: the per-CPU
// perf rings of a perf event array (bpf_perf_event_output) and the BPF ring
// buffer (bpf_ringbuf_output, 5.8).
//
// # Memory ordering
//
// Each perf ring is one mmap'd metadata page and 2^n data pages. The kernel
// writes records, then publishes data_head; we read data_head with an
// atomic load (acquire: the records it covers are visible), read the
// records, and hand the space back by storing data_tail with an atomic store
// (release: our reads are done before the kernel may overwrite). The BPF
// ring buffer is the same with producer_pos and consumer_pos, plus a busy bit
// in each record's header that the producer clears (with release) when the
// record is committed; we load it with acquire. The positions are 64-bit
// on every port, loaded and stored with sync/atomic's 64-bit functions,
// which 32-bit ports allow on 8-byte aligned words: these lie at aligned
// offsets of page-aligned mappings.
//
// # Cost
//
// ReadFunc delivers records in place: its callback sees the bytes in the
// ring, and the position is handed back once per batch, not per record. A
// perf record that wraps around the end of its ring is copied once into a
// scratch buffer the reader reuses; the BPF ring buffer maps its data twice
// in a row, so its records never wrap. Read copies each record into a
// buffer it reuses, since the caller holds it past the call, when Close
// from another goroutine may unmap the ring. No read path allocates per
// record.
//
// A perf ring is read only when the kernel has woken the reader for it
// (epoll says which), as libbpf does: a reader that looks again whenever it
// catches up chases the producer, a few records at a time, through cache
// lines the producer is still writing. Records usually wait in the cache of
// the CPU that wrote them, so the reading loop prefetches ahead. Between
// waits the reader passes through the Go scheduler now and then, or the
// runtime would take its P at every wait (see poller.epollWait). What the
// reader costs beside libbpf's is measured in BENCHMARKS.md (make bench).
//
// # System calls
//
// Every call the readers make to the kernel goes through package sys, and
// is recorded in its journal when that is on: perf_event_open, mmap and
// munmap of the rings, epoll and the eventfd that wakes a blocked read.
//
// # Losses
//
// When a perf ring is full the kernel drops the sample and counts it; it
// reports the count as a PERF_RECORD_LOST record only at the next write that
// fits, on that CPU. Read delivers loss reports in order with the samples.
package perfring
