package perfring_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The tests in this file call perfring as a hostile or careless caller
// would: options at 0, -1, their limits and wrap points; nil, zero, closed
// and foreign maps; every method after Close, on a zero reader, and from a
// ReadFunc callback. Each checks the exact answer, within a time limit, so
// that a hang fails rather than stalls.

// wantErr is testutil.WantErr for perfring's errors.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	testutil.WantErr(t, "perfring", what, err, parts...)
}

// within runs f, and panics, failing the whole run, if it has not returned
// after d: a hang fails rather than stalls.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	timer := time.AfterFunc(d, func() { panic(t.Name() + ": " + what + ": no return after " + d.String()) })
	defer timer.Stop()
	f()
}

// reader is what both readers have.
type reader interface {
	Read(context.Context) (perfring.Record, error)
	ReadFunc(context.Context, func(perfring.Record) error) (int, error)
	SetDeadline(time.Time)
	Close() error
}

// newReader makes a reader of kind "perf" or "ringbuf" and the map it reads.
func newReader(t *testing.T, kind string) (reader, *mapfd.Map) {
	t.Helper()
	var r reader
	var m *mapfd.Map
	var err error
	if kind == "perf" {
		m = perfArray(t)
		r, err = perfring.NewPerfReader(m, perfring.Options{RingBytes: 4096})
	} else {
		m = ringbuf(t, 4096)
		r, err = perfring.NewRingBufReader(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, m
}

var kinds = []string{"perf", "ringbuf"}

// anonFDs lists this process's fds whose target holds what, such as
// "[eventfd]".
func anonFDs(what string) map[int]bool {
	fds := map[int]bool{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if fd, _ := strconv.Atoi(e.Name()); err == nil && strings.Contains(target, what) {
			fds[fd] = true
		}
	}
	return fds
}

// TestWakeAfterCloseWritesNothing: SetDeadline after Close wrote 8 bytes
// into whatever file had taken the closed eventfd's number.
func TestWakeAfterCloseWritesNothing(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			before := anonFDs("[eventfd]")
			r, _ := newReader(t, kind)
			wakefd := -1
			for fd := range anonFDs("[eventfd]") {
				if !before[fd] {
					wakefd = fd
				}
			}
			if wakefd < 0 {
				t.Fatal("the reader has no eventfd of its own")
			}
			r.Close()
			f := takeFD(t, wakefd)
			r.SetDeadline(time.Now())
			r.SetDeadline(time.Time{})
			if st, err := f.Stat(); err != nil || st.Size() != 0 {
				t.Fatalf("the file that took the closed eventfd's number: %v, %d bytes written", err, st.Size())
			}
		})
	}
}

// takeFD opens files until one gets fd number want, and returns it.
func takeFD(t *testing.T, want int) *os.File {
	t.Helper()
	dir := t.TempDir()
	for i := range 256 {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if int(f.Fd()) == want {
			return f
		}
	}
	t.Fatalf("no file got fd %d", want)
	return nil
}

// TestReaderFDsAboveStdio: with stdin closed, the reader's epoll fd took
// fd 0, where a careless read(0) or close(0) would break the reader.
func TestReaderFDsAboveStdio(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			m := perfArray(t)
			if kind == "ringbuf" {
				m = ringbuf(t, 4096)
			}
			saved, err := unix.Dup(0)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(0)
			defer func() {
				unix.Dup3(saved, 0, 0)
				unix.Close(saved)
			}()
			var r interface{ Close() error }
			if kind == "perf" {
				r, err = perfring.NewPerfReader(m, perfring.Options{RingBytes: 4096})
			} else {
				r, err = perfring.NewRingBufReader(m)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if target, err := os.Readlink("/proc/self/fd/0"); err == nil {
				t.Fatalf("fd 0 is now %s", target)
			}
		})
	}
}

