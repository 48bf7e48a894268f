package usdt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Options says how to attach.
type Options struct {
	PID       int    // only this process; 0 means every process that runs the file
	Name      string // the programs' name; "usdt" when empty
	NoCookies bool   // one program per call site even where the kernel has bpf_cookie (5.15)
	NoMulti   bool   // a uprobe per call site even where the kernel has uprobe_multi links (6.6)
}

// Builder returns the program to run at the call sites args reads from,
// called once with bpf_cookie, else once per site.
type Builder func(args *Args) ([]insn.Item, error)

// Attachment is one program attached to every call site of a probe, or
// one program per call site.
type Attachment struct {
	// Cookies: one program serves every site, reading the descriptions
	// of arguments that differ by bpf_cookie.
	Cookies bool
	// Multi: one uprobe_multi link (6.6) attaches the program to every
	// site, where without it each site has a uprobe of its own.
	Multi    bool
	Programs []*prog.Program // one with Cookies, else one per site
	links    []*prog.Link
	specs    *mapfd.Map
}

// Close detaches from every site (the semaphores count one tracer less)
// and closes the programs and the map.
func (a *Attachment) Close() error {
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	for _, p := range a.Programs {
		errs = append(errs, p.Close())
	}
	if a.specs != nil {
		errs = append(errs, a.specs.Close())
	}
	a.links, a.Programs, a.specs = nil, nil, nil
	return sys.Wrap("usdt", errors.Join(errs...), "close")
}

// Args reads a probe's arguments in a program that runs at its call sites.
type Args struct {
	N      int     // how many arguments the probe has
	sites  [][]Arg // the arguments of the sites the program serves
	regs32 bool    // their registers are 32-bit arm's, of 4 bytes in its pt_regs
	specs  *mapfd.Map
	labels int
}

// Scratch is the stack Load and String use, below the frame pointer: the
// program keeps its own data under r10-Scratch.
const Scratch = 16

// specSize is the size of an argument's description in the map: u64 value
// (constant, or offset from the register), u16 pt_regs offset, u8 kind,
// shift (64 less the bits), signedness and size.
const specSize = 16

