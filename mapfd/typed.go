package mapfd

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
)

// Typed gives a map's keys and values Go types K and V, which hold no
// pointers and have the map's sizes, padding included. Its calls do not
// allocate. A Typed that NewTyped did not make, its sizes unchecked,
// answers every call with ErrNotTyped.
type Typed[K, V any] struct {
	m *Map
}

// ErrNotTyped is returned by a Typed that NewTyped did not make.
var ErrNotTyped = errors.New("mapfd: Typed not made by NewTyped")

// NewTyped checks that K and V fit m. For a per-CPU map, V is one CPU's
// value and its size must be a multiple of 8; use LookupPerCPU.
func NewTyped[K, V any](m *Map) (*Typed[K, V], error) {
	if m == nil {
		return nil, errors.New("mapfd: NewTyped of a nil map")
	}
	kt, vt := reflect.TypeFor[K](), reflect.TypeFor[V]()
	if err := cmp.Or(sys.CheckPlain(kt), sys.CheckPlain(vt)); err != nil {
		return nil, fmt.Errorf("mapfd: map %s: %w", sys.QuoteName(m.name), err)
	}
	vs := uint64(vt.Size())
	if m.typ.PerCPU() {
		n, _ := sys.PossibleCPUs()
		if vs%8 != 0 || vs*uint64(n) != uint64(m.valueSize) {
			return nil, fmt.Errorf("mapfd: map %s: per-CPU value type of %d bytes, "+
				"want a multiple of 8 that times %d CPUs is %d",
				sys.QuoteName(m.name), vs, n, m.valueSize)
		}
	} else if vs != uint64(m.valueSize) {
		return nil, fmt.Errorf("mapfd: map %s: value type of %d bytes, the map's values are %d",
			sys.QuoteName(m.name), vs, m.valueSize)
	}
	if ks := uint64(kt.Size()); ks != uint64(m.keySize) {
		return nil, fmt.Errorf("mapfd: map %s: key type of %d bytes, the map's keys are %d",
			sys.QuoteName(m.name), ks, m.keySize)
	}
	return &Typed[K, V]{m}, nil
}

// CreateTyped creates a map of keys K and values V (one CPU's, for a
// per-CPU map): sizes in spec must be theirs or zero.
func CreateTyped[K, V any](spec Spec) (*Typed[K, V], error) {
	ks, vs := uint32(unsafe.Sizeof(*new(K))), uint32(unsafe.Sizeof(*new(V)))
	if spec.KeySize != 0 && spec.KeySize != ks || spec.ValueSize != 0 && spec.ValueSize != vs {
		return nil, fmt.Errorf("mapfd: map %s: key and value sizes %d and %d, "+
			"the types' are %d and %d",
			sys.QuoteName(spec.Name), spec.KeySize, spec.ValueSize, ks, vs)
	}
	spec.KeySize, spec.ValueSize = ks, vs
	m, err := Create(spec)
	if err != nil {
		return nil, err
	}
	t, err := NewTyped[K, V](m)
	if err != nil {
		m.Close()
		return nil, err
	}
	return t, nil
}

// FD is the map's fd, for insn.LoadMapFD; -1 once closed or when NewTyped
// did not make t.
func (t *Typed[K, V]) FD() int {
	if t.m == nil {
		return -1
	}
	return t.m.FD()
}

// Map is the map t types; its byte API takes sizes unchecked by t.
func (t *Typed[K, V]) Map() *Map { return t.m }

// Close closes the map.
func (t *Typed[K, V]) Close() error {
	if t.m == nil {
		return nil
	}
	return t.m.Close()
}

// open returns t's map, or why it cannot be used.
func (t *Typed[K, V]) open() (*Map, error) {
	switch {
	case t.m == nil:
		return nil, ErrNotTyped
	case t.m.fd.Int() < 0:
		return nil, ErrClosed
	}
	return t.m, nil
}

