package perfring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing is a perf ring in ordinary memory: a metadata page and data of
// size bytes, a power of two.
func fakeRing(size int) *perfRing {
	mem := make([]byte, 4096+size)
	return &perfRing{mem: mem, data: mem[4096:],
		head: (*uint64)(unsafe.Pointer(&mem[offDataHead])), tail: (*uint64)(unsafe.Pointer(&mem[offDataTail]))}
}

// fill writes n sample records of 64 bytes (80 with their headers) at the
// ring's head, as the kernel would, and wakes the reader for it.
func (ring *perfRing) fill(n int) {
	head := *ring.head
	mask := uint64(len(ring.data) - 1)
	var rec [80]byte
	binary.NativeEndian.PutUint32(rec[0:], perfRecordSample)
	binary.NativeEndian.PutUint16(rec[6:], 80)
	binary.NativeEndian.PutUint32(rec[8:], 68) // raw size: 64 bytes and 4 of padding
	for range n {
		for i, b := range rec {
			ring.data[(head+uint64(i))&mask] = b
		}
		head += 80
	}
	*ring.head = head
	ring.woken = true
}

// BenchmarkDrain measures the reader's own cost per record, without the
// kernel: parsing, delivering to a callback, handing space back. The ring
// is filled once and read again from its start, so the figure is the
// reading alone, with the records in cache.
func BenchmarkDrain(b *testing.B) {
	ring := fakeRing(64 << 10)
	const batch = 800
	ring.fill(batch)
	r := &PerfReader{rings: []*perfRing{ring}, poll: &poller{}, lost: make([]atomic.Uint64, 1)}
	n := 0
	count := func(rec Record) error { n += len(rec.Sample); return nil }
	b.ReportAllocs()
	records := 0
	for i := 0; i < b.N; i += batch {
		ring.pos, ring.end, ring.released, ring.woken = 0, 0, 0, true
		k, _ := r.drain(count)
		records += k
	}
	if records < b.N || n != records*68 {
		b.Fatalf("read %d records of %d bytes in all, want at least %d of 68", records, n, b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}

// TestDrainRecordSizes: records of every size from 16 to 600 bytes, a
// loss report among them, and a wrap at the end of the ring: every record
// arrives once, in order, intact.
func TestDrainRecordSizes(t *testing.T) {
	ring := fakeRing(16 << 10)
	var want []string
	pos := uint64(len(ring.data)) - 8<<10 // wraps after 8 KiB
	*ring.head, ring.pos, ring.end, ring.released = pos, pos, pos, pos
	for i := 0; pos-ring.pos < uint64(len(ring.data))-1024; i++ {
		if i == 30 {
			body := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 0), uint64(i))
			pos = putRecord(ring.data, pos, perfRecordLost, body)
			want = append(want, fmt.Sprintf("lost %d", i))
			continue
		}
		payload := bytes.Repeat([]byte{byte(i)}, 4+(i*37)%585)
		pos = putRecord(ring.data, pos, perfRecordSample, sampleBody(payload))
		want = append(want, fmt.Sprintf("%d bytes of %d", len(payload), byte(i)))
	}
	*ring.head, ring.woken = pos, true
	r := &PerfReader{rings: []*perfRing{ring}, poll: &poller{}, lost: make([]atomic.Uint64, 1)}
	var got []string
	n, err := r.drain(func(rec Record) error {
		if rec.Sample == nil {
			got = append(got, fmt.Sprintf("lost %d", rec.Lost))
		} else if s := bytes.Trim(rec.Sample, string(rec.Sample[:1])); len(s) != 0 {
			got = append(got, fmt.Sprintf("sample %x mixes bytes", rec.Sample))
		} else {
			got = append(got, fmt.Sprintf("%d bytes of %d", len(rec.Sample), rec.Sample[0]))
		}
		return nil
	})
	if err != nil || n != len(want) || !slices.Equal(got, want) || ring.pos != pos || *ring.tail != pos {
		t.Fatalf("read %d records (%v), position %d of %d, tail %d; want %d records\ngot  %q\nwant %q",
			n, err, ring.pos, pos, *ring.tail, len(want), got, want)
	}
}

// FuzzDrain runs the reader's drain, fast path and all, over arbitrary ring
// memory and positions: it must deliver samples inside the ring or report
// ErrCorrupt, never panic, and always end.
func FuzzDrain(f *testing.F) {
	// A small ring: wrap-around comes often, and the fuzzer minimizes
	// interesting inputs quickly.
	seed := fakeRing(512)
	seed.fill(10) // wraps the ring
	f.Add(seed.data, uint64(0), uint64(80*6))
	f.Add(seed.data, uint64(80*4), uint64(80*10))
	f.Fuzz(func(t *testing.T, mem []byte, tail, head uint64) {
		ring := fakeRing(512)
		copy(ring.data, mem)
		*ring.head, ring.pos, ring.end, ring.released = head, tail, tail, tail
		r := &PerfReader{rings: []*perfRing{ring}, poll: &poller{}, lost: make([]atomic.Uint64, 1)}
		for range 4 {
			ring.woken = true
			_, err := r.drain(func(rec Record) error {
				// In place, the sample lies inside the ring's data;
				// wrapped, it was copied into the scratch buffer.
				if len(rec.Sample) > 0 && !inside(rec.Sample, ring.data) && !inside(rec.Sample, r.scratch) {
					t.Fatalf("sample of %d bytes outside the ring and the scratch buffer", len(rec.Sample))
				}
				return nil
			})
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			if ring.pos == head {
				return
			}
		}
	})
}

