package btf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzFind opens any bytes as BTF, alone and as a module's split BTF over
// the sample, and looks a name up, in memory and read as it goes: no
// panic, no allocation beyond what the input holds, and the two ways agree.
func FuzzFind(f *testing.F) {
	b, _ := sample()
	good := b.blob(headerSize)
	f.Add(good, "vfs_read")
	f.Add(b.blob(headerSize+8), "btf_trace_sys_enter")
	f.Add(good, "twice")
	f.Add(good[:40], "read")
	mod := newBuilder(b)
	mod.typ(mod.str("mod_func"), KindFunc, 0)
	f.Add(mod.blob(headerSize), "mod_func")
	base := open(&testing.T{}, good, nil)
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		for _, over := range []*Blob{nil, base} {
			inMem, errMem := OpenBytes(raw, over)
			read, errRead := Open(bytes.NewReader(raw), int64(len(raw)), over)
			if (errMem == nil) != (errRead == nil) {
				t.Fatalf("open: in memory %v, read %v", errMem, errRead)
			}
			if errMem != nil {
				if !errors.Is(errMem, ErrMalformed) {
					t.Fatalf("open: %v is not ErrMalformed", errMem)
				}
				continue
			}
			for _, kind := range []Kind{KindFunc, KindTypedef} {
				id1, err1 := inMem.Find(kind, name)
				id2, err2 := read.Find(kind, name)
				if id1 != id2 || (err1 == nil) != (err2 == nil) {
					t.Fatalf("Find(%s, %q): in memory %d, %v; read %d, %v", kind, name, id1, err1,
						id2, err2)
				}
				known := errors.Is(err1, ErrNotFound) || errors.Is(err1, ErrAmbiguous) ||
					errors.Is(err1, ErrMalformed)
				if err1 != nil && !known {
					t.Fatalf("Find(%s, %q): %v", kind, name, err1)
				}
			}
		}
	})
}
