package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
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

// kinds says, by ProbeKind, its name, its events' file and its perf PMU.
var kinds = [...]kindRow{
	Kprobe:    {"kprobe", "kprobe_events", "kprobe"},
	Kretprobe: {"kretprobe", "kprobe_events", "kprobe"},
	Uprobe:    {"uprobe", "uprobe_events", "uprobe"},
	Uretprobe: {"uretprobe", "uprobe_events", "uprobe"},
}

type kindRow struct{ name, events, pmu string }

func (k ProbeKind) valid() bool { return k >= 0 && int(k) < len(kinds) }

// row is k's row of kinds, or the zero row for a number that is no kind.
func (k ProbeKind) row() (row kindRow) {
	if k.valid() {
		row = kinds[k]
	}
	return row
}

// String is the kind's name ("kretprobe"), or ProbeKind(n) for a number
// that is no kind.
func (k ProbeKind) String() string {
	if !k.valid() {
		return "ProbeKind(" + strconv.Itoa(int(k)) + ")"
	}
	return kinds[k].name
}

// PMU is the perf event source of /sys/bus/event_source/devices that opens
// probes of this kind (4.17): "kprobe" or "uprobe"; "" for no kind.
func (k ProbeKind) PMU() string { return k.row().pmu }

// EventsFile is the tracefs file that makes events of this kind:
// "kprobe_events" or "uprobe_events"; "" for no kind.
func (k ProbeKind) EventsFile() string { return k.row().events }

// IsUprobe reports whether k probes user space.
func (k ProbeKind) IsUprobe() bool { return k == Uprobe || k == Uretprobe }

// IsReturn reports whether k fires on return.
func (k ProbeKind) IsReturn() bool { return k == Kretprobe || k == Uretprobe }

// ProbeSpec describes a kprobe or uprobe event to create.
type ProbeSpec struct {
	Kind   ProbeKind // which of the four
	Symbol string    // a kprobe's function: "do_sys_openat2", "module:function"
	Path   string    // a uprobe's binary, absolute
	// Offset is bytes into Symbol, or the instruction's file offset in
	// Path (prog checks that it is executable).
	Offset       uint64
	RefCtrOffset uint64 // file offset of a USDT semaphore the kernel increments (4.20)
	MaxActive    int    // bounds the kretprobe instances in flight (0: the kernel's default)
}

// ProbeEvent is a kprobe or uprobe event this process created.
type ProbeEvent struct {
	Kind  ProbeKind // the kind it was created as
	Group string    // its directory under events/ in tracefs
	Name  string    // its name there: the event is Group/Name
	ID    uint64    // the tracepoint id for perf_event_open

	mu      sync.Mutex
	removed bool
}

// Limits of the kernel's parser.
const (
	// maxName: MAX_EVENT_NAME_LEN (64) with the NUL, checked with >= since
	// 6.12 (commit 4f7caaaf95a2), in 64-byte buffers before.
	maxName = 63
	// maxSymbol: KSYM_NAME_LEN, 512 since 6.1, 128 before, which refused
	// longer symbols.
	maxSymbol = 512
	// maxCommand: the bytes of a command line before its newline, since
	// trace_parse_run_command reads WRITE_BUFSIZE chunks of 4096.
	maxCommand = 4094
)

// ErrInvalid is returned for a symbol, path, name or offset that cannot be
// handed to the kernel safely; nothing is written then.
var ErrInvalid = errors.New("tracefs: invalid probe")

// isWord is [A-Za-z0-9_].
func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validName accepts group and event names as is_good_name does: a letter or
// '_', then letters, digits and '_'.
func validName(s string) error {
	if s == "" || len(s) > maxName {
		return fmt.Errorf("%w: name %q must be 1 to %d bytes", ErrInvalid, s, maxName)
	}
	for i, c := range []byte(s) {
		if !isWord(c) || i == 0 && c >= '0' && c <= '9' {
			return fmt.Errorf("%w: name %q: only letters, digits and '_' (not first a digit) are allowed",
				ErrInvalid, s)
		}
	}
	return nil
}

// validSymbol accepts kernel symbols: letters, digits, '_', '.' (foo.isra.0,
// foo.cold), and one ':' after a module name.
func validSymbol(s string) error {
	if s == "" || len(s) > maxSymbol {
		return fmt.Errorf("%w: symbol %q must be 1 to %d bytes", ErrInvalid, s, maxSymbol)
	}
	for _, c := range []byte(s) {
		if !isWord(c) && c != '.' && c != ':' {
			return fmt.Errorf("%w: symbol %q: character %q is not allowed", ErrInvalid, s, c)
		}
	}
	mod, sym, hasMod := strings.Cut(s, ":")
	if hasMod && (mod == "" || sym == "" || strings.Contains(sym, ":")) {
		return fmt.Errorf("%w: symbol %q: want function or module:function", ErrInvalid, s)
	}
	return nil
}