// Load returns dst = argument n of the call site being run, zero- or
// sign-extended to 64 bits, the context in ctx (r6 to r9), clobbering r0
// to r5 and Scratch bytes of stack (memory is read with
// bpf_probe_read_user). An argument the same at every site the program
// serves is read as written there; one that differs is read as the
// description the cookie indexes says.
func (a *Args) Load(dst, ctx insn.Register, n int) ([]insn.Item, error) {
	regsOK := ctx >= insn.R6 && ctx <= insn.R9 && dst <= insn.R9
	if n < 0 || n >= a.N || len(a.sites) == 0 || n >= len(a.sites[0]) || !regsOK {
		return nil, fmt.Errorf("usdt: argument %d into %v with the context in %v: the probe has %d "+
			"arguments, the context must be in r6 to r9", n, dst, ctx, a.N)
	}
	for _, args := range a.sites {
		if args[n].Err != nil {
			return nil, args[n].Err
		}
	}
	differs := func(args []Arg) bool { return !args[n].same(a.sites[0][n]) }
	if !slices.ContainsFunc(a.sites, differs) {
		return a.sites[0][n].load(dst, ctx, a.regs32), nil
	}
	if a.specs == nil {
		return nil, fmt.Errorf("usdt: argument %d differs between call sites, "+
			"and the program serves them without cookies", n)
	}
	regs := map[int16]bool{} // the registers the sites read it from
	for _, args := range a.sites {
		if args[n].Kind != ArgConst {
			regs[args[n].PtRegs] = true
		}
	}
	a.labels++
	l := func(s string) string { return fmt.Sprintf("usdt_%d_%s", a.labels, s) }
	at := int16(n * specSize) // the argument's description, in the site's entry
	// The site's entry of the descriptions, at the cookie, in r0 and at
	// r10-16; the value read goes to r10-8, zero until then.
	items := []insn.Item{
		insn.StoreImm(insn.BPF_DW, insn.R10, -8, 0),
		insn.Mov64Reg(insn.R1, ctx),
		insn.Call(insn.BPF_FUNC_get_attach_cookie),
		insn.StoreMem(insn.BPF_W, insn.R10, -16, insn.R0),
		insn.LoadMapFD(insn.R1, a.specs),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -16),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, l("zero")),
		insn.StoreMem(insn.BPF_DW, insn.R10, -16, insn.R0),
		// A constant's value is in the description.
		insn.LoadMem(insn.BPF_B, insn.R1, insn.R0, at+10),
		insn.JumpImm(insn.BPF_JEQ, insn.R1, int32(ArgConst), l("const")),
		// The register: ctx plus a variable offset is no access the verifier
		// allows, so one constant offset for each register the sites use.
		insn.LoadMem(insn.BPF_H, insn.R3, insn.R0, at+8),
	}
	// On 32-bit arm, each register with the next one, the pair an 8-byte
	// argument takes, which the shift below cuts down to one for fewer.
	for _, off := range slices.Sorted(maps.Keys(regs)) {
		next := l(fmt.Sprint("reg", off))
		items = append(items, insn.JumpImm(insn.BPF_JNE, insn.R3, int32(off), next))
		items = append(items, register(insn.R1, insn.R2, ctx, off, a.regs32, true)...)
		items = append(items,
			insn.Ja(l("reg")),
			insn.Label(next))
	}
	items = append(items, insn.Ja(l("zero")))
	if len(regs) > 0 { // else unreachable, which the verifier refuses
		// A 32-bit address wraps in 32 bits (and sheds the pair's second).
		add := insn.ALU64Reg(insn.BPF_ADD, insn.R3, insn.R1)
		if a.regs32 {
			add = insn.ALU32Reg(insn.BPF_ADD, insn.R3, insn.R1)
		}
		items = append(items,
			insn.Label(l("reg")),
			insn.StoreMem(insn.BPF_DW, insn.R10, -8, insn.R1),
			insn.LoadMem(insn.BPF_B, insn.R1, insn.R0, at+10),
			insn.JumpImm(insn.BPF_JNE, insn.R1, int32(ArgDeref), l("shift")),
			// The memory it points at, plus the offset: size bytes, 1 to 8.
			insn.LoadMem(insn.BPF_DW, insn.R3, insn.R10, -8),
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, at),
			add,
			insn.StoreImm(insn.BPF_DW, insn.R10, -8, 0),
			insn.LoadMem(insn.BPF_B, insn.R2, insn.R0, at+13),
			insn.JumpImm(insn.BPF_JEQ, insn.R2, 0, l("zero")),
			insn.JumpImm(insn.BPF_JGT, insn.R2, 8, l("zero")),
			insn.Mov64Reg(insn.R1, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R1, -8),
			insn.Call(insn.BPF_FUNC_probe_read_user),
			insn.LoadMem(insn.BPF_DW, insn.R0, insn.R10, -16),
			insn.Ja(l("shift")))
	}
	return append(items,
		insn.Label(l("const")),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, at),
		insn.StoreMem(insn.BPF_DW, insn.R10, -8, insn.R1),
		// Its size: shifted up to bit 63, then down again, with its sign
		// or without.
		insn.Label(l("shift")),
		insn.LoadMem(insn.BPF_B, insn.R2, insn.R0, at+11),
		insn.LoadMem(insn.BPF_B, insn.R3, insn.R0, at+12),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R10, -8),
		insn.ALU64Reg(insn.BPF_LSH, insn.R1, insn.R2),
		insn.JumpImm(insn.BPF_JNE, insn.R3, 0, l("signed")),
		insn.ALU64Reg(insn.BPF_RSH, insn.R1, insn.R2),
		insn.Ja(l("done")),
		insn.Label(l("signed")),
		insn.ALU64Reg(insn.BPF_ARSH, insn.R1, insn.R2),
		insn.Ja(l("done")),
		insn.Label(l("zero")),
		insn.Mov64Imm(insn.R1, 0),
		insn.Label(l("done")),
		insn.Mov64Reg(dst, insn.R1),
	), nil
}

