package perfring

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Options shape the per-CPU perf rings. A blocked reader is woken when
// Watermark bytes wait in a ring or, with Watermark 0, every WakeupEvents
// records; a wake-up costs the producer a little.
//
// With SampleTime, the kernel stamps each sample with the time it took it
// (PERF_SAMPLE_TIME), on CLOCK_MONOTONIC (use_clockid, 4.1), the clock of
// bpf_ktime_get_ns, rather than perf's own: Record.Time. It is what a
// tracepoint's own record lacks (NewEventReader); a program's output can
// carry its own time instead.
type Options struct {
	// RingBytes is each CPU's ring, rounded up to a power of two of pages,
	// at most 1 GiB; 0: 256 KiB.
	RingBytes    int
	Watermark    int  // bytes, below the ring's size; 0: wake every WakeupEvents records
	WakeupEvents int  // records, at most 2^32-1; 0: 1
	SampleTime   bool // stamp each sample with the kernel's CLOCK_MONOTONIC time: Record.Time
}

// maxRingBytes is the largest RingBytes: the kernel keeps a pointer per
// data page in one allocation of at most 2^MAX_PAGE_ORDER pages (rb_alloc),
// under 512 Ki pointers; and every size fits an int32.
const maxRingBytes = 1 << 30

// PerfReader reads the per-CPU rings behind a perf event array. It is meant
// for one reading goroutine; Close, SetDeadline, Pause and Resume may come
// from any other, or from a ReadFunc callback.
type PerfReader struct {
	array   *mapfd.Map
	arrayID uint32 // the array's kernel-wide id, which owners is kept by
	rings   []*perfRing
	poll    *poller
	scratch []byte          // a wrapped record, copied
	kept    []byte          // the sample Read returned, copied
	lost    []atomic.Uint64 // per CPU
	cur     int             // the ring Read reads
	timed   bool            // samples carry PERF_SAMPLE_TIME before their raw bytes
}

type perfRing struct {
	cpu        int
	fd         int
	mem        []byte      // the mapping: metadata page, then data
	data       []byte      // the data pages
	head, tail *uint64     // data_head and data_tail in the metadata page
	pos, end   uint64      // read position, and the head published when we looked
	released   uint64      // the data_tail we last stored
	woken      bool        // epoll said the kernel woke us for it: look at the head
	stop       atomic.Bool // the poller's closed, where samples reads it cheaper
}

// Offsets of data_head and data_tail in struct perf_event_mmap_page.
const (
	offDataHead = 1024
	offDataTail = 1032
)

// NewPerfReader opens a PERF_COUNT_SW_BPF_OUTPUT event and its ring on every
// online CPU and stores them at their CPU in array, a PerfEventArray of
// sys.PossibleCPUs entries or more, for bpf_perf_event_output(ctx, array,
// BPF_F_CURRENT_CPU, data, size).
//
// An array's entry holds one event: a second reader on the array takes the
// entries over, and the first receives nothing more. Close clears only the
// entries still the reader's own, so that the newer reader keeps receiving
// when the older one closes. The kernel lets no one read a perf event
// array's entries (a lookup answers ENOTSUPP), so this process keeps the
// record of whose each is. A reader in another process that takes entries
// over is beyond that record, and loses them when this process's reader
// closes.
func NewPerfReader(array *mapfd.Map, o Options) (*PerfReader, error) {
	err := checkMap(array, mapfd.PerfEventArray)
	var r *PerfReader
	if err == nil {
		r, err = newPerfReader(array, bpfOutput, o)
	}
	return r, wrap(err, "perf reader")
}

// Event is a perf event for NewEventReader to sample: its type and config
// (PERF_TYPE_TRACEPOINT and the tracepoint's id, say).
type Event struct {
	Type   uint32 // perf_event_attr.type: PERF_TYPE_TRACEPOINT, PERF_TYPE_SOFTWARE, ...
	Config uint64 // perf_event_attr.config: a tracepoint's id, a software counter, ...
}

