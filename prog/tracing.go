package prog

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bpfkit/bpfkit/btf"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Attach types of Tracing programs, for Spec.ExpectedAttachType, as in
// the uapi header. Each names its target in Spec.AttachTo.
const (
	BPF_TRACE_RAW_TP = unix.BPF_TRACE_RAW_TP // tp_btf: a tracepoint, its arguments as passed (5.5)
	BPF_TRACE_FENTRY = unix.BPF_TRACE_FENTRY // fentry: a kernel function's entry (5.5)
	BPF_TRACE_FEXIT  = unix.BPF_TRACE_FEXIT  // fexit: its return, arguments and return value (5.5)
)

// Target is what a Tracing program attaches to, named in the kernel's
// BTF: Fentry, Fexit and TpBTF make one, for Spec.AttachTo. Load looks it
// up (package btf) and sets the attach type; a program that names no
// Target links no BTF code.
type Target interface {
	String() string // "fentry vfs_read"
	// resolve looks the target up for a program of type typ whose
	// expected attach type is expected (0: the target's). It returns the
	// attach type, the BTF type id and object fd (0: vmlinux) to load the
	// program with. It also returns what to call with the load's error
	// once the load is done, which closes a module's BTF object and
	// explains the error. Its signature holds no struct, whose type a tool
	// that names no Target would link.
	resolve(typ, expected uint32) (at, btfID, objFD uint32, done func(error) error, err error)
}

// btfTarget is a Target: a kind and name in BTF for an attach type.
type btfTarget struct {
	at           uint32
	kind         btf.Kind
	prefix, what string
	name         string // as the caller gave it: "vfs_read", "module:function", "sched_switch"
}

// Fentry is the entry of a kernel function, "vfs_read", or of a module's,
// "module:function": its FUNC in the kernel's BTF (BPF_TRACE_FENTRY).
func Fentry(function string) Target {
	return btfTarget{BPF_TRACE_FENTRY, btf.KindFunc, "", "fentry", function}
}

// Fexit is the return of a kernel function, named as for Fentry: the
// program sees its arguments and return value (BPF_TRACE_FEXIT).
func Fexit(function string) Target {
	return btfTarget{BPF_TRACE_FEXIT, btf.KindFunc, "", "fexit", function}
}

// TpBTF is a tracepoint, "sched_switch", whose arguments the program
// gets as the kernel passes them, not as a perf record (BPF_TRACE_RAW_TP):
// its btf_trace_<tracepoint> TYPEDEF in the kernel's BTF.
func TpBTF(tracepoint string) Target {
	return btfTarget{BPF_TRACE_RAW_TP, btf.KindTypedef, "btf_trace_", "tp_btf", tracepoint}
}

func (t btfTarget) String() string { return t.what + " " + t.name }

// lookup finds the target's BTF type id and, for a module's function
// ("module:function"), the module's BTF object, which the caller closes
// after the load.
func (t btfTarget) lookup() (uint32, *btf.Object, error) {
	module, name, ok := strings.Cut(t.name, ":")
	if !ok {
		module, name = "", t.name
	}
	return btf.Lookup(t.kind, t.prefix+name, module)
}

func (t btfTarget) resolve(typ, expected uint32) (at, btfID, objFD uint32, done func(error) error,
	err error) {
	fail := func(err error) (uint32, uint32, uint32, func(error) error, error) {
		return 0, 0, 0, nil, err
	}
	switch {
	case Type(typ) != Tracing:
		return fail(fmt.Errorf("AttachTo is the target of a Tracing program, not of a %s "+
			"program: %w", Type(typ), ErrWrongType))
	case expected != 0 && expected != t.at:
		return fail(fmt.Errorf("AttachTo %s has attach type %s, and ExpectedAttachType says %s: %w",
			t, sys.AttachTypeName(t.at), sys.AttachTypeName(expected), ErrWrongType))
	}
	btfID, module, err := t.lookup()
	if err != nil {
		return fail(err)
	}
	if module != nil {
		objFD = uint32(module.FD()) // attach_btf_obj_fd: the kernel takes its own reference
	}
	return t.at, btfID, objFD, func(err error) error {
		if module != nil {
			module.Close()
		}
		return explainTracingLoad(t, err)
	}, nil
}

// ftraceFilters is a file of the function tracer, which ftrace-based BPF
// trampolines share their machinery with.
const ftraceFilters = "/sys/kernel/tracing/available_filter_functions"

// explainTracingLoad says why a process with every capability gets EPERM
// for an fentry or fexit program: the kernel refuses programs that need a
// BPF trampoline. Seen on a 6.18 vendor kernel (lockdown integrity, whose
// upstream rules refuse neither) that also refuses root its function
// tracer's files; upstream has no such refusal, so it is named, not guessed.
func explainTracingLoad(t btfTarget, err error) error {
	privileged := sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON) == nil
	if !errors.Is(err, unix.EPERM) || t.at == BPF_TRACE_RAW_TP || !privileged {
		return err
	}
	return fmt.Errorf("%w: %s", err, trampolineRefusal())
}

