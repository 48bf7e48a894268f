package prog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Type is a program type, enum bpf_prog_type.
type Type uint32

// The program types bpfkit tests; any other bpf_prog_type value works too.
const (
	SocketFilter  Type = unix.BPF_PROG_TYPE_SOCKET_FILTER  // filters a socket's packets; test-runnable
	Kprobe        Type = unix.BPF_PROG_TYPE_KPROBE         // kprobes, kretprobes, uprobes, uretprobes
	SchedCLS      Type = unix.BPF_PROG_TYPE_SCHED_CLS      // tc classifier
	SchedACT      Type = unix.BPF_PROG_TYPE_SCHED_ACT      // tc action
	Tracepoint    Type = unix.BPF_PROG_TYPE_TRACEPOINT     // tracepoints, through perf events
	XDP           Type = unix.BPF_PROG_TYPE_XDP            // packets at the driver
	PerfEvent     Type = unix.BPF_PROG_TYPE_PERF_EVENT     // sampling perf events
	CgroupSKB     Type = unix.BPF_PROG_TYPE_CGROUP_SKB     // a cgroup's packets
	RawTracepoint Type = unix.BPF_PROG_TYPE_RAW_TRACEPOINT // tracepoints' raw arguments (4.17)
	Tracing       Type = unix.BPF_PROG_TYPE_TRACING        // fentry, fexit, tp_btf (5.5)
)

// String is the type's name as in the uapi's enum bpf_prog_type, without
// its prefix and in lower case ("tracepoint"), as the journal prints it.
func (t Type) String() string { return sys.ProgTypeName(uint32(t)) }

// Spec describes a program to load.
type Spec struct {
	Type    Type   // what it attaches to, its context and the helpers it may call
	Name    string // at most 15 bytes are kept
	License string // "GPL" unlocks GPL-only helpers such as bpf_probe_read
	// Insns is the program in the DSL (instructions, labels, map
	// references), which Load assembles.
	Insns []insn.Item
	// Instructions is the program already assembled (insn.Assemble), to
	// load one program many times; set it or Insns, not both.
	Instructions []insn.Instruction
	// KernVersion is LINUX_VERSION_CODE, which kernels before 5.0 check in
	// kprobe programs; zero means the running kernel's.
	KernVersion        uint32
	ExpectedAttachType uint32 // bpf_attach_type, for types that need it at load
	Flags              uint32 // prog_flags: BPF_F_STRICT_ALIGNMENT, BPF_F_SLEEPABLE, ...
	// LogLevel above zero keeps the verifier's log (Program.Log); a failed
	// load gets one at level 1 anyway.
	LogLevel uint32
	// LogSize is the log buffer's first size (zero: 64 KiB), grown on
	// ENOSPC up to MaxLogSize.
	LogSize int
	// AttachTo is a Tracing program's target, Fentry, Fexit or TpBTF,
	// looked up in the kernel's BTF at load; it sets the attach type. The
	// program itself needs no BTF.
	AttachTo Target
}

// Flags for Spec.Flags (prog_flags), as in the uapi header.
const (
	// BPF_F_STRICT_ALIGNMENT: the verifier checks alignment even where the
	// CPU does not need it.
	BPF_F_STRICT_ALIGNMENT = unix.BPF_F_STRICT_ALIGNMENT
	// BPF_F_ANY_ALIGNMENT: the verifier does not check alignment even where
	// the CPU needs it (5.0).
	BPF_F_ANY_ALIGNMENT = unix.BPF_F_ANY_ALIGNMENT
	// BPF_F_TEST_RND_HI32: the verifier puts random upper halves after
	// 32-bit writes, a test (5.3).
	BPF_F_TEST_RND_HI32 = unix.BPF_F_TEST_RND_HI32
	// BPF_F_TEST_STATE_FREQ: the verifier keeps a state at every jump, a
	// test (5.4).
	BPF_F_TEST_STATE_FREQ = unix.BPF_F_TEST_STATE_FREQ
	// BPF_F_SLEEPABLE: the program may sleep (5.10), a syscall program say
	// (5.14).
	BPF_F_SLEEPABLE = unix.BPF_F_SLEEPABLE
	// BPF_F_XDP_HAS_FRAGS: an XDP program that takes multi-buffer packets
	// (5.18).
	BPF_F_XDP_HAS_FRAGS = unix.BPF_F_XDP_HAS_FRAGS
)

// MaxLogSize bounds the verifier log buffer.
const MaxLogSize = 64 << 20

// Program is a loaded program.
type Program struct {
	fd         sys.FD
	name       string
	typ        Type
	attachType uint32 // the expected attach type it was loaded with, or attachUnknown
	log        string
	target     Target // Spec.AttachTo, or nil
}

// attachUnknown is the attach type of a program opened by id or pin: the
// kernel's program info does not say what it was loaded with.
const attachUnknown = ^uint32(0)