// same says whether b is read as a is: the register's name may differ
// ("edi", "rdi") where its offset and the size are the same.
func (a Arg) same(b Arg) bool {
	return a.Kind == b.Kind && a.PtRegs == b.PtRegs && a.Value == b.Value &&
		a.Size == b.Size && a.Signed == b.Signed
}

// register is dst = the register at offset off of the pt_regs at ctx: its
// 8 bytes, or with regs32 (32-bit arm) its 4, zero-extended, and with pair
// the next register's above them (through tmp): an 8-byte argument's two.
// The verifier takes no 8-byte load at an offset not a multiple of 8
// (kprobe_prog_is_valid_access), so a pair is two loads.
func register(dst, tmp, ctx insn.Register, off int16, regs32, pair bool) []insn.Item {
	if !regs32 {
		return []insn.Item{insn.LoadMem(insn.BPF_DW, dst, ctx, off)}
	}
	items := []insn.Item{insn.LoadMem(insn.BPF_W, dst, ctx, off)}
	if pair {
		items = append(items,
			insn.LoadMem(insn.BPF_W, tmp, ctx, off+4),
			insn.ALU64Imm(insn.BPF_LSH, tmp, 32),
			insn.ALU64Reg(insn.BPF_OR, dst, tmp))
	}
	return items
}

// load is Load for one site, whose argument is known.
func (a Arg) load(dst, ctx insn.Register, regs32 bool) []insn.Item {
	if a.Kind == ArgConst {
		v := a.Value << (64 - 8*a.Size)
		if a.Signed {
			return []insn.Item{insn.LoadImm64(dst, v>>(64-8*a.Size))}
		}
		return []insn.Item{insn.LoadImm64(dst, int64(uint64(v)>>(64-8*a.Size)))}
	}
	var items []insn.Item
	if a.Kind == ArgReg {
		tmp := insn.R0
		if dst == insn.R0 {
			tmp = insn.R1
		}
		items = register(dst, tmp, ctx, a.PtRegs, regs32, a.Size == 8)
	} else {
		// A 32-bit address wraps in 32 bits.
		add := insn.ALU64Reg(insn.BPF_ADD, insn.R3, insn.R4)
		if regs32 {
			add = insn.ALU32Reg(insn.BPF_ADD, insn.R3, insn.R4)
		}
		// Size bytes at the register's value plus the offset, into r10-8,
		// zeroed first.
		items = []insn.Item{
			insn.StoreImm(insn.BPF_DW, insn.R10, -8, 0),
			insn.Mov64Reg(insn.R1, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R1, -8),
			insn.Mov64Imm(insn.R2, int32(a.Size)),
		}
		items = append(items, register(insn.R3, insn.R0, ctx, a.PtRegs, regs32, false)...)
		items = append(items,
			insn.LoadImm64(insn.R4, a.Value),
			add,
			insn.Call(insn.BPF_FUNC_probe_read_user),
			insn.LoadMem(insn.BPF_DW, dst, insn.R10, -8))
	}
	if shift := int32(64 - 8*a.Size); shift > 0 {
		op := insn.BPF_RSH
		if a.Signed {
			op = insn.BPF_ARSH
		}
		items = append(items, insn.ALU64Imm(insn.BPF_LSH, dst, shift), insn.ALU64Imm(op, dst, shift))
	}
	return items
}

