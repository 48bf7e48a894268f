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
	// references), assembled by Load.
	Insns []insn.Item
	// Instructions is the program already assembled (insn.Assemble), for
	// loading one program many times; set it or Insns, not both.
	Instructions []insn.Instruction

	// KernVersion is LINUX_VERSION_CODE for kprobe programs, which kernels
	// before 5.0 check; zero means the running kernel's.
	KernVersion        uint32
	ExpectedAttachType uint32 // bpf_attach_type, for types that need it at load
	Flags              uint32 // prog_flags: BPF_F_STRICT_ALIGNMENT, BPF_F_SLEEPABLE, ...

	// LogLevel above zero asks for the verifier's log (Program.Log); a
	// failed load gets one at level 1 anyway.
	LogLevel uint32
	// LogSize is the first size of the log buffer, which grows on ENOSPC
	// up to MaxLogSize. Zero means 64 KiB.
	LogSize int
}

// Flags for Spec.Flags (prog_flags), as in the uapi header.
const (
	BPF_F_STRICT_ALIGNMENT = unix.BPF_F_STRICT_ALIGNMENT // the verifier checks alignment even where the CPU does not need it
	BPF_F_ANY_ALIGNMENT    = unix.BPF_F_ANY_ALIGNMENT    // the verifier does not check it even where the CPU needs it (5.0)
	BPF_F_TEST_RND_HI32    = unix.BPF_F_TEST_RND_HI32    // the verifier puts random upper halves after 32-bit writes, a test (5.3)
	BPF_F_TEST_STATE_FREQ  = unix.BPF_F_TEST_STATE_FREQ  // the verifier keeps a state at every jump, a test (5.4)
	BPF_F_SLEEPABLE        = unix.BPF_F_SLEEPABLE        // the program may sleep (5.10): a syscall program, say (5.14)
	BPF_F_XDP_HAS_FRAGS    = unix.BPF_F_XDP_HAS_FRAGS    // an XDP program that takes multi-buffer packets (5.18)
)

// retZero is "r0 = 0; exit", for feature probes.
var retZero = []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}

// MaxLogSize bounds the verifier log buffer.
const MaxLogSize = 64 << 20

// Program is a loaded program.
type Program struct {
	fd   sys.FD
	name string
	typ  Type
	log  string
}

// Load assembles spec.Insns (or takes spec.Instructions) and loads the
// program; one the verifier rejects is a *VerifierError.
func Load(spec Spec) (*Program, error) {
	insns := spec.Instructions
	switch {
	case len(spec.Insns) > 0 && len(insns) > 0:
		return nil, fmt.Errorf("prog: load %q: both Insns and Instructions are set", spec.Name)
	case len(spec.Insns) > 0:
		var err error
		if insns, err = insn.Assemble(spec.Insns); err != nil {
			return nil, fmt.Errorf("prog: load %q: %w", spec.Name, err)
		}
	}
	if len(insns) == 0 {
		return nil, fmt.Errorf("prog: load %q: no instructions", spec.Name)
	}
	buf := codePool.Get().(*[]byte)
	defer codePool.Put(buf)
	name, err := sys.NewObjName(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("prog: load: %w", err)
	}
	license, err := sys.StringPointer(spec.License)
	if err != nil {
		return nil, fmt.Errorf("prog: load %q: license: %w", spec.Name, err)
	}
	code, err := insn.AppendEncode((*buf)[:0], insns)
	if err != nil {
		return nil, fmt.Errorf("prog: load %q: %w", spec.Name, err)
	}
	*buf = code
	attr := sys.ProgLoadAttr{
		ProgType:           uint32(spec.Type),
		InsnCnt:            uint32(len(insns)),
		Insns:              sys.SlicePointer(code),
		License:            license,
		KernVersion:        spec.KernVersion,
		ProgFlags:          spec.Flags,
		ProgName:           name,
		ExpectedAttachType: spec.ExpectedAttachType,
	}
	if spec.Type == Kprobe && attr.KernVersion == 0 {
		attr.KernVersion, _ = KernelVersion()
	}
	var log []byte
	if spec.LogLevel > 0 {
		log = make([]byte, logSize(spec.LogSize))
		attr.LogLevel, attr.LogSize, attr.LogBuf = spec.LogLevel, uint32(len(log)), sys.SlicePointer(log)
	}
	fd, err := sys.ProgLoad(&attr)
	if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
		fd, err = sys.ProgLoad(&attr)
	}
	if err != nil && spec.LogLevel == 0 {
		// The fast path had no log: load again with one to say why.
		log = make([]byte, logSize(spec.LogSize))
		attr.LogLevel, attr.LogSize, attr.LogBuf = 1, uint32(len(log)), sys.SlicePointer(log)
		fd, err = sys.ProgLoad(&attr)
	}
	for err != nil && errors.Is(err, unix.ENOSPC) && len(log) < MaxLogSize {
		log = make([]byte, min(len(log)*4, MaxLogSize))
		attr.LogSize, attr.LogBuf = uint32(len(log)), sys.SlicePointer(log)
		fd, err = sys.ProgLoad(&attr)
	}
	if err != nil {
		return nil, newVerifierError(spec.Name, err, unix.ByteSliceToString(log))
	}
	p := &Program{name: attr.ProgName.String(), typ: spec.Type, log: unix.ByteSliceToString(log)}
	p.fd.Set(fd)
	return p, nil
}

// codePool recycles encoded instructions, which the kernel copies.
var codePool = sync.Pool{New: func() any { return new([]byte) }}

func logSize(n int) int {
	if n <= 0 {
		return 64 << 10
	}
	return min(max(n, 128), MaxLogSize)
}

// String says what the program is: `program "dropmon" (tracepoint, fd 5)`.
func (p *Program) String() string {
	if p.fd.Int() < 0 {
		return fmt.Sprintf("program %q (%s, closed)", p.name, p.typ)
	}
	return fmt.Sprintf("program %q (%s, fd %d)", p.name, p.typ, p.fd.Int())
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
func (p *Program) Close() error { return wrap(p.fd.Close(), "close %q", p.name) }

// Pin makes the program outlive the process at path in a BPF file system;
// mapfd.Unpin removes it.
func (p *Program) Pin(path string) error {
	if p.fd.Int() < 0 {
		return ErrClosed
	}
	return wrap(sys.Pin(p.fd.Int(), path), "pin %q at %s", p.name, path)
}

// Open opens the program pinned at path.
func Open(path string) (*Program, error) {
	fd, err := sys.OpenPinned(path, "prog")
	if err != nil {
		return nil, fmt.Errorf("prog: open pinned program %s: %w", path, err)
	}
	return fromFD(fd)
}

// OpenID opens the program with the kernel-wide id (needs CAP_SYS_ADMIN).
func OpenID(id uint32) (*Program, error) {
	fd, err := sys.ProgGetFDByID(&sys.GetIDAttr{ID: id})
	if err != nil {
		return nil, fmt.Errorf("prog: open program id %d: %w", id, err)
	}
	return fromFD(fd)
}

func fromFD(fd int) (*Program, error) {
	var info sys.ProgInfo
	if err := sys.InfoByFD(fd, &info); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("prog: program info: %w", err)
	}
	p := &Program{name: info.Name.String(), typ: Type(info.Type)}
	p.fd.Set(fd)
	return p, nil
}
