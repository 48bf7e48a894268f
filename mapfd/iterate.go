package mapfd

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
)

// All iterates over the map's keys and values with BPF_MAP_GET_NEXT_KEY and
// a lookup per key, yielding slices it reuses: copy what you keep. A key
// deleted between the two calls is skipped. An error ends the iteration,
// stored in *errp if errp is not nil. A hash map that loses the current key
// restarts from its first, so a walk racing with deletions may see a key
// twice; it stops after 2 × MaxEntries steps rather than run for ever.
func (m *Map) All(errp *error) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		setErr := func(err error) {
			if errp != nil {
				*errp = err
			}
		}
		setErr(nil)
		if m.fd.Int() < 0 {
			setErr(ErrClosed)
			return
		}
		key, next, value := make([]byte, m.keySize), make([]byte, m.keySize), make([]byte, m.valueSize)
		var prev unsafe.Pointer // nil: start at the first key
		for range 2*uint64(m.maxEntries) + 1 {
			err := m.nextKey(prev, ptr(next))
			if errors.Is(err, ErrKeyNotExist) {
				return
			}
			if err != nil {
				setErr(err)
				return
			}
			key, next = next, key
			prev = ptr(key)
			switch err := m.lookup(prev, ptr(value)); {
			case errors.Is(err, ErrKeyNotExist):
				continue
			case err != nil:
				setErr(err)
				return
			}
			if !yield(key, value) {
				return
			}
		}
		setErr(fmt.Errorf("mapfd: map %s: iteration did not end after %d steps",
			sys.QuoteName(m.name), 2*uint64(m.maxEntries)+1))
	}
}

// ErrBatchEnd ends a batch walk: LookupBatch returns it with the last
// elements.
var ErrBatchEnd = errors.New("mapfd: end of batch walk")

// BatchCursor is the position of a batch walk; the zero value starts at the
// beginning. The kernel's opaque token (a hash bucket, an array key) fits
// 8 bytes.
type BatchCursor struct {
	token   uint64
	started bool
}

// LookupBatch copies as many elements as keys and values hold (KeySize and
// ValueSize bytes each) with BPF_MAP_LOOKUP_BATCH (5.6) and returns how many
// it copied; after the last, with ErrBatchEnd. Hash maps may return fewer
// mid-walk, or ENOSPC if a bucket holds more than fit.
func (m *Map) LookupBatch(c *BatchCursor, keys, values []byte) (int, error) {
	if m.fd.Int() < 0 {
		return 0, ErrClosed
	}
	if c == nil {
		return 0, fmt.Errorf("mapfd: map %s: lookup batch: nil cursor", sys.QuoteName(m.name))
	}
	if m.keySize == 0 {
		return 0, fmt.Errorf("mapfd: map %s: lookup batch: a %s map has no keys to walk",
			sys.QuoteName(m.name), m.typ)
	}
	// In 64 bits: in 32 the product wraps, and the kernel writes past values.
	byKeys := uint64(len(keys)) / uint64(m.keySize)
	byValues := uint64(len(values)) / max(uint64(m.valueSize), 1)
	n := min(byKeys, byValues, math.MaxUint32)
	if n == 0 {
		return 0, fmt.Errorf("mapfd: map %q: lookup batch: buffers of %d and %d bytes "+
			"hold no whole element (key %d bytes, value %d)",
			m.name, len(keys), len(values), m.keySize, m.valueSize)
	}
	var out uint64
	attr := sys.MapBatchAttr{
		MapFD:    uint32(m.fd.Int()),
		Keys:     sys.SlicePointer(keys),
		Values:   sys.SlicePointer(values),
		Count:    uint32(n),
		OutBatch: sys.NewPointer(unsafe.Pointer(&out)),
	}
	if c.started {
		attr.InBatch = sys.NewPointer(unsafe.Pointer(&c.token))
	}
	err := sys.MapLookupBatch(&attr)
	c.token, c.started = out, true
	if notExist(err) {
		return int(attr.Count), ErrBatchEnd
	}
	if err != nil {
		return int(attr.Count), m.wrap("lookup batch", err)
	}
	return int(attr.Count), nil
}
