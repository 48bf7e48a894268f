// Command funccount counts events: tracepoints matching group:name
// patterns ('syscalls:sys_enter_*') or kernel functions through kprobes
// ('vfs_read', 'tcp_*'). One program is attached to every event through a
// BPF perf link that carries a bpf_cookie, the event's index, and the
// program counts into a per-CPU array at that index, so one program tells
// hundreds of attachments apart. Kernels before 5.15 have no perf links
// and no cookies: there funccount loads one program per event, each with
// its index built in, and says so.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
)

func main() {
	t := tool.New("funccount", "count tracepoints or kernel functions, telling attachments apart by bpf_cookie",
		"[-p PID] [-max N] [-json] pattern... [interval [count]]",
		"funccount 'syscalls:sys_enter_*'        # every system call, every second",
		"funccount -p 1234 'vfs_*' 5 3           # kernel functions vfs_* of process 1234, every 5 s, 3 times",
		"funccount tcp_sendmsg tcp_recvmsg       # two kernel functions (kprobes)",
	).Periodic(time.Second).TakesArgs()
	pid := t.PIDFlag("p", "count in process `PID` only")
	maxEvents := t.Flags.Int("max", 1000, "refuse patterns that match more than `N` events")
	t.ParseOrExit()
	switch {
	case len(t.Args) == 0:
		t.Exit(tool.Usagef("no pattern: give tracepoints (group:name) or kernel functions, globs allowed"))
	case *maxEvents < 1:
		t.Exit(tool.Usagef("-max %d: want 1 or more", *maxEvents))
	}
	for _, pat := range t.Args {
		if err := checkPattern(pat); err != nil {
			t.Exit(err)
		}
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid, *maxEvents))
}

// event is a tracepoint ("group:name") or a kernel function.
type event struct {
	name       string
	tracepoint bool
}

func run(ctx context.Context, t *tool.Tool, pid uint32, maxEvents int) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	events, err := expand(t.Args, maxEvents)
	if err != nil {
		return err
	}
	for _, e := range events {
		if !e.tracepoint {
			if err := prog.ProbesSupported(tracefs.Kprobe); err != nil {
				return fmt.Errorf("%s is a kernel function: %w", e.name, err)
			}
			break
		}
	}
	counts, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: uint32(len(events)), Name: "funccount"})
	if err != nil {
		return err
	}
	defer counts.Close()
	cookies, err := prog.HavePerfLink()
	if err != nil {
		return err
	}
	// program counts at the index in the cookie, or at index when the
	// kernel has no cookies.
	program := func(typ prog.Type, index int) (*prog.Program, error) {
		var items []Item
		if pid != 0 {
			items = append(items, Mov64Reg(R6, R1), Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32),
				JumpImm(BPF_JNE, R0, int32(pid), "out"), Mov64Reg(R1, R6))
		}
		if index < 0 {
			items = append(items, Call(BPF_FUNC_get_attach_cookie), StoreMem(BPF_W, R10, -4, R0))
		} else {
			items = append(items, StoreImm(BPF_W, R10, -4, int32(index)))
		}
		items = append(items, LoadMapFD(R1, counts), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4), Call(BPF_FUNC_map_lookup_elem),
			JumpImm(BPF_JEQ, R0, 0, "out"),
			LoadMem(BPF_DW, R1, R0, 0), ALU64Imm(BPF_ADD, R1, 1), StoreMem(BPF_DW, R0, 0, R1),
			Label("out"), Mov64Imm(R0, 0), Exit())
		return prog.Load(prog.Spec{Type: typ, Name: "funccount", License: "GPL", Insns: items})
	}
	shared := map[prog.Type]*prog.Program{}
	var links []*prog.Link
	defer func() {
		if len(links) > 100 {
			// Each tracepoint detached waits for an RCU grace period
			// under a kernel-wide mutex (perf_trace_event_unreg).
			fmt.Fprintf(t.Stderr, "funccount: detaching %d events; the kernel takes a moment for each\n", len(links))
		}
		tool.Detach(links)
	}()
	for i, e := range events {
		typ := prog.Kprobe
		if e.tracepoint {
			typ = prog.Tracepoint
		}
		p := shared[typ]
		if p == nil || !cookies {
			index := -1
			if !cookies {
				index = i
			}
			if p, err = program(typ, index); err != nil {
				return err
			}
			defer p.Close()
			shared[typ] = p
		}
		var l *prog.Link
		o := prog.AttachOptions{}
		if cookies {
			o.Cookie = uint64(i)
		}
		if e.tracepoint {
			group, name, _ := strings.Cut(e.name, ":")
			l, err = prog.AttachTracepoint(p, group, name, o)
		} else {
			l, err = prog.AttachKprobe(p, e.name, prog.KprobeOptions{AttachOptions: o})
		}
		if err != nil {
			return err
		}
		links = append(links, l)
	}

	how := fmt.Sprintf("one program, %d attachments told apart by bpf_cookie", len(events))
	if !cookies {
		how = fmt.Sprintf("this kernel has no BPF perf links (Linux 5.15 adds them, with bpf_cookie): one program per event, %d", len(events))
	}
	t.Started("counting %d events (%s)", len(events), how)
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return err
	}
	perCPU := make([]uint64, ncpu)
	seen := make([]uint64, len(events))
	type row struct {
		Name  string `json:"name"`
		Count uint64 `json:"count"`
	}
	return t.Every(ctx, func(final bool) error {
		var rows []row
		for i := range events {
			if err := counts.LookupPerCPU(uint32(i), perCPU); err != nil {
				return err
			}
			sum := uint64(0)
			for _, v := range perCPU {
				sum += v
			}
			if d := sum - seen[i]; d > 0 {
				rows = append(rows, row{events[i].name, d})
			}
			seen[i] = sum
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Count > rows[j].Count })
		if t.JSON {
			return t.Emit(struct {
				Time   string `json:"time"`
				Counts []row  `json:"counts"`
			}{time.Now().Format(time.RFC3339Nano), append([]row{}, rows...)})
		}
		fmt.Fprintf(t.Stdout, "\n%s\n%-40s %8s\n", time.Now().Format("15:04:05"), "FUNC", "COUNT")
		for _, r := range rows {
			fmt.Fprintf(t.Stdout, "%-40s %8d\n", r.Name, r.Count)
		}
		return nil
	})
}

