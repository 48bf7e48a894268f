package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// counter attaches funccount's programs and holds what it made, to let
// go of it all at once.
type counter struct {
	events []event
	pid    uint32
	counts *mapfd.Typed[uint32, uint64]
	links  []*prog.Link
	others []tool.Closer // programs and maps, closed after the links
	how    []string      // what counts which events, for the start line
}

// newCounter makes the counts map for events.
func newCounter(events []event, pid uint32) (*counter, error) {
	counts, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: uint32(len(events)),
		Name:       "funccount",
	})
	if err != nil {
		return nil, err
	}
	return &counter{events: events, pid: pid, counts: counts, others: []tool.Closer{counts}}, nil
}

// Close detaches every program at once (a kprobe or a perf tracepoint
// waits for an RCU grace period each; waits that overlap share one), then
// closes the programs and maps.
func (c *counter) Close() error {
	return errors.Join(tool.Detach(c.links), tool.Detach(c.others))
}

// attach attaches the programs that count c.events: system calls through
// raw_syscalls, other tracepoints through raw tracepoints where they can
// (perf events elsewhere), kernel functions through a kprobe_multi link
// where the kernel has them (kprobes elsewhere).
func (c *counter) attach() error {
	syscalls, tracepoints, functions := c.sortEvents()
	if err := c.attachSyscalls(syscalls); err != nil {
		return err
	}
	if err := c.attachTracepoints(tracepoints); err != nil {
		return err
	}
	return c.attachFunctions(functions)
}

// syscallEvents are the events counted on raw_syscalls:sys_enter (0) and
// sys_exit (1), by the number of their system call.
type syscallEvents [2]map[int]int

// sortEvents sorts the events by how they are counted, as indexes: the
// syscall tracepoints whose number is known, the other tracepoints, the
// kernel functions.
func (c *counter) sortEvents() (syscalls syscallEvents, tracepoints, functions []int) {
	table, errTable := prog.KernelSyscalls()
	regs, errRegs := prog.KernelPtRegs()
	syscalls = syscallEvents{{}, {}}
	for i, e := range c.events {
		switch {
		case !e.tracepoint:
			functions = append(functions, i)
			continue
		case e.group() != "syscalls" || errTable != nil || errRegs != nil:
			tracepoints = append(tracepoints, i)
			continue
		}
		call, exit := strings.CutPrefix(e.tpName(), "sys_exit_")
		if !exit {
			call, _ = strings.CutPrefix(e.tpName(), "sys_enter_")
		}
		nr, ok := table.Number(call)
		if !ok || exit && regs.SyscallNr < 0 {
			tracepoints = append(tracepoints, i)
			continue
		}
		syscalls[map[bool]int{false: 0, true: 1}[exit]][nr] = i
	}
	return syscalls, tracepoints, functions
}

// attachSyscalls counts system calls by number with one program on
// raw_syscalls:sys_enter and one on sys_exit, each where some event
// needs it: one attachment, and one detachment, whatever their number.
func (c *counter) attachSyscalls(byNumber syscallEvents) error {
	table, _ := prog.KernelSyscalls()
	regs, _ := prog.KernelPtRegs()
	for dir, name := range []string{"sys_enter", "sys_exit"} {
		if len(byNumber[dir]) == 0 {
			continue
		}
		slots, err := mapfd.CreateTyped[uint32, syscallSlot](mapfd.Spec{
			Type:       mapfd.Array,
			MaxEntries: uint32(table.Len()),
			Name:       "fc_" + name,
		})
		if err != nil {
			return err
		}
		c.others = append(c.others, slots)
		for nr, i := range byNumber[dir] {
			if err := slots.Update(uint32(nr), syscallSlot{Event: uint32(i) + 1}, 0); err != nil {
				return err
			}
		}
		p, err := syscallProgram(c.counts.Map(), slots.Map(), dir == 1, regs, c.pid)
		if err != nil {
			return err
		}
		c.others = append(c.others, p)
		l, err := prog.AttachRawTracepoint(p, name, prog.AttachOptions{})
		if err != nil {
			return err
		}
		c.links = append(c.links, l)
		c.say("%s through raw_syscalls:%s", plural(len(byNumber[dir]), "system call"), name)
	}
	return nil
}