// bpfOutput is the event behind a perf event array.
var bpfOutput = Event{unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_BPF_OUTPUT}

// NewEventReader opens ev on every online CPU, disabled until Enable, to
// record each hit with PERF_SAMPLE_RAW (a tracepoint's own record) in that
// CPU's ring. A program attached to one of FDs (prog.AttachPerfEvent)
// filters on every CPU, the record kept when it returns non-zero: a
// tracepoint's programs are one array for all its perf events
// (tp_event->prog_array, 4.15).
func NewEventReader(ev Event, o Options) (*PerfReader, error) {
	r, err := newPerfReader(nil, ev, o)
	return r, wrap(err, "event reader")
}

// FDs are the reader's perf events, one per online CPU (sys.OnlineCPUs
// order), or nil once closed; they stay the reader's.
func (r *PerfReader) FDs() []int {
	var fds []int
	r.eachRing("", func(ring *perfRing) error { fds = append(fds, ring.fd); return nil })
	return fds
}

// Enable starts the events of a NewEventReader (PERF_EVENT_IOC_ENABLE).
func (r *PerfReader) Enable() error {
	return r.eachRing("enable", func(ring *perfRing) error { return sys.PerfEventEnable(ring.fd) })
}

func newPerfReader(array *mapfd.Map, ev Event, o Options) (*PerfReader, error) {
	page := os.Getpagesize()
	size, err := ringSize(o, page)
	if err != nil {
		return nil, err
	}
	cpus, err := sys.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	if n := cpus[len(cpus)-1]; array != nil && uint32(n) >= array.MaxEntries() {
		return nil, fmt.Errorf("map %q has %d entries, CPU %d is online",
			array.Name(), array.MaxEntries(), n)
	}
	poll, err := newPoller(len(cpus))
	if err != nil {
		return nil, err
	}
	r := &PerfReader{
		array: array,
		poll:  poll,
		lost:  make([]atomic.Uint64, len(cpus)),
		timed: o.SampleTime,
	}
	poll.release, poll.stop = r.release, r.stop
	if array != nil {
		var info sys.MapInfo
		if err := sys.InfoByFD(array.FD(), &info); err != nil {
			poll.free()
			return nil, err
		}
		r.arrayID = info.ID
	}
	for i, cpu := range cpus {
		ring, err := openRing(cpu, size, page, ev, array == nil, o)
		if err == nil {
			r.rings = append(r.rings, ring)
			if array != nil {
				err = r.install(ring)
			}
			if err == nil {
				err = poll.add(ring.fd, int32(i))
			}
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("CPU %d: %w", cpu, err)
		}
	}
	return r, nil
}

// checkMap says why m cannot be read as a map of type want.
func checkMap(m *mapfd.Map, want mapfd.Type) error {
	switch {
	case m == nil:
		return fmt.Errorf("nil map, want a %s map", want)
	case m.Type() != want:
		return fmt.Errorf("map %q is a %s map, want a %s map", m.Name(), m.Type(), want)
	case m.FD() < 0:
		return fmt.Errorf("map %q: %w", m.Name(), mapfd.ErrClosed)
	}
	return nil
}

// ringSize checks o and returns the size of each ring's data: RingBytes
// rounded up to a power of two of pages.
func ringSize(o Options, page int) (int, error) {
	switch {
	case o.RingBytes < 0 || o.RingBytes > maxRingBytes:
		return 0, fmt.Errorf("Options.RingBytes %d out of range [0, %d]", o.RingBytes, maxRingBytes)
	case o.WakeupEvents < 0 || uint64(o.WakeupEvents) > math.MaxUint32:
		return 0, fmt.Errorf("Options.WakeupEvents %d out of range [0, %d]",
			o.WakeupEvents, uint64(math.MaxUint32))
	}
	want, size := int64(cmp.Or(o.RingBytes, 256<<10)), int64(page)
	for size < want { // page and maxRingBytes are powers of two: size <= max(page, maxRingBytes)
		size *= 2
	}
	if o.Watermark < 0 || int64(o.Watermark) >= size {
		return 0, fmt.Errorf("Options.Watermark %d out of range [0, %d): "+
			"it must be below the ring's size", o.Watermark, size)
	}
	return int(size), nil
}

