package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ProbeKind is the kind of dynamic event.
type ProbeKind int

const (
	Kprobe ProbeKind = iota
	Kretprobe
	Uprobe
	Uretprobe
)

func (k ProbeKind) String() string {
	return [...]string{"kprobe", "kretprobe", "uprobe", "uretprobe"}[k]
}

// IsUprobe reports whether k probes user space.
func (k ProbeKind) IsUprobe() bool { return k == Uprobe || k == Uretprobe }

// IsReturn reports whether k fires on return.
func (k ProbeKind) IsReturn() bool { return k == Kretprobe || k == Uretprobe }

// ProbeSpec describes a kprobe or uprobe event to create.
type ProbeSpec struct {
	Kind ProbeKind
	// Symbol is the kernel function for kprobes ("do_sys_openat2", or
	// "module:function"), with Offset bytes into it.
	Symbol string
	// Path is the binary for uprobes, and Offset the file offset of the
	// instruction to probe.
	Path   string
	Offset uint64
	// RefCtrOffset is the file offset of a USDT semaphore the kernel
	// increments while the uprobe exists (4.20).
	RefCtrOffset uint64
	// MaxActive bounds the kretprobe instances in flight (0: the kernel's
	// default).
	MaxActive int
}

// ProbeEvent is a kprobe or uprobe event this process created.
type ProbeEvent struct {
	Kind        ProbeKind
	Group, Name string
	ID          uint64 // the tracepoint id for perf_event_open
	removed     atomic.Bool
}

// Limits of the kernel's parser: event and group names are at most
// MAX_EVENT_NAME_LEN (64) bytes; symbols at most KSYM_NAME_LEN (512 since
// 6.1, 128 before: the kernel refuses what it cannot hold).
const (
	maxEventName = 64
	maxSymbol    = 512
)

// ErrInvalid is returned for a symbol, path or name that cannot be written
// to the kernel safely; nothing is written.
var ErrInvalid = errors.New("tracefs: invalid probe")

// validName accepts what the kernel's is_good_name does, for group and
// event names: a letter or underscore, then letters, digits, underscores.
func validName(s string) error {
	if s == "" || len(s) > maxEventName {
		return fmt.Errorf("%w: name %q must be 1 to %d bytes", ErrInvalid, s, maxEventName)
	}
	for i, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%w: name %q: only letters, digits and '_' (not first a digit) are allowed", ErrInvalid, s)
		}
	}
	return nil
}

// validSymbol accepts kernel symbol names: letters, digits, '_', '.' (the
// compiler's foo.isra.0 and foo.cold), and one ':' after a module name.
// Whitespace, newlines and the parser's other separators are refused.
func validSymbol(s string) error {
	if s == "" || len(s) > maxSymbol {
		return fmt.Errorf("%w: symbol %q must be 1 to %d bytes", ErrInvalid, s, maxSymbol)
	}
	mod, sym, hasMod := strings.Cut(s, ":")
	if !hasMod {
		sym, mod = mod, ""
	}
	for _, part := range []string{mod, sym} {
		for _, c := range []byte(part) {
			if !(c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return fmt.Errorf("%w: symbol %q: character %q is not allowed", ErrInvalid, s, c)
			}
		}
	}
	if sym == "" || hasMod && mod == "" {
		return fmt.Errorf("%w: symbol %q", ErrInvalid, s)
	}
	return nil
}

// validPath accepts an absolute path to a regular file with no whitespace
// or control characters (the kernel splits the command on whitespace).
func validPath(p string) error {
	if !filepath.IsAbs(p) || len(p) >= unix.PathMax {
		return fmt.Errorf("%w: path %q must be absolute and shorter than %d bytes", ErrInvalid, p, unix.PathMax)
	}
	for _, c := range []byte(p) {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: path %q: whitespace and control characters are not allowed", ErrInvalid, p)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("uprobe target: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrInvalid, p)
	}
	return nil
}

var (
	groupOnce sync.Once
	group     string
	eventSeq  atomic.Uint64
)

// Group is the group of every event this process creates:
// bpfkit_<pid>_<start time in clock ticks since boot>. The start time tells
// a dead process's events from those of a later process with the same pid.
func Group() string {
	groupOnce.Do(func() {
		start, _ := processStart(os.Getpid())
		group = fmt.Sprintf("bpfkit_%d_%d", os.Getpid(), start)
	})
	return group
}

// processStart reads field 22 of /proc/<pid>/stat, the start time. The
// command name (field 2) may hold spaces and parentheses: fields are counted
// after its closing parenthesis.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 20 {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// CreateProbe validates spec, writes one line to kprobe_events or
// uprobe_events, and reads the new event's id. If anything fails after the
// event was created, it is removed.
func CreateProbe(spec ProbeSpec) (*ProbeEvent, error) {
	cmd, name, err := probeCommand(spec)
	if err != nil {
		return nil, err
	}
	events := "kprobe_events"
	if spec.Kind.IsUprobe() {
		events = "uprobe_events"
	}
	if err := writeEvents(events, cmd); err != nil {
		return nil, fmt.Errorf("create %s: %w", spec.Kind, err)
	}
	e := &ProbeEvent{Kind: spec.Kind, Group: Group(), Name: name}
	p, err := file("events", e.Group, e.Name, "id")
	if err == nil {
		e.ID, err = readID(p, e.Group+":"+e.Name)
	}
	if err != nil {
		e.Remove()
		return nil, fmt.Errorf("create %s: %w", spec.Kind, err)
	}
	return e, nil
}

