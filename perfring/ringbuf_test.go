package perfring_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
)

func ringbuf(t testing.TB, size uint32) *mapfd.Map {
	t.Helper()
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: size, Name: "ring"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestRingBufRecords sends enough records through a 16 KiB ring to wrap it
// many times, reading as they come, and checks each one.
func TestRingBufRecords(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	m := ringbuf(t, 16<<10)
	r, err := perfring.NewRingBufReader(m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	emitter(t, m, os.Getpid(), true)
	c := newChecker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(rec perfring.Record) error {
		rec.CPU = int(rec.Sample[8]) // the ring buffer is shared: take the CPU from the record
		return c.check(rec)
	}
	sent := 0
	for round := range 40 {
		getppidOn(t, round%2, 100) // 100 records of 72 bytes: under half the ring
		sent += 100
		for len(c.seen) < sent {
			if round%2 == 0 {
				rec, err := r.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				check(rec)
			} else if _, err := r.ReadFunc(ctx, check); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(c.seen) != 4000 {
		t.Fatalf("received %d of 4000", len(c.seen))
	}
}

func TestRingBufCloseUnblocks(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	r, err := perfring.NewRingBufReader(ringbuf(t, 4096))
	if err != nil {
		t.Fatal(err)
	}
	r.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	r.SetDeadline(time.Time{})
	done := make(chan error)
	go func() { _, err := r.Read(context.Background()); done <- err }()
	time.Sleep(30 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, perfring.ErrClosed) {
			t.Fatalf("blocked read ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock the reader")
	}
}

// TestRingBufDiscard: a program reserves a record for each getppid, writes
// a sequence number, and submits the even ones and discards the odd ones;
// the reader delivers exactly the submitted ones and counts the discarded.
func TestRingBufDiscard(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	m := ringbuf(t, 16<<10)
	r, err := perfring.NewRingBufReader(m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seq, tm := seqMap(t)
	group, event, check := getppidEvent()
	p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "discard", License: "GPL", Insns: append(check,
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
		StoreImm(BPF_W, R10, -4, 0),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, seq),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		// r7 = seq++: getppid is called from one thread, one call at a
		// time, and fetching atomics need 5.12.
		LoadMem(BPF_DW, R7, R0, 0),
		Mov64Reg(R8, R7),
		ALU64Imm(BPF_ADD, R8, 1),
		StoreMem(BPF_DW, R0, 0, R8),
		LoadMapFD(R1, m),
		Mov64Imm(R2, 8),
		Mov64Imm(R3, 0),
		Call(BPF_FUNC_ringbuf_reserve),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		StoreMem(BPF_DW, R0, 0, R7),
		Mov64Reg(R1, R0),
		Mov64Imm(R2, 0),
		JumpImm(BPF_JSET, R7, 1, "odd"),
		Call(BPF_FUNC_ringbuf_submit),
		Ja("out"),
		Label("odd"),
		Call(BPF_FUNC_ringbuf_discard),
		Label("out"),
		Mov64Imm(R0, 1), // keep the record for other perf users of the tracepoint
		Exit(),
	)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := prog.AttachTracepoint(p, group, event, prog.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	getppidOn(t, -1, 100)
	if n, _ := tm.Lookup(0); n != 100 {
		t.Fatalf("the program ran %d times, want 100", n)
	}
	var got []uint64
	r.SetDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		rec, err := r.Read(context.Background())
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, binary.NativeEndian.Uint64(rec.Sample))
	}
	if len(got) != 50 || r.Discarded() != 50 {
		t.Fatalf("received %d, discarded %d; want 50 and 50", len(got), r.Discarded())
	}
	for i, v := range got {
		if v != uint64(2*i) {
			t.Fatalf("record %d is %d, want %d", i, v, 2*i)
		}
	}
}

func seqMap(t *testing.T) (*mapfd.Map, *mapfd.Typed[uint32, uint64]) {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "seq"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tm, _ := mapfd.NewTyped[uint32, uint64](m)
	return m, tm
}

// TestReadSampleOutlivesClose: a Sample from Read is the caller's until its
// next call, even when the reader is closed meanwhile, as another goroutine
// may do (Close unmaps the rings: a Sample pointing into them would fault);
// reads after Close return ErrClosed.
func TestReadSampleOutlivesClose(t *testing.T) {
	testutil.RequireRoot(t)
	for _, kind := range []string{"perf", "ringbuf"} {
		t.Run(kind, func(t *testing.T) {
			testutil.CheckNoLeaks(t)
			var r interface {
				Read(context.Context) (perfring.Record, error)
				ReadFunc(context.Context, func(perfring.Record) error) (int, error)
				Close() error
			}
			var out *mapfd.Map
			var err error
			if kind == "perf" {
				out = perfArray(t)
				r, err = perfring.NewPerfReader(out, perfring.Options{})
			} else {
				out = ringbuf(t, 4096)
				r, err = perfring.NewRingBufReader(out)
			}
			if err != nil {
				t.Fatal(err)
			}
			emitter(t, out, os.Getpid(), kind == "ringbuf")
			getppidOn(t, 0, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rec, err := r.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if kind == "ringbuf" {
				rec.CPU = int(rec.Sample[8]) // the ring buffer is shared: take the CPU from the record
			}
			newChecker(t).check(rec)
			if _, err := r.Read(ctx); !errors.Is(err, perfring.ErrClosed) {
				t.Fatalf("Read after Close: %v", err)
			}
			if _, err := r.ReadFunc(ctx, newChecker(t).check); !errors.Is(err, perfring.ErrClosed) {
				t.Fatalf("ReadFunc after Close: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}
