package prog

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
		got, err := readELF(bytes.NewReader(b))
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
		if _, err := readELF(bytes.NewReader([]byte(bad))); err == nil {
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
		e, err := readELF(bytes.NewReader(b))
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
