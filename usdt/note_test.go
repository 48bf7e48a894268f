package usdt

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
)

// readelfNote is one probe descriptor as readelf -n prints it.
type readelfNote struct {
	provider, name, args string
	loc, base, sem       uint64
}

// readelf runs binutils' readelf -n on path: the reference the parser is
// held against.
func readelf(t *testing.T, path string) []readelfNote {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("no readelf to compare with: install binutils")
	}
	out, err := exec.Command("readelf", "-n", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	var notes []readelfNote
	in := false // in a stapsdt note, not another note's Name
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "NT_") {
			in = strings.Contains(line, "NT_STAPSDT")
		}
		key, val, _ := strings.Cut(strings.TrimSpace(line), ": ")
		switch {
		case !in:
		case key == "Provider":
			notes = append(notes, readelfNote{provider: val})
		case key == "Name":
			notes[len(notes)-1].name = val
		case key == "Arguments":
			notes[len(notes)-1].args = val
		case key == "Location":
			n := &notes[len(notes)-1]
			for _, f := range strings.Split(line, ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(f), ": ")
				x, err := strconv.ParseUint(v, 0, 64)
				if err != nil {
					t.Fatalf("readelf line %q: %v", line, err)
				}
				switch k {
				case "Location":
					n.loc = x
				case "Base":
					n.base = x
				case "Semaphore":
					n.sem = x
				}
			}
		}
	}
	return notes
}

// checkFile compares Open's view of path with readelf's, note by note,
// and checks each site's file offset independently: the bytes there are
// the probe's nop. The semaphores' file offsets are checked through the
// section headers, where Open goes through the program headers.
func checkFile(t *testing.T, path string, adjust uint64) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := readelf(t, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	nop := map[elf.Machine][]byte{elf.EM_X86_64: {0x90}, elf.EM_386: {0x90},
		elf.EM_AARCH64: {0x1f, 0x20, 0x03, 0xd5}, elf.EM_ARM: {0x00, 0xf0, 0x20, 0xe3}}[f.Machine]
	n := 0
	for _, p := range f.Probes {
		for _, s := range p.Sites {
			if n >= len(want) {
				t.Fatalf("more sites than readelf's %d notes", len(want))
			}
			w := want[n]
			n++
			wsem := w.sem
			if wsem != 0 {
				wsem += adjust
			}
			got := readelfNote{p.Provider, p.Name, s.Args, s.Address, w.base, s.Semaphore}
			if wn := (readelfNote{w.provider, w.name, w.args, w.loc + adjust, w.base, wsem}); got != wn {
				t.Errorf("note %d: got %+v, readelf says %+v", n-1, got, wn)
			}
			if !bytes.HasPrefix(raw[s.Offset:], nop) {
				t.Errorf("%s site %#x: file offset %#x holds % x, not the nop % x", p, s.Address, s.Offset, raw[s.Offset:s.Offset+4], nop)
			}
			if _, err := ParseArgs(f.Machine, s.Args); err != nil && !strings.Contains(s.Args, "(%rip)") {
				t.Errorf("%s: %v", p, err)
			}
			if s.Semaphore == 0 {
				continue
			}
			off, err := p.semaphore(s)
			sec := ef.Section(".probes")
			if err != nil || sec == nil || off != s.Semaphore-sec.Addr+sec.Offset {
				t.Errorf("%s semaphore %#x: file offset %#x (%v), want %#x from the .probes section %+v", p, s.Semaphore, off, err, s.Semaphore-sec.Addr+sec.Offset, sec)
			}
		}
	}
	if n != len(want) {
		t.Errorf("%d sites, readelf shows %d notes", n, len(want))
	}
	for _, p := range f.Probes { // x86's global variables too, through the symbols
		args, err := p.ParseArgs()
		for _, site := range args {
			for _, a := range site {
				err = cmp.Or(err, a.Err)
			}
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	return f
}

// TestPython: Debian's python3 carries the probes of CPython's
// --with-dtrace build, each guarded by a semaphore; Open finds every one
// as readelf does.
func TestPython(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3: install Debian's python3")
	}
	f := checkFile(t, python, 0)
	p, err := f.Probe("python:function__entry")
	if err != nil {
		t.Fatal(err)
	}
	args, err := p.ParseArgs()
	if err != nil || len(args[0]) != 3 || p.Sites[0].Semaphore == 0 {
		t.Fatalf("function__entry: %v, %v, semaphore %#x: want 3 arguments (file, function, line) and a semaphore", args, err, p.Sites[0].Semaphore)
	}
	var names []string
	for _, p := range f.Probes {
		names = append(names, p.Name)
	}
	for _, want := range []string{"function__entry", "function__return", "gc__start", "gc__done", "import__find__load__start", "import__find__load__done", "audit"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("no python:%s among %v", want, names)
		}
	}
}

