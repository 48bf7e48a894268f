package perfring_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
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
	r, err := perfring.NewRingBufReader(m, perfring.RingBufOptions{})
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
	r, err := perfring.NewRingBufReader(ringbuf(t, 4096), perfring.RingBufOptions{})
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
