package prog

import (
	"cmp"
	"encoding/binary"
	"errors"
	"io"
)

// elfFile is what prog reads of a little-endian ELF64 or ELF32 file: the
// program headers (the vDSO's notes, uprobes' file offsets) and function
// symbols; debug/elf would link debug/dwarf and decompressors into every
// program that imports prog.
type elfFile struct {
	r     io.ReaderAt
	size  uint64 // of the file: what its headers say must fit in it
	wide  bool   // ELF64
	progs []elfProg
	shoff uint64 // section headers
	shent uint64
	shnum uint64

	machine uint16 // e_machine: EM_ARM, ...
}

// elfProg is a program header: PT_LOAD, PT_NOTE, ...
type elfProg struct {
	typ, flags              uint32
	off, vaddr, filesz, mem uint64
}

// PT_LOAD, PT_NOTE, PF_X, SHT_SYMTAB, SHT_DYNSYM and STT_FUNC of elf.h.
const ptLoad, ptNote, pfX, shtSymtab, shtDynsym, sttFunc = 1, 4, 1, 2, 11, 2

// EM_ARM of elf.h: 32-bit arm.
const emARM = 40

// readELF reads the header and program headers of r, size bytes long.
func readELF(r io.ReaderAt, size int64) (*elfFile, error) {
	var h [64]byte
	n, _ := r.ReadAt(h[:], 0)
	class, data := h[4], h[5] // EI_CLASS: 1 for 32 bits, 2 for 64; EI_DATA: 1 little-endian
	if n < 52 || string(h[:4]) != "\x7fELF" || data != 1 || class != 1 && class != 2 {
		return nil, errors.New("not a little-endian ELF file")
	}
	le := binary.LittleEndian
	f := &elfFile{r: r, size: uint64(size), wide: class == 2, machine: le.Uint16(h[18:])}
	// e_phoff, e_phentsize, e_phnum, e_shoff, e_shentsize, e_shnum
	var phoff, phent, phnum uint64
	if f.wide {
		phoff = le.Uint64(h[32:])
		phent = uint64(le.Uint16(h[54:]))
		phnum = uint64(le.Uint16(h[56:]))
		f.shoff = le.Uint64(h[40:])
		f.shent = uint64(le.Uint16(h[58:]))
		f.shnum = uint64(le.Uint16(h[60:]))
	} else {
		phoff = uint64(le.Uint32(h[28:]))
		phent = uint64(le.Uint16(h[42:]))
		phnum = uint64(le.Uint16(h[44:]))
		f.shoff = uint64(le.Uint32(h[32:]))
		f.shent = uint64(le.Uint16(h[46:]))
		f.shnum = uint64(le.Uint16(h[48:]))
	}
	if phent < map[bool]uint64{false: 32, true: 56}[f.wide] {
		return nil, errors.New("bad ELF program headers")
	}
	buf, err := f.read(phoff, phent*phnum, "program headers")
	if err != nil {
		return nil, err
	}
	for i := range phnum {
		ph := buf[i*phent:]
		p := elfProg{
			typ:    le.Uint32(ph),
			off:    uint64(le.Uint32(ph[4:])),
			vaddr:  uint64(le.Uint32(ph[8:])),
			filesz: uint64(le.Uint32(ph[16:])),
			mem:    uint64(le.Uint32(ph[20:])),
			flags:  le.Uint32(ph[24:]),
		}
		if f.wide {
			p = elfProg{
				typ:    le.Uint32(ph),
				flags:  le.Uint32(ph[4:]),
				off:    le.Uint64(ph[8:]),
				vaddr:  le.Uint64(ph[16:]),
				filesz: le.Uint64(ph[32:]),
				mem:    le.Uint64(ph[40:]),
			}
		}
		f.progs = append(f.progs, p)
	}
	return f, nil
}

// notes returns the contents of the PT_NOTE segments.
func (f *elfFile) notes() ([][]byte, error) {
	var out [][]byte
	for _, p := range f.progs {
		if p.typ != ptNote {
			continue
		}
		b, err := f.read(p.off, p.filesz, "note segment")
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// elfSym is a function symbol's address and size.
type elfSym struct{ value, size uint64 }

// funcSymbol finds a function symbol by name in the symbol table, else in
// the dynamic symbols.
func (f *elfFile) funcSymbol(name string) (elfSym, bool, error) {
	le := binary.LittleEndian
	if f.shent < map[bool]uint64{false: 40, true: 64}[f.wide] {
		return elfSym{}, false, nil // no usable section headers: no symbols
	}
	sh, err := f.read(f.shoff, f.shent*f.shnum, "section headers")
	if err != nil {
		return elfSym{}, false, err
	}
	// section i: sh_type, sh_offset, sh_size, sh_link, sh_entsize
	section := func(i uint64) (typ uint32, off, size uint64, link uint32, ent uint64) {
		s := sh[i*f.shent:]
		if f.wide {
			return le.Uint32(s[4:]), le.Uint64(s[24:]), le.Uint64(s[32:]), le.Uint32(s[40:]),
				le.Uint64(s[56:])
		}
		return le.Uint32(s[4:]), uint64(le.Uint32(s[16:])), uint64(le.Uint32(s[20:])),
			le.Uint32(s[24:]), uint64(le.Uint32(s[36:]))
	}
	for _, want := range []uint32{shtSymtab, shtDynsym} {
		for i := range f.shnum {
			typ, off, size, link, ent := section(i)
			if typ != want || uint64(link) >= f.shnum || ent < map[bool]uint64{false: 16, true: 24}[f.wide] {
				continue
			}
			_, stroff, strsize, _, _ := section(uint64(link))
			syms, err := f.read(off, size, "symbols")
			strs, err2 := f.read(stroff, strsize, "symbol names")
			if err = cmp.Or(err, err2); err != nil {
				return elfSym{}, false, err
			}
			for j := uint64(0); j+ent <= size; j += ent {
				s := syms[j:]
				// st_name, st_value, st_size, st_info
				nameOff, value, sz, info := uint64(le.Uint32(s)), uint64(le.Uint32(s[4:])),
					uint64(le.Uint32(s[8:])), s[12]
				if f.wide {
					nameOff, info, value, sz = uint64(le.Uint32(s)), s[4], le.Uint64(s[8:]), le.Uint64(s[16:])
				}
				end := nameOff + uint64(len(name)) // where name's NUL must be
				if info&0xf != sttFunc || value == 0 || end >= uint64(len(strs)) ||
					string(strs[nameOff:end]) != name || strs[end] != 0 {
					continue
				}
				return elfSym{value, sz}, true, nil
			}
		}
	}
	return elfSym{}, false, nil
}

// read reads n bytes at off, allocating them only when they fit in the
// file: a tiny hostile one may say gigabytes.
func (f *elfFile) read(off, n uint64, what string) ([]byte, error) {
	if off <= f.size && n <= f.size-off {
		b := make([]byte, n)
		if _, err := f.r.ReadAt(b, int64(off)); err == nil || n == 0 {
			return b, nil
		}
	}
	return nil, errors.New("ELF " + what + " outside the file")
}
