package sys

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AttrSize is the size of every attr struct passed to bpf(2): union bpf_attr
// of every kernel we know (144 bytes in 6.1, 168 in 6.18) with room to grow.
// A zeroed tail past the kernel's size is accepted (else E2BIG). Less would
// be unsafe: the kernel writes some answers back whatever size it was told,
// BPF_PROG_QUERY's prog_cnt at offset 24 among them (TestProgQueryFullAttr).
const AttrSize = 256

// NewPointer wraps p.
func NewPointer(p unsafe.Pointer) Pointer { return Pointer{ptr: p} }

// SlicePointer points at the first byte of b, or is nil for an empty b.
func SlicePointer(b []byte) Pointer {
	if len(b) == 0 {
		return Pointer{}
	}
	return Pointer{ptr: unsafe.Pointer(&b[0])}
}

// StringPointer points at a NUL-terminated copy of s; a NUL inside s is
// EINVAL (the kernel would read "a\x00b" as "a").
func StringPointer(s string) (Pointer, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return Pointer{}, fmt.Errorf("sys: string %q holds a NUL byte at %d, "+
			"where the kernel would end it: %w", s, i, unix.EINVAL)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return Pointer{ptr: unsafe.Pointer(&b[0])}, nil
}

// CheckPlain says why t cannot carry bytes to or from the kernel, if it
// cannot: only fixed-size data without Go pointers can, since the kernel
// would copy addresses the garbage collector does not know of.
func CheckPlain(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Array:
		return CheckPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if err := CheckPlain(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("sys: %s is not fixed-size plain data", t)
}

// ObjName is char[BPF_OBJ_NAME_LEN], the name of a map or program.
type ObjName [16]byte

// NewObjName keeps the first 15 bytes of name, NUL-terminated, after
// checking it has only what bpf_obj_name_cpy accepts (letters, digits, '_'
// and, since 5.1, '.'): else an EINVAL error names the first other byte.
func NewObjName(name string) (ObjName, error) {
	var n ObjName
	for i := range len(name) {
		c := name[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && !('0' <= c && c <= '9') && c != '_' && c != '.' {
			return n, fmt.Errorf("sys: name %q: byte %q at %d is not allowed "+
				"(only A-Z, a-z, 0-9, '_' and '.'): %w", name, []byte{c}, i, unix.EINVAL)
		}
	}
	copy(n[:len(n)-1], name)
	return n, nil
}

// String is the name up to its NUL.
func (n ObjName) String() string { return unix.ByteSliceToString(n[:]) }

// QuoteName is a program's or map's name as messages show it: quoted, or
// (unnamed) for none, where "" would read as a name lost.
func QuoteName(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return strconv.Quote(name)
}
