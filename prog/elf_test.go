package prog

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// elfTestFiles are real ELF files: stripped system binaries, this test
// binary, and Go binaries with their symbol tables built for the test,
// 64-bit and 32-bit, when Go can build them.
func elfTestFiles(t *testing.T) []string {
	files := []string{"/bin/true", "/usr/bin/env", os.Args[0]}
	libc, _ := filepath.Glob("/lib/*-linux-gnu/libc.so.6") // dynamic symbols only
	files = append(files, libc...)
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nfunc main() { println(1) }\n"), 0o644)
	for _, arch := range []string{"amd64", "386"} {
		cmd := exec.Command("go", "build", "-o", dir+"/x"+arch, src)
		cmd.Env = append(os.Environ(), "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
		if err := cmd.Run(); err == nil {
			files = append(files, dir+"/x"+arch)
		} else {
			t.Logf("no %s binary to read (go build: %v)", arch, err)
		}
	}
	return files
}

// TestELF checks the hand-written reader against debug/elf on real
// binaries: program headers, notes, and function symbols.
func TestELF(t *testing.T) {
	for _, path := range elfTestFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readELF(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(got.progs) != len(want.Progs) {
			t.Fatalf("%s: %d program headers, debug/elf finds %d", path, len(got.progs), len(want.Progs))
		}
		var wantNotes [][]byte
		for i, p := range want.Progs {
			g := got.progs[i]
			if g.typ != uint32(p.Type) || g.flags != uint32(p.Flags) || g.off != p.Off || g.vaddr != p.Vaddr || g.filesz != p.Filesz || g.mem != p.Memsz {
				t.Fatalf("%s: program header %d is %+v, debug/elf says %+v", path, i, g, p.ProgHeader)
			}
			if p.Type == elf.PT_NOTE {
				wantNotes = append(wantNotes, b[p.Off:p.Off+p.Filesz])
			}
		}
		notes, err := got.notes()
		if err != nil || len(notes) != len(wantNotes) {
			t.Fatalf("%s: %d notes (%v), want %d", path, len(notes), err, len(wantNotes))
		}
		for i := range notes {
			if !bytes.Equal(notes[i], wantNotes[i]) {
				t.Fatalf("%s: note segment %d differs", path, i)
			}
		}
		// Every function symbol, as funcSymbol looks: the symbol table
		// first, then the dynamic symbols.
		seen, checked := map[string]bool{}, 0
		for _, get := range []func() ([]elf.Symbol, error){want.Symbols, want.DynamicSymbols} {
			syms, _ := get()
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || seen[s.Name] {
					continue
				}
				seen[s.Name] = true
				if checked++; checked > 300 {
					break
				}
				g, ok, err := got.funcSymbol(s.Name)
				if err != nil || !ok || g.value != s.Value || g.size != s.Size {
					t.Fatalf("%s: %s is %+v %v %v, debug/elf says %#x size %d", path, s.Name, g, ok, err, s.Value, s.Size)
				}
			}
		}
		if _, ok, _ := got.funcSymbol("bpfkit_no_such_symbol"); ok {
			t.Fatalf("%s: a symbol that is not there was found", path)
		}
		t.Logf("%s: %d program headers, %d function symbols checked", path, len(got.progs), checked)
	}
	for _, bad := range []string{"", "\x7fELF", "\x7fELF\x02\x02", "MZ\x90\x00"} {
		if _, err := readELF(strings.NewReader(bad), int64(len(bad))); err == nil {
			t.Errorf("%q read as ELF", bad)
		}
	}
}

// FuzzELF: no input makes the reader panic or loop.
func FuzzELF(f *testing.F) {
	if b, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(b[:min(len(b), 4096)])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := readELF(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, n := range e.notes0() {
			linuxNote(n)
		}
		e.funcSymbol("main")
	})
}

// notes0 is notes, ignoring errors.
func (f *elfFile) notes0() [][]byte {
	n, _ := f.notes()
	return n
}

