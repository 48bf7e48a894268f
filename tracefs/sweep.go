package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Group is the group of this process's events:
// bpfkit_<pid namespace>_<pid>_<start time>. The PID namespace's inode
// tells a container's pid 1 from the host's. The start time, in clock
// ticks since boot, tells a dead process from a later one of the same pid.
// The group is at most 49 bytes, under the kernel's 63.
//
// Group, and CreateProbe, fail when /proc cannot say these: without them
// another process's Sweep could take this live one for dead.
func Group() (string, error) {
	group.once.Do(func() { group.name, group.err = makeGroup() })
	return group.name, group.err
}

// group is Group's answer. Not a sync.OnceValues: a package variable made
// by a call is made at start-up, and links what it holds into every
// program, tracepoint-only ones too.
var group struct {
	once sync.Once
	name string
	err  error
}

func makeGroup() (string, error) {
	ns, err := pidNamespace()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "", fmt.Errorf("tracefs: event group: %w", err)
	}
	start, err := parseStat(b)
	if err != nil {
		return "", fmt.Errorf("tracefs: event group: /proc/self/stat: %w", err)
	}
	return fmt.Sprintf("bpfkit_%d_%d_%d", ns, os.Getpid(), start), nil
}

// pidNamespace is this process's PID namespace's inode ("pid:[4026531836]").
func pidNamespace() (uint64, error) {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, fmt.Errorf("tracefs: event group: pid namespace: %w", err)
	}
	s, ok := strings.CutPrefix(l, "pid:[")
	s, ok2 := strings.CutSuffix(s, "]")
	n, err := strconv.ParseUint(s, 10, 64)
	if !ok || !ok2 || err != nil {
		return 0, fmt.Errorf("tracefs: event group: pid namespace link %q", l)
	}
	return n, nil
}

// parseStat reads the start time, field 22, of a /proc/<pid>/stat, counting
// after the command name's last ')' (it may hold spaces and parentheses).
func parseStat(b []byte) (uint64, error) {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("%d fields after the command name, want 20 or more", len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// parseGroup splits bpfkit_<pid namespace>_<pid>_<start>; ok is false for
// any other name, with leading zeros or signs too.
func parseGroup(g string) (ns, pid, start uint64, ok bool) {
	parts := strings.Split(g, "_")
	if len(parts) != 4 || parts[0] != "bpfkit" {
		return 0, 0, 0, false
	}
	var n [3]uint64
	for i, p := range parts[1:] {
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil || strconv.FormatUint(v, 10) != p {
			return 0, 0, 0, false
		}
		n[i] = v
	}
	return n[0], n[1], n[2], true
}

// Kept is a bpfkit event that Sweep left in place, and why.
type Kept struct {
	Event  string // "group/name"
	Reason string // why, in words: its process may be alive, or the kernel refused
}

// Sweep removes the kprobe and uprobe events left by bpfkit processes that
// are gone (killed, say), and returns them as "group/name". It removes an
// event only when it can prove the owner dead: the group names this PID
// namespace, /proc is its, and no process there has the group's pid and
// start time. It keeps the other bpfkit events, with the reason: an owner
// alive or in another PID namespace, an older bpfkit's name without a
// namespace, a removal refused (then with an error).
func Sweep() (removed []string, kept []Kept, err error) {
	ns, err := pidNamespace()
	if err != nil {
		return nil, nil, wrap(err, "sweep")
	}
	procOK := procIsOurs()
	var errs []error
	for _, k := range []ProbeKind{Kprobe, Uprobe} {
		list, err := Events(k)
		if err != nil {
			return removed, kept, wrap(errors.Join(append(errs, err)...), "sweep")
		}
		for _, ev := range list {
			grp, _, _ := strings.Cut(ev, "/")
			if !strings.HasPrefix(grp, "bpfkit_") {
				continue
			}
			if why := keepReason(grp, ns, procOK); why != "" {
				kept = append(kept, Kept{ev, why})
				continue
			}
			// ENOENT: another Sweep removed it since the listing; it is gone.
			if err := writeEvents(k, "-:"+ev); err != nil && !errors.Is(err, fs.ErrNotExist) {
				kept = append(kept, Kept{ev, "the kernel refused to remove it: " + err.Error()})
				errs = append(errs, err)
				continue
			}
			removed = append(removed, ev)
		}
	}
	return removed, kept, wrap(errors.Join(errs...), "sweep")
}

// Ownership is what Owner says of an event: whether bpfkit made it and,
// if so, whether Sweep would remove it.
type Ownership struct {
	Bpfkit bool   // the event's group is a bpfkit process's
	Stale  bool   // its owner is provably gone: Sweep would remove it
	Why    string // why Sweep would keep a bpfkit event, or ""
}

// Owner says whether the event "group/name" is a bpfkit event and, if so,
// whether it is stale (Sweep would remove it), or why it would stay.
func Owner(event string) Ownership {
	grp, _, _ := strings.Cut(event, "/")
	if !strings.HasPrefix(grp, "bpfkit_") {
		return Ownership{}
	}
	ns, err := pidNamespace()
	if err != nil {
		return Ownership{Bpfkit: true, Why: err.Error()}
	}
	why := keepReason(grp, ns, procIsOurs())
	return Ownership{Bpfkit: true, Stale: why == "", Why: why}
}

// procIsOurs reports whether /proc is this PID namespace's: the NSpid line
// of /proc/self/status (4.1+) lists a pid per namespace from /proc's down.
func procIsOurs() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return len(strings.Fields(rest)) == 1
		}
	}
	return false
}

// keepReason says why grp's owner cannot be proven dead, or "" if it is.
func keepReason(grp string, ns uint64, procOK bool) string {
	gns, pid, start, ok := parseGroup(grp)
	switch {
	case !ok:
		return "the group is not bpfkit_<pid namespace>_<pid>_<start>: " +
			"an older bpfkit's, whose owner cannot be told apart"
	case gns != ns:
		return fmt.Sprintf("the owner, pid %d, runs in another PID namespace "+
			"(pid:[%d]; this is pid:[%d]): it cannot be seen from here", pid, gns, ns)
	case !procOK:
		return "/proc is not this PID namespace's: mount this namespace's /proc to sweep its events"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("/proc/%d/stat: %v", pid, err)
	}
	now, err := parseStat(b)
	switch {
	case err != nil:
		return fmt.Sprintf("/proc/%d/stat: %v", pid, err)
	case now == start:
		return fmt.Sprintf("the owner, pid %d, is alive", pid)
	}
	return ""
}
