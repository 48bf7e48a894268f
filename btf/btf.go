package btf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Kind is a BTF_KIND_* value: the two this package looks up.
type Kind uint8

// The kinds Find looks for, numbered as in linux/btf.h.
const (
	KindTypedef Kind = 8  // BTF_KIND_TYPEDEF: btf_trace_<tracepoint> for tp_btf
	KindFunc    Kind = 12 // BTF_KIND_FUNC: a function, for fentry and fexit
)

// String names the kind as bpftool does.
func (k Kind) String() string {
	switch k {
	case KindTypedef:
		return "TYPEDEF"
	case KindFunc:
		return "FUNC"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

var (
	// ErrNotFound: no type of the kind has the name.
	ErrNotFound = errors.New("btf: not found")
	// ErrAmbiguous: more than one type of the kind has the name.
	ErrAmbiguous = errors.New("btf: name is not unique")
	// ErrMalformed: the BTF does not hold together (a size past the file,
	// an unknown kind, a bad magic number).
	ErrMalformed = errors.New("btf: malformed")
)

// Header layout (linux/btf.h struct btf_header).
const (
	magic        = 0xeb9f
	headerSize   = 24 // up to str_len; hdr_len may say more
	typeSize     = 12 // struct btf_type: name_off, info, size or type
	maxNameLen   = 1024
	readAhead    = 64 << 10
	kindMask     = 0x1f
	kindShift    = 24
	vlenMask     = 0xffff
	maxKindKnown = 19 // BTF_KIND_ENUM64 (6.0)
)

// Blob is raw BTF whose header has been read and checked: where its
// types and strings lie in the reader.
type Blob struct {
	r                io.ReaderAt
	mem              []byte // the whole blob when it is in memory (mapped), else nil
	typeOff, typeLen int64  // in r
	strOff, strLen   int64
	base             *Blob
	firstID          uint32 // 1, or after the base's last type for split BTF
	strStart         uint32 // 0, or the base's string length for split BTF
	count            uint32 // types, 0 until counted
}

// OpenBytes is Open for BTF in memory, which lookups read in place.
func OpenBytes(raw []byte, base *Blob) (*Blob, error) {
	b, err := Open(bytes.NewReader(raw), int64(len(raw)), base)
	if b != nil {
		b.mem = raw
	}
	return b, err
}

// Open reads the header of the BTF in r, size bytes, and checks that its
// sections lie in the file. base is nil for vmlinux's BTF, or vmlinux's
// Blob for a module's split BTF, whose ids and string offsets continue
// after base's: Open then walks base's types once to count them.
func Open(r io.ReaderAt, size int64, base *Blob) (*Blob, error) {
	var h [headerSize]byte
	if size < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header (%d)", ErrMalformed, size,
			headerSize)
	}
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("btf: header: %w", err)
	}
	le := binary.LittleEndian
	switch m := le.Uint16(h[:]); {
	case m == 0x9feb:
		return nil, fmt.Errorf("%w: big-endian BTF, not this machine's byte order", ErrMalformed)
	case m != magic:
		return nil, fmt.Errorf("%w: magic %#04x, want %#04x", ErrMalformed, m, magic)
	case h[2] != 1:
		return nil, fmt.Errorf("%w: version %d, want 1", ErrMalformed, h[2])
	}
	hdrLen := int64(le.Uint32(h[4:]))
	b := &Blob{r: r, base: base, firstID: 1,
		typeOff: hdrLen + int64(le.Uint32(h[8:])), typeLen: int64(le.Uint32(h[12:])),
		strOff: hdrLen + int64(le.Uint32(h[16:])), strLen: int64(le.Uint32(h[20:]))}
	switch {
	case hdrLen < headerSize || hdrLen > size:
		return nil, fmt.Errorf("%w: hdr_len %d is not in [%d, %d], the file's size", ErrMalformed,
			hdrLen, headerSize, size)
	case b.typeOff+b.typeLen > size:
		return nil, fmt.Errorf("%w: types at %d, %d bytes, past the end of the file (%d bytes)",
			ErrMalformed, b.typeOff, b.typeLen, size)
	case b.strOff+b.strLen > size:
		return nil, fmt.Errorf("%w: strings at %d, %d bytes, past the end of the file (%d bytes)",
			ErrMalformed, b.strOff, b.strLen, size)
	case b.typeLen%4 != 0:
		return nil, fmt.Errorf("%w: type section of %d bytes, not a multiple of 4", ErrMalformed,
			b.typeLen)
	}
	if base != nil {
		n, err := base.Count()
		if err != nil {
			return nil, fmt.Errorf("btf: base of split BTF: %w", err)
		}
		b.firstID, b.strStart = base.firstID+n, base.strStart+uint32(base.strLen)
	}
	return b, nil
}

// Count is the number of types in the blob (its own, not its base's).
func (b *Blob) Count() (uint32, error) {
	if b.count == 0 {
		if _, err := b.walk(0, nil); err != nil {
			return 0, err
		}
	}
	return b.count, nil
}

