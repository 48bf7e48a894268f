package main

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
}

func newReporter(t *tool.Tool, o *objects, names *prog.SyscallTable, swap bool) (*reporter, error) {
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return nil, err
	}
	r := &reporter{t: t, o: o, swap: swap, ncpu: ncpu, seen: make([]uint64, slots), names: names}
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
	}
	return nil
}

// print prints one event.
func (r *reporter) print(ev *event) error {
	call, err := callText(ev)
	if err != nil {
		return err
	}
	when := tool.EventTime(ev.Time)
	comm := unix.ByteSliceToString(ev.Comm[:])
	if r.t.JSON {
		return r.t.Emit(struct {
			Time string    `json:"time"`
			PID  uint32    `json:"pid"`
			Comm string    `json:"comm"`
			Call string    `json:"call"`
			Name string    `json:"name"`
			Args [6]uint64 `json:"args"`
		}{when.Format(time.RFC3339Nano), ev.PID, comm, call, handlerName(ev.Handler), ev.Args})
	}
	_, err = fmt.Fprintf(r.t.Stdout, "%-12s %7d %-16s %s\n",
		when.Format("15:04:05.000"), ev.PID, comm, call)
	return err
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

// callText shows the call an event reports, with its arguments.
func callText(ev *event) (string, error) {
	a := ev.Args
	switch ev.Handler {
	case hWrite:
		return fmt.Sprintf("write(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2]), nil
	case hWriteBytes:
		written := string(ev.Data[:min(a[2], dataSize)])
		return fmt.Sprintf("write(fd=%d, %s, count=%d)", int32(a[0]), strconv.Quote(written), a[2]), nil
	case hRead:
		return fmt.Sprintf("read(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2]), nil
	case hOpenat:
		path := strconv.Quote(unix.ByteSliceToString(ev.Data[:]))
		return fmt.Sprintf("openat(dfd=%d, %s, flags=%#o, mode=%#o)", int32(a[0]), path, a[2], a[3]), nil
	case hMmap:
		return fmt.Sprintf("mmap(addr=%#x, len=%d, prot=%#x, flags=%#x, fd=%d, off=%d)",
			a[0], a[1], a[2], a[3], int32(a[4]), a[5]), nil
	}
	return "", fmt.Errorf("an event of handler %d, which tracex5 does not have", ev.Handler)
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