// trampolineRefusal says what refused a trampoline program to a process
// with every capability, and whether the function tracer is closed too.
func trampolineRefusal() string {
	why := "this kernel refuses programs that run through a BPF trampoline (fentry, fexit) " +
		"before verifying them, to a process with every capability; tp_btf needs no trampoline"
	if f, err := os.Open(ftraceFilters); err == nil {
		f.Close()
	} else if errors.Is(err, unix.EPERM) {
		why += "; its function tracer is closed to root too (" + ftraceFilters + ": EPERM)"
	}
	return why
}

// explainTracingAttach words ENOTSUPP from attaching an fentry or fexit
// program: the kernel loaded it but builds no trampoline on the function.
func explainTracingAttach(err error) error {
	if !errors.Is(err, sys.ENOTSUPP) {
		return err
	}
	return fmt.Errorf("%w: this kernel cannot attach a BPF trampoline to a kernel function "+
		"(arm64 builds them from 6.0 and attaches them to kernel functions through ftrace direct "+
		"calls from 6.4; Debian's arm64 5.10 and 6.1 answer this): %w", err, sys.ErrNotSupported)
}

// AttachTracing runs p, a Tracing program loaded with Spec.AttachTo, at
// its target: the function's entry (fentry) or return (fexit), or the
// tracepoint (tp_btf). It links with BPF_LINK_CREATE where the kernel
// links tracing programs (HaveTracingLink: 6.1 does, 5.10 does not), which
// carries o.Cookie (fentry and fexit 5.19, tp_btf 6.10), else (or with
// o.Legacy) with BPF_RAW_TRACEPOINT_OPEN, which carries a tp_btf cookie
// only (6.10).
func AttachTracing(p *Program, o AttachOptions) (*Link, error) {
	if err := usable(p, "its BTF target", Tracing); err != nil {
		return nil, err
	}
	target, ok := p.target.(btfTarget)
	if !ok {
		return nil, fmt.Errorf("prog: attach %s: it was not loaded with Spec.AttachTo by this "+
			"process, so its target is not known: %w", sys.QuoteName(p.name), ErrWrongType)
	}
	at, desc := target.at, target.String()
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %s to %s: %w",
			sys.QuoteName(p.name), desc, err)
	}
	useLink := !o.Legacy
	if useLink {
		ok, err := HaveTracingLink(at)
		useLink = ok || err != nil // the probe could not tell: try the link, fall back on EINVAL
	}
	var fd int
	var err error
	if useLink {
		fd, err = sys.LinkCreateTracing(&sys.LinkCreateTracingAttr{ProgFD: uint32(p.fd.Int()),
			AttachType: at, Cookie: o.Cookie})
		useLink = !errors.Is(err, unix.EINVAL) || o.Cookie != 0
	}
	if !useLink {
		if o.Cookie != 0 && at != BPF_TRACE_RAW_TP {
			return fail(fmt.Errorf("a cookie on fentry or fexit needs BPF_LINK_CREATE for tracing "+
				"programs (Linux 5.19 carries it), and Legacy is set or the kernel has none: %w",
				sys.ErrNotSupported))
		}
		fd, err = sys.RawTracepointOpen(&sys.RawTracepointAttr{ProgFD: uint32(p.fd.Int()),
			Cookie: o.Cookie})
	}
	if o.Cookie != 0 && errors.Is(err, unix.EINVAL) {
		return fail(fmt.Errorf("%w (a tracing cookie needs Linux 5.19 for fentry and fexit, "+
			"6.10 for tp_btf: %w)", err, sys.ErrNotSupported))
	}
	if err != nil {
		return fail(explainTracingAttach(err))
	}
	l := &Link{desc: desc}
	l.linkFD.Set(fd)
	return l, nil
}

// probeTarget is what the tracing probes attach to: a function and a
// tracepoint of BPF_PROG_TEST_RUN (net/bpf/test_run.c), which nothing
// else calls or fires.
func probeTarget(attachType uint32) Target {
	switch attachType {
	case BPF_TRACE_FENTRY:
		return Fentry("bpf_fentry_test1")
	case BPF_TRACE_FEXIT:
		return Fexit("bpf_fentry_test1")
	case BPF_TRACE_RAW_TP:
		return TpBTF("bpf_test_finish")
	}
	return nil
}