// craftELF is a little-endian ELF64 file of 304 bytes: one executable
// PT_LOAD of it all at 0x400000 (header at 64), a symbol table at 120 (a
// null symbol, then function "f" at 0x400010 of symSize bytes) and its
// names at 168, both sections' headers at 176.
func craftELF(symSize uint64) []byte {
	le := binary.LittleEndian
	b := make([]byte, 304)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], 64)  // e_phoff
	le.PutUint64(b[40:], 176) // e_shoff
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[56:], 1)  // e_phnum
	le.PutUint16(b[58:], 64) // e_shentsize
	le.PutUint16(b[60:], 2)  // e_shnum
	ph := b[64:]             // PT_LOAD, PF_R|PF_X, offset 0
	le.PutUint32(ph, ptLoad)
	le.PutUint32(ph[4:], 5)
	le.PutUint64(ph[16:], 0x400000)
	le.PutUint64(ph[32:], 304)
	le.PutUint64(ph[40:], 304)
	sym := b[120+24:] // "f": st_name 1, STB_GLOBAL|STT_FUNC
	le.PutUint32(sym, 1)
	sym[4] = 0x12
	le.PutUint64(sym[8:], 0x400010)
	le.PutUint64(sym[16:], symSize)
	copy(b[168:], "\x00f\x00")
	// sh_type, sh_offset, sh_size, sh_link, sh_entsize
	for i, s := range [][5]uint64{{shtSymtab, 120, 48, 1, 24}, {3, 168, 3, 0, 0}} {
		sh := b[176+64*i:]
		le.PutUint32(sh[4:], uint32(s[0]))
		le.PutUint64(sh[24:], s[1])
		le.PutUint64(sh[32:], s[2])
		le.PutUint32(sh[40:], uint32(s[3]))
		le.PutUint64(sh[56:], s[4])
	}
	return b
}

// TestELFSizesBounded: sizes in a tiny file's headers were allocated before
// the reads that failed: a symbol table and names of 1 GiB each, section
// headers of 65535 × 65535 bytes, program headers of 65535 × 4096. Each is
// now refused for not fitting in the file, allocating next to nothing.
func TestELFSizesBounded(t *testing.T) {
	le := binary.LittleEndian
	f, err := readELF(bytes.NewReader(craftELF(8)), 304)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok, err := f.funcSymbol("f"); !ok || err != nil || s != (elfSym{0x400010, 8}) {
		t.Fatalf("the crafted ELF's f: %+v, %v, %v", s, ok, err)
	}
	for _, c := range []struct {
		what, want string
		patch      func(b []byte)
	}{
		{"a 1 GiB symbol table", "ELF symbols outside the file", func(b []byte) { le.PutUint64(b[176+32:], 1<<30) }},
		{"1 GiB of symbol names", "ELF symbol names outside the file", func(b []byte) { le.PutUint64(b[176+64+32:], 1<<30) }},
		{"a symbol table at 1<<63", "ELF symbols outside the file", func(b []byte) { le.PutUint64(b[176+24:], 1<<63) }},
		{"4 GiB of section headers", "ELF section headers outside the file", func(b []byte) { le.PutUint16(b[58:], 0xffff); le.PutUint16(b[60:], 0xffff) }},
		{"section headers at 2^64-8", "ELF section headers outside the file", func(b []byte) { le.PutUint64(b[40:], 1<<64-8) }},
		{"256 MiB of program headers", "ELF program headers outside the file", func(b []byte) { le.PutUint16(b[54:], 0xffff); le.PutUint16(b[56:], 4096) }},
		{"program headers at 2^64-8", "ELF program headers outside the file", func(b []byte) { le.PutUint64(b[32:], 1<<64-8) }},
	} {
		b := craftELF(8)
		c.patch(b)
		var err error
		n := testutil.Allocated(func() {
			var f *elfFile
			if f, err = readELF(bytes.NewReader(b), int64(len(b))); err == nil {
				_, _, err = f.funcSymbol("f")
			}
		})
		if err == nil || err.Error() != c.want || n > 1<<20 {
			t.Errorf("%s: %v, %d bytes allocated; want %q and under 1 MiB", c.what, err, n, c.want)
		}
	}
	// The same through SymbolOffset, on a file.
	b := craftELF(8)
	le.PutUint64(b[176+32:], 1<<30)
	path := filepath.Join(t.TempDir(), "hostile")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var off uint64
	if n := testutil.Allocated(func() { off, err = SymbolOffset(path, "f") }); err == nil || n > 1<<20 {
		t.Errorf("SymbolOffset of a 1 GiB symbol table: %#x, %v, %d bytes allocated", off, err, n)
	}
}

