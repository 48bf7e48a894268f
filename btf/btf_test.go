package btf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// builder makes BTF blobs for the tests, in the format of linux/btf.h.
type builder struct {
	types, strs []byte
	n           uint32 // types so far
	base        *builder
}

func newBuilder(base *builder) *builder {
	b := &builder{base: base}
	if base == nil {
		b.strs = []byte{0} // offset 0 is the empty name
	}
	return b
}

// str adds s to the strings and returns its offset as types name it.
func (b *builder) str(s string) uint32 {
	off := len(b.strs)
	b.strs = append(append(b.strs, s...), 0)
	if b.base != nil {
		off += len(b.base.strs)
	}
	return uint32(off)
}

// trailingBytes is what follows a type of each kind, per member for the
// kinds with members, written from Documentation/bpf/btf.rst apart from
// the code under test.
var trailingBytes = map[Kind]int{1: 4, 3: 12, 4: 12, 5: 12, 6: 8, 13: 8, 14: 4, 15: 12, 17: 4,
	19: 12}

// typ adds a type of kind with vlen and the trailing bytes its kind needs
// and returns its id.
func (b *builder) typ(nameOff uint32, kind Kind, vlen int) uint32 {
	extra := trailingBytes[kind] * vlen
	if kind == 1 || kind == 3 || kind == 14 || kind == 17 { // one record whatever vlen says
		extra = trailingBytes[kind]
	}
	b.types = binary.LittleEndian.AppendUint32(b.types, nameOff)
	b.types = binary.LittleEndian.AppendUint32(b.types, uint32(kind)<<24|uint32(vlen))
	b.types = binary.LittleEndian.AppendUint32(b.types, 0)
	b.types = append(b.types, make([]byte, extra)...)
	b.n++
	if b.base != nil {
		return b.base.n + b.n
	}
	return b.n
}

// blob lays out the header (hdrLen bytes, at least 24), types, strings.
func (b *builder) blob(hdrLen int) []byte {
	le := binary.LittleEndian
	out := le.AppendUint16(nil, magic)
	out = append(out, 1, 0)
	out = le.AppendUint32(out, uint32(hdrLen))
	out = le.AppendUint32(out, 0)
	out = le.AppendUint32(out, uint32(len(b.types)))
	out = le.AppendUint32(out, uint32(len(b.types)))
	out = le.AppendUint32(out, uint32(len(b.strs)))
	out = append(out, make([]byte, hdrLen-headerSize)...)
	return append(append(out, b.types...), b.strs...)
}

func open(t *testing.T, raw []byte, base *Blob) *Blob {
	t.Helper()
	b, err := Open(bytes.NewReader(raw), int64(len(raw)), base)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sample is a blob with a type of every kind before the ones looked up,
// so that a wrong trailing size shifts every id after it.
func sample() (*builder, map[string]uint32) {
	b := newBuilder(nil)
	ids := map[string]uint32{}
	for k := Kind(1); k <= maxKindKnown; k++ {
		b.typ(b.str("t"+Kind(k).String()), k, 3)
	}
	read := b.str("vfs_read")
	ids["vfs_read"] = b.typ(read, KindFunc, 0)
	ids["read"] = b.typ(read+4, KindFunc, 0) // "read" as the tail of "vfs_read"
	ids["btf_trace_sys_enter"] = b.typ(b.str("btf_trace_sys_enter"), KindTypedef, 0)
	ids["struct_only"] = 0
	b.typ(b.str("struct_only"), 4, 2)
	twice := b.str("twice")
	b.typ(twice, KindFunc, 0)
	b.typ(b.str("twice"), KindFunc, 0) // another string with the same text
	ids["sys_enter_typedef_as_func"] = 0
	return b, ids
}

func TestFind(t *testing.T) {
	b, ids := sample()
	// A hdr_len beyond what this package knows is honoured.
	for _, hdrLen := range []int{headerSize, headerSize + 8} {
		blob := open(t, b.blob(hdrLen), nil)
		for name, kind := range map[string]Kind{"vfs_read": KindFunc, "read": KindFunc,
			"btf_trace_sys_enter": KindTypedef} {
			if id, err := blob.Find(kind, name); err != nil || id != ids[name] {
				t.Errorf("hdr_len %d: Find(%s, %q) = %d, %v, want %d", hdrLen, kind, name, id, err,
					ids[name])
			}
		}
		for name, kind := range map[string]Kind{"struct_only": KindFunc, "vfs_read": KindTypedef,
			"vfs_rea": KindFunc,
			"fs_rea":  KindFunc, "absent": KindFunc, "": KindFunc, "a\x00b": KindFunc,
			strings.Repeat("x", 2000): KindFunc} {
			if id, err := blob.Find(kind, name); !errors.Is(err, ErrNotFound) {
				t.Errorf("Find(%s, %q) = %d, %v, want ErrNotFound", kind, name, id, err)
			}
		}
		id, err := blob.Find(KindFunc, "twice")
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "ids [") {
			t.Errorf("Find of a name two FUNCs share = %d, %v, want ErrAmbiguous", id, err)
		}
		if n, err := blob.Count(); err != nil || n != b.n {
			t.Errorf("Count = %d, %v, want %d", n, err, b.n)
		}
	}
}

