package usdt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
)

// ErrNoProbes is returned by Open for an ELF file without .note.stapsdt.
var ErrNoProbes = errors.New("usdt: no USDT probes")

// File is the USDT probes of one ELF executable or shared library.
type File struct {
	Path    string      // absolute, as the uprobes are attached
	Machine elf.Machine // EM_X86_64, EM_386, EM_AARCH64 ...
	Probes  []*Probe    // one per provider:name, in the order of the notes
	progs   []*elf.Prog
	entry   uint64            // file offset of the entry point or .init, or 0
	syms    map[string]uint64 // for %rip-relative arguments: symbols' addresses, 0 for two of a name
	thumb   map[uint64]bool   // EM_ARM: offsets of the sites and entry not in ARM code (armCode)
}

// Probe is one provider:name and its call sites, a site (and note) per
// expansion of the probe macro.
type Probe struct {
	Provider string // as in the probe macro: DTRACE_PROBE(provider, name)
	Name     string // as in the probe macro
	Sites    []Site // in note order
	file     *File
}

// String is "provider:name".
func (p *Probe) String() string { return p.Provider + ":" + p.Name }

// Site is one call site, from one note.
type Site struct {
	Address uint64 `json:"address"` // link-time address of the site's nop, adjusted for prelink
	Offset  uint64 `json:"offset"`  // its offset in the file: where the uprobe goes
	// Semaphore is the link-time address of the probe's semaphore, which
	// the traced program reads to skip the probe untraced; 0 for none.
	Semaphore uint64 `json:"semaphore"`
	Args      string `json:"args"` // the arguments as the note writes them: "-4@%edi 8@-16(%rbp)"
}

// note is one NT_STAPSDT note, as written.
type note struct {
	pc, base, sem        uint64
	provider, name, args string
}

// Open reads the probes of the little-endian ELF file at path, adjusting
// the addresses of a prelinked file (.stapsdt.base moved from where the
// notes say) and turning them into file offsets. It reads each section it
// needs (the notes; the symbols, for x86-64 arguments through %rip) as the
// file holds it, never inflating one: it allocates in proportion to the
// file's size, not to what its headers claim.
func Open(path string) (*File, error) {
	abs, err := filepath.Abs(path)
	var r *os.File
	if err == nil {
		r, err = sys.OpenRegular(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", err)
	}
	defer r.Close()
	end, _ := r.Seek(0, io.SeekEnd)
	size := uint64(end)
	if err := checkHeaders(r, size); err != nil {
		return nil, fmt.Errorf("usdt: %s: %w", path, err)
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: %w", path, err)
	}
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, fmt.Errorf("%w in %s: it has no .note.stapsdt section", ErrNoProbes, path)
	}
	data, err := sectionData(r, size, sec)
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: .note.stapsdt of %d bytes at %#x is compressed or past "+
			"the end of the file", path, sec.Size, sec.Offset)
	}
	notes, err := parseNotes(data, 4*int(f.Class)) // ELFCLASS32 is 1, ELFCLASS64 2
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: .note.stapsdt: %w", path, err)
	}
	var base uint64
	if s := f.Section(".stapsdt.base"); s != nil {
		base = s.Addr
	}
	file := &File{Path: abs, Machine: f.Machine, progs: f.Progs}
	// Where Enable's uprobe goes: code a process runs once, the entry point
	// of an executable, else (a shared library's is 0) .init.
	file.entry, _ = file.offset(f.Entry, elf.PF_X)
	armEntry := f.Entry%2 == 0 // 32-bit arm: ARM code, where Thumb's low bit is not set
	if s := f.Section(".init"); s != nil && file.entry == 0 {
		file.entry, _ = file.offset(s.Addr, elf.PF_X)
		armEntry = false // ARM or Thumb: nothing says which
	}
	if want := ripSymbols(f.Machine, notes); len(want) > 0 {
		file.syms = symbols(r, size, f, want)
	}
	byName := map[string]*Probe{}
	for _, n := range notes {
		if base != 0 && n.base != 0 {
			n.pc += base - n.base
			if n.sem != 0 {
				n.sem += base - n.base
			}
		}
		p := byName[n.provider+":"+n.name]
		if p == nil {
			p = &Probe{Provider: n.provider, Name: n.name, file: file}
			byName[p.String()] = p
			file.Probes = append(file.Probes, p)
		}
		off, err := file.offset(n.pc, elf.PF_X)
		if err != nil {
			return nil, fmt.Errorf("usdt: %s: probe %s site %#x: %w", path, p, n.pc, err)
		}
		p.Sites = append(p.Sites, Site{Address: n.pc, Offset: off, Semaphore: n.sem, Args: n.args})
	}
	if f.Machine == elf.EM_ARM {
		file.findThumb(r, armEntry)
	}
	return file, nil
}