func openRing(cpu, size, page int, ev Event, disabled bool, o Options) (*perfRing, error) {
	attr := unix.PerfEventAttr{Type: ev.Type, Config: ev.Config, Sample_type: unix.PERF_SAMPLE_RAW,
		Sample: 1, Wakeup: uint32(max(o.WakeupEvents, 1))}
	if disabled {
		attr.Bits |= unix.PerfBitDisabled
	}
	if o.Watermark > 0 {
		attr.Bits |= unix.PerfBitWatermark
		attr.Wakeup = uint32(o.Watermark)
	}
	if o.SampleTime {
		attr.Sample_type |= unix.PERF_SAMPLE_TIME
		attr.Bits |= unix.PerfBitUseClockID
		attr.Clockid = unix.CLOCK_MONOTONIC
	}
	fd, err := sys.PerfEventOpen(&attr, -1, cpu, -1, 0)
	if err != nil {
		return nil, err
	}
	mem, err := sys.Mmap(fd, 0, page+size, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%d-byte ring: %w", size, err)
	}
	ring := &perfRing{
		cpu:  cpu,
		fd:   fd,
		mem:  mem,
		data: mem[page:],
		head: (*uint64)(unsafe.Pointer(&mem[offDataHead])),
		tail: (*uint64)(unsafe.Pointer(&mem[offDataTail])),
	}
	ring.pos = atomic.LoadUint64(ring.tail)
	ring.end, ring.released = ring.pos, ring.pos
	ring.woken = true // the first read looks
	return ring, nil
}

// entry is a perf event array's entry: the array's id and the CPU.
type entry struct {
	array uint32
	cpu   int
}

// owners says, for each entry of this process's readers' arrays, which
// reader's event it holds: the kernel keeps that to itself.
var owners struct {
	sync.Mutex
	of map[entry]*PerfReader
}

// install stores ring's event at its CPU in the array and records it as
// the reader's, both at once for other readers.
func (r *PerfReader) install(ring *perfRing) error {
	owners.Lock()
	defer owners.Unlock()
	if err := r.array.SetFD(uint32(ring.cpu), ring.fd); err != nil {
		return err
	}
	if owners.of == nil {
		owners.of = map[entry]*PerfReader{}
	}
	owners.of[entry{r.arrayID, ring.cpu}] = r
	return nil
}

// release clears from the map the entries still ours, so that it points
// at no dead event and a newer reader's stay, then unmaps and closes the
// rings. The map itself stays the caller's.
func (r *PerfReader) release() {
	owners.Lock()
	for _, ring := range r.rings {
		if e := (entry{r.arrayID, ring.cpu}); r.array != nil && owners.of[e] == r {
			r.array.ClearFD(uint32(ring.cpu))
			delete(owners.of, e)
		}
	}
	owners.Unlock()
	for _, ring := range r.rings {
		sys.Munmap(ring.mem)
		unix.Close(ring.fd)
	}
	r.rings = nil
}

func (r *PerfReader) stop() {
	for _, ring := range r.rings {
		ring.stop.Store(true)
	}
}

// Close stops the reader: blocked and later reads return ErrClosed. Once
// no read uses them, the rings are freed and the map's entries still the
// reader's are cleared; a newer reader's stay, and the map stays open.
// Called during a ReadFunc callback, it leaves that to the ReadFunc, after
// the callback. Closing twice is harmless.
func (r *PerfReader) Close() error {
	r.poll.shutdown()
	return nil
}