// String copies the C string argument n points at into the size bytes at
// r10+buf (multiples of 8, below Scratch) with bpf_probe_read_user_str,
// zeroing them first: the helper leaves the tail, and the string may be a
// map key. r0 is then its length with the NUL, or a negative error.
func (a *Args) String(ctx insn.Register, n int, buf int16, size int32) ([]insn.Item, error) {
	if size < 1 || int(buf) < -512 || int(buf)+int(size) > -Scratch || buf%8 != 0 || size%8 != 0 {
		return nil, fmt.Errorf("usdt: string of %d bytes at r10%+d: "+
			"want multiples of 8 within r10-512 to r10-%d", size, buf, Scratch)
	}
	items, err := a.Load(insn.R3, ctx, n)
	for off := int16(0); off < int16(size); off += 8 {
		items = append(items, insn.StoreImm(insn.BPF_DW, insn.R10, buf+off, 0))
	}
	return append(items,
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(buf)),
		insn.Mov64Imm(insn.R2, size),
		insn.Call(insn.BPF_FUNC_probe_read_user_str),
	), err
}

// ParseArgs parses the arguments of every call site of the probe; they
// must be as many at each. An argument that cannot be read has its Err
// set, naming the probe and the site, so that the others still can be.
func (p *Probe) ParseArgs() ([][]Arg, error) {
	if p.file == nil || len(p.Sites) == 0 {
		return nil, fmt.Errorf("usdt: probe %s is none of a File's", p)
	}
	var out [][]Arg
	for _, s := range p.Sites {
		var args []Arg
		for i, f := range splitArgs(s.Args) {
			a, err := p.file.parseArg(f, s.Address)
			if err != nil {
				err = fmt.Errorf("usdt: %s in %s, site %#x: argument %d %q: %w",
					p, p.file.Path, s.Address, i, f, err)
				a = Arg{Err: err}
			}
			args = append(args, a)
		}
		if len(out) > 0 && len(args) != len(out[0]) {
			return nil, fmt.Errorf("usdt: %s in %s: %d arguments at site %#x, %d at %#x",
				p, p.file.Path, len(args), s.Address, len(out[0]), p.Sites[0].Address)
		}
		out = append(out, args)
	}
	return out, nil
}

// ptRegsArch is, by the machine of a file, the kernel (prog.PtRegs.Arch)
// whose struct pt_regs its arguments' offsets (Arg.PtRegs) are in. It is
// x86_64's for 32-bit x86 processes too, but 32-bit arm's only on a 32-bit
// kernel: an aarch64 one keeps a 32-bit process's registers in x0-x14.
var ptRegsArch = map[elf.Machine]string{
	elf.EM_X86_64: "x86_64", elf.EM_386: "x86_64", elf.EM_AARCH64: "aarch64", elf.EM_ARM: "armv7l",
}

// Attach runs build's program at every call site of the probe, with the
// semaphore as each site's ref_ctr_offset (4.20). Where the kernel has
// bpf_cookie (5.15), one program serves every site. It is attached through
// one uprobe_multi link where the kernel has them (6.6), else by a uprobe
// per site. Without bpf_cookie each site has a program and a uprobe of its
// own. Attachment.Cookies and Attachment.Multi say which.
func Attach(p *Probe, o Options, build Builder) (*Attachment, error) {
	if p == nil || build == nil {
		return nil, errors.New("usdt: Attach needs a probe and a Builder")
	}
	sites, err := p.ParseArgs()
	if err != nil {
		return nil, err
	}
	a := &Attachment{}
	fail := func(err error) (*Attachment, error) {
		a.Close()
		return nil, sys.Wrap("usdt", err, "attach to %s in %s", p, p.file.Path)
	}
	if len(sites[0]) > 0 {
		regs, err := prog.KernelPtRegs()
		if err != nil {
			return fail(err)
		}
		if want := ptRegsArch[p.file.Machine]; regs.Arch != want {
			const read = "the arguments of %v files are read on %s kernels, this one is %s: %w"
			return fail(fmt.Errorf(read, p.file.Machine, want, regs.Arch, sys.ErrNotSupported))
		}
	}
	if err := p.armCode(); err != nil {
		return fail(err)
	}
	if err := a.choose(o); err != nil {
		return fail(err)
	}
	sems, err := p.semaphores()
	if err != nil {
		return fail(err)
	}
	if !a.Cookies {
		err = a.attachEach(p, o, sites, sems, build)
	} else if err = a.loadOne(p, o, sites, build); err == nil && a.Multi {
		err = a.attachMulti(p, o, sems)
	} else if err == nil {
		err = a.attachCookies(p, o, sems)
	}
	if err != nil {
		return fail(err)
	}
	return a, nil
}

