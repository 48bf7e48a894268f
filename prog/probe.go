package prog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// KprobeOptions says where in the function and how to attach.
type KprobeOptions struct {
	AttachOptions
	Offset    uint64 // bytes into the function
	Return    bool   // a kretprobe: run when the function returns
	MaxActive int    // bounds the kretprobe instances in flight; needs a tracefs event
	Tracefs   bool   // create the event in kprobe_events even where the kprobe PMU (4.17) is
}

// AttachKprobe runs p, a Kprobe program, when the kernel enters symbol (or
// returns from it, with Return), through the kprobe PMU or kprobe_events.
// On a kernel without kprobes the error wraps sys.ErrNotSupported.
func AttachKprobe(p *Program, symbol string, o KprobeOptions) (*Link, error) {
	if err := usable(p, "a kprobe", Kprobe); err != nil {
		return nil, err
	}
	kind := tracefs.Kprobe
	if o.Return {
		kind = tracefs.Kretprobe
	}
	spec := tracefs.ProbeSpec{Kind: kind, Symbol: symbol, Offset: o.Offset, MaxActive: o.MaxActive}
	return attachProbe(p, spec, 0, o.Tracefs || o.MaxActive > 0, o.AttachOptions)
}

// explainProbe words the kernel's terse answer about a missing function.
func explainProbe(spec tracefs.ProbeSpec, err error) error {
	if spec.Kind.IsUprobe() || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)) ||
		errors.Is(err, tracefs.ErrInvalid) || errors.Is(err, sys.ErrNotSupported) {
		return err
	}
	return fmt.Errorf("kernel function %q not found or not probeable (see /proc/kallsyms and available_filter_functions): %w", spec.Symbol, err)
}