// SetDeadline makes reads blocked now or later return os.ErrDeadlineExceeded
// at t; the zero t removes the deadline.
func (r *PerfReader) SetDeadline(t time.Time) { r.poll.setDeadline(t) }

// Lost returns the samples lost on each online CPU (in the order of
// sys.OnlineCPUs) as the loss records read so far report them.
func (r *PerfReader) Lost() []uint64 {
	out := make([]uint64, len(r.lost))
	for i := range r.lost {
		out[i] = r.lost[i].Load()
	}
	return out
}

// Pause stops the kernel writing to the rings (PERF_EVENT_IOC_PAUSE_OUTPUT,
// 4.7); samples sent meanwhile are lost and counted.
func (r *PerfReader) Pause() error { return r.pause(true) }

// Resume undoes Pause.
func (r *PerfReader) Resume() error { return r.pause(false) }

func (r *PerfReader) pause(on bool) error {
	return r.eachRing("pause", func(ring *perfRing) error {
		return sys.PerfEventPauseOutput(ring.fd, on)
	})
}

// eachRing calls f for every ring, its fd held open, or returns ErrClosed.
func (r *PerfReader) eachRing(op string, f func(*perfRing) error) error {
	p := r.poll
	if p == nil {
		return ErrClosed
	}
	p.fdMu.Lock() // the ring fds stay open meanwhile
	defer p.fdMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	var errs []error
	for _, ring := range r.rings {
		errs = append(errs, f(ring))
	}
	return wrap(errors.Join(errs...), "%s", op)
}

// next returns the next record of ring, or ok=false when it has none left
// up to the head published when it was last looked at.
func (r *PerfReader) next(i int, ring *perfRing) (rec Record, ok bool, err error) {
	for ring.pos != ring.end {
		typ, body, size, err := perfRecord(ring.data, ring.pos, ring.end, &r.scratch)
		if err != nil {
			ring.pos = ring.end // skip what cannot be parsed
			return Record{}, false, wrap(err, "CPU %d", ring.cpu)
		}
		ring.pos += size
		switch typ {
		case perfRecordSample:
			rec, err := r.sample(ring.cpu, body)
			if err != nil {
				return Record{}, false, wrap(err, "CPU %d", ring.cpu)
			}
			return rec, true, nil
		case perfRecordLost:
			n, err := lostCount(body)
			if err != nil {
				return Record{}, false, wrap(err, "CPU %d", ring.cpu)
			}
			r.lost[i].Add(n)
			return Record{CPU: ring.cpu, Lost: n}, true, nil
		}
		// Other record types (throttling, ...) carry nothing for us.
	}
	return Record{}, false, nil
}

// sample parses a sample's body: its time, with SampleTime, then its raw
// bytes.
func (r *PerfReader) sample(cpu int, body []byte) (Record, error) {
	rec := Record{CPU: cpu}
	var err error
	if r.timed {
		if rec.Time, body, err = sampleTime(body); err != nil {
			return Record{}, err
		}
	}
	rec.Sample, err = rawSample(body)
	return rec, err
}

// isSample says whether a record (header typ and size, raw sample size raw,
// left bytes published from it to the ring's end) is the common case, a
// sample lying whole in those bytes; next checks and explains the rest. It
// keeps the fast paths' unchecked header reads inside: the record as size
// <= left, its sample as raw+12 <= size (with size%8 == 0, size >= 16:
// progress).
func isSample(typ uint32, size, raw, left uint64) bool {
	return typ == perfRecordSample && size%8 == 0 && raw+12 <= size && size <= left
}

// sampleHeader is struct perf_event_header and the u32 size of a
// PERF_SAMPLE_RAW sample, then the first byte of the sample.
type sampleHeader struct {
	typ  uint32
	misc uint16
	size uint16
	raw  uint32
	data [1]byte
}

// span returns where the read position lies in the data, and how many
// published bytes follow it before the end of the ring.
func (ring *perfRing) span() (off, left uint64) {
	off = ring.pos & uint64(len(ring.data)-1)
	return off, min(ring.end-ring.pos, uint64(len(ring.data))-off)
}