// TestLibstdcxx: libstdc++, a shared library, has libstdcxx:throw,
// rethrow and catch, without semaphores.
func TestLibstdcxx(t *testing.T) {
	libs, _ := filepath.Glob("/usr/lib/*/libstdc++.so.6")
	if len(libs) == 0 {
		t.Skip("no libstdc++.so.6: install libstdc++6")
	}
	f := checkFile(t, libs[0], 0)
	for _, name := range []string{"libstdcxx:throw", "libstdcxx:rethrow", "libstdcxx:catch"} {
		if _, err := f.Probe(name); err != nil {
			t.Error(err)
		}
	}
}

// sdtHeaders copies sys/sdt.h (systemtap-sdt-dev) where a cross compiler
// finds it: it is the same for every architecture.
func sdtHeaders(t *testing.T) string {
	t.Helper()
	hs, _ := filepath.Glob("/usr/include/*/sys/sdt.h")
	if h := "/usr/include/sys/sdt.h"; len(hs) == 0 && fileExists(h) {
		hs = []string{h}
	}
	if len(hs) == 0 {
		t.Skip("no sys/sdt.h: install systemtap-sdt-dev")
	}
	dir := t.TempDir()
	os.Mkdir(dir+"/sys", 0o755)
	for _, name := range []string{"sdt.h", "sdt-config.h"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(hs[0]), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sys", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

// buildSDT builds testdata/sdt.c with compiler and flags, or skips.
func buildSDT(t *testing.T, compiler, pkg string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("no %s: install %s", compiler, pkg)
	}
	out := filepath.Join(t.TempDir(), "sdt")
	args := append([]string{"-O2", "-I", sdtHeaders(t), "-o", out, "testdata/sdt.c"}, flags...)
	if b, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return out
}

// sdtArgs is what the C program's bpfkit:args passes, by kind, size and
// signedness (registers are the compiler's choice; constants and
// structure fields are not).
func checkSDTArgs(t *testing.T, f *File, ptr int, field []int64) {
	t.Helper()
	p, err := f.Probe("bpfkit:args")
	if err != nil {
		t.Fatal(err)
	}
	args, err := p.ParseArgs()
	if err != nil {
		t.Fatal(err)
	}
	type ks struct {
		kind  ArgKind
		size  int
		value int64
	}
	R, D := ArgReg, ArgDeref
	want := []ks{{R, -4, 0}, {R, ptr, 0}, {ArgConst, -4, -42}, {ArgConst, 1, -56}, {D, -ptr, field[0]}, {D, -2, field[1]},
		{D, -1, field[2]}, {D, 8, field[3]}, {D, -ptr, -1}, {R, -2, 0}, {R, -1, 0}, {R, ptr, 0}}
	if len(args[0]) != len(want) {
		t.Fatalf("%d arguments %q, want %d", len(args[0]), p.Sites[0].Args, len(want))
	}
	for i, a := range args[0] {
		size := a.Size
		if a.Signed {
			size = -size
		}
		w := want[i]
		if w.kind == ArgReg && a.Kind == ArgDeref && i == 11 {
			w.kind = D // i386 passes the string pointer on the stack
		}
		if i == 8 && a.Kind == ArgReg && f.Machine == elf.EM_ARM {
			w.kind, w.value = R, 0 // arm's gcc reads the volatile local into a register
		}
		if a.Kind != w.kind || size != w.size || (w.value != 0 && w.value != -1 && a.Value != w.value) || (w.value == -1 && a.Reg != "rsp" && a.Reg != "esp" && a.Reg != "sp") {
			t.Errorf("argument %d %+v, want kind %d, size %d, value %d (-1: on the stack)", i, a, w.kind, w.size, w.value)
		}
	}
}

// TestSDTAmd64 builds the C program with gcc: its probes, with every kind
// of argument, are read as readelf reads them.
func TestSDTAmd64(t *testing.T) {
	f := checkFile(t, buildSDT(t, "gcc", "gcc"), 0)
	checkSDTArgs(t, f, 8, []int64{0, 12, 14, 16})
}

// TestSDTArm64 cross-builds it for arm64 ("8@[x0, 16]", "-4@-42"),
// freestanding: no arm64 libc needed.
func TestSDTArm64(t *testing.T) {
	path := buildSDT(t, "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu", "-nostdlib", "-static", "-ffreestanding", "-DSDT_FREESTANDING")
	f := checkFile(t, path, 0)
	checkSDTArgs(t, f, 8, []int64{0, 12, 14, 16})
}

// TestSDTArm cross-builds it for 32-bit arm in ARM code (-marm: "-4@[r0]",
// "8@[r0, #16]", "-4@#-42"), freestanding: its sites are ARM code, which
// arm's uprobes can probe.
func TestSDTArm(t *testing.T) {
	path := buildSDT(t, "arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf", "-marm",
		"-nostdlib", "-static", "-ffreestanding", "-DSDT_FREESTANDING")
	f := checkFile(t, path, 0)
	if f.Machine != elf.EM_ARM || len(f.thumb) != 0 {
		t.Fatalf("machine %v, sites in Thumb code %v", f.Machine, f.thumb)
	}
	checkSDTArgs(t, f, 4, []int64{0, 8, 10, 16})
	for _, p := range f.Probes {
		if err := p.armCode(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestSDTThumb: built in Thumb-2, as Debian's armhf gcc builds by default,
// its sites are Thumb code, and Attach refuses them, saying why, before
// anything is loaded (the kernel would refuse a site not 4-aligned and
// misread one that is).
func TestSDTThumb(t *testing.T) {
	path := buildSDT(t, "arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf", "-mthumb",
		"-nostdlib", "-static", "-ffreestanding", "-DSDT_FREESTANDING")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Probes {
		for _, s := range p.Sites {
			if !f.thumb[s.Offset] {
				t.Errorf("%s site %#x: not found to be Thumb code", p, s.Address)
			}
		}
		err := p.armCode()
		if !errors.Is(err, sys.ErrNotSupported) || !strings.Contains(fmt.Sprint(err), "is Thumb") {
			t.Errorf("%s: %v, want ErrNotSupported saying Thumb", p, err)
		}
	}
}

// TestSDT386 builds it as a 32-bit ELF file, freestanding (no 32-bit
// libc needed): 4-byte addresses in the notes.
func TestSDT386(t *testing.T) {
	path := buildSDT(t, "gcc", "gcc", "-m32", "-nostdlib", "-static", "-ffreestanding", "-DSDT_FREESTANDING")
	f := checkFile(t, path, 0)
	if f.Machine != elf.EM_386 {
		t.Fatalf("machine %v", f.Machine)
	}
	checkSDTArgs(t, f, 4, []int64{0, 8, 10, 12})
}

// patchNotes copies the ELF file at path with fix applied to the
// description of each NT_STAPSDT note (64-bit).
func patchNotes(t *testing.T, path string, fix func(desc []byte)) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sec := ef.Section(".note.stapsdt")
	ef.Close()
	b := raw[sec.Offset : sec.Offset+sec.Size]
	for len(b) > 12 {
		namesz, descsz := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		at := 12 + (namesz+3)&^3
		fix(b[at : at+descsz])
		b = b[at+(descsz+3)&^3:]
	}
	out := filepath.Join(t.TempDir(), "patched")
	if err := os.WriteFile(out, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrelink: when the notes' base is not where .stapsdt.base is now,
// as after prelink moved the file, sites and semaphores move with it.
func TestPrelink(t *testing.T) {
	orig := buildSDT(t, "gcc", "gcc")
	moved := patchNotes(t, orig, func(d []byte) {
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(d[8:])+0x40)
	})
	f, err := Open(moved)
	if err != nil {
		t.Fatal(err)
	}
	want := readelf(t, orig) // a note per site
	i := 0
	for _, p := range f.Probes {
		for _, s := range p.Sites {
			if s.Address != want[i].loc-0x40 || s.Semaphore != want[i].sem-0x40 {
				t.Errorf("%s: site %#x semaphore %#x, want %#x and %#x", p, s.Address, s.Semaphore, want[i].loc-0x40, want[i].sem-0x40)
			}
			i++
		}
	}
}

// TestSemaphoreNotMapped: a semaphore the kernel could not count, in a
// read-only segment or in .bss, is an error at Attach that says why,
// before anything is loaded.
func TestSemaphoreNotMapped(t *testing.T) {
	// Attach asks the kernel what it has, by loading a probe program,
	// before it reads the semaphores: that needs root.
	testutil.RequireRoot(t)
	orig := buildSDT(t, "gcc", "gcc")
	f, err := Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	var text, bss uint64
	for _, p := range f.progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p.Vaddr
		}
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 && p.Memsz > p.Filesz {
			bss = p.Vaddr + p.Memsz - 1
		}
	}
	for addr, want := range map[uint64]string{text: "writable mapping of the file, and 0x", bss: "zero-filled part", 1 << 60: "in no loadable segment"} {
		if addr == 0 {
			continue
		}
		path := patchNotes(t, orig, func(d []byte) { binary.LittleEndian.PutUint64(d[16:], addr) })
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Probe("bpfkit:str")
		_, err = Attach(p, Options{}, func(*Args) ([]insn.Item, error) { t.Fatal("built a program"); return nil, nil })
		wantErr(t, fmt.Sprintf("semaphore at %#x", addr), err, want, "semaphore")
	}
}

// TestErrors: no notes, no such probe, no ELF.
func TestErrors(t *testing.T) {
	exe, _ := os.Executable()
	_, err := Open(exe)
	wantErr(t, "a Go binary", err, ".note.stapsdt")
	if !errors.Is(err, ErrNoProbes) {
		t.Errorf("a Go binary: %v, want ErrNoProbes", err)
	}
	_, err = Open("testdata/sdt.c")
	wantErr(t, "a C source opened as an ELF file", err)
	f, err := Open(buildSDT(t, "gcc", "gcc"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Probe("bpfkit:nope")
	wantErr(t, "missing probe", err, "bpfkit:args, bpfkit:str")
	// An argument that cannot be read: its Err, and Load's; not the others'.
	bad := &Probe{Provider: "p", Name: "n", file: f, Sites: []Site{{Address: 0x1234, Args: "8@%rax 8@sym(%rip) 4@(%rax,%rbx,4) 4@-8(%rip)"}}}
	args, err := bad.ParseArgs()
	if err != nil || len(args) != 1 || len(args[0]) != 4 || args[0][0].Err != nil {
		t.Fatalf("ParseArgs: %+v, %v", args, err)
	}
	wantErr(t, "%rip and no symbol", args[0][3].Err, `argument 3 "4@-8(%rip)": "-8": want a symbol plus or minus a number`)
	wantErr(t, "an unknown variable", args[0][1].Err, "p:n", "0x1234", `argument 1 "8@sym(%rip)": the variable "sym" is in neither the symbol table nor the dynamic symbols`)
	wantErr(t, "an index register", args[0][2].Err, "p:n", "0x1234", `argument 2 "4@(%rax,%rbx,4)": an index register`)
	a := &Args{N: 3, sites: args}
	_, err = a.Load(insn.R0, insn.R6, 2)
	wantErr(t, "Load of an index register", err, "index register")
	if _, err := a.Load(insn.R0, insn.R6, 0); err != nil {
		t.Errorf("Load of the readable argument: %v", err)
	}
}

// FuzzNotes: any section content is parsed or refused, never a panic, and
// what is parsed has a provider and a name.
func FuzzNotes(f *testing.F) {
	desc := append(binary.LittleEndian.AppendUint64(make([]byte, 16), 0x1000), "python\x00entry\x008@%rdi\x00"...)
	note := binary.LittleEndian.AppendUint32(nil, 8)
	note = binary.LittleEndian.AppendUint32(note, uint32(len(desc)))
	note = append(binary.LittleEndian.AppendUint32(note, 3), "stapsdt\x00"...)
	f.Add(append(note, desc...), true)
	f.Add(note[:14], false)
	f.Fuzz(func(t *testing.T, b []byte, wide bool) {
		size := 4
		if wide {
			size = 8
		}
		notes, err := parseNotes(b, size)
		for _, n := range notes {
			if err == nil && (n.provider == "" || n.name == "") {
				t.Fatalf("note %+v", n)
			}
		}
	})
}

// TestSymbolsBounded: the C program with its .symtab made 16 KiB of zlib
// claiming 64 MiB: Open, which reads the symbols for bpfkit:global's %rip
// arguments, did inflate it; it leaves the symbols unread, allocating
// little, and the arguments say the variable is unknown.
func TestSymbolsBounded(t *testing.T) {
	b, err := os.ReadFile(buildSDT(t, "gcc", "gcc"))
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	var z bytes.Buffer // an ELF64 compression header, then the zeros
	z.Write(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, uint64(elf.COMPRESS_ZLIB)), 64<<20), 8))
	w := zlib.NewWriter(&z)
	w.Write(make([]byte, 64<<20))
	w.Close()
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_SYMTAB {
			sh := b[le.Uint64(b[40:])+uint64(i)*64:]
			le.PutUint64(sh[8:], le.Uint64(sh[8:])|uint64(elf.SHF_COMPRESSED))
			le.PutUint64(sh[24:], uint64(len(b)))
			le.PutUint64(sh[32:], uint64(z.Len()))
		}
	}
	path := filepath.Join(t.TempDir(), "bomb")
	if err := os.WriteFile(path, append(b, z.Bytes()...), 0o755); err != nil {
		t.Fatal(err)
	}
	var f *File
	if n := testutil.Allocated(func() { f, err = Open(path) }); err != nil || n > 1<<20 {
		t.Fatalf("Open: %v, %d bytes allocated", err, n)
	}
	p, _ := f.Probe("bpfkit:global")
	args, err := p.ParseArgs()
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a compressed symbol table's variable", args[0][0].Err, `the variable "bpfkit_global" is in neither the symbol table nor the dynamic symbols`)
}