// TestFindAcrossChunks: a name the string section's reading splits
// between two chunks is still found, at every split point.
func TestFindAcrossChunks(t *testing.T) {
	for cut := 0; cut <= len("boundary_name\x00"); cut++ {
		b := newBuilder(nil)
		// The pad puts the name's start cut bytes before the chunk's end.
		b.str(strings.Repeat("p", readAhead-1-len("\x00")-cut))
		want := b.typ(b.str("boundary_name"), KindFunc, 0)
		id, err := open(t, b.blob(headerSize), nil).Find(KindFunc, "boundary_name")
		if err != nil || id != want {
			t.Errorf("name %d bytes before the chunk's end: %d, %v, want %d", cut, id, err, want)
		}
	}
}

// TestSplit: a module's types continue vmlinux's ids, its strings
// vmlinux's offsets, and its types may be named by vmlinux's strings.
func TestSplit(t *testing.T) {
	base, _ := sample()
	vmlinuxStr := base.str("shared_name") // a vmlinux string no vmlinux FUNC has
	mod := newBuilder(base)
	ownID := mod.typ(mod.str("mod_func"), KindFunc, 0)
	mod.typ(0, 13, 2) // an anonymous FUNC_PROTO
	sharedID := mod.typ(vmlinuxStr, KindFunc, 0)
	vmlinux := open(t, base.blob(headerSize), nil)
	split := open(t, mod.blob(headerSize), vmlinux)
	if id, err := split.Find(KindFunc, "mod_func"); err != nil || id != ownID || id != base.n+1 {
		t.Errorf("Find(mod_func) = %d, %v, want %d (the first after vmlinux's %d)", id, err, ownID,
			base.n)
	}
	if id, err := split.Find(KindFunc, "shared_name"); err != nil || id != sharedID {
		t.Errorf("Find(shared_name), named by a vmlinux string = %d, %v, want %d", id, err,
			sharedID)
	}
	if id, err := vmlinux.Find(KindFunc, "shared_name"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(shared_name) in vmlinux = %d, %v: only the module has it", id, err)
	}
	if id, err := split.Find(KindFunc, "vfs_read"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(vfs_read) in the module = %d, %v: vmlinux's own types are not the module's",
			id, err)
	}
}

func TestMalformed(t *testing.T) {
	b, _ := sample()
	good := b.blob(headerSize)
	le := binary.LittleEndian
	set := func(off int, v uint32) []byte {
		c := bytes.Clone(good)
		le.PutUint32(c[off:], v)
		return c
	}
	unknownKind := bytes.Clone(good)
	le.PutUint32(unknownKind[headerSize+4:], 31<<24)
	bigVlen := bytes.Clone(good)
	le.PutUint32(bigVlen[headerSize+4:], 4<<24|0xffff)
	for what, raw := range map[string][]byte{
		"empty":        nil,
		"short header": good[:10],
		"bad magic":    append([]byte{0, 0}, good[2:]...),
		"big-endian":   append([]byte{0xeb, 0x9f}, good[2:]...),
		"version 2": append(append([]byte{}, good[:2]...), append([]byte{2},
			good[3:]...)...),
		"hdr_len past the file":    set(4, 1<<31),
		"hdr_len under 24":         set(4, 8),
		"types past the file":      set(12, uint32(len(good))),
		"type_off past the file":   set(8, ^uint32(0)),
		"strings past the file":    set(20, uint32(len(good))),
		"str_off past the file":    set(16, ^uint32(0)),
		"type_len not 4-aligned":   set(12, uint32(len(b.types))-2),
		"an unknown kind":          unknownKind,
		"members past the types":   bigVlen,
		"truncated after header":   good[:len(good)-len(b.strs)-len(b.types)/2],
		"a type cut in the middle": set(12, 6*4),
	} {
		blob, err := Open(bytes.NewReader(raw), int64(len(raw)), nil)
		if err == nil {
			_, err = blob.Find(KindFunc, "vfs_read")
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", what, err)
		}
	}
}