// refresh loads the kernel's data_head (acquire: the records it covers are
// visible) and reports whether the ring has unread data.
func (ring *perfRing) refresh() bool {
	ring.end = atomic.LoadUint64(ring.head)
	return ring.end != ring.pos
}

// look refreshes the ring if the kernel woke us for it since we last
// looked, as libbpf's perf_buffer__poll does (see the package doc).
func (ring *perfRing) look() bool {
	if !ring.woken {
		return false
	}
	ring.woken = false
	return ring.refresh()
}

// releaseTo hands the ring's space up to pos back to the kernel (release:
// our reads of it are complete).
func (ring *perfRing) releaseTo(pos uint64) {
	if pos != ring.released {
		atomic.StoreUint64(ring.tail, pos)
		ring.released = pos
	}
}

// ReadFunc waits until the kernel wakes the reader for a ring, then calls f
// with every record that ring holds, in order, in place. It returns how
// many records it delivered; the first call reads every ring.
//
// A record counts as read once f has it. An error from f stops the reading
// and is returned, as is ErrClosed after a Close from f; a panic goes on
// up. Records below a Watermark wake nobody, so when the deadline passes
// or ctx ends, ReadFunc reads what the rings hold before it gives up.
//
// When it gives up, the error says why: it wraps ctx.Err() when ctx ends
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded), and
// os.ErrDeadlineExceeded when the time SetDeadline set passes. After
// Close it is ErrClosed.
func (r *PerfReader) ReadFunc(ctx context.Context, f func(Record) error) (int, error) {
	if f == nil {
		return 0, errNilFunc
	}
	if err := r.poll.enter(ctx); err != nil {
		return 0, err
	}
	defer r.poll.exit()
	for {
		n, err := r.drain(f)
		if n > 0 || err != nil {
			return n, err
		}
		if err := r.wait(ctx); err != nil {
			if n, derr := r.drain(f); n > 0 || derr != nil && err != ErrClosed {
				return n, derr
			}
			return 0, err
		}
	}
}

var errNilFunc = errors.New("perfring: ReadFunc with a nil callback")

// wrap is sys.Wrap for perfring's errors.
func wrap(err error, format string, args ...any) error {
	return sys.Wrap("perfring", err, format, args...)
}

// wait waits for the kernel to wake us and marks the rings it woke us for;
// all of them when the wait fails, so that what lies below a watermark is
// read before giving up.
func (r *PerfReader) wait(ctx context.Context) error {
	n, err := r.poll.wait(ctx)
	for _, ev := range r.poll.events[:n] {
		r.rings[ev.Fd].woken = true
	}
	if err != nil {
		for _, ring := range r.rings {
			ring.woken = true
		}
	}
	return err
}

// drain reads the rings with records left from an earlier call or that
// the kernel woke us for.
func (r *PerfReader) drain(f func(Record) error) (int, error) {
	p := r.poll
	if p.closed.Load() {
		return 0, ErrClosed
	}
	count, delivering := 0, false // stored only when set: a store costs more than a load
	var err error
	for i, ring := range r.rings {
		if ring.pos == ring.end && !ring.look() {
			continue
		}
		if n := uint64(len(ring.data)); ring.end-ring.pos > n { // never from a sane kernel
			err = wrap(fmt.Errorf("%w: %d bytes published in a ring of %d",
				ErrCorrupt, ring.end-ring.pos, n), "CPU %d", ring.cpu)
			ring.pos = ring.end
		} else {
			if !delivering {
				p.delivering.Store(true)
				delivering = true
			}
			var k int
			k, err = r.drainRing(i, ring, f)
			count += k
		}
		ring.releaseTo(ring.pos)
		if err != nil {
			break
		}
	}
	if delivering {
		p.delivering.Store(false)
	}
	return count, err
}