// TestHostileOptions: RingBytes of math.MaxInt spun forever (the page count
// wrapped to 0); negative values were taken as defaults. Each is refused,
// the error naming the field and its range, and leaves no fd.
func TestHostileOptions(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	m := perfArray(t)
	page := os.Getpagesize()
	cases := []struct {
		o     perfring.Options
		parts []string
	}{
		{perfring.Options{RingBytes: math.MaxInt}, []string{"RingBytes " + strconv.Itoa(math.MaxInt), "[0, 1073741824]"}},
		{perfring.Options{RingBytes: 1<<30 + 1}, []string{"RingBytes 1073741825", "[0, 1073741824]"}},
		{perfring.Options{RingBytes: -1}, []string{"RingBytes -1", "[0, 1073741824]"}},
		{perfring.Options{RingBytes: math.MinInt}, []string{"RingBytes " + strconv.Itoa(math.MinInt)}},
		{perfring.Options{Watermark: -1}, []string{"Watermark -1", "[0, 262144)"}},
		{perfring.Options{RingBytes: 1, Watermark: page}, []string{"Watermark " + strconv.Itoa(page), "[0, " + strconv.Itoa(page) + ")"}},
		{perfring.Options{Watermark: math.MaxInt}, []string{"Watermark " + strconv.Itoa(math.MaxInt)}},
		{perfring.Options{WakeupEvents: -1}, []string{"WakeupEvents -1", "[0, 4294967295]"}},
		{perfring.Options{WakeupEvents: math.MinInt}, []string{"WakeupEvents " + strconv.Itoa(math.MinInt)}},
	}
	if strconv.IntSize == 64 {
		big := int64(math.MaxUint32) + 1 // not a constant: 32-bit ports vet it, and run none of this
		cases = append(cases, struct {
			o     perfring.Options
			parts []string
		}{perfring.Options{WakeupEvents: int(big)}, []string{"WakeupEvents 4294967296", "[0, 4294967295]"}})
	}
	for _, c := range cases {
		within(t, 5*time.Second, "NewPerfReader", func() {
			r, err := perfring.NewPerfReader(m, c.o)
			if err == nil {
				r.Close()
			}
			wantErr(t, "NewPerfReader", err, append(c.parts, "perfring: perf reader: ")...)
		})
	}
	// At the edges of what is allowed: a one-page ring (RingBytes 1 is
	// rounded up), a watermark a byte short of it, the largest count.
	for _, o := range []perfring.Options{{RingBytes: 1, Watermark: page - 1}, {RingBytes: 1, WakeupEvents: math.MaxInt32}} {
		r, err := perfring.NewPerfReader(m, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		r.Close()
	}
}

// TestHostileMaps: nil, zero, closed and foreign maps get a clear error and
// no panic.
func TestHostileMaps(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	perfArr, ring := perfArray(t), ringbuf(t, 4096)
	hash, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1, Name: "hash"})
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	closedArr, closedRing := perfArray(t), ringbuf(t, 4096)
	closedArr.Close()
	closedRing.Close()
	for _, c := range []struct {
		what  string
		m     *mapfd.Map
		parts []string
	}{
		{"nil map", nil, []string{"nil map, want a perf_event_array map"}},
		{"zero map", &mapfd.Map{}, []string{`map "" is a unspec map, want a perf_event_array map`}},
		{"hash map", hash, []string{`map "hash" is a hash map, want a perf_event_array map`}},
		{"ring buffer", ring, []string{`map "ring" is a ringbuf map, want a perf_event_array map`}},
		{"closed map", closedArr, []string{`map "events"`, mapfd.ErrClosed.Error()}},
	} {
		_, err := perfring.NewPerfReader(c.m, perfring.Options{})
		wantErr(t, "NewPerfReader of a "+c.what, err, append(c.parts, "perfring: perf reader: ")...)
	}
	for _, c := range []struct {
		what  string
		m     *mapfd.Map
		parts []string
	}{
		{"nil map", nil, []string{"nil map, want a ringbuf map"}},
		{"zero map", &mapfd.Map{}, []string{`map "" is a unspec map, want a ringbuf map`}},
		{"hash map", hash, []string{`map "hash" is a hash map, want a ringbuf map`}},
		{"perf event array", perfArr, []string{`map "events" is a perf_event_array map, want a ringbuf map`}},
		{"closed map", closedRing, []string{`map "ring"`, mapfd.ErrClosed.Error()}},
	} {
		_, err := perfring.NewRingBufReader(c.m)
		wantErr(t, "NewRingBufReader of a "+c.what, err, append(c.parts, "perfring: ring buffer reader: ")...)
	}
	small, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 1, Name: "small"})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if cpus, _ := sys.OnlineCPUs(); cpus[len(cpus)-1] > 0 {
		_, err := perfring.NewPerfReader(small, perfring.Options{})
		wantErr(t, "NewPerfReader of a 1-entry array", err, `map "small" has 1 entries, CPU`)
	}
}

// TestZeroAndClosedReaders: every method of a zero reader and of a closed
// one answers at once, without a panic; reads say ErrClosed, and so does
// Pause, which no longer reaches the closed ring fds.
func TestZeroAndClosedReaders(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	closedPerf, _ := newReader(t, "perf")
	closedRing, _ := newReader(t, "ringbuf")
	closedPerf.Close()
	closedRing.Close()
	for name, r := range map[string]reader{
		"zero perf": &perfring.PerfReader{}, "zero ringbuf": &perfring.RingBufReader{},
		"closed perf": closedPerf, "closed ringbuf": closedRing,
	} {
		within(t, 5*time.Second, name, func() {
			r.SetDeadline(time.Now())
			if _, err := r.Read(context.Background()); !errors.Is(err, perfring.ErrClosed) {
				t.Errorf("%s: Read: %v", name, err)
			}
			if n, err := r.ReadFunc(context.Background(), func(perfring.Record) error { return nil }); n != 0 || !errors.Is(err, perfring.ErrClosed) {
				t.Errorf("%s: ReadFunc: %d, %v", name, n, err)
			}
			if err := r.Close(); err != nil {
				t.Errorf("%s: Close: %v", name, err)
			}
			if p, ok := r.(*perfring.PerfReader); ok {
				if err := p.Pause(); !errors.Is(err, perfring.ErrClosed) {
					t.Errorf("%s: Pause: %v", name, err)
				}
				if err := p.Resume(); !errors.Is(err, perfring.ErrClosed) {
					t.Errorf("%s: Resume: %v", name, err)
				}
				if err := p.Enable(); !errors.Is(err, perfring.ErrClosed) {
					t.Errorf("%s: Enable: %v", name, err)
				}
				if fds := p.FDs(); fds != nil {
					t.Errorf("%s: FDs: %v", name, fds)
				}
				p.Lost()
			} else {
				r.(*perfring.RingBufReader).Discarded()
			}
		})
	}
}

