package prog

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// KprobeOptions says where in the function and how to attach.
type KprobeOptions struct {
	AttachOptions
	Offset uint64 // bytes into the function
	Return bool   // a kretprobe: run when the function returns
	// MaxActive bounds the kretprobe instances in flight; it needs a
	// tracefs event (the perf PMU cannot take it).
	MaxActive int
	// Tracefs creates the event in kprobe_events even where the perf
	// kprobe PMU (4.17) exists.
	Tracefs bool
}

// UprobeOptions says which function of the binary and how to attach.
type UprobeOptions struct {
	AttachOptions
	Symbol string // an ELF symbol of the binary, resolved with debug/elf
	Offset uint64 // file offset; added to the symbol's when Symbol is set
	Return bool   // a uretprobe
	PID    int    // only this process; 0 means every process
	// RefCtrOffset is the file offset of a USDT semaphore (4.20).
	RefCtrOffset uint64
	Tracefs      bool // create the event in uprobe_events even where the PMU exists
}

// AttachKprobe runs p, a Kprobe program, when the kernel enters symbol (or
// returns from it, with Return). It uses the perf kprobe PMU when the kernel
// has one and kprobe_events otherwise; the event it creates goes with Close.
func AttachKprobe(p *Program, symbol string, o KprobeOptions) (*Link, error) {
	kind := tracefs.Kprobe
	if o.Return {
		kind = tracefs.Kretprobe
	}
	spec := tracefs.ProbeSpec{Kind: kind, Symbol: symbol, Offset: o.Offset, MaxActive: o.MaxActive}
	return attachProbe(p, spec, -1, o.Tracefs || o.MaxActive > 0, o.AttachOptions)
}

// AttachUprobe runs p, a Kprobe program, when a process runs the function at
// Symbol (plus Offset) or at file offset Offset of the binary at path.
func AttachUprobe(p *Program, path string, o UprobeOptions) (*Link, error) {
	kind := tracefs.Uprobe
	if o.Return {
		kind = tracefs.Uretprobe
	}
	off := o.Offset
	// The kernel probes any file; a program meant for an executable that
	// is not one is a mistake to report, not to attach.
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("attach %q to %s %s: not an ELF binary: %w", p.name, kind, path, err)
	}
	if o.Symbol != "" {
		symOff, err := symbolOffset(f, path, o.Symbol)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("attach %q to %s: %w", p.name, kind, err)
		}
		off += symOff
	}
	f.Close()
	pid := -1
	if o.PID > 0 {
		pid = o.PID
	}
	spec := tracefs.ProbeSpec{Kind: kind, Path: path, Offset: off, RefCtrOffset: o.RefCtrOffset}
	return attachProbe(p, spec, pid, o.Tracefs, o.AttachOptions)
}

func attachProbe(p *Program, spec tracefs.ProbeSpec, pid int, useTracefs bool, o AttachOptions) (*Link, error) {
	desc := fmt.Sprintf("%s %s%s+%#x", spec.Kind, spec.Path, spec.Symbol, spec.Offset)
	if spec.Kind.IsUprobe() {
		desc = fmt.Sprintf("%s %s:%#x", spec.Kind, spec.Path, spec.Offset)
	}
	fail := func(err error) (*Link, error) { return nil, fmt.Errorf("attach %q to %s: %w", p.name, desc, err) }
	if p.fd.Int() < 0 {
		return fail(ErrClosed)
	}
	cpu := 0 // all processes: the program runs on every CPU whatever the event's
	if pid > 0 {
		cpu = -1
	}
	if !useTracefs {
		pmu, err := probePMU(spec.Kind)
		if err != nil {
			return fail(err)
		}
		if pmu.typ != 0 {
			fd, err := openPMUEvent(pmu, spec, pid, cpu)
			if err != nil {
				return fail(explainProbe(spec, err))
			}
			return attachPerf(p, fd, nil, desc, o)
		}
	}
	// No PMU (kernels before 4.17), or asked for: a tracefs event.
	ev, err := tracefs.CreateProbe(spec)
	if err != nil {
		return fail(explainProbe(spec, err))
	}
	fd, err := openTracepointEvent(ev.ID, pid, cpu)
	if err != nil {
		ev.Remove()
		return fail(err)
	}
	return attachPerf(p, fd, ev, desc, o)
}

// explainProbe turns the kernel's terse answers about a missing symbol into
// words, keeping the errno.
func explainProbe(spec tracefs.ProbeSpec, err error) error {
	if spec.Kind.IsUprobe() || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)) || errors.Is(err, tracefs.ErrInvalid) {
		return err
	}
	return fmt.Errorf("kernel function %q not found or not probeable (see /proc/kallsyms and available_filter_functions): %w", spec.Symbol, err)
}

// pmu is a perf event source from /sys/bus/event_source/devices/<name>:
// its type number and the config bit that makes a return probe.
type pmu struct {
	typ       uint32
	retBit    uint
	refCtrBit uint // uprobe: first bit of ref_ctr_offset in config
}

var pmus struct {
	sync.Mutex
	m map[string]*pmu
}

