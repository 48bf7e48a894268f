package usdt

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// The tests in this file call every exported function of usdt as a hostile
// caller would: paths that are empty, hold a NUL, name a directory, are
// too long, or name files that are not ELF, truncated, or whose notes
// section claims a gigabyte; argument strings with a NUL, a newline, 0xA0,
// 300 bytes, numbers past 64 bits and unknown registers; argument numbers
// and stack slots at and past their limits; nil, zero and stale probes.
// Each checks the exact error, and that nothing is left behind: no fd, no
// uprobe event of this process's group.

// checkNothingLeft fails t, at its end, if it left an fd open or, where
// tracefs can say, an event in this process's group.
func checkNothingLeft(t *testing.T) {
	t.Helper()
	if r, w, err := os.Pipe(); err == nil { // the runtime's poller and its fds, made once
		r.Close()
		w.Close()
	}
	before := testutil.OpenFDs(t)
	t.Cleanup(func() {
		if after := testutil.OpenFDs(t); after != before {
			t.Errorf("fds open before: %s; after: %s", before, after)
		}
		group, err := tracefs.Group()
		if err != nil || os.Geteuid() != 0 {
			return
		}
		events, err := tracefs.Events(tracefs.Uprobe)
		for _, e := range events {
			if strings.HasPrefix(e, group+"/") {
				t.Errorf("left in uprobe_events: %s", e)
			}
		}
		if err != nil {
			t.Error(err)
		}
	})
}

// notesELF is an ELF64 file holding data at 96, which the header of its
// section .note.stapsdt says is size bytes long there, with flags.
func notesELF(data []byte, size, flags uint64) []byte {
	le := binary.LittleEndian
	names := "\x00.shstrtab\x00.note.stapsdt\x00"
	shoff := 96 + uint64(len(data)+7)&^7
	b := make([]byte, shoff+3*64)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], shoff)
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[58:], 64) // e_shentsize
	le.PutUint16(b[60:], 3)  // e_shnum: none, .shstrtab, .note.stapsdt
	le.PutUint16(b[62:], 1)  // e_shstrndx
	copy(b[64:], names)
	copy(b[96:], data)
	// sh_name, sh_type, sh_flags, sh_offset, sh_size
	for i, s := range [][5]uint64{{1, uint64(elf.SHT_STRTAB), 0, 64, uint64(len(names))}, {11, uint64(elf.SHT_NOTE), flags, 96, size}} {
		sh := b[shoff+64*uint64(i+1):]
		le.PutUint32(sh, uint32(s[0]))
		le.PutUint32(sh[4:], uint32(s[1]))
		le.PutUint64(sh[8:], s[2])
		le.PutUint64(sh[24:], s[3])
		le.PutUint64(sh[32:], s[4])
	}
	return b
}

