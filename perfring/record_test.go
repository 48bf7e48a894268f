package perfring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// putRecord writes a perf record at position pos of ring, wrapping.
func putRecord(ring []byte, pos uint64, typ uint32, body []byte) uint64 {
	rec := binary.NativeEndian.AppendUint32(nil, typ)
	rec = binary.NativeEndian.AppendUint16(rec, 0)
	rec = binary.NativeEndian.AppendUint16(rec, uint16(8+len(body)))
	rec = append(rec, body...)
	for i, b := range rec {
		ring[(pos+uint64(i))&uint64(len(ring)-1)] = b
	}
	return pos + uint64(len(rec))
}

func sampleBody(data []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, data...)
	for len(b)%8 != 0 { // the record (8 + body) must be a multiple of 8
		b = append(b, 0)
	}
	return b
}

func TestPerfRecordWrap(t *testing.T) {
	ring := make([]byte, 64)
	var scratch []byte
	payload := []byte("0123456789abcdefghijklmnopqrstuv") // 32 bytes: record of 48
	head := putRecord(ring, 40, perfRecordSample, sampleBody(payload))
	typ, body, size, err := perfRecord(ring, 40, head, &scratch)
	if err != nil || typ != perfRecordSample || size != 48 {
		t.Fatal(typ, size, err)
	}
	s, err := rawSample(body)
	if err != nil || !bytes.Equal(s, payload) {
		t.Fatalf("wrapped sample %q, %v", s, err)
	}
	if &body[0] != &scratch[:1][0] {
		t.Fatal("a wrapped record was not delivered from the scratch buffer")
	}
	// Not wrapped: in place.
	head = putRecord(ring, 0, perfRecordSample, sampleBody([]byte("abc")))
	_, body, _, _ = perfRecord(ring, 0, head, &scratch)
	if &body[0] != &ring[8] {
		t.Fatal("an unwrapped record was copied")
	}
	lost := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 7), 1234)
	head = putRecord(ring, 56, perfRecordLost, lost)
	typ, body, _, err = perfRecord(ring, 56, head, &scratch)
	if n, _ := lostCount(body); err != nil || typ != perfRecordLost || n != 1234 {
		t.Fatalf("lost record: %d %d %v", typ, n, err)
	}
	if allocs := testing.AllocsPerRun(100, func() { perfRecord(ring, 40, 40+48, &scratch) }); allocs != 0 {
		t.Fatalf("a wrapped read allocates %.0f times once the scratch buffer exists", allocs)
	}
}

func TestPerfRecordCorrupt(t *testing.T) {
	ring := make([]byte, 64)
	var scratch []byte
	cases := map[string]func() (uint64, uint64){
		"size 0":          func() (uint64, uint64) { putRecord(ring, 0, 9, nil); ring[6], ring[7] = 0, 0; return 0, 16 },
		"misaligned size": func() (uint64, uint64) { putRecord(ring, 0, 9, make([]byte, 8)); ring[6] = 12; return 0, 16 },
		"beyond head":     func() (uint64, uint64) { putRecord(ring, 0, 9, make([]byte, 24)); return 0, 16 },
		"larger than ring": func() (uint64, uint64) {
			putRecord(ring, 0, 9, make([]byte, 8))
			binary.NativeEndian.PutUint16(ring[6:], 1024)
			return 0, 64
		},
		"misaligned tail": func() (uint64, uint64) { return 4, 20 },
		"head past ring":  func() (uint64, uint64) { return 0, 128 },
		"short header":    func() (uint64, uint64) { return 0, 4 },
	}
	for name, setup := range cases {
		clear(ring)
		tail, head := setup()
		if _, _, _, err := perfRecord(ring, tail, head, &scratch); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := rawSample([]byte{200, 0, 0, 0, 1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Error("raw sample longer than its record accepted")
	}
	if _, _, err := sampleTime([]byte{1, 2, 3, 4}); !errors.Is(err, ErrCorrupt) {
		t.Error("a timed sample shorter than its time accepted")
	}
}

func TestRingbufRecord(t *testing.T) {
	const n = 64
	data := make([]byte, 2*n)
	hdr := func(v uint32) { binary.NativeEndian.PutUint32(data, v) }
	hdr(ringbufBusy | 8)
	if _, _, busy, _ := ringbufRecord(data, n, 0, 16); !busy {
		t.Fatal("busy record not reported busy")
	}
	hdr(8)
	copy(data[8:], "payload!")
	s, size, _, err := ringbufRecord(data, n, 0, 16)
	if err != nil || string(s) != "payload!" || size != 16 {
		t.Fatalf("%q %d %v", s, size, err)
	}
	hdr(ringbufDiscard | 8)
	if s, size, _, err := ringbufRecord(data, n, 0, 16); s != nil || size != 16 || err != nil {
		t.Fatalf("discarded: %q %d %v", s, size, err)
	}
	hdr(100)
	if _, _, _, err := ringbufRecord(data, n, 0, 16); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("record longer than published: %v", err)
	}
	// A header the reader cannot load whole and aligned: never from the
	// kernel, whose positions are multiples of 8.
	hdr(8)
	for _, c := range [][2]uint64{{4, 20}, {0, 4}, {0, 2 * n}} {
		if _, _, _, err := ringbufRecord(data, n, c[0], c[1]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("consumer at %d, producer at %d: %v, want ErrCorrupt", c[0], c[1], err)
		}
	}
}

// FuzzPerfRecord walks synthetic ring memory the way the reader does: it
// must return records inside the ring or ErrCorrupt, never panic.
func FuzzPerfRecord(f *testing.F) {
	ring := make([]byte, 64)
	putRecord(ring, 40, perfRecordSample, sampleBody([]byte("0123456789abcdefghijklmnopqrstuv")))
	f.Add(ring, uint64(40), uint64(88))
	f.Add(make([]byte, 256), uint64(0), uint64(256))
	f.Fuzz(func(t *testing.T, mem []byte, tail, head uint64) {
		// A ring is a power of two: take the largest that fits.
		n := 1
		for n*2 <= len(mem) {
			n *= 2
		}
		if len(mem) == 0 {
			return
		}
		ring := mem[:n]
		var scratch []byte
		for range 64 {
			typ, body, size, err := perfRecord(ring, tail, head, &scratch)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatal(err)
				}
				return
			}
			if size == 0 || size > uint64(n) || uint64(len(body)) != size-8 {
				t.Fatalf("record of size %d, body %d, ring %d", size, len(body), n)
			}
			switch typ {
			case perfRecordSample:
				rawSample(body)
			case perfRecordLost:
				lostCount(body)
			}
			tail += size
			if tail == head {
				return
			}
		}
	})
}