// findThumb finds the sites of a 32-bit arm file that are not ARM code,
// and Enable's entry unless armEntry says it is ARM code. It reads the nop
// sys/sdt.h puts at each site: ARM's is 0xe320f000 (before ARMv6K mov r0,
// r0: 0xe1a00000), Thumb's 0xbf00.
func (f *File) findThumb(r io.ReaderAt, armEntry bool) {
	f.thumb = map[uint64]bool{}
	for _, p := range f.Probes {
		for _, s := range p.Sites {
			var w [4]byte
			r.ReadAt(w[:], int64(s.Offset))
			if op := binary.LittleEndian.Uint32(w[:]); op != 0xe320f000 && op != 0xe1a00000 {
				f.thumb[s.Offset] = true
			}
		}
	}
	if !armEntry && f.entry != 0 {
		f.thumb[f.entry] = true
	}
}

// armCode refuses sites in Thumb code: 32-bit arm's uprobes decode ARM
// instructions only, refusing a site not 4-aligned and misreading a Thumb
// one that is (arch_uprobe_analyze_insn: "Thumb not yet supported").
// Debian's armhf gcc emits Thumb-2 unless told -marm.
func (p *Probe) armCode() error {
	for _, s := range p.Sites {
		if p.file.thumb[s.Offset] {
			const why = "32-bit arm's uprobes decode ARM instructions only (build with -marm)"
			return fmt.Errorf("the code at file offset %#x is Thumb, or not known as ARM: %s: %w",
				s.Offset, why, sys.ErrNotSupported)
		}
	}
	return nil
}

