package prog

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
)

// Info is what the kernel reports about a loaded program.
type Info struct {
	ID            uint32             // the kernel's id of the program, as bpftool shows it
	Type          Type               // tracepoint, kprobe, ...
	Name          string             // up to 15 bytes
	Tag           string             // the hex SHA1 prefix bpftool shows
	MapIDs        []uint32           // the maps it uses
	UID           uint32             // of the process that loaded it
	Xlated        []insn.Instruction // as the verifier rewrote it; empty without CAP_SYS_ADMIN or under bpf_jit_harden
	LoadTime      time.Duration      // since boot
	RunCount      uint64             // with statistics on (BPF_ENABLE_STATS, 5.8)
	RunTime       time.Duration      // spent running it, with statistics on
	VerifiedInsns uint32             // 5.16
}

// Info asks the kernel about the program, once for the sizes, once for the
// instructions and map ids.
func (p *Program) Info() (*Info, error) {
	if p.fd.Int() < 0 {
		return nil, ErrClosed
	}
	var si sys.ProgInfo
	if err := sys.InfoByFD(p.fd.Int(), &si); err != nil {
		return nil, fmt.Errorf("prog: info of %q: %w", p.name, err)
	}
	xlated := make([]byte, si.XlatedProgLen)
	mapIDs := make([]uint32, si.NrMapIDs)
	si = sys.ProgInfo{XlatedProgLen: uint32(len(xlated)), XlatedProgInsns: sys.SlicePointer(xlated), NrMapIDs: uint32(len(mapIDs))}
	if len(mapIDs) > 0 {
		si.MapIDs = sys.NewPointer(unsafePointer(&mapIDs[0]))
	}
	if err := sys.InfoByFD(p.fd.Int(), &si); err != nil {
		return nil, fmt.Errorf("prog: info of %q: %w", p.name, err)
	}
	insns, err := insn.Decode(xlated[:min(int(si.XlatedProgLen), len(xlated))])
	if err != nil {
		return nil, fmt.Errorf("prog: xlated instructions of %q: %w", p.name, err)
	}
	return &Info{
		ID: si.ID, Type: Type(si.Type), Name: si.Name.String(), Tag: hex.EncodeToString(si.Tag[:]),
		MapIDs: mapIDs[:min(int(si.NrMapIDs), len(mapIDs))], UID: si.CreatedByUID, Xlated: insns,
		LoadTime: time.Duration(si.LoadTime), RunCount: si.RunCnt, RunTime: time.Duration(si.RunTimeNs),
		VerifiedInsns: si.VerifiedInsns,
	}, nil
}

// Listing disassembles Xlated as bpftool prog dump xlated does, naming the
// functions helper calls became from /proc/kallsyms (with CAP_SYSLOG;
// without, "call unknown#N").
func (i *Info) Listing() string {
	var syms *Symbols
	var base uint64
	return insn.DisassembleFunc(i.Xlated, func(call insn.Instruction) string {
		if call.Src != 0 {
			return ""
		}
		if syms == nil { // at the first helper call
			var err error
			if syms, err = Kallsyms(); err != nil {
				return ""
			}
			base, _ = syms.Address("__bpf_call_base")
		}
		if name, off, _ := syms.lookup(base + uint64(int64(call.Imm))); base != 0 && off == 0 {
			return name
		}
		return ""
	})
}

// Stats is BPF_ENABLE_STATS (5.8): while open, the kernel counts every
// program's runs and run time (Info's RunCount and RunTime).
type Stats struct{ fd sys.FD }

// EnableStats turns the statistics on until Close.
func EnableStats() (*Stats, error) {
	fd, err := sys.EnableStats(&sys.EnableStatsAttr{Type: 0}) // BPF_STATS_RUN_TIME
	if err != nil {
		return nil, fmt.Errorf("prog: enable statistics: %w", err)
	}
	s := &Stats{}
	s.fd.Set(fd)
	return s, nil
}

// Close turns the statistics off, unless something else keeps them on.
func (s *Stats) Close() error { return wrap(s.fd.Close(), "disable statistics") }
