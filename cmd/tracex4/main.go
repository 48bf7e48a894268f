// Command tracex4 is the kprobe variant of tracex2's write() histogram, as
// the kernel's samples/bpf/tracex4 used kprobes: a kprobe on vfs_write,
// the kernel's write handler, counts the sizes asked for in log2 slots,
// and a kretprobe on it counts the sizes written (errors apart). The
// function's arguments are read from the kernel's struct pt_regs, whose
// layout depends on the architecture (prog.PtRegs).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
)

func main() {
	t := tool.New("tracex4", "log2 histograms of the sizes vfs_write is asked for (kprobe) and writes (kretprobe)",
		"[-p PID] [-json] [interval [count]]",
		"tracex4                 # every second until Ctrl-C",
		"tracex4 -p 1234 5 3     # process 1234 only, every 5 s, three times",
		"tracex4 -listen :9104   # serve the histograms to Prometheus at /metrics too",
	).Periodic(time.Second)
	pid := t.PIDFlag("p", "count the writes of process `PID` only")
	listen := t.ListenFlag()
	t.ParseOrExit()
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid, *listen))
}

// run attaches the programs and prints the histograms of what each
// interval counted, until ctx ends or, with a count, count times.
func run(ctx context.Context, t *tool.Tool, pid uint32, listen string) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	server, err := t.ListenMetrics(listen) // before anything is loaded: an address in use stops here
	if err != nil {
		return err
	}
	defer server.Close()
	if err = prog.ProbesSupported(tracefs.Kprobe); err != nil {
		return err
	}
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return err
	}
	hist, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: entries,
		Name:       "write_sizes",
	})
	if err != nil {
		return err
	}
	defer hist.Close()
	links, progs, err := attach(hist, pid)
	defer tool.Detach(progs) // after the links
	defer tool.Detach(links)
	if err != nil {
		return err
	}
	if server != nil {
		m, err := sizeMetrics(hist, ncpu)
		if err != nil {
			return err
		}
		server.Serve(m)
	}

	t.Started("counting the sizes of %s, asked and written", fn)
	h := &histograms{hist: hist, perCPU: make([]uint64, ncpu), seen: make([]uint64, 2*slots)}
	return t.Every(ctx, func(bool) error { return h.report(t) })
}

// report prints the histograms of what the interval counted.
func (h *histograms) report(t *tool.Tool) error {
	now, err := h.read()
	if err != nil {
		return err
	}
	asked, written := now[histAsked:histAsked+slots], now[histWritten:histWritten+slots]
	if t.JSON {
		return t.Emit(struct {
			Time    string          `json:"time"`
			Asked   []tool.HistSlot `json:"asked_bytes"`
			Written []tool.HistSlot `json:"written_bytes"`
		}{time.Now().Format(time.RFC3339Nano), tool.HistSlots(asked), tool.HistSlots(written)})
	}
	fmt.Fprintf(t.Stdout, "\n%s\n", time.Now().Format("15:04:05"))
	tool.Log2Hist(t.Stdout, "asked bytes", asked)
	tool.Log2Hist(t.Stdout, "written bytes", written)
	return nil
}

// histograms reads the counts and keeps what it read.
type histograms struct {
	hist   *mapfd.Typed[uint32, uint64]
	perCPU []uint64 // a lookup's values, one per possible CPU
	seen   []uint64 // every slot's count at the last read
}

// read sums every CPU's count of each slot and returns what each slot
// added since the last read.
func (h *histograms) read() ([]uint64, error) {
	now := make([]uint64, len(h.seen))
	for i := range uint32(len(h.seen)) {
		n, err := total(h.hist, i, h.perCPU)
		if err != nil {
			return nil, err
		}
		now[i], h.seen[i] = n-h.seen[i], n
	}
	return now, nil
}

// total is the value of key in hist summed over the CPUs, read through
// perCPU, a value per possible CPU.
func total(hist *counts, key uint32, perCPU []uint64) (uint64, error) {
	err := hist.LookupPerCPU(key, perCPU)
	return tool.Sum(perCPU), err
}

// sizeMetrics is what -listen serves: the two histograms, in bytes, read
// from the kernel's counts at each scrape.
func sizeMetrics(hist *counts, ncpu int) (*tool.Metrics, error) {
	var m tool.Metrics
	for _, h := range []struct {
		name, help string
		base, sum  uint32
	}{
		{"tracex4_vfs_write_asked_bytes", "Sizes vfs_write was asked to write, its count argument.",
			histAsked, sumAsked},
		{"tracex4_vfs_write_written_bytes", "Sizes vfs_write wrote, its return value (errors apart).",
			histWritten, sumWritten},
	} {
		err := m.Histogram(h.name, h.help, tool.Bytes, nil, func(add tool.AddHistogram) error {
			perCPU := make([]uint64, ncpu)
			counts := make([]uint64, slots)
			for i := range uint32(slots) {
				n, err := total(hist, h.base+i, perCPU)
				if err != nil {
					return err
				}
				counts[i] = n
			}
			sum, err := total(hist, h.sum, perCPU)
			add(tool.Log2Histogram{Slots: counts, Sum: float64(sum)})
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return &m, nil
}