// choose sets how to attach: with cookies where the kernel has them and o
// allows, and through uprobe_multi likewise. With a pid, uprobe_multi only
// where the kernel's links run the program in every thread of the process
// (6.10: HaveUprobeMultiPIDFilter), as a uprobe per site does. A kernel
// with uprobe_multi links has bpf_cookie too.
func (a *Attachment) choose(o Options) error {
	if o.NoCookies {
		return nil
	}
	var err error
	have := prog.HaveUprobeMulti
	if o.PID != 0 {
		have = prog.HaveUprobeMultiPIDFilter
	}
	if !o.NoMulti {
		if a.Multi, err = have(); err != nil {
			return err
		}
	}
	a.Cookies = a.Multi
	if !a.Cookies {
		a.Cookies, err = prog.HavePerfLink()
	}
	return err
}

// semaphores returns the file offset of each site's semaphore, 0 for none.
func (p *Probe) semaphores() ([]uint64, error) {
	sems := make([]uint64, len(p.Sites))
	for i, s := range p.Sites {
		sem, err := p.semaphore(s)
		if err != nil {
			return nil, err
		}
		sems[i] = sem
	}
	return sems, nil
}

// args reads the arguments of sites, p's, in a program: with specs where
// they differ between them and a cookie tells which site runs. A 32-bit arm
// file's are in 32-bit arm's pt_regs (Attach has checked the kernel's).
func (p *Probe) args(sites [][]Arg, specs *mapfd.Map) *Args {
	return &Args{N: len(sites[0]), sites: sites, regs32: p.file.Machine == elf.EM_ARM, specs: specs}
}

// load builds and loads the program args reads the arguments of.
func (a *Attachment) load(o Options, args *Args, build Builder) error {
	items, err := build(args)
	if err != nil {
		return err
	}
	spec := prog.Spec{Type: prog.Kprobe, Name: cmp.Or(o.Name, "usdt"), License: "GPL", Insns: items}
	if a.Multi {
		spec.ExpectedAttachType = unix.BPF_TRACE_UPROBE_MULTI
	}
	pr, err := prog.Load(spec)
	if err != nil {
		return err
	}
	a.Programs = append(a.Programs, pr)
	return nil
}

// loadOne loads the one program that serves every site, and the
// descriptions of the arguments that differ between sites, which the
// cookie indexes.
func (a *Attachment) loadOne(p *Probe, o Options, sites [][]Arg, build Builder) error {
	differ := slices.ContainsFunc(sites, func(args []Arg) bool {
		return !slices.EqualFunc(args, sites[0], Arg.same)
	})
	if differ {
		var err error
		if a.specs, err = specMap(sites); err != nil {
			return err
		}
	}
	return a.load(o, p.args(sites, a.specs), build)
}

// attachMulti attaches the one program to every site through one
// uprobe_multi link, the site's index its cookie.
func (a *Attachment) attachMulti(p *Probe, o Options, sems []uint64) error {
	mo := prog.UprobeMultiOptions{PID: o.PID, RefCtrOffsets: sems}
	for i, s := range p.Sites {
		mo.Offsets = append(mo.Offsets, s.Offset)
		mo.Cookies = append(mo.Cookies, uint64(i))
	}
	l, err := prog.AttachUprobeMulti(a.Programs[0], p.file.Path, mo)
	if err != nil {
		return err
	}
	a.links = append(a.links, l)
	return nil
}

// attachCookies attaches the one program to every site, a uprobe each,
// the site's index its cookie.
func (a *Attachment) attachCookies(p *Probe, o Options, sems []uint64) error {
	for i, s := range p.Sites {
		uo := prog.UprobeOptions{Offset: s.Offset, PID: o.PID, RefCtrOffset: sems[i]}
		uo.Cookie = uint64(i)
		l, err := prog.AttachUprobe(a.Programs[0], p.file.Path, uo)
		if err != nil {
			return err
		}
		a.links = append(a.links, l)
	}
	return nil
}

