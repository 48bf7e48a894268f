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

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// ProbeKind is the kind of dynamic event.
type ProbeKind int

const (
	// Kprobe runs when the kernel enters a function.
	Kprobe ProbeKind = iota
	// Kretprobe runs when a kernel function returns.
	Kretprobe
	// Uprobe runs when a process executes an instruction of a binary.
	Uprobe
	// Uretprobe runs when a function of a binary returns.
	Uretprobe
)

// kinds says, for each ProbeKind, its name, the tracefs file that creates
// its events and the perf PMU (4.17) that opens it without tracefs.
var kinds = [...]struct{ name, events, pmu string }{
	Kprobe:    {"kprobe", "kprobe_events", "kprobe"},
	Kretprobe: {"kretprobe", "kprobe_events", "kprobe"},
	Uprobe:    {"uprobe", "uprobe_events", "uprobe"},
	Uretprobe: {"uretprobe", "uprobe_events", "uprobe"},
}

func (k ProbeKind) valid() bool { return k >= 0 && int(k) < len(kinds) }

// String is the kind's name ("kretprobe"), or ProbeKind(n) for a number
// that is no kind.
func (k ProbeKind) String() string {
	if !k.valid() {
		return "ProbeKind(" + strconv.Itoa(int(k)) + ")"
	}
	return kinds[k].name
}

// PMU is the name of the perf event source, under
// /sys/bus/event_source/devices, that opens probes of this kind: "kprobe"
// or "uprobe"; "" for a number that is no kind.
func (k ProbeKind) PMU() string {
	if !k.valid() {
		return ""
	}
	return kinds[k].pmu
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
	// Path is the binary for uprobes, an absolute path, and Offset the file
	// offset of the instruction to probe. Offset must lie in the file;
	// that it lies in an executable segment is for the caller to know (prog
	// checks it in the ELF program headers).
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

	mu      sync.Mutex
	removed bool
}

// Limits of the kernel's parser. Event and group names hold at most
// MAX_EVENT_NAME_LEN (64) bytes with the NUL, so 63 of text (checked with
// >= since 6.12, commit 4f7caaaf95a2, and stored in 64-byte buffers
// before). Symbols are at most KSYM_NAME_LEN (512 since 6.1, 128 before:
// the kernel refuses what it cannot hold). trace_parse_run_command reads a
// command in WRITE_BUFSIZE (4096) chunks and takes a line of at most 4094
// bytes before its newline.
const (
	maxName    = 63
	maxSymbol  = 512
	maxCommand = 4094
)

// ErrInvalid is returned for a symbol, path, name or offset that cannot be
// handed to the kernel safely; nothing is written.
var ErrInvalid = errors.New("tracefs: invalid probe")