// Find returns the id of the one type of kind named name among the
// blob's own types (not its base's): its name may be a string of the
// blob or of its base. ErrNotFound, ErrAmbiguous or ErrMalformed say why
// not. A name in no string is not found without walking the types.
func (b *Blob) Find(kind Kind, name string) (uint32, error) {
	if err := checkName(kind, name); err != nil {
		return 0, err
	}
	names := map[uint32]bool{}
	for blob := b; blob != nil; blob = blob.base {
		offs, err := blob.nameOffsets(name)
		if err != nil {
			return 0, err
		}
		for _, o := range offs {
			names[o] = true
		}
	}
	var found []uint32
	if len(names) > 0 {
		var err error
		if found, err = b.walk(kind, names); err != nil {
			return 0, err
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("btf: %s %q: %w", kind, name, ErrNotFound)
	case 1:
		return found[0], nil
	}
	return 0, fmt.Errorf("btf: %s %q: ids %v: %w", kind, name, found, ErrAmbiguous)
}

// checkName refuses a name no type can have.
func checkName(kind Kind, name string) error {
	if name == "" || len(name) > maxNameLen || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("btf: %s %.40q: a name is 1 to %d bytes without NUL: %w", kind, name,
			maxNameLen, ErrNotFound)
	}
	return nil
}

// nameOffsets are the string offsets (as types name them) at which the
// string section holds name and its NUL. They are found in place when the
// blob is in memory, else in chunks read from the file, which overlap by
// the name's length so that none is missed at a boundary.
func (b *Blob) nameOffsets(name string) ([]uint32, error) {
	pat := []byte(name + "\x00")
	if b.mem != nil {
		return matches(nil, b.mem[b.strOff:b.strOff+b.strLen], pat, b.strStart), nil
	}
	buf := make([]byte, max(readAhead, 2*len(pat)))
	var offs []uint32
	for pos, keep := int64(0), 0; pos+int64(keep) < b.strLen; {
		n := int(min(int64(len(buf)-keep), b.strLen-pos-int64(keep)))
		if _, err := b.r.ReadAt(buf[keep:keep+n], b.strOff+pos+int64(keep)); err != nil {
			return nil, fmt.Errorf("btf: strings: %w", err)
		}
		data := buf[:keep+n]
		offs = matches(offs, data, pat, b.strStart+uint32(pos))
		keep = min(len(pat)-1, len(data))
		copy(buf, data[len(data)-keep:])
		pos += int64(len(data) - keep)
	}
	return offs, nil
}

// matches appends to offs start plus the offset of each pat in data.
func matches(offs []uint32, data, pat []byte, start uint32) []uint32 {
	for i := 0; ; {
		j := bytes.Index(data[i:], pat)
		if j < 0 {
			return offs
		}
		offs = append(offs, start+uint32(i+j))
		i += j + 1
	}
}

// walk reads every type once and returns the ids of those of kind whose
// name_off is in names (none when names is nil); it counts the types.
func (b *Blob) walk(kind Kind, names map[uint32]bool) ([]uint32, error) {
	c := cursor{}
	if b.mem != nil {
		c.mem = b.mem[b.typeOff : b.typeOff+b.typeLen]
	} else {
		c.r = bufio.NewReaderSize(io.NewSectionReader(b.r, b.typeOff, b.typeLen), readAhead)
	}
	var ids []uint32
	var n uint32
	for left := b.typeLen; left > 0; n++ {
		if left < typeSize {
			return nil, fmt.Errorf("%w: type %d: %d bytes left of the type section, want %d",
				ErrMalformed, b.firstID+n, left, typeSize)
		}
		t, err := c.peek(typeSize)
		if err != nil {
			return nil, fmt.Errorf("btf: type %d: %w", b.firstID+n, err)
		}
		nameOff, info := binary.LittleEndian.Uint32(t), binary.LittleEndian.Uint32(t[4:])
		k, vlen := Kind(info>>kindShift&kindMask), int64(info&vlenMask)
		extra, err := trailing(k, vlen)
		if err != nil || typeSize+extra > left {
			return nil, fmt.Errorf("%w: type %d of kind %d, %d bytes, past the %d left: %v",
				ErrMalformed, b.firstID+n, uint8(k), typeSize+extra, left, err)
		}
		if k == kind && names[nameOff] {
			ids = append(ids, b.firstID+n)
		}
		if err := c.skip(int(typeSize + extra)); err != nil {
			return nil, fmt.Errorf("btf: type %d: %w", b.firstID+n, err)
		}
		left -= typeSize + extra
	}
	b.count = n
	return ids, nil
}

// cursor goes through the type section: in memory, or read as it goes.
// walk checks every size against what is left before asking for it.
type cursor struct {
	mem []byte
	r   *bufio.Reader
}

func (c *cursor) peek(n int) ([]byte, error) {
	if c.r == nil {
		return c.mem[:n], nil
	}
	return c.r.Peek(n)
}

func (c *cursor) skip(n int) error {
	if c.r == nil {
		c.mem = c.mem[n:]
		return nil
	}
	_, err := c.r.Discard(n)
	return err
}

// trailing is the size of what follows a type's 12 bytes, by its kind
// and vlen (Documentation/bpf/btf.rst).
func trailing(k Kind, vlen int64) (int64, error) {
	switch k {
	case 1, 14, 17: // INT's encoding, VAR's linkage, DECL_TAG's component_idx
		return 4, nil
	case 3: // ARRAY: struct btf_array
		return 12, nil
	case 4, 5, 15, 19: // STRUCT, UNION members; DATASEC's var_secinfo; ENUM64's values
		return 12 * vlen, nil
	case 6, 13: // ENUM's values; FUNC_PROTO's params
		return 8 * vlen, nil
	case 2, 7, 8, 9, 10, 11, 12, 16, 18: // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC,
		// FLOAT, TYPE_TAG
		return 0, nil
	}
	return 0, fmt.Errorf("kind %d is unknown (the last known is %d): a newer BTF", uint8(k),
		maxKindKnown)
}
