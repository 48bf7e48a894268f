package prog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// KprobeMultiOptions are the kernel functions one kprobe_multi link runs a
// program on, and how.
type KprobeMultiOptions struct {
	// Symbols are the functions by name, in any order, each once: names
	// that available_filter_functions lists (tracefs.Functions). Set
	// Symbols or Addresses, not both.
	Symbols []string
	// Addresses are the functions by address, each once: the address
	// /proc/kallsyms gives, which tells apart static functions that share
	// a name.
	Addresses []uint64
	// Cookies, if set, holds one value per function, in the order of
	// Symbols or Addresses: what bpf_get_attach_cookie returns while the
	// program runs for that function.
	Cookies []uint64
	// Return runs the program when the functions return (kretprobe_multi)
	// instead of when they are entered.
	Return bool
}

// MaxKprobeMulti is the most functions one kprobe_multi link takes: the
// kernel's MAX_KPROBE_MULTI_CNT (E2BIG above it, since 6.7: "bpf: Limit
// the number of kprobes when attaching program to multiple kprobes").
// Before 6.7 the kernel tried to allocate a name buffer of 512 bytes per
// function and failed with ENOMEM somewhat beyond.
const MaxKprobeMulti = 1 << 20

// AttachKprobeMulti runs p on every function of o through one
// kprobe_multi link (Linux 5.18 built with CONFIG_FPROBE; HaveKprobeMulti
// says). One bpf(2) call attaches them all, and the Link's Close detaches
// them all at once, where a kprobe per function costs a perf event and,
// when closed, an RCU grace period each. p is a Kprobe program loaded with
// ExpectedAttachType unix.BPF_TRACE_KPROBE_MULTI; it reads pt_regs as a
// kprobe program does, and bpf_get_attach_cookie reads the function's
// cookie.
//
// Where the kernel has no kprobe_multi links the error wraps
// sys.ErrNotSupported; a function it cannot trace is named in the error
// when available_filter_functions can be read.
func AttachKprobeMulti(p *Program, o KprobeMultiOptions) (*Link, error) {
	kind := "kprobe_multi"
	if o.Return {
		kind = "kretprobe_multi"
	}
	n := max(len(o.Symbols), len(o.Addresses))
	desc := fmt.Sprintf("%s of %d functions", kind, n)
	if err := usable(p, "a "+kind+" link", Kprobe); err != nil {
		return nil, err
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	if p.attachType != unix.BPF_TRACE_KPROBE_MULTI && p.attachType != attachUnknown {
		return fail(fmt.Errorf("%w: the program was not loaded for one: its Spec needs "+
			"ExpectedAttachType unix.BPF_TRACE_KPROBE_MULTI", ErrWrongType))
	}
	if err := o.check(); err != nil {
		return fail(err)
	}
	attr, err := o.attr(p)
	if err != nil {
		return fail(err)
	}
	fd, err := sys.LinkCreateKprobeMulti(attr)
	if err != nil {
		return fail(explainKprobeMulti(err, o.Symbols))
	}
	l := &Link{desc: desc}
	l.linkFD.Set(fd)
	return l, nil
}

// check refuses, before the kernel sees them, the lists it would refuse
// with a bare errno.
func (o KprobeMultiOptions) check() error {
	n := max(len(o.Symbols), len(o.Addresses))
	switch {
	case len(o.Symbols) > 0 && len(o.Addresses) > 0:
		return fmt.Errorf("%w: both Symbols and Addresses are set (the kernel takes one list)",
			tracefs.ErrInvalid)
	case n == 0:
		return fmt.Errorf("%w: no function", tracefs.ErrInvalid)
	case n > MaxKprobeMulti:
		return fmt.Errorf("%w: %d functions, more than one link takes (%d)",
			tracefs.ErrInvalid, n, MaxKprobeMulti)
	case o.Cookies != nil && len(o.Cookies) != n:
		return fmt.Errorf("%w: %d cookies for %d functions", tracefs.ErrInvalid, len(o.Cookies), n)
	}
	// A name given twice leaves one of the kernel's slots unresolved
	// (ESRCH since 6.0); an address twice would run the program once and
	// read one of two cookies.
	for i, s := range o.Symbols {
		if s == "" || strings.ContainsAny(s, "\x00\n ") {
			return fmt.Errorf("%w: function name %q", tracefs.ErrInvalid, s)
		}
		if j := slices.Index(o.Symbols[:i], s); j >= 0 {
			return fmt.Errorf("%w: function %q is given twice (at %d and %d)", tracefs.ErrInvalid, s, j, i)
		}
	}
	for i, a := range o.Addresses {
		if j := slices.Index(o.Addresses[:i], a); j >= 0 {
			return fmt.Errorf("%w: address %#x is given twice (at %d and %d)", tracefs.ErrInvalid, a, j, i)
		}
	}
	return nil
}

// attr builds the link_create attr. Its Pointers keep what they point at
// alive for the garbage collector.
func (o KprobeMultiOptions) attr(p *Program) (*sys.LinkCreateKprobeMultiAttr, error) {
	attr := &sys.LinkCreateKprobeMultiAttr{
		ProgFD:     uint32(p.fd.Int()),
		AttachType: unix.BPF_TRACE_KPROBE_MULTI,
		Cnt:        uint32(max(len(o.Symbols), len(o.Addresses))),
	}
	if o.Return {
		attr.KprobeFlags = unix.BPF_F_KPROBE_MULTI_RETURN
	}
	// syms is an array of unsigned long, 64 bits in a 64-bit kernel even
	// for a 32-bit process (bpf(2) has no compat layer): sys.Pointer is a
	// u64 on every port.
	syms := make([]sys.Pointer, len(o.Symbols))
	for i, s := range o.Symbols {
		ptr, err := sys.StringPointer(s)
		if err != nil {
			return nil, err
		}
		syms[i] = ptr
	}
	addrs := slices.Clone(o.Addresses)
	cookies := slices.Clone(o.Cookies) // the kernel reads them; the caller's stay theirs
	if len(syms) > 0 {
		attr.Syms = sys.NewPointer(unsafePointer(&syms[0]))
	}
	if len(addrs) > 0 {
		attr.Addrs = sys.NewPointer(unsafePointer(&addrs[0]))
	}
	if len(cookies) > 0 {
		attr.Cookies = sys.NewPointer(unsafePointer(&cookies[0]))
	}
	return attr, nil
}

// explainKprobeMulti words the kernel's errno for a refused link.
//
//   - EOPNOTSUPP: no kprobe_multi links: a kernel built without
//     CONFIG_FPROBE (Debian's 6.1, arm64 6.12), or a 32-bit kernel, which
//     the kernel refuses outright. Kernels before 5.18 answer EINVAL for
//     the unknown attach type, as they do for much else: HaveKprobeMulti
//     tells them apart.
//   - ESRCH (6.0+, "bpf: Resolve symbols with ftrace_lookup_symbols for
//     kprobe multi link"): a name kallsyms does not have, or has only
//     where ftrace cannot trace (not in available_filter_functions: notrace
//     and inlined code, .init text), or a name given twice. 5.18 and 5.19
//     resolved names one by one and said EINVAL for all of these.
//   - E2BIG: a name of KSYM_NAME_LEN bytes or more (512 since 6.1, 128
//     before), or more than MaxKprobeMulti functions (6.7+).
//   - EINVAL: also a program not loaded with BPF_TRACE_KPROBE_MULTI, flags
//     the kernel does not know, and an address ftrace cannot trace.
func explainKprobeMulti(err error, symbols []string) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w (this kernel has no kprobe_multi links: they need Linux 5.18 "+
			"built with CONFIG_FPROBE, 64-bit): %w", err, sys.ErrNotSupported)
	case errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) && len(symbols) > 0:
		if missing := untraceable(symbols); len(missing) > 0 {
			return fmt.Errorf("%w: not traceable (not in available_filter_functions): %s",
				err, strings.Join(missing, ", "))
		}
	case errors.Is(err, unix.E2BIG):
		return fmt.Errorf("%w (a function name of 512 bytes or more, or more functions than "+
			"the kernel takes in one link)", err)
	}
	return err
}

// untraceable names up to ten of symbols that ftrace does not list, or
// none if the list cannot be read.
func untraceable(symbols []string) []string {
	funcs, err := tracefs.Functions()
	if err != nil {
		return nil
	}
	known := make(map[string]bool, len(funcs))
	for _, f := range funcs {
		known[f] = true
	}
	var missing []string
	for _, s := range symbols {
		if !known[s] {
			missing = append(missing, fmt.Sprintf("%q", s))
		}
		if len(missing) == 10 {
			missing = append(missing, "...")
			break
		}
	}
	return missing
}