// TestAdversarialOpen: Open refuses what is not a readable ELF file, and a
// notes section that claims more than the file holds (1 GiB in 288 bytes:
// debug/elf allocated 10 MiB before its read failed) or is compressed
// (debug/elf would inflate it to the size it claims), allocating little;
// the same for a compressed section-name table, which elf.NewFile itself
// inflated. A FIFO is refused at once: its open waited for a writer.
func TestAdversarialOpen(t *testing.T) {
	checkNothingLeft(t)
	dir, cwd := t.TempDir(), must(os.Getwd())
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var z bytes.Buffer // an ELF64 compression header, 1 GiB of zeros claimed, 64 KiB compressed
	z.Write(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(elf.COMPRESS_ZLIB)), 1<<30), 1))
	w := zlib.NewWriter(&z)
	w.Write(make([]byte, 1<<16))
	w.Close()
	// The same, 16 MiB of zeros in 16 KiB, as the section-name table.
	var bomb bytes.Buffer
	bomb.Write(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(elf.COMPRESS_ZLIB)), 1<<24), 1))
	w = zlib.NewWriter(&bomb)
	w.Write(make([]byte, 1<<24))
	w.Close()
	names := notesELF(bomb.Bytes(), 0, 0)
	sh := names[binary.LittleEndian.Uint64(names[40:])+64:] // .shstrtab's header: at 96, compressed
	binary.LittleEndian.PutUint64(sh[8:], uint64(elf.SHF_COMPRESSED))
	binary.LittleEndian.PutUint64(sh[24:], 96)
	binary.LittleEndian.PutUint64(sh[32:], uint64(bomb.Len()))
	namesBomb := write("names", names)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	notELF := write("notelf", []byte("hello, this is not an ELF file"))
	bigEndian := notesELF(nil, 0, 0)
	bigEndian[5] = byte(elf.ELFDATA2MSB)
	big := write("big", bigEndian)
	truncated := write("truncated", notesELF(nil, 0, 0)[:100])
	huge := write("huge", notesELF(nil, 1<<30, 0))
	compressed := write("compressed", notesELF(z.Bytes(), uint64(z.Len()), uint64(elf.SHF_COMPRESSED)))
	empty := write("empty", notesELF(nil, 0, 0))
	long := strings.Repeat("a", 300)
	for path, want := range map[string]string{
		"":          "usdt: open " + cwd + ": is a directory",
		"a\x00b":    "usdt: open " + cwd + "/a\x00b: invalid argument",
		dir:         "usdt: open " + dir + ": is a directory",
		fifo:        "usdt: open " + fifo + ": invalid argument (not a regular file)",
		"/dev/zero": "usdt: open /dev/zero: invalid argument (not a regular file)",
		namesBomb:   "usdt: " + namesBomb + ": its section-name table is compressed, which Open does not inflate: a few bytes may claim gigabytes",
		long:        "usdt: open " + cwd + "/" + long + ": file name too long",
		"/nowhere":  "usdt: open /nowhere: no such file or directory",
		notELF:      "usdt: " + notELF + ": not an ELF file",
		big:         "usdt: " + big + ": a big-endian ELF file: only little-endian ones are supported",
		truncated:   "usdt: " + truncated + ": program or section headers past the end of the file",
		huge:        "usdt: " + huge + ": .note.stapsdt of 1073741824 bytes at 0x60 is compressed or past the end of the file",
		compressed:  "usdt: " + compressed + ": .note.stapsdt of 1073741824 bytes at 0x60 is compressed or past the end of the file",
	} {
		var err error
		var n uint64
		done := make(chan bool)
		go func() { n = testutil.Allocated(func() { _, err = Open(path) }); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a FIFO's open waited for a writer
			t.Fatalf("Open(%q) still waiting after 10 s", path)
		}
		if err == nil || err.Error() != want || n > 1<<20 {
			t.Errorf("Open(%q): %v, %d bytes allocated; want %q and under 1 MiB", path, err, n, want)
		}
	}
	// A file cut within its header says so: it said "a big-endian ELF
	// file" for 4 bytes and a bare "EOF" for 16.
	elf32, badClass := notesELF(nil, 0, 0), notesELF(nil, 0, 0)
	elf32[4], badClass[4] = byte(elf.ELFCLASS32), 3
	for _, c := range []struct {
		file []byte
		want string
	}{
		{[]byte(elf.ELFMAG), "truncated: 4 bytes, short of an ELF header " +
			"(52 bytes for 32-bit, 64 for 64-bit)"},
		{notesELF(nil, 0, 0)[:5], "truncated: 5 bytes, short of the 64-byte header of a 64-bit " +
			"ELF file"},
		{notesELF(nil, 0, 0)[:16], "truncated: 16 bytes, short of the 64-byte header of a 64-bit " +
			"ELF file"},
		{elf32[:51], "truncated: 51 bytes, short of the 52-byte header of a 32-bit ELF file"},
		{badClass, "unknown ELF class 3 (1 for 32-bit, 2 for 64-bit)"},
	} {
		path := write("cut", c.file)
		if _, err := Open(path); err == nil || err.Error() != "usdt: "+path+": "+c.want {
			t.Errorf("Open of %d bytes: %v, want %q", len(c.file), err, c.want)
		}
	}
	// An empty notes section: a File of no probes.
	f, err := Open(empty)
	if err != nil || len(f.Probes) != 0 {
		t.Fatalf("Open of an empty .note.stapsdt: %v, %v", f, err)
	}
	if _, err := f.Probe("a:b"); err == nil || err.Error() != "usdt: "+empty+" has no probe a:b; it has none" {
		t.Errorf("Probe of a File of no probes: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestAdversarialFile: a zero File and a zero Probe answer errors; a
// probe name of hostile bytes is no probe.
func TestAdversarialFile(t *testing.T) {
	var f File
	for _, name := range []string{"", "a:b", "a\x00:b", "a\n:b", "a\xa0:b", strings.Repeat("a", 300)} {
		_, err := f.Probe(name)
		quoted := name // quoted unless its provider and name are identifiers
		if name != "a:b" {
			quoted = strconv.Quote(name)
		}
		want := "usdt:  has no probe " + quoted + "; it has none"
		if err == nil || err.Error() != want {
			t.Errorf("zero File's Probe(%q): %v, want %q", name, err, want)
		}
	}
	var p Probe
	if p.String() != ":" {
		t.Errorf("zero Probe's String: %q", p.String())
	}
	if _, err := p.ParseArgs(); err == nil || err.Error() != "usdt: probe : is none of a File's" {
		t.Errorf("zero Probe's ParseArgs: %v", err)
	}
}

// TestAdversarialParseArgs: argument strings that are not what a compiler
// writes are refused with the argument and the reason.
func TestAdversarialParseArgs(t *testing.T) {
	x86, arm, a32 := elf.EM_X86_64, elf.EM_AARCH64, elf.EM_ARM
	long := strings.Repeat("a", 300)
	for _, c := range []struct {
		m    elf.Machine
		s    string
		want string
	}{
		{x86, "8@%rax\x00", `usdt: argument 0 "8@%rax\x00": register "rax\x00": not one bpfkit can read`},
		{x86, "8@%rax\n8@%rbx", `usdt: argument 0 "8@%rax\n8@%rbx": register "rax\n8@rbx": not one bpfkit can read`},
		{x86, "8@%rax\xa08@%rbx", `usdt: argument 0 "8@%rax\xa08@%rbx": register "rax\xa08@rbx": not one bpfkit can read`},
		{x86, "8@%" + long, `usdt: argument 0 "8@%` + long + `": register "` + long + `": not one bpfkit can read`},
		{x86, "8@" + strings.Repeat("9", 300), `usdt: argument 0 "8@` + strings.Repeat("9", 300) + `": register "$` + strings.Repeat("9", 300) + `": not one bpfkit can read`},
		{x86, "8@99999999999999999999(%rbp)", `usdt: argument 0 "8@99999999999999999999(%rbp)": offset "99999999999999999999": want a number (symbols, as for global variables, are not supported)`},
		{x86, "8@0x8000000000000000(%rbp)", `usdt: argument 0 "8@0x8000000000000000(%rbp)": offset "0x8000000000000000": want a number (symbols, as for global variables, are not supported)`},
		{x86, "-8@$-9223372036854775809", `usdt: argument 0 "-8@$-9223372036854775809": register "-9223372036854775809": not one bpfkit can read`},
		{x86, "2147483647@%rax", `usdt: argument 0 "2147483647@%rax": size 2147483647: want 1, 2, 4 or 8 bytes, negative when signed`},
		{x86, "-2147483648@%rax", `usdt: argument 0 "-2147483648@%rax": size -2147483648: want 1, 2, 4 or 8 bytes, negative when signed`},
		{x86, "99999999999999999999@%rax", `usdt: argument 0 "99999999999999999999@%rax": want size@location`},
		{x86, "8@", `usdt: argument 0 "8@": want size@location`},
		{x86, "8@(", `usdt: argument 0 "8@(": want offset(%register)`},
		{x86, "8@%rip", `usdt: argument 0 "8@%rip": register "rip": not one bpfkit can read`},
		{x86, "8@%cr0 8@%rax", `usdt: argument 0 "8@%cr0": register "cr0": not one bpfkit can read`},
		{arm, "8@", `usdt: argument 0 "8@": want size@location`},
		{arm, "8@x", `usdt: argument 0 "8@x": register "x": not one bpfkit can read`},
		{arm, "8@[]", `usdt: argument 0 "8@[]": register "": not one bpfkit can read`},
		{arm, "8@x-1", `usdt: argument 0 "8@x-1": register "x-1": not one bpfkit can read`},
		{arm, "8@x99999999999999999999", `usdt: argument 0 "8@x99999999999999999999": register "x99999999999999999999": not one bpfkit can read`},
		{arm, "8@]] 8@x1", `usdt: argument 0 "8@]]": register "]]": not one bpfkit can read`},
		{a32, "4@r15", `usdt: argument 0 "4@r15": register "r15": not one bpfkit can read`},
		{a32, "4@[pc, #8]", `usdt: argument 0 "4@[pc, #8]": register "pc": not one bpfkit can ` +
			`read`},
		{a32, "4@r-1", `usdt: argument 0 "4@r-1": register "r-1": not one bpfkit can read`},
		{a32, "4@r01", `usdt: argument 0 "4@r01": register "r01": not one bpfkit can read`},
		{a32, "4@x1", `usdt: argument 0 "4@x1": register "x1": not one bpfkit can read`},
		{a32, "8@lr", `usdt: argument 0 "8@lr": 8 bytes in lr and the register after it: ` +
			`the pair must start at r0 to r13`},
		{0, "8@%rax", `usdt: argument 0 "8@%rax": the arguments of EM_NONE binaries are not ` +
			`supported (x86, arm64 and arm are)`},
		{elf.Machine(math.MaxUint16), "8@%rax", `usdt: argument 0 "8@%rax": the arguments of ` +
			`EM_ALPHA+28633 binaries are not supported (x86, arm64 and arm are)`},
	} {
		args, err := ParseArgs(c.m, c.s)
		if err == nil || err.Error() != c.want || args != nil {
			t.Errorf("ParseArgs(%v, %q): %+v, %v\nwant %s", c.m, c.s, args, err, c.want)
		}
	}
	// The limits that are right: 64-bit offsets and constants.
	for _, c := range []struct {
		m elf.Machine
		s string
		a Arg
	}{
		{x86, "8@-9223372036854775808(%rbp)", Arg{ArgDeref, "rbp", math.MinInt64, 8, false, 32, nil}},
		{x86, "-8@$9223372036854775807", Arg{ArgConst, "", math.MaxInt64, 8, true, 0, nil}},
		{arm, "8@[x30, 0x7fffffffffffffff]", Arg{ArgDeref, "x30", math.MaxInt64, 8, false, 240, nil}},
	} {
		if args, err := ParseArgs(c.m, c.s); err != nil || len(args) != 1 || args[0] != c.a {
			t.Errorf("ParseArgs(%v, %q): %+v, %v; want %+v", c.m, c.s, args, err, c.a)
		}
	}
}

// TestAdversarialArgs: Load and String at the limits of the argument
// numbers, registers and stack slots.
func TestAdversarialArgs(t *testing.T) {
	a := &Args{N: 2, sites: [][]Arg{{{Kind: ArgReg, Size: 8, PtRegs: 112}, {Kind: ArgConst, Size: 4, Value: 5}}}}
	loadErr := func(dst, ctx Register, n, have int) string {
		return fmt.Sprintf("usdt: argument %d into %v with the context in %v: the probe has %d arguments, the context must be in r6 to r9", n, dst, ctx, have)
	}
	for _, c := range []struct {
		a        *Args
		dst, ctx Register
		n        int
	}{
		{a, R0, R6, -1}, {a, R0, R6, 2}, {a, R0, R6, math.MaxInt}, {a, R0, R6, math.MinInt},
		{a, R0, R5, 0}, {a, R0, R10, 0}, {a, R0, Register(255), 0}, {a, R10, R6, 0}, {a, Register(255), R6, 0},
		{&Args{}, R0, R6, 0}, {&Args{N: 3, sites: a.sites}, R0, R6, 2}, {&Args{N: -1}, R0, R6, 0},
	} {
		items, err := c.a.Load(c.dst, c.ctx, c.n)
		if want := loadErr(c.dst, c.ctx, c.n, c.a.N); err == nil || err.Error() != want || items != nil {
			t.Errorf("Load(%v, %v, %d) of %d arguments: %d items, %v; want %q", c.dst, c.ctx, c.n, c.a.N, len(items), err, want)
		}
	}
	// Sites that differ, and no cookies' descriptions to tell them apart.
	two := &Args{N: 1, sites: [][]Arg{{{Kind: ArgConst, Size: 4, Value: 5}}, {{Kind: ArgConst, Size: 4, Value: 6}}}}
	if items, err := two.Load(R0, R6, 0); err == nil || items != nil ||
		err.Error() != "usdt: argument 0 differs between call sites, and the program serves them without cookies" {
		t.Errorf("Load of an argument that differs, without cookies: %d items, %v", len(items), err)
	}
	for _, n := range []int{0, 1} {
		if items, err := a.Load(R9, R9, n); err != nil || len(items) == 0 {
			t.Errorf("Load(r9, r9, %d): %v", n, err)
		}
	}
	for _, c := range []struct {
		buf  int16
		size int32
	}{
		{-8, 8}, {-16, 8}, {-520, 8}, {-512, 504}, {-40, 12}, {-36, 16}, {-40, 0}, {-40, -8},
		{math.MinInt16, 8}, {math.MaxInt16, 8}, {-40, math.MaxInt32}, {-40, math.MinInt32}, {math.MinInt16, math.MaxInt32},
	} {
		items, err := a.String(R6, 0, c.buf, c.size)
		want := fmt.Sprintf("usdt: string of %d bytes at r10%+d: want multiples of 8 within r10-512 to r10-16", c.size, c.buf)
		if err == nil || err.Error() != want || items != nil {
			t.Errorf("String at r10%+d of %d bytes: %d items, %v; want %q", c.buf, c.size, len(items), err, want)
		}
	}
	if _, err := a.String(R6, 0, -512, 496); err != nil {
		t.Errorf("String filling the stack from r10-512 to r10-16: %v", err)
	}
	_, err := a.String(R6, 2, -40, 16)
	if want := loadErr(R3, R6, 2, 2); err == nil || err.Error() != want {
		t.Errorf("String of argument 2 of 2: %v, want %q", err, want)
	}
}

// TestAdversarialAttach: Attach and Enable of nil, zero and foreign probes,
// with no Builder, a Builder that fails, hostile options and a file gone
// since Open, fail with the reason and leave nothing behind; an Attachment
// closes once, and a zero one too.
func TestAdversarialAttach(t *testing.T) {
	checkNothingLeft(t)
	build := func(*Args) ([]Item, error) { return []Item{Mov64Imm(R0, 0), Exit()}, nil }
	for _, p := range []*Probe{nil, {}, {Provider: "p", Name: "n"}} {
		_, err := Attach(p, Options{}, build)
		want := "usdt: Attach needs a probe and a Builder"
		if p != nil {
			want = "usdt: probe " + p.String() + " is none of a File's"
		}
		if err == nil || err.Error() != want {
			t.Errorf("Attach(%v): %v, want %q", p, err, want)
		}
		if _, err := Enable(p, Options{}); err == nil || err.Error() != "usdt: Enable needs a probe of a File" {
			t.Errorf("Enable(%v): %v", p, err)
		}
	}
	var zero Attachment
	if err := zero.Close(); err != nil {
		t.Errorf("zero Attachment's Close: %v", err)
	}
	path := sdtProgram(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Probe("bpfkit:str")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(p, Options{}, nil); err == nil || err.Error() != "usdt: Attach needs a probe and a Builder" {
		t.Errorf("Attach without a Builder: %v", err)
	}
	noSem := *p
	noSem.Sites = []Site{p.Sites[0]}
	noSem.Sites[0].Semaphore = 0
	if _, err := Enable(&noSem, Options{}); err == nil || err.Error() != "usdt: enable bpfkit:str: "+path+" has no semaphore to set (<nil>)" {
		t.Errorf("Enable of a probe without a semaphore: %v", err)
	}
	testutil.RequireRoot(t)
	prefix := "usdt: attach to bpfkit:str in " + path + ": "
	for _, c := range []struct {
		what  string
		o     Options
		build Builder
		want  string
	}{
		{"a failing Builder", Options{}, func(*Args) ([]Item, error) { return nil, errors.New("no") }, prefix + "no"},
		{"an empty program", Options{}, func(*Args) ([]Item, error) { return nil, nil }, prefix + "prog: load"},
		{"a name with a space", Options{Name: "a b"}, build, prefix + `prog: load: sys: name "a b": byte " " at 1 is not allowed (only A-Z, a-z, 0-9, '_' and '.'): invalid argument`},
		{"a name with NUL", Options{Name: "a\x00b"}, build, prefix + `prog: load: sys: name "a\x00b": byte "\x00" at 1 is not allowed (only A-Z, a-z, 0-9, '_' and '.'): invalid argument`},
		{"a name with 0xA0", Options{Name: "a\xa0b"}, build, prefix + `prog: load: sys: name "a\xa0b": byte "\xa0" at 1 is not allowed (only A-Z, a-z, 0-9, '_' and '.'): invalid argument`},
		{"pid -1", Options{PID: -1}, build, prefix + `prog: attach "usdt" to `},
	} {
		for _, m := range attachModes(t) {
			a, err := Attach(p, m.with(c.o), c.build)
			if err == nil {
				a.Close()
			}
			badPID := ": tracefs: invalid probe: pid -1 is no process id"
			if err == nil || !strings.HasPrefix(err.Error(), c.want) ||
				c.o.PID != 0 && !strings.HasSuffix(err.Error(), badPID) {
				t.Errorf("Attach with %s (%s): %v, want %q", c.what, m.name, err, c.want)
			}
		}
	}
	if strconv.IntSize == 64 {
		// pid_t is 32 bits: 1<<32 + pid would trace pid.
		big := int64(1) << 32
		for _, pid := range []int{int(big) + os.Getpid(), math.MaxInt} {
			for _, m := range attachModes(t) {
				_, err := Attach(p, m.with(Options{PID: pid}), build)
				want := fmt.Sprintf(": tracefs: invalid probe: pid %d is no process id", pid)
				said := fmt.Sprint(err)
				if !strings.HasPrefix(said, prefix) || !strings.HasSuffix(said, want) ||
					!errors.Is(err, tracefs.ErrInvalid) {
					t.Errorf("Attach with pid %d (%s): %v, want %q", pid, m.name, err, want)
				}
			}
		}
	}
	// A File whose binary is gone since Open.
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "sdt")
	if err := os.WriteFile(copyPath, must(os.ReadFile(path)), 0o755); err != nil {
		t.Fatal(err)
	}
	gone, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(copyPath)
	gp, _ := gone.Probe("bpfkit:str")
	_, err = Attach(gp, Options{}, build)
	if !errors.Is(err, syscall.ENOENT) || !strings.HasPrefix(err.Error(), "usdt: attach to bpfkit:str in "+copyPath+": ") {
		t.Errorf("Attach to a removed binary: %v", err)
	}
	_, err = Enable(gp, Options{})
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Enable in a removed binary: %v", err)
	}
	// Close twice; the Attachment is empty after.
	a, err := Attach(p, Options{}, build)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil || a.Programs != nil {
		t.Errorf("second Close: %v, programs %v", err, a.Programs)
	}
}
