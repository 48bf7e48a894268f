package tool

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/sys"
)

// Tool is one command's name, help and common flags.
type Tool struct {
	Name     string
	Flags    *flag.FlagSet
	JSON     bool          // -json: one JSON object per line
	Interval time.Duration // the positional interval, or the default
	Count    int           // the positional count; 0 means until stopped
	Args     []string      // with TakesArgs, the positional arguments before the interval
	// Flush, if set, is the longest Read lets a sample wait in a ring that
	// wakes it only past a watermark (perfring.Options.Watermark), which
	// spares the producer a wake-up per sample: Read looks at the rings at
	// least this often.
	Flush time.Duration
	// Batch, if set, makes Read read every ring each time it is woken, and
	// then call Batch: the samples it has handed to sample since are a
	// batch of all the rings held, which a tool may print in its own order
	// (tracex5: by time, where each CPU's ring is in order but the rings
	// are not in order with each other).
	Batch func() error

	summary, usage string
	examples       []string
	positional     bool
	takesArgs      bool
	plain          bool // no -json
	version        bool // -version
	commonDefined  bool // -json and -version are defined
	Stdout, Stderr io.Writer
}

// New makes a tool. usage is what follows the name on the usage line
// ("[flags] [interval [count]]"); examples are whole command lines, each
// with a comment after " # ". Every tool has -h, -version and, unless
// Plain says otherwise, -json.
func New(name, summary, usage string, examples ...string) *Tool {
	t := &Tool{Name: name, summary: summary, usage: usage, examples: examples, Stdout: os.Stdout, Stderr: os.Stderr}
	t.Flags = flag.NewFlagSet(name, flag.ContinueOnError)
	t.Flags.SetOutput(io.Discard)
	return t
}

// Plain makes a tool that prints text only: it has no -json flag.
func (t *Tool) Plain() *Tool {
	t.plain = true
	return t
}

// defineCommon defines the flags every tool has, once, when the tool's own
// are defined too: -json unless the tool is Plain, and -version.
func (t *Tool) defineCommon() {
	if t.commonDefined {
		return
	}
	t.commonDefined = true
	if !t.plain {
		t.Flags.BoolVar(&t.JSON, "json", false, "print one JSON object per line instead of text")
	}
	t.Flags.BoolVar(&t.version, "version", false, "print the version of the tool and exit")
}

// Periodic makes the tool take an interval (seconds, or a duration such as
// 500ms) and a count as positional arguments, as bcc's tools do, with def
// the interval when none is given.
func (t *Tool) Periodic(def time.Duration) *Tool {
	t.positional, t.Interval = true, def
	return t
}

// TakesArgs makes the tool take positional arguments, in Args: a path, an
// ID, or, for a periodic tool, arguments before its interval and count
// such as funccount's patterns (the trailing arguments that read as an
// interval and a count are those).
func (t *Tool) TakesArgs() *Tool {
	t.takesArgs = true
	return t
}

// PrintUsage writes the description, usage line, flags and examples.
func (t *Tool) PrintUsage(w io.Writer) {
	t.defineCommon()
	usage := strings.TrimSpace(t.Name + " " + t.usage)
	fmt.Fprintf(w, "%s: %s\n\nusage: %s\n\nflags:\n", t.Name, t.summary, usage)
	t.Flags.SetOutput(w)
	t.Flags.PrintDefaults()
	t.Flags.SetOutput(io.Discard)
	if t.positional {
		fmt.Fprintf(w, "  interval\n    \tprint every interval: seconds, or a duration with its unit (default %v)\n", t.Interval)
		fmt.Fprintf(w, "  count\n    \tstop after count intervals (default: until Ctrl-C)\n")
	}
	if len(t.examples) > 0 {
		fmt.Fprintf(w, "\nexamples:\n")
		for _, e := range t.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// ErrUsage marks a bad flag or argument: exit status 2.
var ErrUsage = errors.New("usage")

// Usagef is a usage error with its message.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// ErrVersion is what Parse returns for -version.
var ErrVersion = errors.New("version asked for")

// Parse parses the flags and positional arguments of args. Flags may come
// before, between or after the positional arguments, as users of bcc's
// tools type them ("usdt PATH PROBE -p 1"); "--" ends the flags, so that
// an argument that begins with '-' can follow it. A flag's value follows
// it ("-p 5") or an '=' ("-p=5"); a flag may start with "--" too.
//
// -h returns flag.ErrHelp and -version ErrVersion; anything else wrong an
// error wrapping ErrUsage whose message quotes what the user typed.
func (t *Tool) Parse(args []string) error {
	t.defineCommon()
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(arg) < 2 || arg[0] != '-': // "-" alone names stdin for tools that read it
			pos = append(pos, arg)
		default:
			used, err := t.parseFlag(arg, args[i+1:])
			if err != nil {
				return err
			}
			i += used
		}
	}
	if t.version {
		return ErrVersion
	}
	return t.positionals(pos)
}