// single returns t's map for a call that moves one value, which a per-CPU
// map does not hold.
func (t *Typed[K, V]) single(call string) (*Map, error) {
	m, err := t.open()
	if err == nil && m.typ.PerCPU() {
		err = fmt.Errorf("mapfd: map %s: %s needs one value per CPU on a per-CPU map: use %sPerCPU",
			sys.QuoteName(m.name), call, call)
	}
	return m, err
}

// Lookup returns the value of k, or ErrKeyNotExist.
func (t *Typed[K, V]) Lookup(k K) (V, error) {
	var v V
	m, err := t.single("Lookup")
	if err != nil {
		return v, err
	}
	return v, m.lookup(unsafe.Pointer(&k), unsafe.Pointer(&v))
}

// LookupPerCPU fills out, which must hold sys.PossibleCPUs values, with each
// CPU's value of k.
func (t *Typed[K, V]) LookupPerCPU(k K, out []V) error {
	m, err := t.perCPU(out)
	if err != nil {
		return err
	}
	return m.lookup(unsafe.Pointer(&k), unsafe.Pointer(&out[0]))
}

// perCPU checks that t is a per-CPU map and out holds a value per CPU.
func (t *Typed[K, V]) perCPU(out []V) (*Map, error) {
	m, err := t.open()
	if err != nil {
		return nil, err
	}
	var v V
	size := uint64(unsafe.Sizeof(v))
	if !m.typ.PerCPU() || size == 0 || uint64(len(out))*size != uint64(m.valueSize) {
		return nil, fmt.Errorf("mapfd: map %s: per-CPU access needs a per-CPU map and %d values",
			sys.QuoteName(m.name), uint64(m.valueSize)/max(size, 1))
	}
	return m, nil
}

// Update sets k to v with flags BPF_ANY, BPF_NOEXIST or BPF_EXIST.
func (t *Typed[K, V]) Update(k K, v V, flags uint64) error {
	m, err := t.single("Update")
	if err != nil {
		return err
	}
	return m.update(unsafe.Pointer(&k), unsafe.Pointer(&v), flags)
}

// UpdatePerCPU sets k to one value per CPU, vals[i] on CPU i; vals must
// hold sys.PossibleCPUs values.
func (t *Typed[K, V]) UpdatePerCPU(k K, vals []V, flags uint64) error {
	m, err := t.perCPU(vals)
	if err != nil {
		return err
	}
	return m.update(unsafe.Pointer(&k), unsafe.Pointer(&vals[0]), flags)
}

// Delete removes k, or returns ErrKeyNotExist.
func (t *Typed[K, V]) Delete(k K) error {
	m, err := t.open()
	if err != nil {
		return err
	}
	return m.delete(unsafe.Pointer(&k))
}

// All iterates over keys and values as Map.All does. A per-CPU map has no
// single value per key: use AllPerCPU.
func (t *Typed[K, V]) All(errp *error) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		m, err := t.single("All")
		if err != nil {
			if errp != nil {
				*errp = err
			}
			return
		}
		for kb, vb := range m.All(errp) {
			if !yield(at[K](kb), at[V](vb)) {
				return
			}
		}
	}
}

// at reads a T from b, which holds one (or nothing, for a zero-sized T).
func at[T any](b []byte) (v T) {
	if len(b) > 0 {
		v = *(*T)(unsafe.Pointer(&b[0]))
	}
	return v
}

// AllPerCPU iterates over a per-CPU map's keys, each with its value on
// every possible CPU (index i is CPU i). The slice is reused at every step.
func (t *Typed[K, V]) AllPerCPU(errp *error) iter.Seq2[K, []V] {
	return func(yield func(K, []V) bool) {
		n, _ := sys.PossibleCPUs() // known since the map's creation
		m, err := t.perCPU(make([]V, n))
		if err != nil {
			if errp != nil {
				*errp = err
			}
			return
		}
		for kb, vb := range m.All(errp) {
			if !yield(at[K](kb), unsafe.Slice((*V)(unsafe.Pointer(&vb[0])), n)) {
				return
			}
		}
	}
}
