package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// reporter prints the handlers' events and, every interval, the counts of
// the other calls, and swaps the write handler with -swap.
type reporter struct {
	t        *tool.Tool
	o        *objects
	swap     bool
	useBytes bool     // -swap has put hWriteBytes in write's slot
	ncpu     int      // possible CPUs: values per element of the per-CPU array
	noBatch  bool     // the kernel has no batch lookup of per-CPU arrays
	seen     []uint64 // each number's count at the last report
	names    *prog.SyscallTable
	pending  []event // the events of the batch being read, to print in time order
	// out holds the lines of the batch being printed, written at its end or
	// every outChunk bytes: one write for many events, not one each.
	out     bytes.Buffer
	enc     *json.Encoder // -json's lines, into out
	line    jsonEvent     // the line enc encodes
	scratch []byte        // the bytes of line's strings
}

// outChunk is how much of a batch's lines out holds before it is written.
const outChunk = 64 << 10

func newReporter(t *tool.Tool, o *objects, names *prog.SyscallTable, swap bool) (*reporter, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	r := &reporter{t: t, o: o, swap: swap, ncpu: ncpu, seen: make([]uint64, slots), names: names}
	r.enc = json.NewEncoder(&r.out)
	return r, nil
}

// event keeps one handler's event for batch.
func (r *reporter) event(rec perfring.Record) error {
	var ev event
	if err := perfring.Decode(rec.Sample, &ev); err != nil {
		return err
	}
	r.pending = append(r.pending, ev)
	return nil
}

// batch prints the events of a batch of all the rings in the order of
// their times: each CPU's ring is in order, but one ring is read after
// another.
func (r *reporter) batch() error {
	slices.SortStableFunc(r.pending, func(a, b event) int { return cmp.Compare(a.Time, b.Time) })
	defer func() { r.pending = r.pending[:0] }()
	for i := range r.pending {
		if err := r.print(&r.pending[i]); err != nil {
			return err
		}
		if r.out.Len() >= outChunk {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return r.flush()
}

// flush writes the lines out holds, if any.
func (r *reporter) flush() error {
	if r.out.Len() == 0 {
		return nil // no write(2) for a batch of nothing, every Flush
	}
	defer r.out.Reset()
	_, err := r.t.Stdout.Write(r.out.Bytes())
	return err
}

// print adds one event's line to out.
func (r *reporter) print(ev *event) error {
	when := tool.EventTime(ev.Time)
	comm := ev.Comm[:]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	if r.t.JSON {
		return r.encode(ev, when, comm)
	}
	// The line "%-12s %7d %-16s %s\n" of the time, pid, comm and call, made
	// in place as encode's are.
	b := when.AppendFormat(r.out.AvailableBuffer(), "15:04:05.000")
	var digits [20]byte
	pid := strconv.AppendUint(digits[:0], uint64(ev.PID), 10)
	b = append(b, "        "[:1+max(0, 7-len(pid))]...)
	b = append(append(b, pid...), ' ')
	b = append(b, comm...)
	b = append(b, "                 "[:1+max(0, 16-utf8.RuneCount(comm))]...)
	b, err := appendCall(b, ev)
	if err != nil {
		return err
	}
	r.out.Write(append(b, '\n'))
	return nil
}

// encode adds one event's line of JSON to out. Its strings are made in
// scratch and point into it, which Encode has copied from by the time it
// returns: a string per field and per event was most of tracex5's garbage.
func (r *reporter) encode(ev *event, when time.Time, comm []byte) error {
	b := when.AppendFormat(r.scratch[:0], time.RFC3339Nano)
	timeEnd := len(b)
	b = append(b, comm...)
	commEnd := len(b)
	b, err := appendCall(b, ev)
	r.scratch = b
	if err != nil {
		return err
	}
	r.line = jsonEvent{
		Time: inPlace(b[:timeEnd]),
		PID:  ev.PID,
		Comm: inPlace(b[timeEnd:commEnd]),
		Call: inPlace(b[commEnd:]),
		Name: handlerName(ev.Handler),
		Args: ev.Args,
	}
	return r.enc.Encode(&r.line)
}

// inPlace is the string whose bytes are b's, for as long as b is not
// written to.
func inPlace(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// jsonEvent is an event as -json prints it.
type jsonEvent struct {
	Time string    `json:"time"`
	PID  uint32    `json:"pid"`
	Comm string    `json:"comm"`
	Call string    `json:"call"`
	Name string    `json:"name"`
	Args [6]uint64 `json:"args"`
}

// handlerName is the name of the call a handler reports.
func handlerName(id handlerID) string {
	for _, c := range calls {
		if c.id == id {
			return c.name
		}
	}
	return ""
}

// appendCall appends the call an event reports, with its arguments, as
// "write(fd=1, buf=0x7ffd1000, count=5)".
func appendCall(b []byte, ev *event) ([]byte, error) {
	a := ev.Args
	switch ev.Handler {
	case hWrite, hRead:
		b = append(append(b, handlerName(ev.Handler)...), "(fd="...)
		b = strconv.AppendInt(b, int64(int32(a[0])), 10)
		b = appendHex(append(b, ", buf="...), a[1])
		b = strconv.AppendUint(append(b, ", count="...), a[2], 10)
	case hWriteBytes:
		b = strconv.AppendInt(append(b, "write(fd="...), int64(int32(a[0])), 10)
		b = strconv.AppendQuote(append(b, ", "...), string(ev.Data[:min(a[2], dataSize)]))
		b = strconv.AppendUint(append(b, ", count="...), a[2], 10)
	case hOpenat:
		path := ev.Data[:]
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		b = strconv.AppendInt(append(b, "openat(dfd="...), int64(int32(a[0])), 10)
		b = strconv.AppendQuote(append(b, ", "...), string(path))
		b = appendOctal(append(b, ", flags="...), a[2])
		b = appendOctal(append(b, ", mode="...), a[3])
	case hMmap:
		b = appendHex(append(b, "mmap(addr="...), a[0])
		b = strconv.AppendUint(append(b, ", len="...), a[1], 10)
		b = appendHex(append(b, ", prot="...), a[2])
		b = appendHex(append(b, ", flags="...), a[3])
		b = strconv.AppendInt(append(b, ", fd="...), int64(int32(a[4])), 10)
		b = strconv.AppendUint(append(b, ", off="...), a[5], 10)
	default:
		return b, fmt.Errorf("an event of handler %d, which tracex5 does not have", ev.Handler)
	}
	return append(b, ')'), nil
}

// appendHex appends v as %#x does: 0x0, 0x1f.
func appendHex(b []byte, v uint64) []byte {
	return strconv.AppendUint(append(b, "0x"...), v, 16)
}

// appendOctal appends v as %#o does: 0, 0644.
func appendOctal(b []byte, v uint64) []byte {
	if v == 0 {
		return append(b, '0')
	}
	return strconv.AppendUint(append(b, '0'), v, 8)
}

// otherCount is how many calls of one number an interval counted.
type otherCount struct {
	NR    uint32 `json:"nr"`
	Name  string `json:"name,omitempty"`
	Calls uint64 `json:"calls"`
}

// interval prints what the other calls counted since the last report,
// busiest first, then, with -swap, puts the other write handler in.
func (r *reporter) interval(final bool) error {
	counts, err := r.otherCounts()
	if err != nil {
		return err
	}
	now := time.Now()
	if r.t.JSON {
		err = r.t.Emit(struct {
			Time  string       `json:"time"`
			Other []otherCount `json:"other_calls"`
		}{now.Format(time.RFC3339Nano), counts})
	} else {
		var b strings.Builder
		for i, c := range counts[:min(len(counts), 8)] {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %d", cmp.Or(c.Name, "#"+strconv.Itoa(int(c.NR))), c.Calls)
		}
		_, err = fmt.Fprintf(r.t.Stdout, "%s other calls:%s\n", now.Format("15:04:05"), b.String())
	}
	if err != nil || !r.swap || final {
		return err
	}
	return r.swapWrite()
}

// otherCounts reads the per-CPU counts and returns what each number
// counted since the last call, busiest first, then by number.
func (r *reporter) otherCounts() ([]otherCount, error) {
	totals, err := r.readOther()
	if err != nil {
		return nil, err
	}
	counts := []otherCount{}
	for nr, total := range totals {
		if total > r.seen[nr] {
			c := otherCount{NR: uint32(nr), Name: r.names.Name(nr), Calls: total - r.seen[nr]}
			counts = append(counts, c)
			r.seen[nr] = total
		}
	}
	slices.SortFunc(counts, func(a, b otherCount) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.NR, b.NR))
	})
	return counts, nil
}