// parseFlag sets the flag arg names, to the value after its '=' or, for a
// flag that is not boolean, to the next argument; it returns how many of
// the next arguments it took.
func (t *Tool) parseFlag(arg string, next []string) (int, error) {
	name, value, hasValue := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
	f := t.Flags.Lookup(name)
	if f == nil && (name == "h" || name == "help") {
		return 0, flag.ErrHelp
	}
	if f == nil {
		return 0, Usagef("unknown flag %q (an argument that begins with '-' goes after --)", arg)
	}
	used := 0
	if !hasValue {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			value = "true"
		} else if len(next) == 0 {
			return 0, Usagef("flag -%s needs a value", name)
		} else {
			value, used = next[0], 1
		}
	}
	if err := t.Flags.Set(name, value); err != nil {
		return 0, Usagef("-%s %q: %v", name, value, err)
	}
	return used, nil
}

// positionals takes the positional arguments: those before the interval
// into Args with TakesArgs, then the interval and count of a periodic tool.
func (t *Tool) positionals(rest []string) error {
	if t.takesArgs {
		n := len(rest)
		for t.positional && n > 0 && len(rest)-n < 2 && IsNumber(rest[n-1]) {
			n--
		}
		t.Args, rest = rest[:n], rest[n:]
	}
	if !t.positional {
		if len(rest) > 0 {
			return Usagef("unexpected argument %q", rest[0])
		}
		return nil
	}
	if len(rest) > 2 {
		return Usagef("unexpected argument %q (usage: %s %s)", rest[2], t.Name, t.usage)
	}
	if len(rest) > 0 {
		d, err := ParseInterval(rest[0])
		if err != nil {
			return err
		}
		t.Interval = d
	}
	if len(rest) > 1 {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < 1 {
			return Usagef("count %q: want a whole number of intervals, 1 or more", rest[1])
		}
		t.Count = n
	}
	return nil
}

// IsNumber says whether s reads as an interval or a count: it starts with
// a digit, a point or a sign.
func IsNumber(s string) bool {
	return s != "" && strings.ContainsRune("0123456789.-+", rune(s[0]))
}

// Sum is the sum of vs, as of the records lost on each CPU.
func Sum(vs []uint64) uint64 {
	n := uint64(0)
	for _, v := range vs {
		n += v
	}
	return n
}

// MaxInterval is the longest interval, in either form of ParseInterval.
const MaxInterval = 24 * time.Hour

// ParseInterval reads an interval as bcc's tools take it, whole or
// fractional seconds ("1", "0.5"), or as a Go duration ("500ms", "2m");
// it must be positive and at most MaxInterval.
func ParseInterval(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		switch {
		case ferr != nil || math.IsNaN(f):
			return 0, Usagef("interval %q: want seconds (1, 0.5) or a duration with its unit (500ms)", s)
		case f > MaxInterval.Seconds(): // before the conversion, which would overflow
			d = MaxInterval + 1
		default:
			d = time.Duration(f * float64(time.Second))
		}
	}
	switch {
	case d <= 0:
		return 0, Usagef("interval %q: must be more than zero", s)
	case d > MaxInterval:
		return 0, Usagef("interval %q: at most %gh", s, MaxInterval.Hours())
	}
	return d, nil
}

// ParseOrExit parses os.Args[1:]: for -h it prints the usage and exits
// 0, for -version the version and exits 0, for a bad argument it prints
// one line and exits 2.
func (t *Tool) ParseOrExit() {
	err := t.Parse(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		t.PrintUsage(t.Stdout)
		os.Exit(0)
	case errors.Is(err, ErrVersion):
		fmt.Fprintln(t.Stdout, t.Version())
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(t.Stderr, "%s: %s (%s -h shows the usage)\n", t.Name, usageMessage(err), t.Name)
		os.Exit(2)
	}
}

// Exit ends the program with Report's status.
func (t *Tool) Exit(err error) {
	os.Exit(t.Report(err))
}

// Report writes err, if any, to Stderr after the tool's name and returns
// the exit status it calls for: 0 for a nil err, 2 for a usage error, else
// 1. A usage error is one line; another error's later lines (a verifier's
// log) are indented under its first.
func (t *Tool) Report(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(t.Stderr, "%s: %s\n", t.Name, usageMessage(err))
		return 2
	}
	fmt.Fprintf(t.Stderr, "%s: %s\n", t.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	return 1
}

// usageMessage is a usage error's message without its "usage: " prefix,
// on one line whatever it holds: a control character that reached it
// unquoted (a newline, an escape sequence) is written as Go would quote it.
func usageMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "usage: ")
	if !strings.ContainsFunc(msg, unicode.IsControl) {
		return msg
	}
	var b strings.Builder
	for _, r := range msg {
		if !unicode.IsControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// NeedRoot checks the capabilities a tracing tool needs before anything is
// loaded: CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), plus read access to
// tracefs, which only root has by default.
func (t *Tool) NeedRoot() error {
	if err := sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON); err != nil {
		return fmt.Errorf("needs root: %w", err)
	}
	return nil
}

