package prog

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Info is what the kernel reports about a loaded program.
type Info struct {
	ID     uint32   // the kernel's id of the program, as bpftool shows it
	Type   Type     // tracepoint, kprobe, ...
	Name   string   // up to 15 bytes
	Tag    string   // the hex SHA1 prefix bpftool shows
	MapIDs []uint32 // the maps it uses
	UID    uint32   // of the process that loaded it
	// Xlated is the program as the verifier rewrote it; empty without
	// CAP_SYS_ADMIN or under kernel.bpf_jit_harden.
	Xlated   []insn.Instruction
	LoadTime time.Duration // since boot
	RunCount uint64        // with statistics on (BPF_ENABLE_STATS, 5.8)
	RunTime  time.Duration // spent running it, with statistics on
	// RecursionMisses counts the runs the kernel skipped because the
	// program was already running on that CPU (5.12): a tracing program
	// that triggers its own event, an NMI in the middle of a run.
	RecursionMisses uint64
	VerifiedInsns   uint32 // 5.16
}

// Info asks the kernel about the program, once for the sizes, once for the
// instructions and map ids.
func (p *Program) Info() (*Info, error) {
	if p.fd.Int() < 0 {
		return nil, ErrClosed
	}
	var si sys.ProgInfo
	if err := sys.InfoByFD(p.fd.Int(), &si); err != nil {
		return nil, fmt.Errorf("prog: info of %s: %w", sys.QuoteName(p.name), err)
	}
	xlated := make([]byte, si.XlatedProgLen)
	mapIDs := make([]uint32, si.NrMapIDs)
	si = sys.ProgInfo{
		XlatedProgLen:   uint32(len(xlated)),
		XlatedProgInsns: sys.SlicePointer(xlated),
		NrMapIDs:        uint32(len(mapIDs)),
	}
	if len(mapIDs) > 0 {
		si.MapIDs = sys.NewPointer(unsafePointer(&mapIDs[0]))
	}
	if err := sys.InfoByFD(p.fd.Int(), &si); err != nil {
		return nil, fmt.Errorf("prog: info of %s: %w", sys.QuoteName(p.name), err)
	}
	insns, err := insn.Decode(xlated[:min(int(si.XlatedProgLen), len(xlated))])
	if err != nil {
		return nil, fmt.Errorf("prog: xlated instructions of %s: %w", sys.QuoteName(p.name), err)
	}
	info := infoOf(&si)
	info.MapIDs, info.Xlated = mapIDs[:min(int(si.NrMapIDs), len(mapIDs))], insns
	return info, nil
}

// infoOf is the Info of the kernel's answer si, but for the arrays it
// points to (map ids, instructions).
func infoOf(si *sys.ProgInfo) *Info {
	return &Info{
		ID:              si.ID,
		Type:            Type(si.Type),
		Name:            si.Name.String(),
		Tag:             hex.EncodeToString(si.Tag[:]),
		UID:             si.CreatedByUID,
		LoadTime:        time.Duration(si.LoadTime),
		RunCount:        si.RunCnt,
		RunTime:         time.Duration(si.RunTimeNs),
		RecursionMisses: si.RecursionMisses,
		VerifiedInsns:   si.VerifiedInsns,
	}
}

// StatsByID is the Info of the program with the kernel-wide id, without
// its instructions and map ids (Xlated and MapIDs are nil), in one
// BPF_OBJ_GET_INFO_BY_FD. It is what a monitor needs that samples every
// program's run statistics at each interval; it needs CAP_SYS_ADMIN. A
// program unloaded meanwhile is an error that matches unix.ENOENT.
func StatsByID(id uint32) (*Info, error) {
	fd, err := sys.ProgGetFDByID(&sys.GetIDAttr{ID: id})
	if err != nil {
		return nil, wrap(err, "open program id %d", id)
	}
	defer unix.Close(fd)
	var si sys.ProgInfo
	if err := sys.InfoByFD(fd, &si); err != nil {
		return nil, wrap(err, "info of program id %d", id)
	}
	return infoOf(&si), nil
}

// Listing disassembles Xlated as bpftool prog dump xlated does, naming the
// functions helper calls became from /proc/kallsyms (with CAP_SYSLOG;
// without, "call unknown#N").
func (i *Info) Listing() string {
	var calls []int32 // each helper call's offset from __bpf_call_base
	insn.DisassembleFunc(i.Xlated, func(call insn.Instruction) string {
		if call.Src == 0 {
			calls = append(calls, call.Imm)
		}
		return ""
	})
	names := helperNames(calls)
	return insn.DisassembleFunc(i.Xlated, func(call insn.Instruction) string {
		if call.Src != 0 {
			return ""
		}
		return names[call.Imm]
	})
}

// helperNames names the functions at the offsets from __bpf_call_base
// that the verifier left in helper calls, reading /proc/kallsyms up to
// __bpf_call_base and then once through, keeping only those names: the
// whole table would cost a listing some 20 MB. An offset not at the start
// of a function, or any with the addresses hidden, is left unnamed.
func helperNames(calls []int32) map[int32]string {
	if len(calls) == 0 {
		return nil
	}
	syms := NewSymbolizer()
	base, ok, err := syms.Address("__bpf_call_base")
	if err != nil || !ok {
		return nil
	}
	addrs := make([]uint64, len(calls))
	for i, c := range calls {
		addrs[i] = base + uint64(int64(c))
	}
	found, err := syms.Names(addrs)
	if err != nil {
		return nil
	}
	names := make(map[int32]string, len(calls))
	for i, c := range calls {
		if name, exact := strings.CutSuffix(found[i], "+0x0"); exact {
			names[c] = name
		}
	}
	return names
}
