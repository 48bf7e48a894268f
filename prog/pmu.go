package prog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// attachProbe opens spec as a perf event for process pid (0: every one),
// through the kind's PMU unless the kernel has none or useTracefs, else
// through a tracefs event, and attaches p to it.
func attachProbe(
	p *Program, spec tracefs.ProbeSpec, pid int, useTracefs bool, o AttachOptions,
) (*Link, error) {
	desc := fmt.Sprintf("%s %s+%#x", spec.Kind, spec.Symbol, spec.Offset)
	if spec.Kind.IsUprobe() {
		desc = fmt.Sprintf("%s %s:%#x", spec.Kind, spec.Path, spec.Offset)
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %s to %s: %w", sys.QuoteName(p.name), desc, err)
	}
	if err := spec.Check(); err != nil {
		return fail(err)
	}
	cpu := -1 // see openTracepointEvent
	if pid == 0 {
		pid, cpu = -1, 0
	}
	if !useTracefs {
		pmu, err := probePMU(spec.Kind)
		if err != nil {
			return fail(err)
		}
		if pmu.typ != 0 {
			fd, err := openPMUEvent(pmu, spec, pid, cpu)
			return attachPerf(p, fd, explainProbe(spec, err), nil, desc, o)
		}
	}
	// No PMU (kernels before 4.17), or asked for: a tracefs event.
	ev, err := tracefs.CreateProbe(spec)
	if err != nil {
		return fail(explainProbe(spec, err))
	}
	fd, err := openTracepointEvent(ev.ID, pid, cpu)
	return attachPerf(p, fd, err, ev, desc, o)
}

// pmu is a perf event source of /sys/bus/event_source/devices: its type
// and the config bits of a return probe and of a uprobe's ref_ctr_offset.
type pmu struct {
	typ               uint32
	retBit, refCtrBit uint64
}

var pmus struct {
	sync.Mutex
	m map[string]pmu
}

// probePMU reads the kprobe or uprobe PMU (4.17) once; type 0: none.
func probePMU(kind tracefs.ProbeKind) (pmu, error) {
	pmus.Lock()
	defer pmus.Unlock()
	name := kind.PMU()
	p, ok := pmus.m[name]
	if ok {
		return p, nil
	}
	dir := "/sys/bus/event_source/devices/" + name
	typ, err := readNum(dir+"/type", 32)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	} else if err == nil {
		p.typ = uint32(typ)
		p.retBit, err = readNum(dir+"/format/retprobe", 6)
		if kind.IsUprobe() {
			p.refCtrBit, _ = readNum(dir+"/format/ref_ctr_offset", 6)
		}
	}
	if err != nil {
		return p, err
	}
	if pmus.m == nil {
		pmus.m = map[string]pmu{}
	}
	pmus.m[name] = p
	return p, nil
}

// readNum reads a number from sysfs: a PMU's type, "6", or the first bit of
// a format field: retprobe is "config:0", ref_ctr_offset "config:32-63".
func readNum(path string, bits int) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(b)), "config:"), "-")
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %q", path, b)
	}
	return n, nil
}

// openPMUEvent opens a kprobe or uprobe through the PMU: config1 names the
// symbol or path, config2 is the offset. The probe is this fd's alone, gone
// when it closes, even if the process dies.
func openPMUEvent(p pmu, spec tracefs.ProbeSpec, pid, cpu int) (int, error) {
	target := spec.Symbol
	if spec.Kind.IsUprobe() {
		target = spec.Path
	}
	attr := unix.PerfEventAttr{Type: p.typ, Ext2: spec.Offset, Bits: unix.PerfBitDisabled}
	if spec.Kind.IsReturn() {
		attr.Config |= 1 << p.retBit
	}
	if spec.RefCtrOffset != 0 {
		switch {
		case p.refCtrBit == 0:
			return -1, fmt.Errorf("uprobe ref_ctr_offset needs Linux 4.20: %w", sys.ErrNotSupported)
		case spec.RefCtrOffset>>(64-p.refCtrBit) != 0:
			return -1, fmt.Errorf("%w: ref_ctr_offset %#x does not fit the uprobe PMU's %d config bits "+
				"(uprobe_events takes it: set Tracefs)", tracefs.ErrInvalid, spec.RefCtrOffset, 64-p.refCtrBit)
		}
		attr.Config |= spec.RefCtrOffset << p.refCtrBit
	}
	return sys.PerfEventOpenProbe(&attr, spec.Kind.PMU(), target, pid, cpu, -1, 0)
}

// ProbesSupported says whether this kernel makes probes of kind k, through
// a perf PMU (4.17) or kprobe_events or uprobe_events. It returns nil if
// so, else an error wrapping sys.ErrNotSupported that names what is
// missing (or tracefs.ErrInvalid for a kind that is none).
func ProbesSupported(k tracefs.ProbeKind) error {
	file := k.EventsFile()
	if file == "" {
		return fmt.Errorf("prog: probe kind %d: %w", int(k), tracefs.ErrInvalid)
	}
	pmu, err := probePMU(k)
	if err != nil || pmu.typ != 0 {
		return wrap(err, "%s PMU", k.PMU())
	}
	dir, err := tracefs.Path()
	if err != nil {
		return fmt.Errorf("prog: %ss: %w", k.PMU(), err)
	}
	if _, err := os.Stat(dir + "/" + file); err == nil {
		return nil
	}
	return fmt.Errorf("prog: this kernel has no %ss: no %s PMU and no %s/%s (CONFIG_%sS is off): %w",
		k.PMU(), k.PMU(), dir, file, strings.ToUpper(k.PMU()), sys.ErrNotSupported)
}