// probePMU reads the kprobe or uprobe PMU (4.17) once. A zero type means
// the kernel has none.
func probePMU(kind tracefs.ProbeKind) (pmu, error) {
	name := "kprobe"
	if kind.IsUprobe() {
		name = "uprobe"
	}
	pmus.Lock()
	defer pmus.Unlock()
	if p, ok := pmus.m[name]; ok {
		return *p, nil
	}
	dir := "/sys/bus/event_source/devices/" + name
	var p pmu
	b, err := os.ReadFile(dir + "/type")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return p, err
	default:
		t, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return p, fmt.Errorf("%s/type: %q", dir, b)
		}
		p.typ = uint32(t)
		// format/retprobe is "config:0"; format/ref_ctr_offset "config:32-63".
		if p.retBit, err = formatBit(dir + "/format/retprobe"); err != nil {
			return p, err
		}
		if name == "uprobe" {
			p.refCtrBit, _ = formatBit(dir + "/format/ref_ctr_offset")
		}
	}
	if pmus.m == nil {
		pmus.m = map[string]*pmu{}
	}
	pmus.m[name] = &p
	return p, nil
}

func formatBit(path string) (uint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "config:")
	s, _, _ = strings.Cut(s, "-")
	n, err := strconv.ParseUint(s, 10, 6)
	if err != nil {
		return 0, fmt.Errorf("%s: %q", path, b)
	}
	return uint(n), nil
}

// openPMUEvent opens a kprobe or uprobe through the PMU: config1 points at
// the symbol or path, config2 is the offset. The kernel creates the probe for
// this fd alone and deletes it when the fd closes: nothing is left behind
// even if the process dies.
func openPMUEvent(p pmu, spec tracefs.ProbeSpec, pid, cpu int) (int, error) {
	target := spec.Symbol
	if spec.Kind.IsUprobe() {
		target = spec.Path
	}
	// Validate as tracefs would: the kernel reads a C string.
	if strings.ContainsRune(target, 0) || target == "" {
		return -1, fmt.Errorf("%w: empty name or NUL in %q", tracefs.ErrInvalid, target)
	}
	// A make with a length known only at run time lives on the heap,
	// which does not move: its address may sit in a uint64.
	name := make([]byte, len(target)+1)
	copy(name, target)
	attr := unix.PerfEventAttr{Type: p.typ, Ext1: uint64(uintptr(unsafe.Pointer(&name[0]))), Ext2: spec.Offset, Bits: unix.PerfBitDisabled}
	if spec.Kind.IsReturn() {
		attr.Config |= 1 << p.retBit
	}
	if spec.RefCtrOffset != 0 {
		if p.refCtrBit == 0 {
			return -1, fmt.Errorf("uprobe ref_ctr_offset needs Linux 4.20: %w", sys.ErrNotSupported)
		}
		attr.Config |= spec.RefCtrOffset << p.refCtrBit
	}
	fd, err := sys.PerfEventOpen(&attr, pid, cpu, -1, 0)
	runtime.KeepAlive(name)
	return fd, err
}

// scanKallsyms calls f with each symbol of /proc/kallsyms ("ffffffff81234560
// T __x64_sys_getpid") until f returns false. Addresses read as zero without
// CAP_SYSLOG or with kernel.kptr_restrict=2.
func scanKallsyms(f func(addr uint64, name string) bool) error {
	file, err := os.Open("/proc/kallsyms")
	if err != nil {
		return err
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 3 {
			continue
		}
		addr, _ := strconv.ParseUint(fields[0], 16, 64)
		if !f(addr, fields[2]) {
			break
		}
	}
	return s.Err()
}

// SymbolOffset finds symbol in the ELF file at path (its symbol table, else
// its dynamic symbols) and returns its file offset, which is what uprobes
// take: the symbol's address less its segment's address plus the segment's
// offset in the file.
func SymbolOffset(path, symbol string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, fmt.Errorf("uprobe target %s: %w", path, err)
	}
	defer f.Close()
	return symbolOffset(f, path, symbol)
}

func symbolOffset(f *elf.File, path, symbol string) (uint64, error) {
	var addr uint64
	found := false
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if s.Name == symbol && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				addr, found = s.Value, true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		return 0, fmt.Errorf("uprobe target %s: no function symbol %q (a stripped binary needs an offset)", path, symbol)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("uprobe target %s: symbol %q at %#x is in no executable segment", path, symbol, addr)
}

var syscallPrefix struct {
	once   sync.Once
	prefix string
	err    error
}

// SyscallSymbol returns the kernel function that handles the system call
// name ("getpid"): since 4.17 on x86-64 the handlers are wrappers named
// __x64_sys_getpid, before that sys_getpid. Which one this kernel has is
// read once from /proc/kallsyms.
func SyscallSymbol(name string) (string, error) {
	syscallPrefix.once.Do(func() {
		syscallPrefix.prefix = "sys_"
		syscallPrefix.err = scanKallsyms(func(_ uint64, name string) bool {
			if name == "__x64_sys_getpid" {
				syscallPrefix.prefix = "__x64_sys_"
				return false
			}
			return true
		})
	})
	if syscallPrefix.err != nil {
		return "", fmt.Errorf("syscall symbol for %s: %w", name, syscallPrefix.err)
	}
	return syscallPrefix.prefix + name, nil
}
