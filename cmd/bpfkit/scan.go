package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// proc is a process holding a BPF object or a perf event.
type proc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// key names a BPF object: its kind ("prog", "map", "link") and its id.
type key struct {
	kind string
	id   uint32
}

// fdKinds are the files bpfkit looks at, by what /proc/<pid>/fd links to.
var fdKinds = map[string]string{"anon_inode:bpf-prog": "prog", "anon_inode:bpf-map": "map",
	"anon_inode:bpf_link": "link", "anon_inode:[perf_event]": "perf"}

// eachFD calls fn for every file of every process that is a BPF object or
// a perf event. A process that ends meanwhile is skipped.
func eachFD(fn func(p proc, fd int, kind string) error) error {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		p := proc{PID: pid}
		for _, f := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, f.Name()))
			fd, err := strconv.Atoi(f.Name())
			if fdKinds[target] == "" || err != nil {
				continue
			}
			if p.Comm == "" {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				p.Comm = strings.TrimSpace(string(b))
			}
			if err := fn(p, fd, fdKinds[target]); err != nil {
				return err
			}
		}
	}
	return nil
}

// holders maps each BPF object to the processes with an fd of it, from the
// prog_id, map_id and link_id lines of /proc/<pid>/fdinfo/<fd>: what
// bpftool reads when it has no BPF iterator.
func holders() (map[key][]proc, error) {
	held := map[key][]proc{}
	err := eachFD(func(p proc, fd int, kind string) error {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", p.PID, fd))
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, kind+"_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					held[key{kind, uint32(id)}] = append(held[key{kind, uint32(id)}], p)
				}
			}
		}
		return nil
	})
	return held, err
}

// perfRec is an attachment as bpftool perf prints it, and the process's
// name.
type perfRec struct {
	PID        int     `json:"pid"`
	Comm       string  `json:"comm"`
	FD         int     `json:"fd"`
	ProgID     uint32  `json:"prog_id"`
	FDType     string  `json:"fd_type"`
	Tracepoint string  `json:"tracepoint,omitempty"`
	Func       string  `json:"func,omitempty"`
	Filename   string  `json:"filename,omitempty"`
	Offset     *uint64 `json:"offset,omitempty"`
	Addr       *uint64 `json:"addr,omitempty"`
}

// perf prints every program attached through a perf event or a raw
// tracepoint link, asking the kernel about each such fd of each process.
func perf(t *tool.Tool, _ uint32) error {
	return eachFD(func(p proc, fd int, kind string) error {
		if kind != "perf" && kind != "link" {
			return nil
		}
		a, err := prog.QueryFD(p.PID, fd)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, sys.ENOTSUPP), errors.Is(err, unix.EBADF), errors.Is(err, unix.ESRCH):
			return nil // no program on it, not a raw tracepoint link, or gone
		case err != nil:
			return err
		}
		r := perfRec{PID: p.PID, Comm: p.Comm, FD: fd, ProgID: a.ProgID, FDType: a.Kind}
		where := a.Name
		switch {
		case a.Kind == "raw_tracepoint" || a.Kind == "tracepoint":
			r.Tracepoint = a.Name
		case strings.HasPrefix(a.Kind, "u"):
			r.Filename, r.Offset = a.Name, &a.Offset
			where = fmt.Sprintf("filename %s  offset %d", a.Name, a.Offset)
		case a.Name != "":
			r.Func, r.Offset = a.Name, &a.Offset
			where = fmt.Sprintf("func %s  offset %d", a.Name, a.Offset)
		default:
			r.Addr, where = &a.Addr, fmt.Sprintf("addr %#x", a.Addr)
		}
		if t.JSON {
			return t.Emit(r)
		}
		_, err = fmt.Fprintf(t.Stdout, "pid %d (%s)  fd %d: prog_id %d  %s  %s\n", r.PID, r.Comm, fd, a.ProgID, a.Kind, where)
		return err
	})
}