// inside says whether b lies within the memory of mem.
func inside(b, mem []byte) bool {
	if cap(mem) == 0 {
		return false
	}
	mem = mem[:cap(mem)]
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(mem))
}

// TestKeep: Read's copy keeps what a loss report and a sample are told
// apart by: nil for the report, non-nil for a sample, even an empty one.
func TestKeep(t *testing.T) {
	var buf []byte
	if keep(&buf, nil) != nil {
		t.Fatal("a loss report's nil sample came back non-nil")
	}
	if got := keep(&buf, []byte{}); got == nil || len(got) != 0 {
		t.Fatalf("empty sample: %v", got)
	}
	big := bytes.Repeat([]byte{7}, 300)
	if got := keep(&buf, big); !bytes.Equal(got, big) || &got[0] == &big[0] {
		t.Fatal("a 300-byte sample was not copied")
	}
	if got := keep(&buf, []byte{1, 2}); !bytes.Equal(got, []byte{1, 2}) || cap(buf) < 300 {
		t.Fatalf("a short sample after a long one: %v, buffer %d", got, cap(buf))
	}
}

// TestLateWakeWritesNothing: a context's AfterFunc that fires after Close
// (its goroutine was started, but ran late) wrote 8 bytes into whatever
// file had taken the closed eventfd's number.
func TestLateWakeWritesNothing(t *testing.T) {
	dir := t.TempDir()
	// The first file opened starts the Go runtime's own poller, whose fds
	// would take the numbers freed below.
	if f, err := os.Create(filepath.Join(dir, "first")); err == nil {
		f.Close()
	}
	p, err := newPoller(0)
	if err != nil {
		t.Fatal(err)
	}
	wakefd := p.wakefd.Int()
	p.shutdown()
	var f *os.File
	for i := 0; f == nil && i < 256; i++ {
		g, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if int(g.Fd()) == wakefd {
			f = g
		}
	}
	if f == nil {
		t.Fatalf("no file got fd %d", wakefd)
	}
	p.wake() // what context.AfterFunc(ctx, p.wake) runs
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Fatalf("a late wake-up wrote %d bytes into the file with the closed eventfd's number", st.Size())
	}
}

// closedPoller is a poller whose waits fail at once: a test that reaches
// one has delivered too little.
func closedPoller() *poller { return &poller{epfd: -1, events: make([]unix.EpollEvent, 2)} }

// TestCallbackPanic: a callback that panics, its panic recovered by the
// caller, made the next read deliver the same records again (the fast
// path moved the read position only after its loop). The record whose
// callback panicked counts as read, as one whose callback returned an
// error does: each record comes once, on every path.
func TestCallbackPanic(t *testing.T) {
	const n = 10
	perf := func(typ uint32) func() func(context.Context, func(Record) error) (int, error) {
		return func() func(context.Context, func(Record) error) (int, error) {
			ring := fakeRing(4096)
			pos := uint64(0)
			for i := range n {
				body := sampleBody([]byte{byte(i)})
				if typ == perfRecordLost {
					body = binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 0), uint64(i))
				}
				pos = putRecord(ring.data, pos, typ, body)
			}
			*ring.head, ring.woken = pos, true
			r := &PerfReader{rings: []*perfRing{ring}, poll: closedPoller(), lost: make([]atomic.Uint64, 1)}
			return r.ReadFunc
		}
	}
	for name, newReadFunc := range map[string]func() func(context.Context, func(Record) error) (int, error){
		"perf samples": perf(perfRecordSample), // the fast path
		"perf next":    perf(perfRecordLost),   // loss reports take the other
		"ringbuf": func() func(context.Context, func(Record) error) (int, error) {
			r := fakeRingBuf(4096)
			for i := range n {
				r.put([]byte{byte(i)})
			}
			return r.ReadFunc
		},
	} {
		t.Run(name, func(t *testing.T) {
			readFunc := newReadFunc()
			var got []int
			record := func(rec Record) error {
				v := int(rec.Lost)
				if rec.Sample != nil {
					v = int(rec.Sample[0])
				}
				got = append(got, v)
				if v == 3 {
					panic("callback")
				}
				return nil
			}
			func() {
				defer func() { recover() }()
				readFunc(context.Background(), record)
			}()
			k, err := readFunc(context.Background(), record)
			if err != nil || k != n-4 || !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
				t.Fatalf("after a panic at record 3, the next read delivered %d (%v); all delivered: %v", k, err, got)
			}
		})
	}
}