// attachEach builds, loads and attaches a program for each site, which
// reads the arguments as that site passes them.
func (a *Attachment) attachEach(
	p *Probe, o Options, sites [][]Arg, sems []uint64, build Builder,
) error {
	for i, s := range p.Sites {
		if err := a.load(o, p.args(sites[i:i+1], nil), build); err != nil {
			return err
		}
		uo := prog.UprobeOptions{Offset: s.Offset, PID: o.PID, RefCtrOffset: sems[i]}
		l, err := prog.AttachUprobe(a.Programs[i], p.file.Path, uo)
		if err != nil {
			return err
		}
		a.links = append(a.links, l)
	}
	return nil
}

// Enable sets the probe's semaphore without a uprobe on its sites, for
// programs that test one probe's semaphore to fire another: CPython 3.11
// to 3.14 fire python:function__entry only while python:line is enabled
// (gh-98894), whose uprobe would trap every line. The uprobe, of a program
// doing nothing, is on code a process runs once: an executable's entry
// point, a shared library's .init.
func Enable(p *Probe, o Options) (*Attachment, error) {
	if p == nil || p.file == nil || len(p.Sites) == 0 {
		return nil, errors.New("usdt: Enable needs a probe of a File")
	}
	if p.file.entry == 0 {
		return nil, fmt.Errorf("usdt: enable %s: %s has no entry point or .init in an executable segment",
			p, p.file.Path)
	}
	sem, err := p.semaphore(p.Sites[0])
	if err != nil || sem == 0 {
		return nil, fmt.Errorf("usdt: enable %s: %s has no semaphore to set (%v)", p, p.file.Path, err)
	}
	entry := Site{Offset: p.file.entry, Semaphore: p.Sites[0].Semaphore}
	q := &Probe{p.Provider, p.Name, []Site{entry}, p.file}
	o.NoCookies = true // one site
	nothing := func(*Args) ([]insn.Item, error) {
		return []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}, nil
	}
	return Attach(q, o, nothing)
}

// specMap makes the array of argument descriptions, one entry per site.
func specMap(sites [][]Arg) (*mapfd.Map, error) {
	n := max(len(sites[0]), 1)
	m, err := mapfd.Create(mapfd.Spec{
		Type:       mapfd.Array,
		KeySize:    4,
		ValueSize:  uint32(n * specSize),
		MaxEntries: uint32(len(sites)),
		Name:       "usdt_specs",
	})
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	for i, args := range sites {
		v := make([]byte, n*specSize)
		for j, a := range args {
			b := v[j*specSize:]
			le.PutUint64(b, uint64(a.Value))
			le.PutUint16(b[8:], uint16(a.PtRegs))
			b[10], b[11], b[13] = byte(a.Kind), byte(64-8*a.Size), byte(a.Size)
			if a.Signed {
				b[12] = 1
			}
		}
		if err := m.Update(le.AppendUint32(nil, uint32(i)), v, 0); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// Quoted is "provider:name" as a message or a listing writes it. It is as
// it is when both are identifiers as sys/sdt.h makes them: letters,
// digits and '_', or '-' and '.', which some providers use. Else it is
// quoted as Go quotes strings: what a file names its probes is untrusted,
// and a newline must not forge a line nor an escape sequence reach a
// terminal.
func (p *Probe) Quoted() string { return quoteName(p.String()) }

// quoteName is Quoted for a name as a caller wrote it, "provider:name".
func quoteName(s string) string {
	provider, name, _ := strings.Cut(s, ":")
	if identifier(provider) && identifier(name) {
		return s
	}
	return strconv.Quote(s)
}

// identifier says whether s is not empty and only of letters, digits,
// '_', '-' and '.'.
func identifier(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '_' || r == '-' || r == '.')
	})
}
