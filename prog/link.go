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
// program and releases everything the attachment created: the BPF link,
// the perf event, the tracefs event. Closing twice is harmless.
type Link struct {
	mu     sync.Mutex // one Close at a time: the event goes after the fds
	desc   string
	linkFD sys.FD              // BPF link (perf link, raw tracepoint), or none
	perfFD sys.FD              // perf event, or none
	event  *tracefs.ProbeEvent // created in kprobe_events/uprobe_events, or nil
}

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

// Close detaches: the link first, then the perf event (which detaches an
// ioctl-attached program), then the tracefs event, which the kernel refuses
// to remove (EBUSY) while a perf event uses it: while a copy of the fd
// (dup, fork, a pin) holds the link or perf event open. The event then
// stays, the error says so, and a later Close tries again. Concurrent
// Closes are safe: each resource is released once.
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
	// Cookie is passed to the program through the perf link and read with
	// bpf_get_attach_cookie. It needs BPF perf links (5.15): on older kernels
	// a non-zero Cookie is an ErrNotSupported error, never dropped.
	Cookie uint64
	// Legacy attaches with PERF_EVENT_IOC_SET_BPF even where perf links
	// exist. It cannot carry a cookie.
	Legacy bool
}

// attachPerf attaches p to the perf event perfFD, with a perf link when the
// kernel has them and the caller did not ask for Legacy, else with
// PERF_EVENT_IOC_SET_BPF; then it enables the event. On success the Link
// owns perfFD and event; on failure both are released.
func attachPerf(p *Program, perfFD int, event *tracefs.ProbeEvent, desc string, o AttachOptions) (*Link, error) {
	l := &Link{desc: desc, event: event}
	l.perfFD.Set(perfFD)
	fail := func(err error) (*Link, error) {
		l.Close()
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	useLink := false
	if !o.Legacy {
		ok, err := HavePerfLink()
		if err != nil {
			return fail(err)
		}
		useLink = ok
	}
	if o.Cookie != 0 && !useLink {
		return fail(fmt.Errorf("a cookie needs a BPF perf link (Linux 5.15) and Legacy is set or the kernel has none: %w", sys.ErrNotSupported))
	}
	if useLink {
		fd, err := sys.LinkCreate(&sys.LinkCreateAttr{ProgFD: uint32(p.fd.Int()), TargetFD: uint32(perfFD), AttachType: unix.BPF_PERF_EVENT, Cookie: o.Cookie})
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

// ErrWrongType is wrapped by the error of an attach function given a
// program of a type that cannot run there; the kernel would refuse it
// with a bare EINVAL.
var ErrWrongType = errors.New("prog: wrong program type")

// usable says why p cannot be attached to what, if it cannot: nil, closed,
// or not one of the types what takes (the first named in the message).
func usable(p *Program, what string, types ...Type) error {
	switch {
	case p == nil:
		return fmt.Errorf("prog: attach a nil program to %s", what)
	case p.fd.Int() < 0:
		return wrap(ErrClosed, "attach %q to %s", p.name, what)
	case !slices.Contains(types, p.typ):
		return fmt.Errorf("%w: program %q is a %s; %s needs type %s", ErrWrongType, p.name,
			strings.ReplaceAll(p.typ.String(), "_", " "), what, typeNames[types[0]])
	}
	return nil
}

// typeNames are the Go names of the types attach functions need.
var typeNames = map[Type]string{Tracepoint: "Tracepoint", Kprobe: "Kprobe", RawTracepoint: "RawTracepoint", PerfEvent: "PerfEvent"}

// AttachPerfEvent runs p on the perf event perfFD, which the caller opened
// and keeps (perfring.NewEventReader's, say): p must be of the type the
// event takes (Tracepoint for a tracepoint, PerfEvent for a sampling
// event). For a tracepoint, p's return value is a filter: the event's own
// record is kept only when p returns non-zero. The Link holds a duplicate
// of perfFD. With a perf link (5.15) Close detaches p; with
// PERF_EVENT_IOC_SET_BPF p stays until every fd of the event is closed.
func AttachPerfEvent(p *Program, perfFD int, o AttachOptions) (*Link, error) {
	desc := fmt.Sprintf("perf event fd %d", perfFD)
	if err := usable(p, "a perf event", Tracepoint, Kprobe, PerfEvent); err != nil {
		return nil, err
	}
	fd, err := sys.Dup(perfFD)
	if err != nil {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	return attachPerf(p, fd, nil, desc, o)
}

// openTracepointEvent opens a disabled perf event on the tracepoint (or
// tracefs kprobe or uprobe event) with the given id. For all processes (pid
// -1) a program attached to it runs on every CPU, so the event needs only
// one (cpu 0); for one process, cpu is -1.
func openTracepointEvent(id uint64, pid, cpu int) (int, error) {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_TRACEPOINT, Config: id, Sample: 1, Wakeup: 1, Bits: unix.PerfBitDisabled}
	return sys.PerfEventOpen(&attr, pid, cpu, -1, 0)
}

// AttachTracepoint runs p, a Tracepoint program, on every hit of
// events/<group>/<name> (syscalls:sys_enter_getppid, skb:kfree_skb, ...).
func AttachTracepoint(p *Program, group, name string, o AttachOptions) (*Link, error) {
	desc := "tracepoint " + group + ":" + name
	if err := usable(p, "a tracepoint", Tracepoint); err != nil {
		return nil, err
	}
	id, err := tracefs.TracepointID(group, name)
	if err != nil {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	fd, err := openTracepointEvent(id, -1, 0)
	if err != nil {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	return attachPerf(p, fd, nil, desc, o)
}

// AttachRawTracepoint runs p, a RawTracepoint program, on the raw
// tracepoint name ("sys_enter", "sched_switch"), with BPF_RAW_TRACEPOINT_OPEN.
// A cookie needs Linux 6.10.
func AttachRawTracepoint(p *Program, name string, o AttachOptions) (*Link, error) {
	desc := "raw tracepoint " + name
	if err := usable(p, "a raw tracepoint", RawTracepoint, unix.BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE); err != nil {
		return nil, err
	}
	tp, err := sys.StringPointer(name)
	if err != nil {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	fd, err := sys.RawTracepointOpen(&sys.RawTracepointAttr{Name: tp, ProgFD: uint32(p.fd.Int()), Cookie: o.Cookie})
	if err != nil {
		if o.Cookie != 0 && errors.Is(err, unix.EINVAL) {
			err = fmt.Errorf("%w (a raw tracepoint cookie needs Linux 6.10: %w)", err, sys.ErrNotSupported)
		}
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	l := &Link{desc: desc}
	l.linkFD.Set(fd)
	return l, nil
}
