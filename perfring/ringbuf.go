package perfring

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/mapfd"
	"golang.org/x/sys/unix"
)

// RingBufReader reads a BPF ring buffer (BPF_MAP_TYPE_RINGBUF, 5.8), one
// ring shared by all CPUs. Programs write with bpf_ringbuf_output or
// bpf_ringbuf_reserve and submit. It is meant for one reading goroutine;
// Close and SetDeadline may come from any other.
type RingBufReader struct {
	poll      *poller
	consMem   []byte  // the consumer page, which we write
	prodMem   []byte  // the producer page and the data, mapped twice
	consPos   *uint64 // consumer_pos
	prodPos   *uint64 // producer_pos
	data      []byte
	size      uint64
	pos, end  uint64
	released  uint64
	discarded atomic.Uint64
	kept      []byte // the sample Read returned, copied
}

// NewRingBufReader maps the ring buffer: its consumer page read-write at
// offset 0, then its producer page and its data read-only. The kernel maps
// the data pages twice in a row, so a record that wraps around the end of
// the ring is contiguous in memory: ReadFunc never copies a record.
func NewRingBufReader(m *mapfd.Map) (*RingBufReader, error) {
	if m.Type() != mapfd.RingBuf {
		return nil, fmt.Errorf("ring buffer reader: map %q is not a ring buffer", m.Name())
	}
	page := os.Getpagesize()
	size := int(m.MaxEntries())
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("ring buffer reader: mmap consumer page: %w", err)
	}
	prod, err := unix.Mmap(m.FD(), int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(cons)
		return nil, fmt.Errorf("ring buffer reader: mmap producer page and data: %w", err)
	}
	poll, err := newPoller(1)
	if err == nil {
		if err = poll.add(m.FD(), 0); err != nil {
			poll.close()
		}
	}
	if err != nil {
		unix.Munmap(cons)
		unix.Munmap(prod)
		return nil, err
	}
	r := &RingBufReader{poll: poll, consMem: cons, prodMem: prod, data: prod[page:], size: uint64(size),
		consPos: (*uint64)(unsafe.Pointer(&cons[0])), prodPos: (*uint64)(unsafe.Pointer(&prod[0]))}
	r.pos = atomic.LoadUint64(r.consPos)
	r.end, r.released = r.pos, r.pos
	return r, nil
}

// Close stops the reader: a blocked read returns ErrClosed promptly, as do
// later ones. The map stays open. Closing twice is harmless.
func (r *RingBufReader) Close() error {
	r.poll.shutdown(func() {
		unix.Munmap(r.consMem)
		unix.Munmap(r.prodMem)
	})
	return nil
}

// SetDeadline makes reads blocked now or later return os.ErrDeadlineExceeded
// at t; the zero t removes the deadline.
func (r *RingBufReader) SetDeadline(t time.Time) { r.poll.setDeadline(t) }

// Discarded counts the records producers discarded (bpf_ringbuf_discard)
// that the reader skipped.
func (r *RingBufReader) Discarded() uint64 { return r.discarded.Load() }

// next returns the next committed record, or ok=false when the next one is
// still being written or none is published.
func (r *RingBufReader) next() (rec Record, ok bool, err error) {
	for r.pos != r.end {
		// The header's length word, with acquire: the producer clears the
		// busy bit with release after writing the record.
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[r.pos&(r.size-1)])))
		sample, size, busy, err := ringbufRecord(r.data, r.size, r.pos, r.end, hdr)
		if err != nil {
			r.pos = r.end
			return Record{}, false, err
		}
		if busy {
			return Record{}, false, nil
		}
		r.pos += size
		if sample == nil {
			r.discarded.Add(1)
			continue
		}
		return Record{CPU: -1, Sample: sample}, true, nil
	}
	return Record{}, false, nil
}

func (r *RingBufReader) refresh() bool {
	r.end = atomic.LoadUint64(r.prodPos)
	return r.end != r.pos
}

// release stores consumer_pos (release). The kernel wakes the reader when a
// record is committed at the position the consumer has reached, so the
// position must be current before waiting.
func (r *RingBufReader) release() {
	if r.pos != r.released {
		atomic.StoreUint64(r.consPos, r.pos)
		r.released = r.pos
	}
}

// ReadFunc waits until records are available, then calls f with each of
// them, in place, and returns how many it delivered. The space is handed
// back once, after the batch. An error from f stops the reading.
func (r *RingBufReader) ReadFunc(ctx context.Context, f func(Record) error) (int, error) {
	r.poll.mu.Lock()
	defer r.poll.mu.Unlock()
	for {
		if r.poll.closed.Load() {
			return 0, ErrClosed
		}
		count := 0
		if r.refresh() {
			for {
				rec, ok, err := r.next()
				if err == nil && ok {
					count++
					err = f(rec)
				}
				if err != nil || !ok {
					r.release()
					if err != nil || count > 0 {
						return count, err
					}
					break
				}
			}
		}
		if _, err := r.poll.wait(ctx); err != nil {
			return 0, err
		}
	}
}

// Read returns the next record, waiting for one. Its Sample is a copy, in a
// buffer the reader reuses, valid until the next call (ReadFunc reads in
// place).
func (r *RingBufReader) Read(ctx context.Context) (Record, error) {
	r.poll.mu.Lock()
	defer r.poll.mu.Unlock()
	for {
		if r.poll.closed.Load() {
			return Record{}, ErrClosed
		}
		if r.pos-r.released >= r.size/4 {
			r.release()
		}
		if r.pos != r.end || r.refresh() {
			rec, ok, err := r.next()
			if err != nil || ok {
				rec.Sample = keep(&r.kept, rec.Sample)
				return rec, err
			}
		}
		r.release()
		if _, err := r.poll.wait(ctx); err != nil {
			return Record{}, err
		}
	}
}
