package perfring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
)

// Record is one thing a CPU's ring delivered: a sample, or a report that
// the kernel dropped samples.
type Record struct {
	CPU int // whose ring it came from (a BPF ring buffer's records say -1)
	// Sample is what the program passed to bpf_perf_event_output (then, from
	// a perf ring, up to 7 bytes of zero padding) or bpf_ringbuf_output.
	// From ReadFunc it is valid until the callback returns; from Read, a
	// copy, until the next Read.
	Sample []byte
	// Lost counts samples dropped on this CPU because its ring was full;
	// non-zero only in a loss report, whose Sample is nil.
	Lost uint64
	// Time is when the kernel took the sample, in nanoseconds of
	// CLOCK_MONOTONIC, with Options.SampleTime; else 0.
	Time uint64
}

// keep copies a sample Read returns into *buf, grown to the largest seen,
// which Close cannot unmap; a nil sample (a loss report) stays nil.
func keep(buf *[]byte, sample []byte) []byte {
	if sample == nil {
		return nil
	}
	if *buf == nil || cap(*buf) < len(sample) { // an empty sample stays non-nil
		*buf = make([]byte, max(len(sample), 256))
	}
	return (*buf)[:copy(*buf, sample)]
}

// Record types of struct perf_event_header.
const (
	perfRecordLost   = 2 // PERF_RECORD_LOST: u64 id, u64 lost
	perfRecordSample = 9 // PERF_RECORD_SAMPLE: with PERF_SAMPLE_RAW, u32 size then the bytes
)

// ErrCorrupt is returned for a record whose header cannot be right (a size
// of 0, not of 8s, past the data published, a raw sample past its record);
// the reader skips the ring's published data and goes on.
var ErrCorrupt = errors.New("perfring: corrupt record")

// perfRecord parses the record at position tail of a perf ring's data, a
// power of two, published up to head: its type, the bytes after its 8-byte
// header, and its size. A body that wraps is copied into *scratch, grown
// once to 64 KiB (the header's size is 16 bits).
func perfRecord(data []byte, tail, head uint64, scratch *[]byte) (
	typ uint32, body []byte, size uint64, err error,
) {
	n := uint64(len(data))
	avail := head - tail
	if n == 0 || n&(n-1) != 0 || avail > n {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes published in a ring of %d", ErrCorrupt, avail, n)
	}
	off := tail & (n - 1)
	if avail < 8 || off%8 != 0 {
		return 0, nil, 0, fmt.Errorf("%w: header at offset %d with %d bytes published",
			ErrCorrupt, off, avail)
	}
	typ = binary.NativeEndian.Uint32(data[off:])
	size = uint64(binary.NativeEndian.Uint16(data[off+6:]))
	if size < 8 || size%8 != 0 || size > avail {
		return 0, nil, 0, fmt.Errorf("%w: record of %d bytes with %d published", ErrCorrupt, size, avail)
	}
	start, blen := (off+8)&(n-1), size-8
	if start+blen <= n {
		return typ, data[start : start+blen], size, nil
	}
	if uint64(cap(*scratch)) < blen {
		*scratch = make([]byte, 0, 1<<16)
	}
	body = (*scratch)[:blen]
	k := copy(body, data[start:])
	copy(body[k:], data)
	return typ, body, size, nil
}

// sampleTime returns the PERF_SAMPLE_TIME a sample's body starts with, and
// the rest of the body.
func sampleTime(body []byte) (uint64, []byte, error) {
	if len(body) < 8 {
		return 0, nil, fmt.Errorf("%w: timed sample of %d bytes", ErrCorrupt, len(body))
	}
	return binary.NativeEndian.Uint64(body), body[8:], nil
}

// rawSample returns the bytes of a PERF_SAMPLE_RAW sample's body.
func rawSample(body []byte) ([]byte, error) {
	if len(body) < 4 {
		return nil, fmt.Errorf("%w: sample of %d bytes", ErrCorrupt, len(body))
	}
	n := uint64(binary.NativeEndian.Uint32(body))
	if n > uint64(len(body)-4) {
		return nil, fmt.Errorf("%w: raw sample of %d bytes in a record of %d", ErrCorrupt, n, len(body))
	}
	return body[4 : 4+n], nil
}

// lostCount returns the count of a PERF_RECORD_LOST body.
func lostCount(body []byte) (uint64, error) {
	if len(body) < 16 {
		return 0, fmt.Errorf("%w: lost record of %d bytes", ErrCorrupt, len(body))
	}
	return binary.NativeEndian.Uint64(body[8:]), nil
}

// BPF ring buffer record header: u32 len with two flag bits, u32 page offset.
const (
	ringbufBusy    = 1 << 31 // BPF_RINGBUF_BUSY_BIT: reserved, not committed yet
	ringbufDiscard = 1 << 30 // BPF_RINGBUF_DISCARD_BIT: committed as discarded
	ringbufHdrSize = 8       // BPF_RINGBUF_HDR_SZ
)

// ringbufRecord parses the record at position cons of a BPF ring buffer of
// n bytes mapped twice in data, published up to prod: the sample (nil if
// discarded) and the space it takes, or busy if not yet committed.
func ringbufRecord(data []byte, n, cons, prod uint64) (
	sample []byte, size uint64, busy bool, err error,
) {
	avail := prod - cons
	badRing := n == 0 || n&(n-1) != 0 || uint64(len(data)) != 2*n
	if badRing || avail > n || avail < ringbufHdrSize || cons%8 != 0 {
		return nil, 0, false, fmt.Errorf(
			"%w: ring buffer record at %d with %d bytes published in a ring of %d",
			ErrCorrupt, cons, avail, n)
	}
	// acquire: the producer clears the busy bit with release
	off := cons & (n - 1)
	hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&data[off])))
	if hdr&ringbufBusy != 0 {
		return nil, 0, true, nil
	}
	l := uint64(hdr &^ (ringbufBusy | ringbufDiscard))
	size = (l + ringbufHdrSize + 7) &^ 7
	if size > avail {
		return nil, 0, false, fmt.Errorf("%w: ring buffer record of %d bytes with %d published",
			ErrCorrupt, l, avail)
	}
	if hdr&ringbufDiscard != 0 {
		return nil, size, false, nil
	}
	return data[off+ringbufHdrSize : off+ringbufHdrSize+l], size, false, nil
}

// Decode copies a sample, at least the size of T, into *out, a struct, array
// or number laid out as the program wrote it (host byte order, its
// padding as blank fields), without allocating. T must hold no pointers,
// strings, slices, maps or interfaces.
func Decode[T any](sample []byte, out *T) error {
	if out == nil {
		return errors.New("perfring: Decode into nil")
	}
	typ := reflect.TypeFor[T]()
	cached, ok := plainTypes.Load(typ)
	if !ok {
		cached, _ = plainTypes.LoadOrStore(typ, wrap(sys.CheckPlain(typ), "Decode into %s", typ))
	}
	if err, _ := cached.(error); err != nil {
		return err
	}
	size := int(unsafe.Sizeof(*out))
	if len(sample) < size {
		return fmt.Errorf("perfring: a sample of %d bytes is shorter than %s (%d bytes)",
			len(sample), typ, size)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), size), sample)
	return nil
}

// plainTypes caches sys.CheckPlain's answer (error or nil) by type.
var plainTypes sync.Map