// validName accepts what the kernel's is_good_name does, for group and
// event names: a letter or underscore, then letters, digits, underscores.
func validName(s string) error {
	if s == "" || len(s) > maxName {
		return fmt.Errorf("%w: name %q must be 1 to %d bytes", ErrInvalid, s, maxName)
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
// Whitespace, NUL, newlines and the parser's other separators are refused.
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

// Check validates s as either door to the kernel takes it, kprobe_events
// or uprobe_events and the perf PMUs: a known kind; for kprobes a symbol;
// for uprobes an absolute path to a regular file with no NUL, and offsets
// inside it; MaxActive only on kretprobes. What only the tracefs text
// command cannot carry is checked by CreateProbe.
func (s ProbeSpec) Check() error {
	if !s.Kind.valid() {
		return fmt.Errorf("%w: kind %d", ErrInvalid, int(s.Kind))
	}
	if s.MaxActive < 0 || s.MaxActive > 0 && s.Kind != Kretprobe {
		return fmt.Errorf("%w: maxactive %d: only kretprobes take one, and not negative", ErrInvalid, s.MaxActive)
	}
	if !s.Kind.IsUprobe() {
		if s.Path != "" || s.RefCtrOffset != 0 {
			return fmt.Errorf("%w: a %s takes a symbol, not a path or ref_ctr_offset", ErrInvalid, s.Kind)
		}
		return validSymbol(s.Symbol)
	}
	if s.Symbol != "" {
		return fmt.Errorf("%w: a %s takes a path and a file offset, not a symbol (prog.AttachUprobe resolves symbols)", ErrInvalid, s.Kind)
	}
	if !filepath.IsAbs(s.Path) || len(s.Path) >= unix.PathMax || strings.IndexByte(s.Path, 0) >= 0 {
		return fmt.Errorf("%w: path %q must be absolute, shorter than %d bytes and free of NUL", ErrInvalid, s.Path, unix.PathMax)
	}
	st, err := os.Stat(s.Path)
	if err != nil {
		return fmt.Errorf("tracefs: %s target: %w", s.Kind, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrInvalid, s.Path)
	}
	size := uint64(st.Size())
	if s.Offset >= size || s.RefCtrOffset >= size && s.RefCtrOffset != 0 {
		return fmt.Errorf("%w: offset %#x or ref_ctr_offset %#x is past the end of %s (%d bytes)", ErrInvalid, s.Offset, s.RefCtrOffset, s.Path, size)
	}
	return nil
}

// commandPath refuses the bytes of a path that the kernel would not read as
// part of it in a uprobe_events command: trace_parse_run_command cuts the
// line at '#' (a comment) and argv_split splits it where the kernel's
// isspace() says so, which (lib/ctype.c) is \t \n \v \f \r, ' ' and 0xA0,
// Latin-1's no-break space.
func commandPath(p string) error {
	for _, c := range []byte(p) {
		if c >= '\t' && c <= '\r' || c == ' ' || c == 0xa0 || c == '#' {
			return fmt.Errorf("%w: path %q: byte %#x splits or ends a uprobe_events command; use the uprobe PMU", ErrInvalid, p, c)
		}
	}
	return nil
}

var eventSeq atomic.Uint64

// CreateProbe validates spec, writes one line to kprobe_events or
// uprobe_events, and reads the new event's id. If anything fails after the
// event was created, it is removed.
func CreateProbe(spec ProbeSpec) (*ProbeEvent, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	group, err := Group()
	if err != nil {
		return nil, wrap(err, "create %s", spec.Kind)
	}
	cmd, name, err := probeCommand(spec, group)
	if err != nil {
		return nil, err
	}
	if err := writeEvents(spec.Kind, cmd); err != nil {
		return nil, wrap(err, "create %s", spec.Kind)
	}
	e := &ProbeEvent{Kind: spec.Kind, Group: group, Name: name}
	p, err := file("events", e.Group, e.Name, "id")
	if err == nil {
		e.ID, err = readID(p, e.Group+":"+e.Name)
	}
	if err != nil {
		e.Remove()
		return nil, wrap(err, "create %s", spec.Kind)
	}
	return e, nil
}

// probeCommand builds the kprobe_events or uprobe_events line for a spec
// that passed Check.
func probeCommand(s ProbeSpec, group string) (cmd, name string, err error) {
	target, base := s.Symbol, s.Symbol
	if s.Offset != 0 {
		target += fmt.Sprintf("+%#x", s.Offset)
	}
	if s.Kind.IsUprobe() {
		if err := commandPath(s.Path); err != nil {
			return "", "", err
		}
		target, base = fmt.Sprintf("%s:%#x", s.Path, s.Offset), filepath.Base(s.Path)
		if s.RefCtrOffset != 0 {
			target += fmt.Sprintf("(%#x)", s.RefCtrOffset)
		}
	}
	// The event name: a number unique in this process, then the symbol or
	// file name made safe, cut to the kernel's limit.
	safe := []byte("e" + strconv.FormatUint(eventSeq.Add(1), 10) + "_" + base)
	for i, c := range safe {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			safe[i] = '_'
		}
	}
	name = string(safe[:min(len(safe), maxName)])
	kind := "p"
	if s.Kind.IsReturn() {
		kind = "r"
		if s.MaxActive > 0 {
			kind += strconv.Itoa(s.MaxActive)
		}
	}
	return fmt.Sprintf("%s:%s/%s %s", kind, group, name, target), name, nil
}

// writeEvents writes one command, which must be a single line, to the
// kind's kprobe_events or uprobe_events. On failure the kernel's error_log
// (5.4+) often says more than the errno: the entry this write added, if
// any, is quoted.
func writeEvents(k ProbeKind, cmd string) error {
	if strings.ContainsAny(cmd, "\n\x00") || len(cmd) > maxCommand {
		return fmt.Errorf("%w: command %q is not one line of at most %d bytes", ErrInvalid, cmd, maxCommand)
	}
	p, err := file(kinds[k].events)
	if err != nil {
		return err
	}
	before := errorLog()
	err = sys.WriteControl(p, cmd+"\n")
	if err == nil {
		return nil
	}
	if _, serr := os.Stat(p); errors.Is(serr, fs.ErrNotExist) {
		pmu := strings.ToUpper(kinds[k].pmu)
		return fmt.Errorf("this kernel has no %ss: %s is missing (CONFIG_%sS or CONFIG_%s_EVENTS is off): %w: %w",
			kinds[k].pmu, p, pmu, pmu, sys.ErrNotSupported, err)
	}
	if detail := newError(before, errorLog()); detail != "" {
		return fmt.Errorf("%q: %w (error_log: %s)", cmd, err, detail)
	}
	return fmt.Errorf("%q: %w", cmd, err)
}

func errorLog() string {
	p, err := file("error_log")
	if err != nil {
		return ""
	}
	b, _ := os.ReadFile(p)
	return string(b)
}

// newError returns the reason of the last error_log entry in after unless
// before has it too: then the failed write added none, and the entry is an
// older, unrelated failure. Entries are "[time] trace_kprobe: error:
// <reason>", then two lines echoing the command with a caret; the time
// tells two entries with the same text apart.
func newError(before, after string) string {
	lines := strings.Split(after, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, reason, ok := strings.Cut(lines[i], ": error: "); ok && strings.HasPrefix(lines[i], "[") {
			if strings.Contains(before, lines[i]) {
				return ""
			}
			return strings.TrimSpace(reason)
		}
	}
	return ""
}

// Remove deletes the event. Removing twice is harmless, and concurrent
// calls remove it once. The kernel refuses (EBUSY) while a perf event
// still uses it: the event then stays, and a later Remove, once that perf
// event is closed, tries again.
func (e *ProbeEvent) Remove() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return nil
	}
	if err := errors.Join(validName(e.Group), validName(e.Name)); err != nil {
		return err
	}
	if !e.Kind.valid() {
		return fmt.Errorf("%w: kind %d", ErrInvalid, int(e.Kind))
	}
	if err := writeEvents(e.Kind, "-:"+e.Group+"/"+e.Name); err != nil {
		return wrap(err, "remove %s %s/%s (it stays until a Remove succeeds)", e.Kind, e.Group, e.Name)
	}
	e.removed = true
	return nil
}

// Events lists, as "group/name", the events now defined in the file that
// holds probes of kind k: kprobe_events for kprobes and kretprobes,
// uprobe_events for uprobes and uretprobes.
func Events(k ProbeKind) ([]string, error) {
	if !k.valid() {
		return nil, fmt.Errorf("%w: kind %d", ErrInvalid, int(k))
	}
	p, err := file(kinds[k].events)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // this kernel cannot have any
	}
	if err != nil {
		return nil, fmt.Errorf("tracefs: %w", err)
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
