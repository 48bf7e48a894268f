package prog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// Link is one attachment of a program to an event. Close detaches the
// program and releases the BPF link, perf event and tracefs event it made.
type Link struct {
	mu     sync.Mutex // one Close at a time: the event goes after the fds
	desc   string
	linkFD sys.FD  // BPF link (perf link, raw tracepoint), or none
	perfFD sys.FD  // perf event, or none
	event  remover // created in kprobe_events/uprobe_events, or nil
}

// remover is a *tracefs.ProbeEvent: an interface, so that programs that
// attach only to tracepoints do not link the probe events' code.
type remover interface{ Remove() error }

// String says what the link attaches to: "tracepoint skb:kfree_skb".
func (l *Link) String() string { return l.desc }

// FD is the BPF link's fd, or the perf event's when the program was attached
// with PERF_EVENT_IOC_SET_BPF; -1 once closed.
func (l *Link) FD() int {
	if fd := l.linkFD.Int(); fd >= 0 {
		return fd
	}
	return l.perfFD.Int()
}

// Close detaches: the link, then the perf event (detaching an
// ioctl-attached program), then the tracefs event. The kernel refuses to
// remove that (EBUSY) while a copy of the fd (dup, fork, pin) holds a perf
// event: the error says so, and a later Close tries again. Each resource
// is released once, also by concurrent Closes.
func (l *Link) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{l.linkFD.Close(), l.perfFD.Close()}
	if l.event != nil {
		errs = append(errs, l.event.Remove())
	}
	return wrap(errors.Join(errs...), "detach %s", l.desc)
}

// AttachOptions apply to every attachment made through a perf event.
type AttachOptions struct {
	// Cookie is what bpf_get_attach_cookie reads. It needs BPF perf links
	// (5.15); without them it is an ErrNotSupported error.
	Cookie uint64
	// Legacy attaches with PERF_EVENT_IOC_SET_BPF (a tracing program: with
	// BPF_RAW_TRACEPOINT_OPEN), even where the kernel has links.
	Legacy bool
}

// attachPerf attaches p to the perf event perfFD (unless err says why it
// could not be opened), with a perf link unless the kernel has none or o
// asks for Legacy, and enables it. The Link owns perfFD and event; on
// failure both are released.
func attachPerf(
	p *Program, perfFD int, err error, event remover, desc string, o AttachOptions,
) (*Link, error) {
	l := &Link{desc: desc, event: event}
	fail := func(err error) (*Link, error) {
		l.Close()
		return nil, fmt.Errorf("prog: attach %s to %s: %w", sys.QuoteName(p.name), desc, err)
	}
	if err != nil {
		return fail(err)
	}
	l.perfFD.Set(perfFD)
	useLink := !o.Legacy
	if useLink {
		if useLink, err = HavePerfLink(); err != nil {
			return fail(err)
		}
	}
	if o.Cookie != 0 && !useLink {
		return fail(fmt.Errorf("a cookie needs a BPF perf link (Linux 5.15) "+
			"and Legacy is set or the kernel has none: %w", sys.ErrNotSupported))
	}
	if useLink {
		fd, err := sys.LinkCreate(&sys.LinkCreateAttr{
			ProgFD:     uint32(p.fd.Int()),
			TargetFD:   uint32(perfFD),
			AttachType: unix.BPF_PERF_EVENT,
			Cookie:     o.Cookie,
		})
		if err != nil {
			return fail(err)
		}
		l.linkFD.Set(fd)
	} else if err := sys.PerfEventSetBPF(perfFD, p.fd.Int()); err != nil {
		return fail(err)
	}
	if err := sys.PerfEventEnable(perfFD); err != nil {
		return fail(err)
	}
	return l, nil
}

// ErrWrongType is the error of an attach function given a program of a
// type that cannot run there (the kernel would say a bare EINVAL).
var ErrWrongType = errors.New("prog: wrong program type")

// usable says why p cannot be attached to what, if it cannot.
func usable(p *Program, what string, types ...Type) error {
	switch {
	case p == nil:
		return fmt.Errorf("prog: attach a nil program to %s", what)
	case p.fd.Int() < 0:
		return wrap(ErrClosed, "attach %s to %s", sys.QuoteName(p.name), what)
	case !slices.Contains(types, p.typ):
		return fmt.Errorf("%w: program %s is a %s; %s needs type %s",
			ErrWrongType, sys.QuoteName(p.name),
			strings.ReplaceAll(p.typ.String(), "_", " "), what, goName(types[0]))
	}
	return nil
}