// drainRing delivers the ring's records up to ring.end: runs of common
// ones through samples, anything else (and timed samples) through next.
func (r *PerfReader) drainRing(i int, ring *perfRing, f func(Record) error) (int, error) {
	count := 0
	for ring.pos != ring.end {
		if off, left := ring.span(); off%8 == 0 && !r.timed {
			k, err := samples(ring, off, left, f)
			count += k
			if err != nil || ring.pos == ring.end {
				return count, err
			}
		}
		rec, ok, err := r.next(i, ring)
		if err == nil && ok {
			count++
			if err = f(rec); err == nil && r.poll.closed.Load() {
				err = ErrClosed
			}
		}
		if err != nil {
			return count, err
		}
	}
	return count, nil
}

// samples delivers the common records in the span at off (8-byte aligned,
// for the header reads), stopping before the first other one, and returns
// how many it delivered. The position moves past each record before f sees
// it. It is a function of its own so that little stays live across the
// call to f: Go reloads every live value after a call.
func samples(ring *perfRing, off, left uint64, f func(Record) error) (int, error) {
	data, cpu, count := unsafe.Pointer(unsafe.SliceData(ring.data)), ring.cpu, 0
	for left >= 16 {
		h := (*sampleHeader)(unsafe.Add(data, off))
		size, raw := uint64(h.size), uint64(h.raw)
		if !isSample(h.typ, size, raw, left) {
			return count, nil
		}
		off += size
		left -= size
		count++
		ring.pos += size
		if err := f(Record{CPU: cpu, Sample: unsafe.Slice(&h.data[0], raw)}); err != nil {
			return count, err
		}
		if ring.stop.Load() {
			return count, ErrClosed
		}
	}
	return count, nil
}

// Read returns the next record, waiting for one, as ReadFunc does. Its
// Sample is a copy in a reused buffer, valid until the next call. Records
// come in order per CPU, a ring until it is empty; space is handed back
// when a ring is emptied, or a quarter of it read.
//
// Its errors are ReadFunc's: one that wraps ctx.Err() when ctx ends,
// os.ErrDeadlineExceeded when the deadline passes, ErrClosed after Close.
func (r *PerfReader) Read(ctx context.Context) (Record, error) {
	if err := r.poll.enter(ctx); err != nil {
		return Record{}, err
	}
	defer r.poll.exit()
	for {
		if r.poll.closed.Load() {
			return Record{}, ErrClosed
		}
		for range len(r.rings) + 1 {
			ring := r.rings[r.cur]
			if ring.pos-ring.released >= uint64(len(ring.data))/4 {
				ring.releaseTo(ring.pos)
			}
			if ring.pos == ring.end && !ring.look() {
				ring.releaseTo(ring.pos)
				r.cur = (r.cur + 1) % len(r.rings)
				continue
			}
			if off, left := ring.span(); off%8 == 0 && left >= 16 && !r.timed {
				data := unsafe.Pointer(unsafe.SliceData(ring.data))
				h := (*sampleHeader)(unsafe.Add(data, off))
				if size, raw := uint64(h.size), uint64(h.raw); isSample(h.typ, size, raw, left) {
					ring.pos += size
					return Record{CPU: ring.cpu, Sample: keep(&r.kept, unsafe.Slice(&h.data[0], raw))}, nil
				}
			}
			rec, ok, err := r.next(r.cur, ring)
			if err != nil || ok {
				rec.Sample = keep(&r.kept, rec.Sample)
				return rec, err
			}
		}
		if err := r.wait(ctx); err != nil {
			// Records below a watermark wake nobody: look once more.
			if !r.poll.closed.Load() && r.anyData() {
				continue
			}
			return Record{}, err
		}
	}
}

// anyData looks at every ring (wait has marked them all) and says whether
// one has a record.
func (r *PerfReader) anyData() bool {
	found := false
	for _, ring := range r.rings {
		if ring.pos != ring.end || ring.look() {
			found = true
		}
	}
	return found
}
