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
// Records are delivered in place: a callback (ReadFunc) sees the bytes in
// the ring, and the position is handed back once per batch, not per record.
// A perf record that wraps around the end of its ring is copied once into a
// scratch buffer the reader reuses; the BPF ring buffer maps its data twice in
// a row, so its records never wrap. No read path allocates per record.
//
// Waiting is the other cost. A reader blocked in epoll_wait is a thread in
// a system call to the Go runtime, which hands its P to another thread and
// takes one back at each wake-up, waking its monitor (sysmon) as it goes: at
// a wake-up every few hundred µs that costs more CPU than reading the
// records. Options.HoldP lets short waits keep the P instead.
//
// # Losses
//
// When a perf ring is full the kernel drops the sample and counts it; it
// reports the count as a PERF_RECORD_LOST record only at the next write that
// fits, on that CPU. Read delivers loss reports in order with the samples.
package perfring
