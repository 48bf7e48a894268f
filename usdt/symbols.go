package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxSymbolName bounds the symbol names a %rip argument may use, and so
// the bytes read per symbol when the tables are searched for them: a
// hostile file's every symbol may point into one long run without a NUL.
const maxSymbolName = 1024

// ripExpr returns the expression of an x86-64 argument read through rip:
// "counter+8" of "-4@counter+8(%rip)".
func ripExpr(arg string) (string, bool) {
	_, loc, _ := strings.Cut(arg, "@")
	return strings.CutSuffix(loc, "(%rip)")
}

// ripOperand reads a %rip argument's expression: a symbol plus or minus a
// number ("counter+8", "8+counter", "counter-8", "counter").
func ripOperand(expr string) (sym string, off int64, err error) {
	sym = expr
	if l, r, ok := strings.Cut(expr, "+"); ok {
		if off, err = strconv.ParseInt(r, 0, 64); err == nil {
			sym = l
		} else if off, err = strconv.ParseInt(l, 0, 64); err == nil {
			sym = r
		}
	} else if i := strings.LastIndexByte(expr, '-'); i > 0 {
		sym = expr[:i]
		off, err = strconv.ParseInt(expr[i:], 0, 64)
	}
	switch {
	case err != nil || sym == "" || strings.ContainsAny(sym[:1], "-+0123456789"):
		return "", 0, fmt.Errorf("%q: want a symbol plus or minus a number", expr)
	case len(sym) > maxSymbolName:
		return "", 0, fmt.Errorf("a symbol name of %d bytes: bpfkit reads at most %d",
			len(sym), maxSymbolName)
	}
	return sym, off, nil
}

// ripSymbols are the symbols that the notes' x86-64 arguments read
// through rip name, each mapped to itself.
func ripSymbols(machine elf.Machine, notes []note) map[string]string {
	want := map[string]string{}
	for _, n := range notes {
		for _, arg := range splitArgs(n.args) {
			if expr, ok := ripExpr(arg); ok && machine == elf.EM_X86_64 {
				if sym, _, err := ripOperand(expr); err == nil {
					want[sym] = sym
				}
			}
		}
	}
	return want
}

// symbols returns the addresses of the symbols of want found in the
// symbol table and the dynamic symbols: 0 for a name that two symbols of
// different addresses share. Each table and its string table is read as
// it lies in the file (sectionData); the GNU version sections, which
// debug/elf's DynamicSymbols reads whatever their size or compression, are
// not read at all. Nothing is allocated per symbol but for those of want.
func symbols(r io.ReaderAt, size uint64, f *elf.File, want map[string]string) map[string]uint64 {
	le := binary.LittleEndian
	// Elf64_Sym: st_name, st_info, st_other, st_shndx, st_value, st_size
	entry, value := 24, func(sym []byte) uint64 { return le.Uint64(sym[8:]) }
	if f.Class == elf.ELFCLASS32 { // Elf32_Sym: st_name, st_value, ...
		entry, value = 16, func(sym []byte) uint64 { return uint64(le.Uint32(sym[4:])) }
	}
	out := map[string]uint64{}
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		s := f.SectionByType(typ)
		if s == nil || int(s.Link) >= len(f.Sections) {
			continue
		}
		syms, err := sectionData(r, size, s)
		var names []byte
		if err == nil {
			names, err = sectionData(r, size, f.Sections[s.Link])
		}
		if err != nil {
			continue
		}
		for ; len(syms) >= entry; syms = syms[entry:] {
			at, v := uint64(le.Uint32(syms)), value(syms)
			if v == 0 || at >= uint64(len(names)) {
				continue
			}
			name := names[at:min(uint64(len(names)), at+maxSymbolName+1)]
			end := bytes.IndexByte(name, 0)
			sym, wanted := "", false
			if end >= 0 {
				sym, wanted = want[string(name[:end])] // no allocation: a lookup
			}
			switch seen, ok := out[sym]; {
			case !wanted:
			case ok && seen != v:
				out[sym] = 0 // two of a name
			case !ok:
				out[sym] = v
			}
		}
	}
	return out
}

// sectionData reads the bytes of section s as they lie in the file of
// size bytes. It refuses what would cost more than the file: a section
// past its end, one of SHT_NOBITS, and a compressed one. A compressed
// section is flagged SHF_COMPRESSED or named .zdebug* (GNU's form, a
// "ZLIB" header and no flag); debug/elf's Data would inflate it to any
// size a few bytes claim.
func sectionData(r io.ReaderAt, size uint64, s *elf.Section) ([]byte, error) {
	switch {
	case s.Type == elf.SHT_NOBITS:
		return nil, fmt.Errorf("%s has no bytes in the file (SHT_NOBITS)", s.Name)
	case s.Flags&elf.SHF_COMPRESSED != 0 || strings.HasPrefix(s.Name, ".zdebug"):
		return nil, fmt.Errorf("%s is compressed", s.Name)
	case s.Offset > size || s.FileSize > size-s.Offset:
		return nil, fmt.Errorf("%s of %d bytes at %#x is past the end of the file",
			s.Name, s.FileSize, s.Offset)
	}
	b := make([]byte, s.FileSize)
	if _, err := r.ReadAt(b, int64(s.Offset)); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return b, nil
}