// Context is cancelled by Ctrl-C (SIGINT) or SIGTERM.
func Context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Every calls report at every interval, Count times or until ctx ends;
// then, if ctx ended first, once more with final set, so that what the
// interval in progress counted is printed too.
func (t *Tool) Every(ctx context.Context, report func(final bool) error) error {
	tick := time.NewTicker(t.Interval)
	defer tick.Stop()
	for n := 0; t.Count == 0 || n < t.Count; n++ {
		select {
		case <-ctx.Done():
			return report(true)
		case <-tick.C:
		}
		if err := report(false); err != nil {
			return err
		}
	}
	return nil
}

// Read reads the perf ring r until ctx ends or, with a count, for Count
// intervals, handing each sample to sample and each loss report to Lost;
// what names the samples for Lost. report, if not nil, is called at every
// interval as Every calls it. Before each report, and before returning,
// Read reads what the rings hold: a report comes after the samples of its
// interval, and none is left unread at exit. The samples and the reports
// are printed from this one goroutine, so their lines never interleave;
// an error from sample, report or the reading stops it.
func (t *Tool) Read(ctx context.Context, r *perfring.PerfReader, what string, sample func(perfring.Record) error, report func(final bool) error) error {
	f := func(rec perfring.Record) error {
		if rec.Lost > 0 {
			return t.Lost(rec.CPU, rec.Lost, what)
		}
		return sample(rec)
	}
	next := time.Now().Add(t.Interval)
	for n := 1; ; n++ {
		in, cancel := context.WithDeadline(ctx, next)
		err := t.readUntil(in, r, f)
		cancel()
		if err == nil {
			err = t.readAll(r, f)
		}
		if err != nil {
			return err
		}
		final := ctx.Err() != nil
		if report != nil {
			if err := report(final); err != nil {
				return err
			}
		}
		if final || n == t.Count {
			return nil
		}
		if next = next.Add(t.Interval); time.Until(next) < 0 { // a slow report: skip the intervals it took
			next = time.Now().Add(t.Interval)
		}
	}
}

// readUntil reads the rings until in ends, looking at them at least every
// Flush.
func (t *Tool) readUntil(
	in context.Context, r *perfring.PerfReader, f func(perfring.Record) error,
) error {
	for in.Err() == nil {
		poll, cancel := in, context.CancelFunc(func() {})
		if t.Flush > 0 {
			poll, cancel = context.WithTimeout(in, t.Flush)
		}
		_, err := r.ReadFunc(poll, f)
		cancel()
		if err != nil && !ended(err) {
			return err
		}
		if t.Batch != nil {
			if err := t.readAll(r, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAll reads what every ring holds, without waiting, then calls Batch
// if set. ReadFunc with a context that has ended reads the rings the
// kernel woke us for; called again, it finds none and reads them all.
func (t *Tool) readAll(r *perfring.PerfReader, f func(perfring.Record) error) error {
	done, stop := context.WithCancel(context.Background())
	stop()
	for range 2 {
		if _, err := r.ReadFunc(done, f); ended(err) {
			break
		} else if err != nil {
			return err
		}
	}
	if t.Batch != nil {
		return t.Batch()
	}
	return nil
}

// ended says whether err is a context's end.
func ended(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Lost reports that the kernel dropped n samples (named by what) on cpu,
// its perf ring being full: as a line of text, or with -json as the
// object {"time", "lost", "cpu"}, the shape every tool that reads a ring
// uses for it.
func (t *Tool) Lost(cpu int, n uint64, what string) error {
	return t.LostIn(cpu, n, what, "perf ring")
}

// LostIn is Lost for another of the kernel's buffers, named by buffer
// ("trace buffer" for trace_pipe's): the same object with -json.
func (t *Tool) LostIn(cpu int, n uint64, what, buffer string) error {
	if t.JSON {
		return t.Emit(struct {
			Time string `json:"time"`
			Lost uint64 `json:"lost"`
			CPU  int    `json:"cpu"`
		}{time.Now().Format(time.RFC3339Nano), n, cpu})
	}
	_, err := fmt.Fprintf(t.Stdout, "lost %d %s on CPU %d: the %s was full\n", n, what, cpu, buffer)
	return err
}

// Emit writes v as one line of JSON.
func (t *Tool) Emit(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(t.Stdout, "%s\n", b)
	return err
}

// Closer is what Detach closes: links, programs, maps.
type Closer interface{ Close() error }

// Detach closes links (or anything) all at once, from as many goroutines:
// detaching a tracepoint or kprobe waits for an RCU grace period in the
// kernel, and waits that overlap share one, where closing hundreds of
// attachments one after another would take a grace period each.
func Detach[C Closer](cs []C) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CloseInReverse closes cs last first, as a tool unwinds what it made in
// order (maps, then the programs that use them), and joins the errors.
func CloseInReverse(cs []Closer) error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		errs = append(errs, cs[i].Close())
	}
	return errors.Join(errs...)
}

// Started says, once everything is attached, what the tool watches and
// that Ctrl-C stops it: on stdout, or with -json on stderr (stdout being
// JSON only).
func (t *Tool) Started(format string, args ...any) {
	msg := fmt.Sprintf(format, args...) + "; Ctrl-C to stop\n"
	if t.JSON {
		fmt.Fprintf(t.Stderr, "%s: %s", t.Name, msg)
		return
	}
	io.WriteString(t.Stdout, msg)
}
