package mapfd_test

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/benchutil"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"golang.org/x/sys/unix"
)

// bareElem is struct bpf_attr's elem member, for the baseline: what a
// program with no library at all would hand the kernel.
type bareElem struct {
	fd         uint32
	_          uint32
	key, value uintptr
	flags      uint64
}

func bare(cmd int, a *bareElem) {
	if _, _, e := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a)); e != 0 {
		panic(e)
	}
}

// BenchmarkMap runs, side by side, a bare bpf(2) system call and bpfkit's
// byte and typed APIs, on a 10,000-entry hash and on an array.
func BenchmarkMap(b *testing.B) {
	testutil.RequireRoot(b)
	for _, typ := range []mapfd.Type{mapfd.Hash, mapfd.Array} {
		name := map[mapfd.Type]string{mapfd.Hash: "hash", mapfd.Array: "array"}[typ]
		m, err := mapfd.Create(mapfd.Spec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 10000, Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		tm, _ := mapfd.NewTyped[uint32, uint64](m)
		for k := range uint32(10000) {
			tm.Update(k, uint64(k), mapfd.BPF_ANY)
		}
		key, value := make([]byte, 4), make([]byte, 8)
		var k uint32
		var v uint64
		for _, op := range []string{"lookup", "update"} {
			cmd := map[string]int{"lookup": unix.BPF_MAP_LOOKUP_ELEM, "update": unix.BPF_MAP_UPDATE_ELEM}[op]
			a := bareElem{fd: uint32(m.FD()), key: uintptr(unsafe.Pointer(&k)), value: uintptr(unsafe.Pointer(&v))}
			bareOp := func(i int) {
				k = uint32(i % 10000)
				bare(cmd, &a)
			}
			b.Run(name+"/"+op+"/bytes", func(b *testing.B) {
				benchutil.Compare(b, 100, bareOp, func(i int) {
					binary.LittleEndian.PutUint32(key, uint32(i%10000))
					if op == "lookup" {
						m.Lookup(key, value)
					} else {
						m.Update(key, value, mapfd.BPF_ANY)
					}
				})
			})
			b.Run(name+"/"+op+"/typed", func(b *testing.B) {
				benchutil.Compare(b, 100, bareOp, func(i int) {
					if op == "lookup" {
						tm.Lookup(uint32(i % 10000))
					} else {
						tm.Update(uint32(i%10000), uint64(i), mapfd.BPF_ANY)
					}
				})
			})
		}
	}
}