// FuzzRingbufRecord: the parser returns a record inside the ring, busy, or
// ErrCorrupt for any memory and positions, and never panics.
func FuzzRingbufRecord(f *testing.F) {
	seed := make([]byte, 64)
	binary.NativeEndian.PutUint32(seed, 8)
	f.Add(seed, uint64(0), uint64(16))
	f.Fuzz(func(t *testing.T, mem []byte, cons, prod uint64) {
		n := 8
		for n*2 <= len(mem) {
			n *= 2
		}
		ring := make([]byte, n)
		copy(ring, mem)
		data := append(ring, ring...)
		s, size, busy, err := ringbufRecord(data, uint64(n), cons, prod)
		if err != nil && !errors.Is(err, ErrCorrupt) || busy && (s != nil || size != 0) {
			t.Fatal(err)
		}
		if err == nil && !busy && (size > uint64(n) || uint64(len(s)) > size || len(s) > 0 && !inside(s, data)) {
			t.Fatalf("record %d of size %d in a ring of %d", len(s), size, n)
		}
	})
}

// TestDecode: a sample laid out as the program wrote it fills a Go struct
// with the same fields, without allocating; short samples and types with
// pointers are errors.
func TestDecode(t *testing.T) {
	type event struct {
		Time     uint64
		PID, CPU uint32
		Proto    uint16
		_        [6]byte
		Comm     [16]byte
	}
	sample := binary.NativeEndian.AppendUint64(nil, 123456789)
	sample = binary.NativeEndian.AppendUint32(sample, 42)
	sample = binary.NativeEndian.AppendUint32(sample, 1)
	sample = binary.NativeEndian.AppendUint16(sample, 0x0800)
	sample = append(sample, make([]byte, 6)...)
	sample = append(append(sample, "curl"...), make([]byte, 12)...)
	var e event
	if err := Decode(sample, &e); err != nil {
		t.Fatal(err)
	}
	if e.Time != 123456789 || e.PID != 42 || e.CPU != 1 || e.Proto != 0x0800 || string(e.Comm[:4]) != "curl" {
		t.Fatalf("%+v", e)
	}
	if n := testing.AllocsPerRun(100, func() { Decode(sample, &e) }); n != 0 {
		t.Fatalf("%v allocations per Decode", n)
	}
	if err := Decode(sample[:10], &e); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Fatalf("a short sample: %v", err)
	}
	var withPointer struct {
		N uint64
		P *int
	}
	if err := Decode(sample, &withPointer); err == nil || !strings.Contains(err.Error(), "*int is not fixed-size plain data") {
		t.Fatalf("a pointer field: %v", err)
	}
	if err := Decode[event](sample, nil); err == nil {
		t.Fatal("Decode into nil")
	}
}
