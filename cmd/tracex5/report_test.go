package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"golang.org/x/sys/unix"
)

// testEvents are events of every handler, with arguments at the edges of
// their formats: zeros, negative fds, a long pid, a comm of 15 bytes and
// one of several bytes per rune, bytes written that need quoting.
func testEvents() []event {
	evs := []event{
		{PID: 1, Handler: hWrite, Args: [6]uint64{1, 0x7ffd1000, 5}},
		{PID: 4194304, Handler: hRead, Args: [6]uint64{^uint64(0), 0, 0}},
		{PID: 1234567890, Handler: hOpenat,
			Args: [6]uint64{uint64(1<<64 - 100), 0, 0o2000101, 0o644}},
		{PID: 77, Handler: hOpenat, Args: [6]uint64{3, 0, 0, 0}},
		{PID: 12, Handler: hMmap, Args: [6]uint64{0, 12289, 3, 0x22, ^uint64(0), 0}},
		{PID: 13, Handler: hWriteBytes, Args: [6]uint64{2, 0, 4}},
		{PID: 14, Handler: hWriteBytes, Args: [6]uint64{2, 0, 1000}},
	}
	copy(evs[0].Comm[:], "fifteen-bytes-x")
	copy(evs[1].Comm[:], "données")
	copy(evs[2].Data[:], "/dev/null")
	copy(evs[3].Data[:], "a \"quoted\"\npath")
	copy(evs[5].Data[:], "x\x00\xff\n")
	for i := range evs[6].Data {
		evs[6].Data[i] = byte('a' + i%26)
	}
	for i := range evs {
		evs[i].Time = uint64(i) * uint64(time.Millisecond)
	}
	return evs
}

// fmtCall is the call an event reports, written with fmt's verbs: what
// appendCall must append.
func fmtCall(ev *event) string {
	a := ev.Args
	switch ev.Handler {
	case hWrite:
		return fmt.Sprintf("write(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2])
	case hWriteBytes:
		written := string(ev.Data[:min(a[2], dataSize)])
		return fmt.Sprintf("write(fd=%d, %s, count=%d)", int32(a[0]), strconv.Quote(written), a[2])
	case hRead:
		return fmt.Sprintf("read(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2])
	case hOpenat:
		path := strconv.Quote(unix.ByteSliceToString(ev.Data[:]))
		return fmt.Sprintf("openat(dfd=%d, %s, flags=%#o, mode=%#o)", int32(a[0]), path, a[2], a[3])
	case hMmap:
		return fmt.Sprintf("mmap(addr=%#x, len=%d, prot=%#x, flags=%#x, fd=%d, off=%d)",
			a[0], a[1], a[2], a[3], int32(a[4]), a[5])
	}
	return ""
}

// testReporter is a reporter that prints into out, in text or in JSON.
func testReporter(asJSON bool, out *bytes.Buffer) *reporter {
	t := tool.New("tracex5", "", "")
	t.JSON, t.Stdout = asJSON, out
	r := &reporter{t: t}
	r.enc = json.NewEncoder(&r.out)
	return r
}

// TestLines: a batch's lines, made in place, are the lines fmt and
// json.Marshal make of the same events, in text and in JSON (whose times,
// to the nanosecond, read the clocks' offset again: they may differ by as
// much as it moved).
func TestLines(t *testing.T) {
	evs := testEvents()
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		r := testReporter(asJSON, &out)
		r.pending = append(r.pending, evs...)
		if err := r.batch(); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(out.String(), "\n")
		if len(lines) != len(evs)+1 || lines[len(evs)] != "" {
			t.Fatalf("json %v: %d lines for %d events:\n%s",
				asJSON, len(lines)-1, len(evs), out.String())
		}
		for i := range evs {
			ev := &evs[i]
			when, call := tool.EventTime(ev.Time), fmtCall(ev)
			comm := unix.ByteSliceToString(ev.Comm[:])
			got, want := lines[i], fmt.Sprintf("%-12s %7d %-16s %s\n",
				when.Format("15:04:05.000"), ev.PID, comm, call)
			// The reporter worked out the wall-clock time apart from this
			// test: the two may fall on either side of a millisecond.
			if !asJSON && len(got) > 12 && got[:12] != when.Format("15:04:05.000") &&
				(got[:12] == when.Add(-time.Millisecond).Format("15:04:05.000") ||
					got[:12] == when.Add(time.Millisecond).Format("15:04:05.000")) {
				got = when.Format("15:04:05.000") + got[12:]
			}
			if asJSON {
				var e jsonEvent
				if err := json.Unmarshal([]byte(got), &e); err != nil {
					t.Fatalf("%q: %v", got, err)
				}
				at, err := time.Parse(time.RFC3339Nano, e.Time)
				if d := at.Sub(when); err != nil || d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("the time %q, want %s", e.Time, when.Format(time.RFC3339Nano))
				}
				e.Time = when.Format(time.RFC3339Nano)
				if b, err := json.Marshal(e); err == nil {
					got = string(b) + "\n"
				}
				b, err := json.Marshal(jsonEvent{e.Time, ev.PID, comm, call,
					handlerName(ev.Handler), ev.Args})
				if err != nil {
					t.Fatal(err)
				}
				want = string(b) + "\n"
			}
			if got != want {
				t.Errorf("json %v: the line\n%q\nwant\n%q", asJSON, got, want)
			}
		}
	}
}

// TestPrintAllocates: a line is made without allocating, in text and in
// JSON, so that a burst of events makes no garbage for the collector to
// let pile up (a string per field made a burst of 100000 writes grow the
// heap to 4 MB).
func TestPrintAllocates(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		r := testReporter(asJSON, &out)
		evs := testEvents()[:5] // not -swap's, whose bytes are converted to be quoted
		allocs := testing.AllocsPerRun(100, func() {
			for i := range evs {
				if err := r.print(&evs[i]); err != nil {
					t.Fatal(err)
				}
			}
			r.out.Reset()
		})
		if allocs != 0 && !(asJSON && raceBuild) {
			t.Errorf("json %v: %v allocations for %d lines, want none", asJSON, allocs, len(evs))
		}
	}
}
