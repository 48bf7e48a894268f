package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

var opcodes bool     // prog dump -opcodes
var helpersOf string // features -helpers

func init() {
	commands = []command{
		{words: "prog list", usage: "[-json]", summary: "every program: type, name, tag, when and by whom loaded, maps, statistics, the processes holding it",
			examples: []string{"bpfkit prog list", "bpfkit prog list -json | jq 'select(.type == \"kprobe\")'"},
			run:      func(t *tool.Tool, _ uint32) error { return progs(t, 0) }},
		{words: "prog show", usage: "[-json] ID", summary: "one program, as prog list shows it", id: true,
			examples: []string{"bpfkit prog show 12"}, run: progs},
		{words: "prog dump", usage: "[-opcodes] [-json] ID", summary: "a program's instructions as the verifier rewrote them (bpftool prog dump xlated)", id: true,
			examples: []string{"bpfkit prog dump 12", "bpfkit prog dump -opcodes -json 12"},
			flags:    func(fs *flag.FlagSet) { fs.BoolVar(&opcodes, "opcodes", false, "print each instruction's bytes too") },
			run:      dumpProg},
		{words: "map list", usage: "[-json]", summary: "every map: type, name, flags, key and value sizes, the processes holding it",
			examples: []string{"bpfkit map list"}, run: func(t *tool.Tool, _ uint32) error { return maps(t, 0) }},
		{words: "map show", usage: "[-json] ID", summary: "one map, as map list shows it", id: true,
			examples: []string{"bpfkit map show 3"}, run: maps},
		{words: "map dump", usage: "[-json] ID", summary: "a map's keys and values in hex, per-CPU values CPU by CPU", id: true,
			examples: []string{"bpfkit map dump 3", "bpfkit map dump -json 3"}, run: dumpMap},
		{words: "link list", usage: "[-json]", summary: "every BPF link: type, program, attach type and target",
			examples: []string{"bpfkit link list"}, run: links},
		{words: "perf list", usage: "[-json]", summary: "which process attached which program to which tracepoint, kprobe or uprobe (bpftool perf)",
			examples: []string{"bpfkit perf list", "bpfkit perf list -json"}, run: perf},
		{words: "probes", usage: "[-json]", summary: "the kprobe and uprobe events of tracefs; bpfkit's marked, stale ones too",
			examples: []string{"bpfkit probes"}, run: probes},
		{words: "probes sweep", usage: "[-json]", summary: "remove the events of bpfkit processes that are gone; say why the others stay",
			examples: []string{"bpfkit probes sweep"}, run: sweep},
		{words: "features", usage: "[-helpers TYPE] [-json]", summary: "what this kernel supports, by trying, with the errno each answer rests on",
			examples: []string{"bpfkit features", "bpfkit features -helpers kprobe   # and which helpers kprobe programs may call"},
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&helpersOf, "helpers", "", "probe every helper for programs of type `TYPE` (kprobe, xdp, ... or a number)")
			},
			run: features},
	}
}

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

// progs prints program id, or every program when id is 0.
func progs(t *tool.Tool, only uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	boot, err := bootTime()
	if err != nil {
		return err
	}
	return each(prog.NextID, only, func(id uint32) error {
		p, err := prog.OpenID(id)
		if err != nil {
			return err
		}
		defer p.Close()
		i, err := p.Info()
		if err != nil {
			return err
		}
		r := progRec{ID: i.ID, Type: i.Type.String(), Name: i.Name, Tag: i.Tag, LoadedAt: boot.Add(i.LoadTime).Unix(), UID: i.UID,
			MapIDs: i.MapIDs, Pids: sortedProcs(held[key{"prog", id}])}
		if i.RunTime != 0 { // as bpftool: statistics on (or once on)
			r.RunTimeNs, r.RunCnt = int64(i.RunTime), i.RunCount
		}
		if t.JSON {
			return t.Emit(r)
		}
		fmt.Fprintf(t.Stdout, "%d: %s  name %s  tag %s\n\tloaded_at %s  uid %d\n", r.ID, r.Type, r.Name, r.Tag,
			boot.Add(i.LoadTime).Format("2006-01-02T15:04:05-0700"), r.UID)
		if r.RunTimeNs != 0 {
			fmt.Fprintf(t.Stdout, "\trun_time_ns %d  run_cnt %d\n", r.RunTimeNs, r.RunCnt)
		}
		if len(r.MapIDs) > 0 {
			fmt.Fprintf(t.Stdout, "\tmap_ids %s\n", ids(r.MapIDs))
		}
		printPids(t, r.Pids)
		return nil
	})
}

