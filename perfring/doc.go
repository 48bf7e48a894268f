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
// record is committed; we load it with acquire.
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
// Waiting is the other cost. A perf ring is read only when the kernel has
// woken the reader for it (epoll says which), as libbpf does: a reader that
// looks again whenever it catches up chases the producer, a few records at
// a time, through cache lines the producer is still writing. And a reader
// that only reads and waits must pass through the Go scheduler now and
// then, or the runtime takes its P at every wait (see poller.epollWait);
// it does so without waking another thread (runtime.goyield). What remains
// over a C reader is the Go runtime's fixed work: its monitor thread,
// which wakes 100 times a second while the reader waits, and the system
// call bookkeeping and a clock read at each wake-up; and the reading loop
// where records are in cache, since Go keeps no register across the call
// to the callback. Where they are in another CPU's cache, samples
// prefetches ahead of the loop. At a wake-up every 64 KiB the reader uses
// 0.9 to 1.3 times libbpf's CPU per record, from run to run; its reading
// thread alone is at par, and sysmon's ticks, 1-2.5 ns per record, make
// most of the difference (see poller.epollWait). With GOMAXPROCS=1 the
// runtime would take the only P from every wait longer than a few tens of
// µs; there such waits hold the P for up to a millisecond instead.
//
// # Losses
//
// When a perf ring is full the kernel drops the sample and counts it; it
// reports the count as a PERF_RECORD_LOST record only at the next write that
// fits, on that CPU. Read delivers loss reports in order with the samples.
package perfring