// elfSection is a section of synthELF's: link indexes the sections given,
// from 1 (0 is the null section).
type elfSection struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
	link  uint32
	data  []byte
}

// le32 and le64 are their values in little-endian order, one after another.
func le32(vs ...uint32) (b []byte) {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) (b []byte) {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// synthELF is an x86-64 ELF64 executable of the sections given, between
// the null section and .shstrtab, with one PT_LOAD segment, readable and
// executable, mapping the whole file at address 0.
func synthELF(sections ...elfSection) []byte {
	le := binary.LittleEndian
	all := append(sections, elfSection{name: ".shstrtab", typ: elf.SHT_STRTAB})
	names := []byte{0}
	for _, s := range all[:len(all)-1] {
		names = append(append(names, s.name...), 0)
	}
	all[len(all)-1].data = append(names, ".shstrtab\x00"...)
	b, shdrs, name := make([]byte, 64+56), make([]byte, 64), 1 // the headers; the null section
	for _, s := range all {
		b = append(b, make([]byte, -len(b)&7)...)
		entsize := uint64(0)
		if s.typ == elf.SHT_SYMTAB || s.typ == elf.SHT_DYNSYM {
			entsize = 24
		}
		// sh_name, sh_type; sh_flags, sh_addr, sh_offset, sh_size; sh_link, sh_info;
		// sh_addralign, sh_entsize
		sh := append(le32(uint32(name), uint32(s.typ)), le64(uint64(s.flags), 0, uint64(len(b)),
			uint64(len(s.data)))...)
		shdrs = append(shdrs, append(append(sh, le32(s.link, 0)...), le64(8, entsize)...)...)
		b = append(b, s.data...)
		name += len(s.name) + 1
	}
	b = append(b, make([]byte, -len(b)&7)...)
	shoff := len(b)
	b = append(b, shdrs...)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[32:], 64) // e_phoff
	le.PutUint64(b[40:], uint64(shoff))
	for i, v := range []int{64, 56, 1, 64, len(all) + 1, len(all)} { // e_ehsize ... e_shstrndx
		le.PutUint16(b[52+2*i:], uint16(v))
	}
	// p_type, p_flags; p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
	ph := le32(uint32(elf.PT_LOAD), uint32(elf.PF_R|elf.PF_X))
	copy(b[64:], append(ph, le64(0, 0, 0, uint64(len(b)), uint64(len(b)), 4096)...))
	return b
}