// readOther returns the count of each number, summed over the CPUs: in
// one BPF_MAP_LOOKUP_BATCH or, where the kernel has none for per-CPU
// arrays (5.10 answers ENOTSUPP), one lookup per number.
func (r *reporter) readOther() ([]uint64, error) {
	totals := make([]uint64, slots)
	if !r.noBatch {
		m := r.o.other.Map()
		keys, values := make([]byte, slots*m.KeySize()), make([]byte, slots*m.ValueSize())
		var c mapfd.BatchCursor
		n, err := m.LookupBatch(&c, keys, values)
		switch {
		case err == nil || errors.Is(err, mapfd.ErrBatchEnd):
			for i := range n {
				nr := binary.NativeEndian.Uint32(keys[4*i:])
				for cpu := range r.ncpu {
					totals[nr%slots] += binary.NativeEndian.Uint64(values[int(m.ValueSize())*i+8*cpu:])
				}
			}
			return totals, nil
		case errors.Is(err, sys.ENOTSUPP) || errors.Is(err, unix.EINVAL):
			r.noBatch = true
		default:
			return nil, err
		}
	}
	perCPU := make([]uint64, r.ncpu)
	for nr := range uint32(slots) {
		if err := r.o.other.LookupPerCPU(nr, perCPU); err != nil {
			return nil, err
		}
		totals[nr] = tool.Sum(perCPU)
	}
	return totals, nil
}

// swapWrite puts the write handler that is not in the prog array in write's
// slot: the kernel replaces the slot's program atomically.
func (r *reporter) swapWrite() error {
	r.useBytes = !r.useBytes
	p := r.o.handlers[hWrite]
	if r.useBytes {
		p = r.o.handlers[hWriteBytes]
	}
	if err := r.o.progs.SetFD(r.o.nrs[hWrite], p.FD()); err != nil {
		return err
	}
	if !r.t.JSON {
		fmt.Fprintf(r.t.Stdout, "%s write program is now %s\n", time.Now().Format("15:04:05"), p.Name())
	}
	return nil
}