// attachTracepoints counts each tracepoint through a raw tracepoint of
// its name: no perf record is made and none is filtered for others. A
// tracepoint with no raw tracepoint of its name (a system call the table
// does not number) goes through a perf event; an event made at run time
// (a kprobe event, a synthetic event) is refused.
func (c *counter) attachTracepoints(indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	dynamic, err := dynamicEvents()
	if err != nil {
		return err
	}
	var perf []int
	raw := newShared(c, rawTracepoint, haveRawCookie())
	for _, i := range indexes {
		e := c.events[i]
		if dynamic[e.name] {
			return fmt.Errorf("%s is an event made at run time (dynamic_events, kprobe_events): "+
				"funccount counts tracepoints, and kernel functions by name", e.name)
		}
		if e.group() == "syscalls" {
			perf = append(perf, i)
			continue
		}
		err := raw.attach(i, func(p *prog.Program, o prog.AttachOptions) (*prog.Link, error) {
			return prog.AttachRawTracepoint(p, e.tpName(), o)
		})
		if errors.Is(err, unix.ENOENT) {
			perf = append(perf, i)
		} else if err != nil {
			return err
		}
	}
	raw.say("tracepoint", "through raw tracepoints", "raw tracepoint cookies need Linux 6.10")
	return c.attachPerfTracepoints(perf)
}

// attachPerfTracepoints counts each tracepoint through a perf event, with
// a program that returns 1 so that every perf user still sees it.
func (c *counter) attachPerfTracepoints(indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	links, err := prog.HavePerfLink()
	if err != nil {
		return err
	}
	perf := newShared(c, perfTracepoint, links)
	for _, i := range indexes {
		e := c.events[i]
		err := perf.attach(i, func(p *prog.Program, o prog.AttachOptions) (*prog.Link, error) {
			return prog.AttachTracepoint(p, e.group(), e.tpName(), o)
		})
		if err != nil {
			return err
		}
	}
	perf.say("tracepoint", "through perf events", noPerfLinks)
	return nil
}

// noPerfLinks says why a kernel gets a program per event.
const noPerfLinks = "this kernel has no BPF perf links (Linux 5.15 adds them, with bpf_cookie)"

// attachFunctions counts kernel functions through one kprobe_multi link,
// one attachment and one detachment for all, where the kernel has them;
// the functions it cannot take (not in available_filter_functions, which
// a kprobe may still probe) and every function on other kernels go
// through a kprobe each.
func (c *counter) attachFunctions(indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	if err := canCountFunctions(c.events[indexes[0]].name); err != nil {
		return err
	}
	multi, err := prog.HaveKprobeMulti()
	if err != nil {
		return err
	}
	if !multi {
		return c.attachKprobes(indexes, false)
	}
	// The link takes only what ftrace can trace, which is the list's
	// functions and their aliases too (__x64_sys_getppid is an alias of
	// __do_sys_getppid, which the list names): try all of them first.
	// Only if the kernel refuses one are those the list lacks given a
	// kprobe each.
	err = c.attachKprobeMulti(indexes)
	if !errors.Is(err, unix.ESRCH) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	linked, kprobes := ftraceable(c.events, indexes)
	if err := c.attachKprobeMulti(linked); err != nil {
		return err
	}
	return c.attachKprobes(kprobes, true)
}

// ftraceable splits indexes into the functions available_filter_functions
// lists and the others; all are listed if it cannot be read.
func ftraceable(events []event, indexes []int) (listed, others []int) {
	funcs, err := ftraceFunctions()
	if err != nil {
		return indexes, nil
	}
	known := make(map[string]bool, len(funcs))
	for _, f := range funcs {
		known[f] = true
	}
	for _, i := range indexes {
		if known[events[i].name] {
			listed = append(listed, i)
		} else {
			others = append(others, i)
		}
	}
	return listed, others
}

