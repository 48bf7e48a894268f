package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// progRec is a program as prog list prints it, with bpftool's field names.
type progRec struct {
	ID        uint32   `json:"id"`
	Type      string   `json:"type"`
	Name      string   `json:"name"`
	Tag       string   `json:"tag"`
	LoadedAt  int64    `json:"loaded_at"`
	UID       uint32   `json:"uid"`
	RunTimeNs int64    `json:"run_time_ns,omitempty"`
	RunCnt    uint64   `json:"run_cnt,omitempty"`
	MapIDs    []uint32 `json:"map_ids,omitempty"`
	Pids      []proc   `json:"pids,omitempty"`
}

// listProgs prints the programs ids, or every program for nil.
func listProgs(t *tool.Tool, ids []uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	boot, err := bootTime()
	if err != nil {
		return err
	}
	return each(prog.NextID, ids, func(id uint32) error {
		p, err := prog.OpenID(id)
		if err != nil {
			return err
		}
		defer p.Close()
		i, err := p.Info()
		if err != nil {
			return err
		}
		r := progRec{
			ID:       i.ID,
			Type:     i.Type.String(),
			Name:     i.Name,
			Tag:      i.Tag,
			LoadedAt: boot.Add(i.LoadTime).Unix(),
			UID:      i.UID,
			MapIDs:   i.MapIDs,
			Pids:     sortedProcs(held[key{"prog", id}]),
		}
		if i.RunTime != 0 { // as bpftool: statistics on (or once on)
			r.RunTimeNs, r.RunCnt = int64(i.RunTime), i.RunCount
		}
		if t.JSON {
			return t.Emit(r)
		}
		loaded := boot.Add(i.LoadTime).Format("2006-01-02T15:04:05-0700")
		fmt.Fprintf(t.Stdout, "%d: %s  name %s  tag %s\n", r.ID, r.Type, r.Name, r.Tag)
		fmt.Fprintf(t.Stdout, "\tloaded_at %s  uid %d\n", loaded, r.UID)
		if r.RunTimeNs != 0 {
			fmt.Fprintf(t.Stdout, "\trun_time_ns %d  run_cnt %d\n", r.RunTimeNs, r.RunCnt)
		}
		if len(r.MapIDs) > 0 {
			fmt.Fprintf(t.Stdout, "\tmap_ids %s\n", joinIDs(r.MapIDs, ","))
		}
		printPids(t, r.Pids)
		return nil
	})
}

func printPids(t *tool.Tool, ps []proc) {
	if len(ps) == 0 {
		return
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%s(%d)", p.Comm, p.PID)
	}
	fmt.Fprintf(t.Stdout, "\tpids %s\n", strings.Join(s, ", "))
}

// bootTime is when the machine booted, by the wall clock, as bpftool
// computes it: load times are nanoseconds since boot (CLOCK_BOOTTIME).
func bootTime() (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, fmt.Errorf("CLOCK_BOOTTIME: %w", err)
	}
	return time.Now().Add(-time.Duration(ts.Nano())), nil
}

// dumpProg prints the program's xlated instructions: bpftool prog dump
// xlated's text, or its JSON objects one per line.
func dumpProg(t *tool.Tool, ids []uint32) error {
	id := ids[0]
	p, err := prog.OpenID(id)
	if err != nil {
		return err
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return err
	}
	if len(info.Xlated) == 0 {
		return fmt.Errorf("program %d: the kernel gives no instructions "+
			"(kernel.bpf_jit_harden hides them?)", id)
	}
	for line := range strings.SplitSeq(strings.TrimRight(info.Listing(), "\n"), "\n") {
		// "   0: (b7) r0 = 0": the index says which instructions the line covers
		n, text := 0, line
		if num, rest, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			fmt.Sscan(num, &n)
			text = rest
		}
		slots := 1
		if info.Xlated[n].Code == insn.BPF_LD|insn.BPF_IMM|uint8(insn.BPF_DW) {
			slots = 2
		}
		raw, err := insn.AppendEncode(nil, info.Xlated[n:min(n+slots, len(info.Xlated))])
		if err != nil {
			return err
		}
		switch {
		case t.JSON && opcodes:
			in := info.Xlated[n]
			err = t.Emit(map[string]any{"disasm": text, "opcodes": map[string]any{
				"code":    fmt.Sprintf("0x%02x", in.Code),
				"src_reg": fmt.Sprintf("0x%x", uint8(in.Src)),
				"dst_reg": fmt.Sprintf("0x%x", uint8(in.Dst)),
				"off":     hexBytes(raw[2:4]),
				"imm":     hexBytes(raw[4:]),
			}})
		case t.JSON:
			err = t.Emit(map[string]string{"disasm": text})
		case opcodes:
			_, err = fmt.Fprintf(t.Stdout, "%s\n       %s\n", line, spaced(raw))
		default:
			_, err = fmt.Fprintln(t.Stdout, line)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