// symbolBomb is an ELF file in a shape that made Open inflate or allocate
// far more than its size: resolved says whether the %rip argument's
// variable is still found.
type symbolBomb struct {
	file     []byte
	resolved bool
}

// symbolBombs are such files, each with a probe whose argument
// "-4@x+8(%rip)" has Open read the symbols, and 4 MiB of zeros claimed by
// a few KiB: as the symbol table, or the table of its names, named
// .zdebug* with GNU's "ZLIB" header (no SHF_COMPRESSED flag, which
// debug/elf inflates all the same) or flagged SHF_COMPRESSED; as each GNU
// version section, which debug/elf's DynamicSymbols reads whatever its
// flags (x is then found in the dynamic symbols); and 1024 symbols naming
// one 4 KiB string, which debug/elf copies for each.
func symbolBombs() map[string]symbolBomb {
	zeros := func(header []byte) []byte {
		z := bytes.NewBuffer(header)
		w := zlib.NewWriter(z)
		w.Write(make([]byte, 4<<20))
		w.Close()
		return z.Bytes()
	}
	gnu := zeros(binary.BigEndian.AppendUint64([]byte("ZLIB"), 4<<20))
	chdr := zeros(le64(uint64(elf.COMPRESS_ZLIB), 4<<20, 1)) // Elf64_Chdr
	// A stapsdt note: its pc, base and semaphore, then provider, name, arguments.
	desc := append(le64(0x40, 0, 0), "p\x00n\x00-4@x+8(%rip)\x00"...)
	note := append(le32(8, uint32(len(desc)), 3), "stapsdt\x00"...) // NT_STAPSDT
	note = append(append(note, desc...), make([]byte, -len(desc)&3)...)
	notes := elfSection{name: ".note.stapsdt", typ: elf.SHT_NOTE, data: note}
	// Elf64_Sym: st_name, st_info, st_other, st_shndx; st_value, st_size.
	x := append(le32(1, 0), le64(0x1234, 0)...) // named at 1, at 0x1234
	syms, names := append(make([]byte, 24), x...), []byte("\x00x\x00")
	// The sections are numbered from 1: notes, then these, a table's names third.
	symtab := func(name string, flags elf.SectionFlag, data []byte) elfSection {
		return elfSection{name: name, typ: elf.SHT_SYMTAB, flags: flags, link: 3, data: data}
	}
	strtab := func(name string, flags elf.SectionFlag, data []byte) elfSection {
		return elfSection{name: name, typ: elf.SHT_STRTAB, flags: flags, data: data}
	}
	plainSyms, plainNames := symtab(".symtab", 0, syms), strtab(".strtab", 0, names)
	// dynamic is a file of dynamic symbols, and their GNU versions.
	dynamic := func(versions ...elfSection) []byte {
		for i := range versions {
			versions[i].link = 2
		}
		dynsym := elfSection{name: ".dynsym", typ: elf.SHT_DYNSYM, link: 3, data: syms}
		dynstr := strtab(".dynstr", 0, names)
		return synthELF(append([]elfSection{notes, dynsym, dynstr}, versions...)...)
	}
	versym := elfSection{name: ".gnu.version", typ: elf.SHT_GNU_VERSYM, data: make([]byte, 4)}
	bomb := func(s elfSection, flags elf.SectionFlag, data []byte) elfSection {
		s.flags, s.data = flags, data
		return s
	}
	verdef := elfSection{name: ".gnu.version_d", typ: elf.SHT_GNU_VERDEF}
	verneed := elfSection{name: ".gnu.version_r", typ: elf.SHT_GNU_VERNEED}
	zversym := versym
	zversym.name = ".zdebug_gnu_version"
	shared := append(make([]byte, 24), bytes.Repeat(x, 1024)...)
	long := append(append([]byte{0}, bytes.Repeat([]byte("a"), 4096)...), 0)
	compressed := elf.SHF_COMPRESSED
	sharing := []elfSection{symtab(".symtab", 0, shared), strtab(".strtab", 0, long)}
	zsyms, znames := symtab(".symtab", compressed, chdr), strtab(".strtab", compressed, chdr)
	return map[string]symbolBomb{
		"zdebug-symtab":     {synthELF(notes, symtab(".zdebug_symtab", 0, gnu), plainNames), false},
		"zdebug-strtab":     {synthELF(notes, plainSyms, strtab(".zdebug_strtab", 0, gnu)), false},
		"compressed-symtab": {synthELF(notes, zsyms, plainNames), false},
		"compressed-strtab": {synthELF(notes, plainSyms, znames), false},
		"shared-names":      {synthELF(notes, sharing[0], sharing[1]), false},
		"versym":            {dynamic(bomb(versym, compressed, chdr)), true},
		"zdebug-versym":     {dynamic(bomb(zversym, 0, gnu)), true},
		"verdef":            {dynamic(versym, bomb(verdef, compressed, chdr)), true},
		"verneed":           {dynamic(versym, bomb(verneed, compressed, chdr)), true},
	}
}