// TestHostileReadArguments: a nil callback or context is an error, not a
// panic; deadlines at the epoch, before 1678 and after 2262 (where
// UnixNano wraps) mean what they say.
func TestHostileReadArguments(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { within(t, 10*time.Second, "the calls", func() { hostileReadArguments(t, kind) }) })
	}
}

func hostileReadArguments(t *testing.T, kind string) {
	r, _ := newReader(t, kind)
	_, err := r.ReadFunc(context.Background(), nil)
	wantErr(t, "ReadFunc with a nil callback", err, "perfring: ReadFunc with a nil callback")
	//lint:ignore SA1012 a nil context is the hostile argument under test
	_, err = r.Read(nil)
	wantErr(t, "Read with a nil context", err, "perfring: nil context")
	for _, d := range []time.Time{time.Unix(0, 0), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(-time.Hour)} {
		r.SetDeadline(d)
		if _, err := r.Read(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("deadline %v: %v", d, err)
		}
	}
	r.SetDeadline(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := r.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline in the year 3000: %v, want the context's end", err)
	}
}

// TestCallbackReentry: Close, Read or ReadFunc from inside a ReadFunc
// callback deadlocked. Close now ends that ReadFunc after the callback,
// with ErrClosed, and frees the rings; Read and ReadFunc answer
// ErrReentrant; SetDeadline, Pause, Resume, Lost and Discarded work.
func TestCallbackReentry(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range kinds {
		for _, call := range []string{"Close", "Read", "ReadFunc", "others"} {
			t.Run(kind+"/"+call, func(t *testing.T) {
				testutil.CheckNoLeaks(t)
				before := len(anonFDs("anon_inode:[event"))
				r, m := newReader(t, kind)
				emitter(t, m, os.Getpid(), kind == "ringbuf")
				getppidOn(t, 0, 3)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var inner error
				var n int
				var err error
				within(t, 5*time.Second, "ReadFunc calling "+call, func() {
					n, err = r.ReadFunc(ctx, func(perfring.Record) error {
						switch call {
						case "Close":
							r.Close()
						case "Read":
							_, inner = r.Read(ctx)
						case "ReadFunc":
							_, inner = r.ReadFunc(ctx, func(perfring.Record) error { return nil })
						default:
							r.SetDeadline(time.Now().Add(time.Hour))
							if p, ok := r.(*perfring.PerfReader); ok {
								inner = errors.Join(p.Pause(), p.Resume())
								p.Lost()
							} else {
								r.(*perfring.RingBufReader).Discarded()
							}
						}
						return nil
					})
				})
				switch call {
				case "Close":
					if n != 1 || !errors.Is(err, perfring.ErrClosed) {
						t.Fatalf("ReadFunc whose callback closed the reader: %d, %v; want 1, ErrClosed", n, err)
					}
					if after := len(anonFDs("anon_inode:[event")); after != before {
						t.Fatalf("%d epoll and eventfd fds before the reader, %d after it closed", before, after)
					}
				case "Read", "ReadFunc":
					if n != 3 || err != nil || !errors.Is(inner, perfring.ErrReentrant) {
						t.Fatalf("%s from a callback: %v; the outer ReadFunc: %d, %v", call, inner, n, err)
					}
				default:
					if n != 3 || err != nil || inner != nil {
						t.Fatalf("the others from a callback: %v; ReadFunc: %d, %v", inner, n, err)
					}
				}
			})
		}
	}
}

// TestHostileEvents: an event the kernel does not have, and options out of
// range, are errors that leave nothing open.
func TestHostileEvents(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	for _, c := range []struct {
		ev   perfring.Event
		o    perfring.Options
		want string
	}{
		{perfring.Event{Type: unix.PERF_TYPE_TRACEPOINT, Config: 1 << 40}, perfring.Options{}, "perf_event_open"},
		{perfring.Event{Type: 1 << 30}, perfring.Options{}, "perf_event_open"},
		{perfring.Event{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_BPF_OUTPUT}, perfring.Options{RingBytes: -1}, "RingBytes -1 out of range"},
	} {
		r, err := perfring.NewEventReader(c.ev, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "perfring: event reader: ") {
			t.Errorf("%+v %+v: %v, want an error with %q", c.ev, c.o, err, c.want)
			if r != nil {
				r.Close()
			}
		}
	}
}
