package main

import (
	"fmt"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// TestRequestLayout reads what the programs write where the Go types say:
// with only the issue program attached, one read of a loop device leaves
// one slot of the table Ready, holding the device, sector 0, a claim and
// a time of the read's; with the completion's program too, a second read
// leaves every slot free and one request, its latency, in the histogram,
// under the device when counting by device (-listen).
func TestRequestLayout(t *testing.T) {
	testutil.RequireRoot(t)
	path, minor := testutil.LoopDevice(t)
	for _, byDevice := range []bool{false, true} {
		t.Run(fmt.Sprintf("byDevice=%v", byDevice), func(t *testing.T) {
			testRequestLayout(t, path, uint32(7<<20|minor), byDevice)
		})
	}
}

func testRequestLayout(t *testing.T, path string, dev uint32, byDevice bool) {
	o, err := load(dev, byDevice)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	attach := func(p *prog.Program, tp string) *prog.Link {
		l, err := prog.AttachTracepoint(p, "block", tp, prog.AttachOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	issue := attach(o.issue, "block_rq_issue")
	defer issue.Close()
	var before, after unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	testutil.DirectReads(t, path, 1)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	got := o.readySlots(t)
	if len(got) != 1 {
		t.Fatalf("%d slots ready after one request, want 1: %+v", len(got), got)
	}
	start := got[0].Start
	got[0].Start = 0
	if want := (request{Claim: 1, Ready: 1, Dev: dev, Sector: 0}); got[0] != want ||
		start < uint64(before.Nano()) || start > uint64(after.Nano()) {
		t.Fatalf("the request's slot %+v (start %d), want %+v and a start between %d and %d",
			got[0], start, want, before.Nano(), after.Nano())
	}

	// The first request stays in the table, never completed: clear it.
	for i := range uint32(tableSize) {
		if err := o.table.Update(i, request{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	complete := attach(o.complete, "block_rq_complete")
	defer complete.Close()
	testutil.DirectReads(t, path, 1)
	if got := o.readySlots(t); len(got) != 0 {
		t.Fatalf("slots still ready after the completion: %+v", got)
	}
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		t.Fatal(err)
	}
	counts, err := o.counts(ncpu)
	if err != nil {
		t.Fatal(err)
	}
	key, n := histKey{}, 0
	for k, v := range counts {
		if v.Count > 0 {
			key, n = k, n+int(v.Count)
		}
	}
	want := map[bool]uint32{true: dev}[byDevice]
	if n != 1 || key.Dev != want || counts[key].Sum == 0 {
		t.Fatalf("the histograms count %d requests, of device %#x, latency %d ns; want 1, of %#x",
			n, key.Dev, counts[key].Sum, want)
	}
}

// readySlots returns the table's slots that hold a request.
func (o *objects) readySlots(t *testing.T) []request {
	t.Helper()
	var ready []request
	var err error
	for _, r := range o.table.All(&err) {
		if r.Ready != 0 || r.Claim != 0 {
			ready = append(ready, r)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ready
}