// SyscallSymbol returns the kernel function that handles the system call
// name ("getpid") of this process: __x64_sys_getpid on x86-64 since 4.17,
// sys_getpid without syscall wrappers. The prefix is this architecture's
// (syscallPrefixes) if /proc/kallsyms has it, else any __<arch>_sys_ that
// getpid has, else sys_.
func SyscallSymbol(name string) (string, error) {
	if name == "" || strings.IndexFunc(name, func(c rune) bool { return !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') }) >= 0 {
		return "", fmt.Errorf("prog: syscall name %q: lower-case letters, digits and '_' only: %w", name, tracefs.ErrInvalid)
	}
	syms, err := loadKallsyms()
	if err != nil {
		return "", err
	}
	return syscallPrefix(syms, runtime.GOARCH) + name, nil
}

func syscallPrefix(syms *Symbols, goarch string) string {
	if p, ok := syscallPrefixes[goarch]; ok && slices.Contains(syms.names, p+"getpid") {
		return p
	}
	for _, n := range syms.names {
		// not the wrappers' __do_sys_getpid and __se_sys_getpid, nor compat
		if p, ok := strings.CutSuffix(n, "_sys_getpid"); ok && strings.HasPrefix(p, "__") &&
			p != "__do" && p != "__se" && !strings.Contains(p, "compat") {
			return p + "_sys_"
		}
	}
	return "sys_"
}

// UprobeOptions says which function of the binary and how to attach.
type UprobeOptions struct {
	AttachOptions
	Symbol       string // an ELF function symbol of the binary
	Offset       uint64 // the file offset, or with Symbol the bytes into the function
	Return       bool   // a uretprobe
	PID          int    // only this process; 0 means every process
	RefCtrOffset uint64 // file offset of a USDT semaphore (4.20); the PMU takes 32 bits, uprobe_events (Tracefs) more
	Tracefs      bool   // create the event in uprobe_events even where the PMU exists
}

// AttachUprobe runs p, a Kprobe program, when a process runs Symbol (plus
// Offset), or file offset Offset, of the ELF binary at path, which must lie
// in an executable segment, where a breakpoint fires.
func AttachUprobe(p *Program, path string, o UprobeOptions) (*Link, error) {
	if err := usable(p, "a uprobe", Kprobe); err != nil {
		return nil, err
	}
	kind := tracefs.Uprobe
	if o.Return {
		kind = tracefs.Uretprobe
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %q to %s %s: %w", p.name, kind, path, err)
	}
	if strings.IndexByte(path+o.Symbol, 0) >= 0 || path == "" {
		return fail(fmt.Errorf("%w: empty path, or a NUL in path %q or symbol %q", tracefs.ErrInvalid, path, o.Symbol))
	}
	if o.PID < 0 || o.PID > math.MaxInt32 { // pid_t is 32 bits: 1<<32 + pid would trace pid
		return fail(fmt.Errorf("%w: pid %d is no process id", tracefs.ErrInvalid, o.PID))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fail(err)
	}
	off, err := fileOffset(abs, o.Symbol, o.Offset)
	if err != nil {
		return fail(err)
	}
	spec := tracefs.ProbeSpec{Kind: kind, Path: abs, Offset: off, RefCtrOffset: o.RefCtrOffset}
	return attachProbe(p, spec, o.PID, o.Tracefs, o.AttachOptions)
}

// SymbolOffset returns the file offset, which uprobes take, of the function
// symbol of the ELF file at path (in its symbol table, else its dynamic
// symbols): its address less its segment's, plus the segment's offset.
func SymbolOffset(path, symbol string) (uint64, error) {
	if symbol == "" || strings.IndexByte(symbol, 0) >= 0 { // "" would be file offset 0
		return 0, fmt.Errorf("prog: uprobe target %s: %w: symbol %q", path, tracefs.ErrInvalid, symbol)
	}
	off, err := fileOffset(path, symbol, 0)
	return off, wrap(err, "uprobe target %s", path)
}

// fileOffset returns the file offset off bytes into the function symbol, or
// off without one, checking it lies in the function (of known size) and in
// the file part of an executable PT_LOAD segment: a uprobe elsewhere is
// accepted by the kernel and never fires.
func fileOffset(path, symbol string, off uint64) (uint64, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	// The kernel probes any file: one that is not ELF is a mistake to report.
	size, _ := file.Seek(0, io.SeekEnd)
	f, err := readELF(file, size)
	if err != nil {
		return 0, fmt.Errorf("not an ELF binary: %w", err)
	}
	addr, isAddr := off, symbol != ""
	if isAddr {
		s, found, err := f.funcSymbol(symbol)
		switch {
		case err != nil:
			return 0, err
		case !found:
			return 0, fmt.Errorf("no function symbol %q (a stripped binary needs an offset)", symbol)
		case s.size != 0 && off >= s.size || s.value+off < s.value:
			return 0, fmt.Errorf("%w: offset %#x is outside %s (%d bytes)", tracefs.ErrInvalid, off, symbol, s.size)
		}
		addr = s.value + off
	}
	for _, p := range f.progs {
		base := p.off
		if isAddr {
			base = p.vaddr
		}
		if p.typ == ptLoad && p.flags&pfX != 0 && addr >= base && addr-base < p.filesz {
			return addr - base + p.off, nil
		}
	}
	what := fmt.Sprintf("file offset %#x", off)
	if isAddr {
		what = fmt.Sprintf("%s+%#x", symbol, off)
	}
	return 0, fmt.Errorf("%w: %s is in no executable segment of the file", tracefs.ErrInvalid, what)
}

// attachProbe opens spec as a perf event for process pid (0: every one),
// through the kind's PMU unless the kernel has none or useTracefs, else
// through a tracefs event, and attaches p to it.
func attachProbe(p *Program, spec tracefs.ProbeSpec, pid int, useTracefs bool, o AttachOptions) (*Link, error) {
	desc := fmt.Sprintf("%s %s+%#x", spec.Kind, spec.Symbol, spec.Offset)
	if spec.Kind.IsUprobe() {
		desc = fmt.Sprintf("%s %s:%#x", spec.Kind, spec.Path, spec.Offset)
	}
	fail := func(err error) (*Link, error) { return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err) }
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
	p, ok := pmus.m[kind.PMU()]
	if ok {
		return p, nil
	}
	dir := "/sys/bus/event_source/devices/" + kind.PMU()
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
	pmus.m[kind.PMU()] = p
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
			return -1, fmt.Errorf("%w: ref_ctr_offset %#x does not fit the uprobe PMU's %d config bits (uprobe_events takes it: set Tracefs)",
				tracefs.ErrInvalid, spec.RefCtrOffset, 64-p.refCtrBit)
		}
		attr.Config |= spec.RefCtrOffset << p.refCtrBit
	}
	return sys.PerfEventOpenProbe(&attr, spec.Kind.PMU(), target, pid, cpu, -1, 0)
}

// ProbesSupported says whether this kernel makes probes of kind k, through
// a perf PMU (4.17) or kprobe_events or uprobe_events: nil if so, else an
// error wrapping sys.ErrNotSupported that names what is missing (or
// tracefs.ErrInvalid for a kind that is none).
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