// TestSymbolOffsetBounds: an offset into a function must stay in it when
// its size is known, and must not wrap the address round to an earlier
// place in the executable segment when it is not (size 0).
func TestSymbolOffsetBounds(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		size, off uint64
		want      string // the file offset, or the error
	}{
		{8, 0, "0x10"},
		{8, 7, "0x17"},
		{8, 8, "tracefs: invalid probe: offset 0x8 is outside f (8 bytes)"},
		{8, 1<<64 - 1, "tracefs: invalid probe: offset 0xffffffffffffffff is outside f (8 bytes)"},
		{0, 0x10, "0x20"},
		{0, 1<<64 - 0x10, "tracefs: invalid probe: offset 0xfffffffffffffff0 is outside f (0 bytes)"},
		{0, 1 << 20, "tracefs: invalid probe: f+0x100000 is in no executable segment of the file"},
	} {
		path := filepath.Join(dir, fmt.Sprint(c.size))
		if err := os.WriteFile(path, craftELF(c.size), 0o644); err != nil {
			t.Fatal(err)
		}
		off, err := fileOffset(path, "f", c.off)
		got := fmt.Sprintf("%#x", off)
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("f of %d bytes + %#x: %s, want %s", c.size, c.off, got, c.want)
		}
	}
}

// TestSymbolOffsetThumb: in a 32-bit arm binary, a Thumb function (whose
// symbol's address is odd) and an address not 4-aligned are refused, saying
// why, before the kernel refuses or misreads them; an ARM function is taken.
func TestSymbolOffsetThumb(t *testing.T) {
	if _, err := exec.LookPath("arm-linux-gnueabihf-gcc"); err != nil {
		t.Skip("no arm-linux-gnueabihf-gcc: install gcc-arm-linux-gnueabihf")
	}
	dir := t.TempDir()
	src := `__attribute__((target("thumb"), noinline)) int thumbf(int x) { return x + 1; }
__attribute__((target("arm"), noinline)) int armf(int x) { return x * 3; }
void _start(void) { armf(thumbf(1)); for (;;); }
`
	if err := os.WriteFile(dir+"/f.c", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("arm-linux-gnueabihf-gcc", "-O2", "-nostdlib", "-static", "-ffreestanding",
		"-o", dir+"/f", dir+"/f.c")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, b)
	}
	if off, err := SymbolOffset(dir+"/f", "armf"); err != nil || off%4 != 0 {
		t.Errorf("armf: %#x, %v; want a 4-aligned offset", off, err)
	}
	_, err := SymbolOffset(dir+"/f", "thumbf")
	if says := "thumbf is Thumb code: " + armUprobes; !errors.Is(err, tracefs.ErrInvalid) ||
		!strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("thumbf: %v; want ErrInvalid saying %q", err, says)
	}
	_, err = fileOffset(dir+"/f", "armf", 2)
	if says := "is not 4-aligned: " + armUprobes; !errors.Is(err, tracefs.ErrInvalid) ||
		!strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("armf+2: %v; want ErrInvalid saying %q", err, says)
	}
}
