package perfring

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// RingBufReader reads a BPF ring buffer (BPF_MAP_TYPE_RINGBUF, 5.8), one
// ring for all CPUs, for one reading goroutine; Close and SetDeadline may
// come from any other, or from a ReadFunc callback.
type RingBufReader struct {
	poll      *poller
	consMem   []byte  // the consumer page, which we write
	prodMem   []byte  // the producer page and the data, mapped twice
	consPos   *uint64 // consumer_pos
	prodPos   *uint64 // producer_pos
	narrow    bool    // the kernel's positions are 32-bit longs (position)
	data      []byte
	size      uint64
	pos, end  uint64
	released  uint64
	discarded atomic.Uint64
	kept      []byte // the sample Read returned, copied
}

// NewRingBufReader maps the ring buffer: its consumer page read-write,
// then its producer page and its data, mapped twice in a row so that no
// record wraps, read-only.
func NewRingBufReader(m *mapfd.Map) (*RingBufReader, error) {
	r, err := newRingBufReader(m)
	return r, wrap(err, "ring buffer reader")
}

func newRingBufReader(m *mapfd.Map) (*RingBufReader, error) {
	if err := checkMap(m, mapfd.RingBuf); err != nil {
		return nil, err
	}
	page, size := int64(os.Getpagesize()), int64(m.MaxEntries())
	if err := checkRingBufSize(size, page); err != nil {
		return nil, fmt.Errorf("map %q: %w", m.Name(), err)
	}
	cons, err := sys.Mmap(m.FD(), 0, int(page), unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return nil, fmt.Errorf("consumer page: %w", err)
	}
	prod, err := sys.Mmap(m.FD(), page, int(page+2*size), unix.PROT_READ)
	if err != nil {
		sys.Munmap(cons)
		return nil, fmt.Errorf("producer page and data: %w", err)
	}
	// Without /proc/kallsyms, this process's word size: only a 32-bit
	// process on a 64-bit kernel would be wrong.
	long, err := sys.KernelLongSize()
	if err != nil {
		long = int(unsafe.Sizeof(uintptr(0)))
	}
	r := &RingBufReader{consMem: cons, prodMem: prod, data: prod[page:], size: uint64(size),
		consPos: (*uint64)(unsafe.Pointer(&cons[0])), prodPos: (*uint64)(unsafe.Pointer(&prod[0])),
		narrow: long == 4}
	if r.poll, err = newPoller(1); err != nil {
		r.release()
		return nil, err
	}
	r.poll.release = r.release
	if err := r.poll.add(m.FD(), 0); err != nil {
		r.Close()
		return nil, err
	}
	r.pos = r.position(r.consPos)
	r.end, r.released = r.pos, r.pos
	return r, nil
}

// position reads consumer_pos or producer_pos at p (acquire), which are
// the kernel's unsigned longs. On a 32-bit kernel they are 4 bytes, which
// wrap at 4 GiB, and are read as the count of bytes ahead of r.pos. So the
// reader counts positions in 64 bits on every kernel.
func (r *RingBufReader) position(p *uint64) uint64 {
	if !r.narrow {
		return atomic.LoadUint64(p)
	}
	return r.pos + uint64(atomic.LoadUint32((*uint32)(unsafe.Pointer(p)))-uint32(r.pos))
}

// checkRingBufSize says why a ring buffer of size bytes cannot be mapped:
// it must be a power of two of pages (ringbuf_map_alloc), mapped twice.
func checkRingBufSize(size, page int64) error {
	switch {
	case size < page || size&(size-1) != 0:
		return fmt.Errorf("MaxEntries %d is not a power of two of pages (%d bytes)", size, page)
	case page+2*size > math.MaxInt:
		return fmt.Errorf("MaxEntries %d: twice that does not fit this 32-bit address space", size)
	}
	return nil
}

func (r *RingBufReader) release() {
	sys.Munmap(r.consMem)
	sys.Munmap(r.prodMem)
}

// Close stops the reader as PerfReader.Close does, unmapping the ring.
func (r *RingBufReader) Close() error {
	r.poll.shutdown()
	return nil
}

// SetDeadline makes reads blocked now or later return os.ErrDeadlineExceeded
// at t; the zero t removes the deadline.
func (r *RingBufReader) SetDeadline(t time.Time) { r.poll.setDeadline(t) }

// Discarded counts the records producers discarded (bpf_ringbuf_discard)
// that the reader skipped.
func (r *RingBufReader) Discarded() uint64 { return r.discarded.Load() }

// next returns the next committed record and moves past it, or ok=false
// when the next is still being written or none is published.
func (r *RingBufReader) next() (rec Record, ok bool, err error) {
	for r.pos != r.end {
		sample, size, busy, err := ringbufRecord(r.data, r.size, r.pos, r.end)
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
	r.end = r.position(r.prodPos)
	return r.end != r.pos
}

// handBack stores consumer_pos (release), which must be current before a
// wait: the kernel wakes the reader for a record committed there.
func (r *RingBufReader) handBack() {
	if r.pos != r.released {
		if r.narrow {
			atomic.StoreUint32((*uint32)(unsafe.Pointer(r.consPos)), uint32(r.pos))
		} else {
			atomic.StoreUint64(r.consPos, r.pos)
		}
		r.released = r.pos
	}
}

// ReadFunc waits for records and calls f with each, in place, as
// PerfReader.ReadFunc does, handing the space back after the batch.
//
// When ctx ends its error wraps ctx.Err() (errors.Is(err,
// context.Canceled) or context.DeadlineExceeded); when the time
// SetDeadline set passes it wraps os.ErrDeadlineExceeded; after Close it
// is ErrClosed.
func (r *RingBufReader) ReadFunc(ctx context.Context, f func(Record) error) (int, error) {
	if f == nil {
		return 0, errNilFunc
	}
	if err := r.poll.enter(ctx); err != nil {
		return 0, err
	}
	defer r.poll.exit()
	for {
		if r.refresh() {
			if n, err := r.deliver(f); n > 0 || err != nil {
				return n, err
			}
		}
		if _, err := r.poll.wait(ctx); err != nil {
			return 0, err
		}
	}
}

// deliver calls f with the committed records up to r.end, then hands their
// space back.
func (r *RingBufReader) deliver(f func(Record) error) (int, error) {
	r.poll.delivering.Store(true)
	count := 0
	var err error
	for {
		var rec Record
		var ok bool
		if rec, ok, err = r.next(); err != nil || !ok {
			break
		}
		count++
		if err = f(rec); err == nil && r.poll.closed.Load() {
			err = ErrClosed
		}
		if err != nil {
			break
		}
	}
	r.handBack()
	r.poll.delivering.Store(false)
	return count, err
}

// Read returns the next record, waiting for one, as PerfReader.Read does.
// Its errors are ReadFunc's: one that wraps ctx.Err() when ctx ends,
// os.ErrDeadlineExceeded when the deadline passes, ErrClosed after Close.
func (r *RingBufReader) Read(ctx context.Context) (Record, error) {
	if err := r.poll.enter(ctx); err != nil {
		return Record{}, err
	}
	defer r.poll.exit()
	for {
		if r.pos-r.released >= r.size/4 {
			r.handBack()
		}
		if r.pos != r.end || r.refresh() {
			rec, ok, err := r.next()
			if err != nil || ok {
				rec.Sample = keep(&r.kept, rec.Sample)
				return rec, err
			}
		}
		r.handBack()
		if _, err := r.poll.wait(ctx); err != nil {
			return Record{}, err
		}
	}
}
