package prog

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
)

// UprobeOptions says which function of the binary and how to attach.
type UprobeOptions struct {
	AttachOptions
	Symbol string // an ELF function symbol of the binary
	Offset uint64 // the file offset, or with Symbol the bytes into the function
	Return bool   // a uretprobe
	PID    int    // only this process; 0 means every process
	// RefCtrOffset is the file offset of a USDT semaphore (4.20). The PMU
	// takes 32 bits, uprobe_events (Tracefs) more.
	RefCtrOffset uint64
	Tracefs      bool // create the event in uprobe_events even where the PMU exists
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
		return nil, fmt.Errorf("prog: attach %s to %s %s: %w",
			sys.QuoteName(p.name), kind, path, err)
	}
	if strings.IndexByte(path+o.Symbol, 0) >= 0 || path == "" {
		return fail(fmt.Errorf("%w: empty path, or a NUL in path %q or symbol %q",
			tracefs.ErrInvalid, path, o.Symbol))
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

// armUprobes says what 32-bit arm's uprobes probe: ARM instructions,
// 4-aligned, not Thumb code, which they refuse or, 4-aligned, misread
// (arch_uprobe_analyze_insn: "Thumb not yet supported").
const armUprobes = "32-bit arm's uprobes probe ARM instructions only (4-aligned, not Thumb)"

// fileOffset returns the file offset off bytes into the function symbol, or
// off without one (fileOffsets).
func fileOffset(path, symbol string, off uint64) (uint64, error) {
	offs, err := fileOffsets(path, []string{symbol}, []uint64{off})
	if err != nil {
		return 0, err
	}
	return offs[0], nil
}

// fileOffsets returns, for each place, the file offset offs[i] bytes into
// the function symbols[i], or offs[i] where the symbol is "". It checks
// that each lies in its function (of known size) and in the file part of
// an executable PT_LOAD segment: a uprobe elsewhere is accepted by the
// kernel and never fires. The file is read once for all.
func fileOffsets(path string, symbols []string, offs []uint64) ([]uint64, error) {
	file, err := sys.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	// The kernel probes any file: one that is not ELF is a mistake to report.
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	f, err := readELF(file, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("not an ELF binary: %w", err)
	}
	out := make([]uint64, len(offs))
	for i := range offs {
		if out[i], err = f.fileOffset(symbols[i], offs[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fileOffset is fileOffsets for one place of f.
func (f *elfFile) fileOffset(symbol string, off uint64) (uint64, error) {
	addr, isAddr := off, symbol != ""
	if isAddr {
		s, found, err := f.funcSymbol(symbol)
		switch {
		case err != nil:
			return 0, err
		case !found:
			return 0, fmt.Errorf("no function symbol %q (a stripped binary needs an offset)", symbol)
		case s.size != 0 && off >= s.size || s.value+off < s.value:
			return 0, fmt.Errorf("%w: offset %#x is outside %s (%d bytes)",
				tracefs.ErrInvalid, off, symbol, s.size)
		case f.machine == emARM && s.value%2 != 0: // the mark of Thumb code
			return 0, fmt.Errorf("%w: %s is Thumb code: %s", tracefs.ErrInvalid, symbol, armUprobes)
		}
		addr = s.value + off
	}
	for _, p := range f.progs {
		base := p.off
		if isAddr {
			base = p.vaddr
		}
		if p.typ == ptLoad && p.flags&pfX != 0 && addr >= base && addr-base < p.filesz {
			if f.machine == emARM && addr%4 != 0 {
				return 0, fmt.Errorf("%w: %#x is not 4-aligned: %s", tracefs.ErrInvalid, addr,
					armUprobes)
			}
			return addr - base + p.off, nil
		}
	}
	what := fmt.Sprintf("file offset %#x", off)
	if isAddr {
		what = fmt.Sprintf("%s+%#x", symbol, off)
	}
	return 0, fmt.Errorf("%w: %s is in no executable segment of the file", tracefs.ErrInvalid, what)
}