// Load assembles spec.Insns (or takes spec.Instructions) and loads the
// program; one the verifier rejects is a *VerifierError. Another failure,
// one after the verifier accepted the program (EMFILE: no fd left for it)
// or before it ran (EPERM), is not, and is not loaded again for a log.
func Load(spec Spec) (*Program, error) {
	fail := func(err error) (*Program, error) {
		return nil, wrap(err, "load %s", sys.QuoteName(spec.Name))
	}
	insns := spec.Instructions
	if len(spec.Insns) > 0 {
		if len(insns) > 0 {
			return fail(errors.New("both Insns and Instructions are set"))
		}
		var err error
		if insns, err = insn.Assemble(spec.Insns); err != nil {
			return fail(err)
		}
	}
	if len(insns) == 0 {
		return fail(errors.New("no instructions"))
	}
	name, err := sys.NewObjName(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("prog: load: %w", err) // the name is in err
	}
	license, err := sys.StringPointer(spec.License)
	if err != nil {
		return fail(fmt.Errorf("license: %w", err))
	}
	buf := codePool.Get().(*[]byte)
	defer codePool.Put(buf)
	if *buf, err = insn.AppendEncode((*buf)[:0], insns); err != nil {
		return fail(err)
	}
	attr := sys.ProgLoadAttr{
		ProgType:           uint32(spec.Type),
		InsnCnt:            uint32(len(insns)),
		Insns:              sys.SlicePointer(*buf),
		License:            license,
		KernVersion:        spec.KernVersion,
		ProgFlags:          spec.Flags,
		ProgName:           name,
		ExpectedAttachType: spec.ExpectedAttachType,
	}
	if spec.Type == Kprobe && attr.KernVersion == 0 {
		attr.KernVersion, _ = KernelVersion()
	}
	var done func(error) error
	if spec.Type == Tracing && spec.AttachTo == nil {
		return fail(errors.New("a Tracing program names its target in Spec.AttachTo: " +
			"Fentry, Fexit or TpBTF"))
	}
	if spec.AttachTo != nil {
		at := &attr.ExpectedAttachType
		*at, attr.AttachBTFID, attr.AttachProgFD, done, err =
			spec.AttachTo.resolve(uint32(spec.Type), *at)
		if err != nil {
			return fail(err)
		}
	}
	logSize := min(max(spec.LogSize, 128), MaxLogSize)
	if spec.LogSize <= 0 {
		logSize = 64 << 10
	}
	var log []byte
	setLog := func(level uint32, size int) {
		log = make([]byte, size)
		attr.LogLevel, attr.LogSize, attr.LogBuf = level, uint32(size), sys.SlicePointer(log)
	}
	if spec.LogLevel > 0 {
		setLog(spec.LogLevel, logSize)
	}
	fd, err := sys.ProgLoad(&attr)
	if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
		fd, err = sys.ProgLoad(&attr)
	}
	if refusal(err) && spec.LogLevel == 0 { // the fast path had no log: again, with one to say why
		setLog(1, logSize)
		fd, err = sys.ProgLoad(&attr)
	}
	for errors.Is(err, unix.ENOSPC) && len(log) > 0 && len(log) < MaxLogSize { // not an id's ENOSPC
		setLog(attr.LogLevel, min(len(log)*4, MaxLogSize))
		fd, err = sys.ProgLoad(&attr)
	}
	if done != nil {
		err = done(err)
	}
	if err != nil {
		return nil, newVerifierError(spec.Name, err, unix.ByteSliceToString(log))
	}
	p := &Program{
		name:       attr.ProgName.String(),
		typ:        spec.Type,
		attachType: attr.ExpectedAttachType,
		log:        unix.ByteSliceToString(log),
		target:     spec.AttachTo,
	}
	p.fd.Set(fd)
	return p, nil
}

// codePool recycles encoded instructions, which the kernel copies.
var codePool = sync.Pool{New: func() any { return new([]byte) }}

// String says what the program is: `program "dropmon" (tracepoint, fd 5)`.
func (p *Program) String() string {
	if p.fd.Int() < 0 {
		return fmt.Sprintf("program %s (%s, closed)", sys.QuoteName(p.name), p.typ)
	}
	return fmt.Sprintf("program %s (%s, fd %d)", sys.QuoteName(p.name), p.typ, p.fd.Int())
}

// FD is the program's file descriptor; -1 once closed.
func (p *Program) FD() int { return p.fd.Int() }

// Name is the program's name as the kernel keeps it (at most 15 bytes).
func (p *Program) Name() string { return p.name }

// Type is the program's type.
func (p *Program) Type() Type { return p.typ }

// Log is the verifier's log of a load asked for with Spec.LogLevel.
func (p *Program) Log() string { return p.log }

// Close releases the program's fd (attachments and pins keep the program);
// closing twice is harmless.
func (p *Program) Close() error { return wrap(p.fd.Close(), "close %s", sys.QuoteName(p.name)) }

// Pin makes the program outlive the process at path in a BPF file system;
// mapfd.Unpin removes it.
func (p *Program) Pin(path string) error {
	if p.fd.Int() < 0 {
		return ErrClosed
	}
	return wrap(sys.Pin(p.fd.Int(), path), "pin %s at %s", sys.QuoteName(p.name), path)
}

// Open opens the program pinned at path.
func Open(path string) (*Program, error) {
	fd, err := sys.OpenPinned(path, sys.ObjProg)
	return fromFD(fd, wrap(err, "open pinned program %s", path))
}

// OpenID opens the program with the kernel-wide id (needs CAP_SYS_ADMIN).
func OpenID(id uint32) (*Program, error) {
	fd, err := sys.ProgGetFDByID(&sys.GetIDAttr{ID: id})
	return fromFD(fd, wrap(err, "open program id %d", id))
}

func fromFD(fd int, err error) (*Program, error) {
	if err != nil {
		return nil, err
	}
	var info sys.ProgInfo
	if err := sys.InfoByFD(fd, &info); err != nil {
		unix.Close(fd)
		return nil, wrap(err, "program info")
	}
	p := &Program{name: info.Name.String(), typ: Type(info.Type), attachType: attachUnknown}
	p.fd.Set(fd)
	return p, nil
}