// checkHeaders refuses a file before elf.NewFile reads it, where that
// would cost more than the file's size bytes. It refuses a file that is
// not a little-endian ELF file, or is cut short of its ELF header, where
// debug/elf said a bare EOF. It refuses one whose program or section
// headers, or section-name table, do not fit in the file: elf.NewFile
// would allocate what they claim. And it refuses a compressed
// section-name table, which elf.NewFile would inflate to whatever size a
// few bytes of zlib claim.
func checkHeaders(r io.ReaderAt, size uint64) error {
	var h [64]byte
	r.ReadAt(h[:], 0)
	// The header's size, by e_ident's EI_CLASS, which a file of 4 bytes lacks.
	need := map[elf.Class]uint64{elf.ELFCLASS32: 52, elf.ELFCLASS64: 64}[elf.Class(h[4])]
	switch data := elf.Data(h[5]); {
	case size < 4 || string(h[:4]) != elf.ELFMAG:
		return errors.New("not an ELF file")
	case size == 4:
		return errors.New("truncated: 4 bytes, short of an ELF header (52 bytes for 32-bit, " +
			"64 for 64-bit)")
	case need == 0:
		return fmt.Errorf("unknown ELF class %d (1 for 32-bit, 2 for 64-bit)", h[4])
	case size > 5 && data == elf.ELFDATA2MSB:
		return errors.New("a big-endian ELF file: only little-endian ones are supported")
	case size > 5 && data != elf.ELFDATA2LSB:
		return fmt.Errorf("unknown ELF data encoding %d (1 for little-endian, 2 for big-endian)",
			h[5])
	case size < need:
		return fmt.Errorf("truncated: %d bytes, short of the %d-byte header of a %d-bit ELF file",
			size, need, 32<<(h[4]-1))
	}
	le, wide := binary.LittleEndian, h[4] == byte(elf.ELFCLASS64)
	// e_phoff, e_phentsize, e_phnum, e_shoff, e_shentsize, e_shnum, e_shstrndx
	var phoff, phent, phnum, shoff, shent, shnum, ndx uint64
	if wide {
		phoff = le.Uint64(h[32:])
		phent = uint64(le.Uint16(h[54:]))
		phnum = uint64(le.Uint16(h[56:]))
		shoff = le.Uint64(h[40:])
		shent = uint64(le.Uint16(h[58:]))
		shnum = uint64(le.Uint16(h[60:]))
		ndx = uint64(le.Uint16(h[62:]))
	} else {
		phoff = uint64(le.Uint32(h[28:]))
		phent = uint64(le.Uint16(h[42:]))
		phnum = uint64(le.Uint16(h[44:]))
		shoff = uint64(le.Uint32(h[32:]))
		shent = uint64(le.Uint16(h[46:]))
		shnum = uint64(le.Uint16(h[48:]))
		ndx = uint64(le.Uint16(h[50:]))
	}
	// section i's sh_flags, sh_offset, sh_size and sh_link
	section := func(i uint64) (flags, off, n, link uint64) {
		var b [64]byte
		r.ReadAt(b[:], int64(shoff+i*shent))
		if wide {
			return le.Uint64(b[8:]), le.Uint64(b[24:]), le.Uint64(b[32:]), uint64(le.Uint32(b[40:]))
		}
		return uint64(le.Uint32(b[8:])), uint64(le.Uint32(b[16:])), uint64(le.Uint32(b[20:])),
			uint64(le.Uint32(b[24:]))
	}
	if _, _, n, link := section(0); shoff != 0 && shoff < size {
		// Past 0xff00 sections, the count is section 0's sh_size, and past
		// 0xff00 the name table's index its sh_link (SHN_XINDEX).
		shnum = cmp.Or(shnum, n)
		if ndx == uint64(elf.SHN_XINDEX) {
			ndx = link
		}
	}
	flags, off, n, _ := section(ndx)
	switch {
	case phoff > size || phent*phnum > size-phoff ||
		shoff > size || shnum > size || shent*shnum > size-shoff:
		return errors.New("program or section headers past the end of the file")
	case ndx < shnum && elf.SectionFlag(flags)&elf.SHF_COMPRESSED != 0:
		return errors.New("its section-name table is compressed, which Open does not inflate: " +
			"a few bytes may claim gigabytes")
	case ndx < shnum && (off > size || n > size-off):
		return errors.New("its section-name table is past the end of the file")
	}
	return nil
}

// parseNotes reads the NT_STAPSDT notes of a .note.stapsdt section whose
// addresses are addrSize bytes, skipping notes of other types.
func parseNotes(b []byte, addrSize int) ([]note, error) {
	le := binary.LittleEndian
	var out []note
	for i := 0; len(b) > 0; i++ {
		if len(b) < 12 {
			return nil, fmt.Errorf("note %d: %d bytes left, short of a header", i, len(b))
		}
		namesz, descsz, typ := uint64(le.Uint32(b)), uint64(le.Uint32(b[4:])), le.Uint32(b[8:])
		b = b[12:]
		descAt := (namesz + 3) &^ 3
		end := descAt + (descsz+3)&^3
		if end > uint64(len(b)) {
			return nil, fmt.Errorf("note %d: name of %d and description of %d bytes "+
				"run past the section's end", i, namesz, descsz)
		}
		name, desc := string(b[:namesz]), b[descAt:descAt+descsz]
		b = b[end:]
		if typ != 3 || name != "stapsdt\x00" { // NT_STAPSDT
			continue
		}
		if len(desc) < 3*addrSize {
			return nil, fmt.Errorf("note %d: %d bytes, short of three addresses", i, len(desc))
		}
		var a [3]uint64 // pc, base, semaphore
		for j := range a {
			var w [8]byte
			copy(w[:], desc[j*addrSize:(j+1)*addrSize])
			a[j] = le.Uint64(w[:])
		}
		s := strings.SplitN(string(desc[3*addrSize:]), "\x00", 4)
		if len(s) < 4 || s[0] == "" || s[1] == "" {
			return nil, fmt.Errorf("note %d: want a provider, a name and arguments, each ending in NUL", i)
		}
		out = append(out, note{a[0], a[1], a[2], s[0], s[1], s[2]})
	}
	return out, nil
}

