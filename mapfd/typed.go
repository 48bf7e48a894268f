package mapfd

import (
	"fmt"
	"iter"
	"reflect"
	"unsafe"
)

// Typed gives a map with fixed-size keys and values a Go type for each. K and
// V must hold no pointers (no strings, slices, maps or interfaces) and have
// the map's key and value sizes, padding included. Its calls do not allocate.
type Typed[K, V any] struct {
	*Map
}

// NewTyped checks that K and V fit m. For a per-CPU map, V is one CPU's
// value and its size must be a multiple of 8; use LookupPerCPU.
func NewTyped[K, V any](m *Map) (*Typed[K, V], error) {
	var k K
	var v V
	if err := plainData(reflect.TypeOf(&k).Elem()); err != nil {
		return nil, fmt.Errorf("map %q key: %w", m.name, err)
	}
	if err := plainData(reflect.TypeOf(&v).Elem()); err != nil {
		return nil, fmt.Errorf("map %q value: %w", m.name, err)
	}
	vs := uint32(unsafe.Sizeof(v))
	if m.typ.PerCPU() {
		n, _ := PossibleCPUs()
		if vs%8 != 0 || vs*uint32(n) != m.valueSize {
			return nil, fmt.Errorf("map %q: per-CPU value type of %d bytes, want a multiple of 8 that times %d CPUs is %d", m.name, vs, n, m.valueSize)
		}
	} else if vs != m.valueSize {
		return nil, fmt.Errorf("map %q: value type of %d bytes, the map's values are %d", m.name, vs, m.valueSize)
	}
	if ks := uint32(unsafe.Sizeof(k)); ks != m.keySize {
		return nil, fmt.Errorf("map %q: key type of %d bytes, the map's keys are %d", m.name, ks, m.keySize)
	}
	return &Typed[K, V]{m}, nil
}

// plainData refuses types that hold Go pointers: the kernel would copy their
// addresses, and the garbage collector would not know.
func plainData(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return nil
	case reflect.Array:
		return plainData(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := plainData(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("type %s is not fixed-size plain data", t)
}

// Lookup returns the value of k, or ErrKeyNotExist.
func (t *Typed[K, V]) Lookup(k K) (V, error) {
	var v V
	if t.fd < 0 {
		return v, ErrClosed
	}
	err := t.lookup(unsafe.Pointer(&k), unsafe.Pointer(&v))
	return v, err
}

// LookupPerCPU fills out, which must hold PossibleCPUs values, with each
// CPU's value of k.
func (t *Typed[K, V]) LookupPerCPU(k K, out []V) error {
	var v V
	if t.fd < 0 {
		return ErrClosed
	}
	if !t.typ.PerCPU() || uint32(len(out))*uint32(unsafe.Sizeof(v)) != t.valueSize {
		return fmt.Errorf("map %q: LookupPerCPU needs a per-CPU map and %d values", t.name, t.valueSize/max(uint32(unsafe.Sizeof(v)), 1))
	}
	return t.lookup(unsafe.Pointer(&k), unsafe.Pointer(&out[0]))
}

// Update sets k to v with flags BPF_ANY, BPF_NOEXIST or BPF_EXIST.
func (t *Typed[K, V]) Update(k K, v V, flags uint64) error {
	if t.fd < 0 {
		return ErrClosed
	}
	if t.typ.PerCPU() {
		return fmt.Errorf("map %q: per-CPU maps take one value per CPU: use the byte API", t.name)
	}
	return t.update(unsafe.Pointer(&k), unsafe.Pointer(&v), flags)
}

// Delete removes k, or returns ErrKeyNotExist.
func (t *Typed[K, V]) Delete(k K) error {
	if t.fd < 0 {
		return ErrClosed
	}
	return t.delete(unsafe.Pointer(&k))
}

// All iterates over keys and values as Map.All does (not per-CPU maps).
func (t *Typed[K, V]) All(errp *error) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for kb, vb := range t.Map.All(errp) {
			if !yield(*(*K)(unsafe.Pointer(&kb[0])), *(*V)(unsafe.Pointer(&vb[0]))) {
				return
			}
		}
	}
}