// each calls fn for the object id, or for every object when id is 0. An
// object that went away meanwhile is skipped in a listing.
func each(next func(uint32) (uint32, error), id uint32, fn func(uint32) error) error {
	if id != 0 {
		return fn(id)
	}
	for {
		var err error
		if id, err = next(id); err != nil || id == 0 {
			return err
		}
		if err := fn(id); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
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
func dumpProg(t *tool.Tool, id uint32) error {
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
		return fmt.Errorf("program %d: the kernel gives no instructions (kernel.bpf_jit_harden hides them?)", id)
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
			err = t.Emit(map[string]any{"disasm": text, "opcodes": map[string]any{"code": fmt.Sprintf("0x%02x", in.Code),
				"src_reg": fmt.Sprintf("0x%x", uint8(in.Src)), "dst_reg": fmt.Sprintf("0x%x", uint8(in.Dst)),
				"off": hexBytes(raw[2:4]), "imm": hexBytes(raw[4:])}})
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

// mapRec is a map as map list prints it, with bpftool's field names.
type mapRec struct {
	ID         uint32 `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	Flags      uint32 `json:"flags"`
	KeySize    uint32 `json:"bytes_key"`
	ValueSize  uint32 `json:"bytes_value"`
	MaxEntries uint32 `json:"max_entries"`
	Pids       []proc `json:"pids,omitempty"`
}

// maps prints map id, or every map when id is 0.
func maps(t *tool.Tool, only uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	return each(mapfd.NextID, only, func(id uint32) error {
		m, err := mapfd.OpenID(id)
		if err != nil {
			return err
		}
		defer m.Close()
		i, err := m.Info()
		if err != nil {
			return err
		}
		r := mapRec{ID: i.ID, Type: i.Type.String(), Name: i.Name, Flags: i.Flags, KeySize: i.KeySize, ValueSize: i.ValueSize,
			MaxEntries: i.MaxEntries, Pids: sortedProcs(held[key{"map", id}])}
		if t.JSON {
			return t.Emit(r)
		}
		fmt.Fprintf(t.Stdout, "%d: %s  name %s  flags 0x%x\n\tkey %dB  value %dB  max_entries %d\n", r.ID, r.Type, r.Name, r.Flags,
			r.KeySize, r.ValueSize, r.MaxEntries)
		printPids(t, r.Pids)
		return nil
	})
}

// dumpMap prints every key and value, as bpftool map dump does.
func dumpMap(t *tool.Tool, id uint32) error {
	m, err := mapfd.OpenID(id)
	if err != nil {
		return err
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		return err
	}
	stride := (int(info.ValueSize) + 7) &^ 7 // per-CPU values are 8-byte aligned
	n := 0
	for k, v := range m.All(&err) {
		n++
		var cpus []map[string]any // bpftool's "values"
		for cpu := 0; info.Type.PerCPU() && cpu*stride < len(v); cpu++ {
			cpus = append(cpus, map[string]any{"cpu": cpu, "value": v[cpu*stride:][:info.ValueSize]})
		}
		switch {
		case t.JSON && cpus != nil:
			for _, c := range cpus {
				c["value"] = hexBytes(c["value"].([]byte))
			}
			err = t.Emit(map[string]any{"key": hexBytes(k), "values": cpus})
		case t.JSON:
			err = t.Emit(map[string]any{"key": hexBytes(k), "value": hexBytes(v)})
		case cpus != nil:
			fmt.Fprintf(t.Stdout, "key:\n%s\n", spaced(k))
			for _, c := range cpus {
				fmt.Fprintf(t.Stdout, "value (CPU %02d): %s\n", c["cpu"], spaced(c["value"].([]byte)))
			}
		default:
			fmt.Fprintf(t.Stdout, "key: %s  value: %s\n", spaced(k), spaced(v))
		}
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "Found %d element%s\n", n, map[bool]string{true: "s"}[n != 1])
	}
	return nil
}

// links prints every BPF link.
func links(t *tool.Tool, _ uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	return each(prog.NextLinkID, 0, func(id uint32) error {
		l, err := prog.LinkByID(id)
		if err != nil {
			return err
		}
		ps := sortedProcs(held[key{"link", id}])
		if t.JSON {
			return t.Emit(struct {
				*prog.LinkInfo
				Pids []proc `json:"pids,omitempty"`
			}{l, ps})
		}
		fmt.Fprintf(t.Stdout, "%d: %s  prog %d", l.ID, l.Type, l.ProgID)
		if l.AttachType != "" {
			fmt.Fprintf(t.Stdout, "  attach_type %s", l.AttachType)
		}
		if l.Target != "" {
			fmt.Fprintf(t.Stdout, "  target %s", l.Target)
		}
		fmt.Fprintln(t.Stdout)
		printPids(t, ps)
		return nil
	})
}