// probes lists the events of kprobe_events and uprobe_events.
func probes(t *tool.Tool, _ uint32) error {
	n := 0
	for _, k := range []tracefs.ProbeKind{tracefs.Kprobe, tracefs.Uprobe} {
		evs, err := tracefs.Events(k)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			n++
			ours, stale, why := tracefs.Owner(ev)
			if t.JSON {
				t.Emit(map[string]any{"file": k.PMU() + "_events", "event": ev, "bpfkit": ours, "stale": stale, "reason": why})
				continue
			}
			owner := "not bpfkit's"
			switch {
			case stale:
				owner = "bpfkit's, stale: its process is gone (bpfkit probes sweep removes it)"
			case ours:
				owner = "bpfkit's: " + why
			}
			fmt.Fprintf(t.Stdout, "%s_events  %s  %s\n", k.PMU(), ev, owner)
		}
	}
	if n == 0 && !t.JSON {
		fmt.Fprintln(t.Stdout, "no kprobe or uprobe events")
	}
	return nil
}

// sweep removes the events of bpfkit processes that are gone.
func sweep(t *tool.Tool, _ uint32) error {
	removed, kept, err := tracefs.Sweep()
	for _, ev := range removed {
		if t.JSON {
			t.Emit(map[string]any{"event": ev, "removed": true})
		} else {
			fmt.Fprintf(t.Stdout, "removed %s\n", ev)
		}
	}
	for _, k := range kept {
		if t.JSON {
			t.Emit(map[string]any{"event": k.Event, "removed": false, "reason": k.Reason})
		} else {
			fmt.Fprintf(t.Stdout, "kept %s: %s\n", k.Event, k.Reason)
		}
	}
	if !t.JSON && len(removed)+len(kept) == 0 && err == nil {
		fmt.Fprintln(t.Stdout, "no bpfkit events")
	}
	return err
}

// features prints every feature probe's answer.
func features(t *tool.Tool, _ uint32) error {
	var of []prog.Type
	if helpersOf != "" {
		typ, ok := progType(helpersOf)
		if !ok {
			return tool.Usagef("-helpers %q: not a program type (kprobe, tracepoint, xdp, ... or a number)", helpersOf)
		}
		of = append(of, typ)
	}
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-48s %-4s %-10s %s\n", "FEATURE", "OK", "ERRNO", "NOTE")
	}
	for _, f := range prog.Features(of...) {
		errno := unix.ErrnoName(f.Errno)
		switch f.Errno {
		case sys.ENOTSUPP, unix.EOPNOTSUPP: // 524 has no name in libc; 95 is ENOTSUP there too
			errno = map[unix.Errno]string{sys.ENOTSUPP: "ENOTSUPP", unix.EOPNOTSUPP: "EOPNOTSUPP"}[f.Errno]
		case 0:
			errno = "-"
		}
		if t.JSON {
			r := map[string]any{"feature": f.Name, "supported": f.OK, "errno": errno}
			if f.Name == "tail_call_limit" {
				r["value"] = f.Value
			}
			if f.Err != nil {
				r["error"] = f.Err.Error()
			}
			if f.Note != "" {
				r["note"] = f.Note
			}
			t.Emit(r)
			continue
		}
		answer, note := map[bool]string{true: "yes", false: "no"}[f.OK], ""
		switch {
		case f.Err != nil:
			answer, note = "?", f.Err.Error()
		case f.Name == "tail_call_limit":
			note = strconv.Itoa(f.Value)
		case f.Note != "":
			note = f.Note
		}
		fmt.Fprintf(t.Stdout, "%-48s %-4s %-10s %s\n", f.Name, answer, errno, note)
	}
	return nil
}

// progType reads a program type by name ("kprobe") or number.
func progType(s string) (prog.Type, bool) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return prog.Type(n), n > 0
	}
	for t := prog.Type(1); t.String() != strconv.Itoa(int(t)); t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}