// goName is the Go name of a type attach functions need. A switch, not a
// map: a package map is made at start-up, code and types every tool links.
func goName(t Type) string {
	switch t {
	case Tracepoint:
		return "Tracepoint"
	case Kprobe:
		return "Kprobe"
	case RawTracepoint:
		return "RawTracepoint"
	case PerfEvent:
		return "PerfEvent"
	case Tracing:
		return "Tracing"
	}
	return t.String()
}

// AttachPerfEvent runs p on the perf event perfFD, which the caller keeps
// (perfring.NewEventReader's, say): a Tracepoint program on a tracepoint,
// where its return value filters the event's own record (non-zero keeps
// it), a PerfEvent program on a sampling event. The Link holds a copy of
// perfFD. With a perf link (5.15) Close detaches p; with
// PERF_EVENT_IOC_SET_BPF p stays until every fd of the event is closed.
func AttachPerfEvent(p *Program, perfFD int, o AttachOptions) (*Link, error) {
	desc := fmt.Sprintf("perf event fd %d", perfFD)
	if err := usable(p, "a perf event", Tracepoint, Kprobe, PerfEvent); err != nil {
		return nil, err
	}
	fd, err := sys.Dup(perfFD)
	return attachPerf(p, fd, err, nil, desc, o)
}

// openTracepointEvent opens a disabled perf event on the tracepoint (or
// tracefs probe event) id: for all processes (pid -1) on cpu 0, since the
// program runs on every CPU anyway; for one process on cpu -1.
//
// The event counts and does not sample (sample_period 0), as the kprobe
// and uprobe PMUs' events here do. A program that returns non-zero hands
// the record on to the tracepoint's perf events, this one among them. A
// sampling event would then prepare a sample for a ring it does not have,
// on each hit on its CPU (cmd/tracex2's BenchmarkWriteSizes measures
// both).
func openTracepointEvent(id uint64, pid, cpu int) (int, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Config: id,
		Bits:   unix.PerfBitDisabled,
	}
	return sys.PerfEventOpen(&attr, pid, cpu, -1, 0)
}

// AttachTracepoint runs p, a Tracepoint program, on every hit of
// events/<group>/<name> (syscalls:sys_enter_getppid, skb:kfree_skb, ...).
//
// p's return value is a filter for every perf user of the tracepoint, not
// for p alone: 0 drops the event's record for all of them (perf, other
// tracers, another process's reader), non-zero passes it on. A program
// that only counts or sends its own records returns 1.
func AttachTracepoint(p *Program, group, name string, o AttachOptions) (*Link, error) {
	desc := "tracepoint " + group + ":" + name
	if err := usable(p, "a tracepoint", Tracepoint); err != nil {
		return nil, err
	}
	id, err := tracefs.TracepointID(group, name)
	fd := -1
	if err == nil {
		fd, err = openTracepointEvent(id, -1, 0)
	}
	return attachPerf(p, fd, err, nil, desc, o)
}

// AttachRawTracepoint runs p, a RawTracepoint program, on the raw
// tracepoint name ("sys_enter") with BPF_RAW_TRACEPOINT_OPEN; a cookie
// needs Linux 6.10.
func AttachRawTracepoint(p *Program, name string, o AttachOptions) (*Link, error) {
	desc := "raw tracepoint " + name
	rawTypes := []Type{RawTracepoint, unix.BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE}
	if err := usable(p, "a raw tracepoint", rawTypes...); err != nil {
		return nil, err
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %s to %s: %w", sys.QuoteName(p.name), desc, err)
	}
	tp, err := sys.StringPointer(name)
	if err != nil {
		return fail(err)
	}
	attr := sys.RawTracepointAttr{Name: tp, ProgFD: uint32(p.fd.Int()), Cookie: o.Cookie}
	fd, err := sys.RawTracepointOpen(&attr)
	if o.Cookie != 0 && errors.Is(err, unix.EINVAL) {
		return fail(fmt.Errorf("%w (a raw tracepoint cookie needs Linux 6.10: %w)",
			err, sys.ErrNotSupported))
	}
	if err != nil {
		return fail(err)
	}
	l := &Link{desc: desc}
	l.linkFD.Set(fd)
	return l, nil
}