// loadTracingProbe loads code as a Tracing program of attachType on its
// probe target. If the program does not load, it sets f: a no when the
// kernel refuses such programs (no BTF, EPERM to a process with every
// capability, an attach type it does not know), else an error.
func loadTracingProbe(f *Feature, attachType uint32, code ...insn.Item) (*Program, error) {
	p, err := Load(Spec{Type: Tracing, Name: "probe_tracing", License: "GPL", Insns: code,
		AttachTo: probeTarget(attachType)})
	if err == nil {
		return p, nil
	}
	f.Errno, _ = errors.AsType[unix.Errno](err)
	switch {
	case errors.Is(err, btf.ErrNoKernelBTF):
		f.Note = "no kernel BTF"
	case f.Errno == unix.EPERM && sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON) == nil:
		f.Note = trampolineRefusal()
	case f.Errno == unix.EINVAL || f.Errno == sys.ENOTSUPP || f.Errno == unix.EOPNOTSUPP:
		f.Note = "the program does not load"
	default:
		f.Err = wrap(err, "probe for %s", f.Name)
	}
	return nil, err
}

// checkTracingType refuses an attach type the tracing probes do not know.
func checkTracingType(what string, attachType uint32) error {
	if probeTarget(attachType) == nil {
		return fmt.Errorf("prog: probe for %s: attach type %s is not fentry, fexit or tp_btf: %w",
			what, sys.AttachTypeName(attachType), ErrWrongType)
	}
	return nil
}

// HaveTracing reports whether the kernel loads and attaches Tracing
// programs of attachType (BPF_TRACE_FENTRY, BPF_TRACE_FEXIT,
// BPF_TRACE_RAW_TP) on a function or tracepoint of its own. A no says why
// in Feature.Note (Features), from the kernel's answer: no BTF, a kernel
// that refuses trampolines (EPERM with every capability), one that cannot
// attach them to a function (ENOTSUPP: arm64 before 6.4).
func HaveTracing(attachType uint32) (bool, error) {
	if err := checkTracingType("tracing", attachType); err != nil {
		return false, err
	}
	return probe("tracing "+sys.AttachTypeName(attachType), func(f *Feature) {
		p, _ := loadTracingProbe(f, attachType, retZero...)
		if p == nil {
			return
		}
		defer p.Close()
		fd, err := sys.LinkCreateTracing(&sys.LinkCreateTracingAttr{ProgFD: uint32(p.fd.Int()),
			AttachType: attachType})
		if errors.Is(err, unix.EINVAL) {
			fd, err = sys.RawTracepointOpen(&sys.RawTracepointAttr{ProgFD: uint32(p.fd.Int())})
		}
		if err == nil {
			unix.Close(fd)
		}
		f.answer(err, 0, sys.ENOTSUPP, unix.EOPNOTSUPP)
		if errors.Is(err, sys.ENOTSUPP) {
			f.Note = "loads, but the kernel attaches no trampoline to a kernel function (ENOTSUPP)"
		}
	}).result()
}

// HaveTracingLink reports whether BPF_LINK_CREATE links Tracing programs
// of attachType (6.1 does, 5.10 does not), which carries a cookie
// (HaveTracingCookie): EINVAL where it does not (AttachTracing then uses
// BPF_RAW_TRACEPOINT_OPEN); ENOTSUPP, from the trampoline, is a yes.
func HaveTracingLink(attachType uint32) (bool, error) {
	if err := checkTracingType("tracing links", attachType); err != nil {
		return false, err
	}
	return probe("tracing_link "+sys.AttachTypeName(attachType), func(f *Feature) {
		p, _ := loadTracingProbe(f, attachType, retZero...)
		if p == nil {
			cannotTell(f)
			return
		}
		defer p.Close()
		fd, err := sys.LinkCreateTracing(&sys.LinkCreateTracingAttr{ProgFD: uint32(p.fd.Int()),
			AttachType: attachType})
		if err == nil {
			unix.Close(fd)
		}
		f.answer(err, sys.ENOTSUPP, unix.EINVAL)
	}).result()
}

// cannotTell makes a probe whose program does not load an error: it
// cannot tell, and its Note says why.
func cannotTell(f *Feature) {
	if f.Err == nil {
		f.Err = fmt.Errorf("prog: probe for %s: cannot tell: its program does not load here: %s",
			f.Name, f.Note)
		f.Note = ""
	}
}

// HaveTracingCookie reports whether Tracing programs of attachType may
// call bpf_get_attach_cookie (fentry and fexit 5.19, tp_btf 6.10), by
// loading one that does: the verifier's "unknown func" is a no.
func HaveTracingCookie(attachType uint32) (bool, error) {
	if err := checkTracingType("tracing cookies", attachType); err != nil {
		return false, err
	}
	return probe("tracing_cookie "+sys.AttachTypeName(attachType), func(f *Feature) {
		p, err := loadTracingProbe(f, attachType, insn.Call(insn.BPF_FUNC_get_attach_cookie),
			insn.Mov64Imm(insn.R0, 0), insn.Exit())
		if v, ok := errors.AsType[*VerifierError](err); ok && helperRefused(v.Log) {
			f.Note = ""
			return
		}
		if p == nil {
			cannotTell(f)
			return
		}
		p.Close()
		f.OK = true
	}).result()
}