// offset turns addr into a file offset through the loadable segment
// holding it in its file part, which must have the flags of want.
func (f *File) offset(addr uint64, want elf.ProgFlag) (uint64, error) {
	for _, p := range f.progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr-p.Vaddr >= p.Memsz {
			continue
		}
		switch {
		case p.Flags&want != want:
			return 0, fmt.Errorf("%#x is in a segment that is %v, not %v", addr, p.Flags, want)
		case addr-p.Vaddr >= p.Filesz:
			return 0, fmt.Errorf("%#x is in the zero-filled part of its segment (.bss), "+
				"past what is mapped from the file", addr)
		}
		return addr - p.Vaddr + p.Off, nil
	}
	return 0, fmt.Errorf("%#x is in no loadable segment", addr)
}

// semaphore is the file offset of the site's semaphore, the uprobe's
// ref_ctr_offset, which the kernel counts only in a writable mapping of the
// file (valid_ref_ctr_vma, 4.20).
func (p *Probe) semaphore(s Site) (uint64, error) {
	if s.Semaphore == 0 {
		return 0, nil
	}
	off, err := p.file.offset(s.Semaphore, elf.PF_W)
	if err != nil {
		err = fmt.Errorf("semaphore: the kernel can only count it "+
			"in a writable mapping of the file, and %w", err)
	}
	return off, err
}

// parseArg parses argument s of the site at address. An x86 argument in a
// global variable, "-4@counter+8(%rip)", is read through rip, which at the
// uprobe is the site's address (handle_swbp sets it for the handlers): at
// the variable's address plus 8, less the site's.
func (f *File) parseArg(s string, site uint64) (Arg, error) {
	size, _, _ := strings.Cut(s, "@")
	expr, ok := ripExpr(s)
	if !ok || f.Machine != elf.EM_X86_64 {
		return parseArg(f.Machine, s)
	}
	a, err := parseArg(f.Machine, size+"@$0") // the size and signedness
	if err != nil {
		return a, err
	}
	sym, off, err := ripOperand(expr)
	addr, there := f.syms[sym]
	switch {
	case err != nil:
		return a, err
	case !there:
		return a, fmt.Errorf("the variable %q is in neither the symbol table "+
			"nor the dynamic symbols (stripped?)", sym)
	case addr == 0:
		return a, fmt.Errorf("the file has more than one symbol %q", sym)
	}
	a.Kind, a.Reg, a.Value, a.PtRegs = ArgDeref, "rip", int64(addr-site)+off, 128 // pt_regs' ip
	return a, nil
}

// Probe finds a probe by "provider:name"; when there is none, the error
// lists those there are.
func (f *File) Probe(name string) (*Probe, error) {
	var all []string
	for _, p := range f.Probes {
		if p.String() == name {
			return p, nil
		}
		all = append(all, p.Quoted())
	}
	return nil, fmt.Errorf("usdt: %s has no probe %s; it has %s", f.Path, quoteName(name),
		cmp.Or(strings.Join(all, ", "), "none"))
}
