package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/prog"
)

// progUsers is who uses a program: the processes holding it, and what it
// is attached to.
type progUsers struct {
	// procs hold an fd of the program, of a link to it or of a perf
	// event it runs on; by pid, each once.
	procs []proc
	// attached is what it runs on, each once: "tracepoint
	// sys_enter_getppid", "uprobe /usr/bin/python3+0x1f2a0",
	// "kprobe_multi 12 kernel functions".
	attached []string
}

// findUsers finds, for every program in use, the processes holding it
// and what it is attached to, from every process's BPF and perf fds
// (/proc/PID/fdinfo and BPF_TASK_FD_QUERY, as bpftool perf does without
// a BPF iterator) and from the kernel's links (5.8). It needs no BTF, so
// it works on every kernel bpfkit supports.
func findUsers() (map[uint32]*progUsers, error) {
	users := map[uint32]*progUsers{}
	of := func(id uint32) *progUsers {
		if users[id] == nil {
			users[id] = &progUsers{}
		}
		return users[id]
	}
	err := eachFD(func(p proc, fd int, kind string) error {
		if kind == "prog" || kind == "link" { // a link's fdinfo names its program too
			if id, ok := fdinfoID(p.PID, fd, "prog_id"); ok {
				of(id).procs = append(of(id).procs, p)
			}
		}
		if kind != "perf" && kind != "link" {
			return nil
		}
		a, err := queryFD(p.PID, fd)
		if a != nil {
			u := of(a.ProgID)
			u.procs = append(u.procs, p)
			u.attached = append(u.attached, attachment(a))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := addLinks(users, of); err != nil {
		return nil, err
	}
	for _, u := range users {
		u.procs = sortedProcs(u.procs)
		u.attached = slices.Compact(u.attached) // dup'ed fds of one event come together
	}
	return users, nil
}

// addLinks adds what each BPF link attaches its program to. A perf
// event's or raw tracepoint's link is described better by its fd (which
// the scan of the processes found), so it is added only for a program
// the scan found no attachment of: a link pinned, its fds closed.
func addLinks(users map[uint32]*progUsers, of func(uint32) *progUsers) error {
	return each(prog.NextLinkID, nil, func(id uint32) error {
		l, err := prog.LinkByID(id)
		if err != nil {
			return err
		}
		byFD := l.Type == "perf_event" || l.Type == "raw_tracepoint"
		if byFD && users[l.ProgID] != nil && len(users[l.ProgID].attached) > 0 {
			return nil
		}
		words := []string{l.Type}
		for _, w := range []string{l.AttachType, l.Target} {
			if w != "" {
				words = append(words, w)
			}
		}
		u := of(l.ProgID)
		u.attached = append(u.attached, strings.Join(words, " "))
		return nil
	})
}

// attachment describes what a program runs on through a perf event or a
// raw tracepoint link.
func attachment(a *prog.FDAttachment) string {
	switch {
	case a.Kind == "tracepoint" || a.Kind == "raw_tracepoint":
		return a.Kind + " " + a.Name
	case a.Name != "" && a.Offset == 0 && !strings.HasPrefix(a.Kind, "u"):
		return a.Kind + " " + a.Name
	case a.Name != "":
		return fmt.Sprintf("%s %s+%#x", a.Kind, a.Name, a.Offset)
	}
	return fmt.Sprintf("%s %#x", a.Kind, a.Addr)
}