// fakeRingBuf is a ring buffer reader of a ring of n bytes in ordinary
// memory, mapped twice in a row as the kernel maps it.
func fakeRingBuf(n int) *fakeRB {
	r := &fakeRB{RingBufReader{poll: closedPoller(), data: make([]byte, 2*n), size: uint64(n)}}
	r.consPos, r.prodPos = new(uint64), new(uint64)
	return r
}

type fakeRB struct{ RingBufReader }

// put commits a record with sample s at the producer position.
func (r *fakeRB) put(s []byte) {
	rec := binary.NativeEndian.AppendUint32(nil, uint32(len(s)))
	rec = binary.NativeEndian.AppendUint32(rec, 0)
	rec = append(rec, s...)
	for len(rec)%8 != 0 {
		rec = append(rec, 0)
	}
	r.write(*r.prodPos, rec)
	*r.prodPos += uint64(len(rec))
}

// write writes b at position pos of both copies of the data.
func (r *fakeRB) write(pos uint64, b []byte) {
	for i, c := range b {
		at := (pos + uint64(i)) & (r.size - 1)
		r.data[at], r.data[at+r.size] = c, c
	}
}

// TestRingBufSizeChecked: a ring buffer that is not a power of two of pages
// is refused, and so, on 32-bit ports, is one that mapped twice does not
// fit an int.
func TestRingBufSizeChecked(t *testing.T) {
	for _, size := range []int64{0, 4095, 4097, 3 * 4096, 1<<32 - 4096} {
		if err := checkRingBufSize(size, 4096); err == nil || !strings.Contains(err.Error(), "not a power of two of pages (4096 bytes)") {
			t.Errorf("size %d: %v", size, err)
		}
	}
	for _, size := range []int64{4096, 1 << 20, 1 << 31} {
		err := checkRingBufSize(size, 4096)
		if fits := 4096+2*size <= math.MaxInt; fits != (err == nil) {
			t.Errorf("size %d, int of %d bits: %v", size, strconv.IntSize, err)
		}
	}
}

// FuzzRingBufDeliver runs the ring buffer reader's delivery over arbitrary
// ring memory and positions: it must deliver samples inside the ring or
// report ErrCorrupt, never panic, and always end.
func FuzzRingBufDeliver(f *testing.F) {
	seed := fakeRingBuf(256)
	for i := range 12 {
		seed.put(bytes.Repeat([]byte{byte(i)}, i*3))
	}
	f.Add(seed.data[:256], uint64(0), *seed.prodPos)
	f.Add(seed.data[:256], uint64(200), *seed.prodPos)
	f.Fuzz(func(t *testing.T, mem []byte, cons, prod uint64) {
		r := fakeRingBuf(256)
		r.write(0, mem[:min(len(mem), 256)])
		r.pos, r.released, r.end = cons, cons, prod
		for range 4 {
			_, err := r.deliver(func(rec Record) error {
				if len(rec.Sample) > 0 && !inside(rec.Sample, r.data) {
					t.Fatalf("sample of %d bytes outside the ring", len(rec.Sample))
				}
				return nil
			})
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			if r.pos == prod {
				return
			}
		}
	})
}

// TestRingBufNarrowPositions: on a 32-bit kernel consumer_pos and
// producer_pos are 4-byte longs that wrap at 4 GiB; the reader reads and
// hands back 4 bytes, and keeps counting across the wrap.
func TestRingBufNarrowPositions(t *testing.T) {
	r := fakeRingBuf(4096)
	r.narrow = true
	cons32, prod32 := (*uint32)(unsafe.Pointer(r.consPos)), (*uint32)(unsafe.Pointer(r.prodPos))
	// What follows each long on its page (ring buffer fields of newer
	// kernels, or padding) must be neither read nor written.
	consNext := (*uint32)(unsafe.Add(unsafe.Pointer(r.consPos), 4))
	prodNext := (*uint32)(unsafe.Add(unsafe.Pointer(r.prodPos), 4))
	start := uint32(1<<32 - 4*16) // four 16-byte records before the wrap
	*cons32, *prod32, *consNext, *prodNext = start, start, 0xdead, 0xbeef
	r.pos = r.position(r.consPos)
	r.end, r.released = r.pos, r.pos
	var got []byte
	read := func(rec Record) error { got = append(got, rec.Sample[0]); return nil }
	for i := range 10 {
		rec := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, 8), 0)
		r.write(uint64(*prod32), append(rec, byte(i), 0, 0, 0, 0, 0, 0, 0))
		*prod32 += 16
		if n, err := r.ReadFunc(context.Background(), read); n != 1 || err != nil {
			t.Fatalf("record %d: %d read, %v", i, n, err)
		}
		if *cons32 != *prod32 {
			t.Fatalf("record %d: consumer_pos %#x, producer_pos %#x", i, *cons32, *prod32)
		}
	}
	if !bytes.Equal(got, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) || r.pos != uint64(start)+10*16 {
		t.Fatalf("read %v, position %#x", got, r.pos)
	}
	if *consNext != 0xdead || *prodNext != 0xbeef {
		t.Fatalf("the words after the positions changed: %#x, %#x", *consNext, *prodNext)
	}
}