// Check validates s for both doors, the events files and the perf PMUs: a
// known kind; a kprobe's symbol; a uprobe's absolute path to a regular
// file, without NUL, and offsets inside it; MaxActive on kretprobes only.
// CreateProbe checks what only the text command cannot carry.
func (s ProbeSpec) Check() error {
	if !s.Kind.valid() {
		return fmt.Errorf("%w: kind %d", ErrInvalid, int(s.Kind))
	}
	if s.MaxActive < 0 || s.MaxActive > 0 && s.Kind != Kretprobe {
		return fmt.Errorf("%w: maxactive %d: only kretprobes take one, and not negative",
			ErrInvalid, s.MaxActive)
	}
	if !s.Kind.IsUprobe() {
		if s.Path != "" || s.RefCtrOffset != 0 {
			return fmt.Errorf("%w: a %s takes a symbol, not a path or ref_ctr_offset", ErrInvalid, s.Kind)
		}
		return validSymbol(s.Symbol)
	}
	if s.Symbol != "" {
		return fmt.Errorf("%w: a %s takes a path and a file offset, not a symbol "+
			"(prog.AttachUprobe resolves symbols)", ErrInvalid, s.Kind)
	}
	if !filepath.IsAbs(s.Path) || len(s.Path) >= unix.PathMax || strings.IndexByte(s.Path, 0) >= 0 {
		return fmt.Errorf("%w: path %q must be absolute, shorter than %d bytes and free of NUL",
			ErrInvalid, s.Path, unix.PathMax)
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
		return fmt.Errorf("%w: offset %#x or ref_ctr_offset %#x is past the end of %s (%d bytes)",
			ErrInvalid, s.Offset, s.RefCtrOffset, s.Path, size)
	}
	// A 32-bit kernel holds both in unsigned longs: uprobe_events parses
	// them with kstrtoul (ERANGE), and the PMU's create_local_trace_uprobe
	// would cut probe_offset to 32 bits unseen, probing elsewhere.
	long, err := sys.KernelLongSize()
	if err == nil && long == 4 && max(s.Offset, s.RefCtrOffset) > math.MaxUint32 {
		return fmt.Errorf("%w: offset %#x or ref_ctr_offset %#x: "+
			"a 32-bit kernel takes file offsets below 4 GiB", ErrInvalid, s.Offset, s.RefCtrOffset)
	}
	return nil
}

// commandPath refuses a path's bytes that a uprobe_events command would not
// read as part of it: trace_parse_run_command cuts at '#', argv_split
// splits at the kernel's isspace() (lib/ctype.c): \t \n \v \f \r, ' '
// and 0xA0, Latin-1's no-break space.
func commandPath(p string) error {
	for _, c := range []byte(p) {
		if c >= '\t' && c <= '\r' || c == ' ' || c == 0xa0 || c == '#' {
			return fmt.Errorf("%w: path %q: byte %#x splits or ends a uprobe_events command; "+
				"use the uprobe PMU", ErrInvalid, p, c)
		}
	}
	return nil
}

var eventSeq atomic.Uint64

// CreateProbe validates spec, writes a line to kprobe_events or
// uprobe_events, and reads the new event's id, removing the event if that
// fails.
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
	if e.ID, err = TracepointID(group, name); err != nil {
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
	// A number unique in this process, the symbol or file name made safe.
	safe := []byte("e" + strconv.FormatUint(eventSeq.Add(1), 10) + "_" + base)
	for i, c := range safe {
		if !isWord(c) {
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

// writeEvents writes one command line to the kind's events file; on
// failure it quotes what the write added to error_log (5.4+), which says
// more than the errno.
func writeEvents(k ProbeKind, cmd string) error {
	if strings.ContainsAny(cmd, "\n\x00") || len(cmd) > maxCommand {
		return fmt.Errorf("%w: command %q is not one line of at most %d bytes",
			ErrInvalid, cmd, maxCommand)
	}
	dir, err := Path()
	if err != nil {
		return err
	}
	p, log := dir+"/"+k.EventsFile(), dir+"/error_log"
	before, _ := os.ReadFile(log)
	if err = sys.WriteControl(p, cmd+"\n"); err == nil {
		return nil
	}
	if _, serr := os.Stat(p); errors.Is(serr, fs.ErrNotExist) {
		pmu := strings.ToUpper(k.PMU())
		return fmt.Errorf("this kernel has no %ss: %s is missing "+
			"(CONFIG_%sS or CONFIG_%s_EVENTS is off): %w: %w",
			k.PMU(), p, pmu, pmu, sys.ErrNotSupported, err)
	}
	after, _ := os.ReadFile(log)
	if detail := newError(string(before), string(after)); detail != "" {
		return fmt.Errorf("%q: %w (error_log: %s)", cmd, err, detail)
	}
	return fmt.Errorf("%q: %w", cmd, err)
}

// newError returns the reason of after's last error_log entry unless before
// has it too (an older failure). Entries are "[time] trace_kprobe: error:
// <reason>", then the command and a caret; the time tells apart two
// entries of the same text.
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

// Remove deletes the event, once however often it is called. While a perf
// event uses it the kernel refuses (EBUSY): it stays, and a later Remove
// tries again.
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

// Events lists, as "group/name", the events of kind k's file,
// kprobe_events or uprobe_events.
func Events(k ProbeKind) ([]string, error) {
	if !k.valid() {
		return nil, fmt.Errorf("%w: kind %d", ErrInvalid, int(k))
	}
	p, err := file(k.EventsFile())
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
	return eventNames(string(b)), nil
}

// DynamicEvents lists, as "group/name", the events made at run time
// rather than compiled into the kernel: kprobe and uprobe events, and
// where the kernel has dynamic_events (4.17) synthetic events, eprobes,
// fprobes and the like too. An event of tracefs that is not one of them
// is a tracepoint of the kernel, which a raw tracepoint of the same name
// reaches.
func DynamicEvents() ([]string, error) {
	p, err := file("dynamic_events")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err == nil {
		return eventNames(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tracefs: %w", err)
	}
	var out []string
	for _, k := range []ProbeKind{Kprobe, Uprobe} {
		evs, err := Events(k)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	return out, nil
}

// eventNames reads "group/name" from each line of an events file,
// "p:group/name target" or "r10:group/name target".
func eventNames(text string) (out []string) {
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		if _, rest, ok := strings.Cut(line, ":"); ok {
			ev, _, _ := strings.Cut(rest, " ")
			out = append(out, ev)
		}
	}
	return out
}
