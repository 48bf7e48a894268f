package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
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
// a perf event, by pid and then by fd, as numbers. A process that ends
// meanwhile is skipped.
func eachFD(fn func(p proc, fd int, kind string) error) error {
	pids, err := numbered("/proc")
	if err != nil {
		return err
	}
	for _, pid := range pids {
		fds, _ := numbered(fmt.Sprintf("/proc/%d/fd", pid))
		p := proc{PID: pid}
		for _, fd := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
			if fdKinds[target] == "" {
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

// numbered is the entries of dir whose names are numbers (the pids of
// /proc, the fds of /proc/PID/fd), in numeric order: os.ReadDir's order
// is the names' ("1000" before "99").
func numbered(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	var ns []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns, err
}

// holders maps each BPF object to the processes with an fd of it, from the
// prog_id, map_id and link_id lines of /proc/<pid>/fdinfo/<fd>: what
// bpftool reads when it has no BPF iterator.
func holders() (map[key][]proc, error) {
	held := map[key][]proc{}
	err := eachFD(func(p proc, fd int, kind string) error {
		if id, ok := fdinfoID(p.PID, fd, kind+"_id"); ok {
			held[key{kind, id}] = append(held[key{kind, id}], p)
		}
		return nil
	})
	return held, err
}

// sortedProcs is the holders of one object, each process once, by pid.
func sortedProcs(ps []proc) []proc {
	sort.Slice(ps, func(i, j int) bool { return ps[i].PID < ps[j].PID })
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || p.PID != ps[i-1].PID {
			out = append(out, p)
		}
	}
	return out
}

// joinIDs joins ids with sep.
func joinIDs(ids []uint32, sep string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, sep)
}

// fdinfoID reads the line "name:\tN" of /proc/PID/fdinfo/FD.
func fdinfoID(pid, fd int, name string) (uint32, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			return uint32(id), err == nil
		}
	}
	return 0, false
}