// TestSymbolsNeverInflated: Open of each symbolBombs file allocates less
// than 1 MiB, and finds the variable where the dynamic symbols hold it
// (their version sections are not read), and says where it cannot.
func TestSymbolsNeverInflated(t *testing.T) {
	dir := t.TempDir()
	for name, bomb := range symbolBombs() {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, bomb.file, 0o644); err != nil {
			t.Fatal(err)
		}
		var f *File
		var err error
		n := testutil.Allocated(func() { f, err = Open(path) })
		t.Logf("%s: %d bytes, %d allocated", name, len(bomb.file), n)
		if err != nil || n > 1<<20 {
			t.Errorf("%s: Open of %d bytes: %v, %d bytes allocated", name, len(bomb.file), err, n)
			continue
		}
		args, err := f.Probes[0].ParseArgs()
		if err != nil {
			t.Fatal(err)
		}
		switch a := args[0][0]; {
		case bomb.resolved && (a.Err != nil || a.Kind != ArgDeref || a.Value != 0x1234-0x40+8):
			t.Errorf("%s: %+v, want x at 0x1234 through rip at 0x40", name, a)
		case !bomb.resolved:
			wantErr(t, name, a.Err, `the variable "x" is in neither the symbol table`)
		}
	}
}

// FuzzOpen: any file is opened or refused, never a panic, allocating
// little more than its size; what is opened parses its arguments or gives
// them an Err.
func FuzzOpen(f *testing.F) {
	f.Add(notesELF(nil, 0, 0))
	desc := append(binary.LittleEndian.AppendUint64(make([]byte, 16), 0x1000), "p\x00n\x00-4@x+8(%rip) 8@%rdi\x00"...)
	note := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 8), uint32(len(desc)))
	note = append(append(binary.LittleEndian.AppendUint32(note, 3), "stapsdt\x00"...), desc...)
	f.Add(notesELF(note, uint64(len(note)), 0))
	for _, bomb := range symbolBombs() {
		f.Add(bomb.file)
	}
	path := filepath.Join(f.TempDir(), "elf")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var file *File
		var err error
		if n := testutil.Allocated(func() { file, err = Open(path) }); n > 1<<20+16*uint64(len(b)) {
			t.Fatalf("Open of %d bytes allocated %d", len(b), n)
		}
		if err != nil {
			return
		}
		for _, p := range file.Probes {
			p.ParseArgs()
		}
	})
}

// FuzzArgs: any argument string is parsed or refused, and what is parsed
// is readable: a size of 1, 2, 4 or 8 and a register bpfkit knows.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"-4@%edi 8@-16(%rbp) 8@%rax -4@$5", "-4@x0 8@[sp, 16] 8@[x1] -4@5", "8@(%r8d)", "1@$-56"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, x86 bool) {
		m := elf.EM_AARCH64
		if x86 {
			m = elf.EM_X86_64
		}
		args, err := ParseArgs(m, s)
		for _, a := range args {
			if off, ok := regOffset(m, a.Reg); err == nil && (a.Size&(a.Size-1) != 0 || a.Size > 8 || a.Size < 1 || a.Kind != ArgConst && (!ok || off != a.PtRegs)) {
				t.Fatalf("%q: %+v", s, a)
			}
		}
		if err == nil && len(args) != len(splitArgs(s)) {
			t.Fatalf("%q: %d arguments of %d", s, len(args), len(splitArgs(s)))
		}
	})
}