// attachKprobeMulti counts the functions through one kprobe_multi link,
// told apart by their cookies, the events' indexes.
func (c *counter) attachKprobeMulti(indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	p, err := counterProgram(c.counts.Map(), kprobeMulti, byCookie, c.pid)
	if err != nil {
		return err
	}
	c.others = append(c.others, p)
	o := prog.KprobeMultiOptions{}
	for _, i := range indexes {
		o.Symbols = append(o.Symbols, c.events[i].name)
		o.Cookies = append(o.Cookies, uint64(i))
	}
	l, err := prog.AttachKprobeMulti(p, o)
	if err != nil {
		return err
	}
	c.links = append(c.links, l)
	c.say("%s through one kprobe_multi link", plural(len(indexes), "kernel function"))
	return nil
}

// attachKprobes counts each function through a kprobe of its own.
func (c *counter) attachKprobes(indexes []int, multi bool) error {
	if len(indexes) == 0 {
		return nil
	}
	links, err := prog.HavePerfLink()
	if err != nil {
		return err
	}
	kp := newShared(c, kprobe, links)
	for _, i := range indexes {
		name := c.events[i].name
		err := kp.attach(i, func(p *prog.Program, o prog.AttachOptions) (*prog.Link, error) {
			return prog.AttachKprobe(p, name, prog.KprobeOptions{AttachOptions: o})
		})
		if err != nil {
			return err
		}
	}
	what := "through kprobes (no kprobe_multi links: Linux 5.18 with CONFIG_FPROBE)"
	if multi {
		what = "that ftrace cannot trace, through kprobes"
	}
	kp.say("kernel function", what, noPerfLinks)
	return nil
}

// shared attaches events of one kind: with one program told apart by
// bpf_cookie where the kernel carries cookies, else a program each with
// the event's index built in.
type shared struct {
	c       *counter
	kind    counterKind
	cookies bool
	p       *prog.Program // the program, once loaded, with cookies
	n       int           // events attached
}

func newShared(c *counter, k counterKind, cookies bool) *shared {
	return &shared{c: c, kind: k, cookies: cookies}
}

// attach attaches event i's program with attachFn.
// attachFunc attaches a program to one event.
type attachFunc func(*prog.Program, prog.AttachOptions) (*prog.Link, error)

func (s *shared) attach(i int, attachFn attachFunc) error {
	p, o := s.p, prog.AttachOptions{}
	if s.cookies {
		o.Cookie = uint64(i)
	}
	if p == nil || !s.cookies {
		index := i
		if s.cookies {
			index = byCookie
		}
		var err error
		if p, err = counterProgram(s.c.counts.Map(), s.kind, index, s.c.pid); err != nil {
			return err
		}
		s.c.others = append(s.c.others, p)
		if s.cookies {
			s.p = p
		}
	}
	l, err := attachFn(p, o)
	if err != nil {
		return err
	}
	s.c.links = append(s.c.links, l)
	s.n++
	return nil
}

// say adds what was attached to the start line: how many of what, how,
// and how the events are told apart, or why not (without).
func (s *shared) say(what, how, without string) {
	switch {
	case s.n == 0:
	case s.cookies:
		s.c.say("%s %s, one program told apart by bpf_cookie", plural(s.n, what), how)
	default:
		s.c.say("%s %s, one program per event: %s", plural(s.n, what), how, without)
	}
}

func (c *counter) say(format string, args ...any) {
	c.how = append(c.how, fmt.Sprintf(format, args...))
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// haveRawCookie says whether raw tracepoint programs may read a
// bpf_cookie (6.10), which BPF_RAW_TRACEPOINT_OPEN then takes.
func haveRawCookie() bool {
	ok, err := prog.HaveHelper(prog.RawTracepoint, insn.BPF_FUNC_get_attach_cookie)
	return ok && err == nil
}