// checkPattern checks a pattern's glob syntax. The interval and count are
// the last one or two arguments that read as numbers (tool.TakesArgs):
// a pattern before them that starts as a number does would be neither
// a kernel function, whose name cannot, nor a tracepoint, having no ':'.
func checkPattern(pat string) error {
	_, err := path.Match(pat, "")
	switch {
	case err != nil:
		return tool.Usagef("pattern %q: %v", pat, err)
	case pat == "":
		return tool.Usagef("an empty pattern")
	case tool.IsNumber(pat) && !strings.Contains(pat, ":"):
		return tool.Usagef("pattern %q is a number: the interval and count come last, after the patterns, at most two of them", pat)
	}
	return nil
}

// expand turns patterns into events: group:name globs against the
// tracepoints in tracefs, other globs against the kernel functions
// kprobes may probe (available_filter_functions), plain names as given.
func expand(patterns []string, maxEvents int) ([]event, error) {
	var out []event
	seen := map[string]bool{}
	matched := 0
	add := func(e event) {
		matched++
		if !seen[e.name] {
			seen[e.name] = true
			out = append(out, e)
		}
	}
	for _, pat := range patterns {
		group, name, isTP := strings.Cut(pat, ":")
		matched = 0
		switch {
		case isTP:
			dir, err := tracefs.Path()
			if err != nil {
				return nil, err
			}
			matches, _ := filepath.Glob(filepath.Join(dir, "events", group, name, "id"))
			for _, m := range matches {
				rel, _ := filepath.Rel(filepath.Join(dir, "events"), filepath.Dir(m))
				g, n, _ := strings.Cut(rel, "/")
				add(event{g + ":" + n, true})
			}
		case strings.ContainsAny(pat, "*?["):
			funcs, err := kernelFunctions()
			if err != nil {
				return nil, err
			}
			for _, f := range funcs {
				if ok, _ := path.Match(pat, f); ok {
					add(event{f, false})
				}
			}
		default:
			add(event{pat, false})
		}
		if matched == 0 {
			return nil, fmt.Errorf("pattern %q matches no %s", pat, map[bool]string{true: "tracepoint", false: "kernel function"}[isTP])
		}
		if len(out) > maxEvents {
			return nil, tool.Usagef("the patterns match more than %d events (-max)", maxEvents)
		}
	}
	return out, nil
}

// kernelFunctions lists what kprobes may probe, from tracefs's
// available_filter_functions ("name" or "name [module]").
func kernelFunctions() ([]string, error) {
	dir, err := tracefs.Path()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(dir + "/available_filter_functions")
	if err != nil {
		return nil, fmt.Errorf("kernel function patterns need the function list: %w", err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if name, _, _ := strings.Cut(s.Text(), " "); name != "" {
			out = append(out, name)
		}
	}
	return out, s.Err()
}