// probeCommand builds the kprobe_events or uprobe_events line, after
// validating every part of it.
func probeCommand(s ProbeSpec) (cmd, name string, err error) {
	var target, base string
	switch {
	case s.Kind.IsUprobe():
		if err := validPath(s.Path); err != nil {
			return "", "", err
		}
		target = fmt.Sprintf("%s:%#x", s.Path, s.Offset)
		if s.RefCtrOffset != 0 {
			target += fmt.Sprintf("(%#x)", s.RefCtrOffset)
		}
		base = filepath.Base(s.Path)
	case s.Kind == Kprobe || s.Kind == Kretprobe:
		if err := validSymbol(s.Symbol); err != nil {
			return "", "", err
		}
		target = s.Symbol
		if s.Offset != 0 {
			target += fmt.Sprintf("+%#x", s.Offset)
		}
		base = s.Symbol
	default:
		return "", "", fmt.Errorf("%w: kind %d", ErrInvalid, s.Kind)
	}
	if s.MaxActive < 0 || s.MaxActive > 0 && s.Kind != Kretprobe {
		return "", "", fmt.Errorf("%w: maxactive %d: only kretprobes take one, and not negative", ErrInvalid, s.MaxActive)
	}
	if s.RefCtrOffset != 0 && !s.Kind.IsUprobe() {
		return "", "", fmt.Errorf("%w: ref_ctr_offset is for uprobes", ErrInvalid)
	}
	// The event name: the symbol or file name made safe, and a number
	// unique in this process.
	seq := strconv.FormatUint(eventSeq.Add(1), 10)
	safe := []byte(base)
	for i, c := range safe {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			safe[i] = '_'
		}
	}
	name = "e" + seq + "_" + string(safe)
	name = name[:min(len(name), maxEventName)]
	kind := "p"
	if s.Kind.IsReturn() {
		kind = "r"
		if s.MaxActive > 0 {
			kind += strconv.Itoa(s.MaxActive)
		}
	}
	return fmt.Sprintf("%s:%s/%s %s", kind, Group(), name, target), name, nil
}

// writeEvents writes one command, which must be a single line, to
// kprobe_events or uprobe_events. On failure the kernel's error_log (5.4+)
// often says more than the errno; its last line is added to the error.
func writeEvents(events, cmd string) error {
	if strings.ContainsAny(cmd, "\n\r\x00") {
		return fmt.Errorf("%w: command %q is not one line", ErrInvalid, cmd)
	}
	p, err := file(events)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: this kernel has no %s (CONFIG_KPROBE_EVENTS or CONFIG_UPROBE_EVENTS is off): %w", p, events, err)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString(cmd + "\n"); err != nil {
		if detail := lastErrorLog(); detail != "" {
			return fmt.Errorf("%q: %w (error_log: %s)", cmd, err, detail)
		}
		return fmt.Errorf("%q: %w", cmd, err)
	}
	return nil
}

func lastErrorLog() string {
	p, err := file("error_log")
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	// Entries are "[time] trace_kprobe: error: <reason>" then two lines
	// echoing the command with a caret.
	for i := len(lines) - 1; i >= 0; i-- {
		if j := strings.Index(lines[i], "error: "); j >= 0 {
			return strings.TrimSpace(lines[i][j+len("error: "):])
		}
	}
	return ""
}

// Remove deletes the event. Removing twice is harmless. The kernel refuses
// (EBUSY) while a perf event still uses it: close that first.
func (e *ProbeEvent) Remove() error {
	if e.removed.Swap(true) {
		return nil
	}
	events := "kprobe_events"
	if e.Kind.IsUprobe() {
		events = "uprobe_events"
	}
	if err := writeEvents(events, fmt.Sprintf("-:%s/%s", e.Group, e.Name)); err != nil {
		e.removed.Store(false)
		return fmt.Errorf("remove %s %s/%s: %w", e.Kind, e.Group, e.Name, err)
	}
	return nil
}

// Events lists the kprobe events (events "kprobe_events") or uprobe events
// (events "uprobe_events") now defined, as "group/name".
func Events(events string) ([]string, error) {
	p, err := file(events)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // this kernel cannot have any
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		// "p:group/name target" or "r10:group/name target"
		if _, rest, ok := strings.Cut(line, ":"); ok {
			ev, _, _ := strings.Cut(rest, " ")
			out = append(out, ev)
		}
	}
	return out, nil
}

// Sweep removes the events left by bpfkit processes that are gone (killed
// with SIGKILL, say): those of groups bpfkit_<pid>_<start> whose process no
// longer exists or has another start time. It returns what it removed.
func Sweep() ([]string, error) {
	var removed []string
	var errs []error
	for _, events := range []string{"kprobe_events", "uprobe_events"} {
		list, err := Events(events)
		if err != nil {
			return removed, err
		}
		for _, ev := range list {
			grp, _, _ := strings.Cut(ev, "/")
			var pid int
			var start uint64
			if n, _ := fmt.Sscanf(grp, "bpfkit_%d_%d", &pid, &start); n != 2 || grp != fmt.Sprintf("bpfkit_%d_%d", pid, start) {
				continue
			}
			if now, err := processStart(pid); err == nil && now == start {
				continue // alive
			}
			if err := writeEvents(events, "-:"+ev); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, ev)
		}
	}
	return removed, errors.Join(errs...)
}
