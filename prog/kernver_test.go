package prog

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"
)

// TestELFNotes checks the hand-written program header walk against
// debug/elf on real binaries: every PT_NOTE segment, in order.
func TestELFNotes(t *testing.T) {
	for _, path := range []string{"/bin/true", "/usr/bin/env", os.Args[0]} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for _, p := range f.Progs {
			if p.Type == elf.PT_NOTE {
				want = append(want, b[p.Off:p.Off+p.Filesz])
			}
		}
		got, err := elfNotes(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d note segments, debug/elf finds %d", path, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: note segment %d differs", path, i)
			}
		}
	}
	if _, err := elfNotes([]byte("\x7fELF")); err == nil {
		t.Fatal("a truncated header parsed")
	}
}

// FuzzELFNotes: no input makes the walk panic or return a note outside it.
func FuzzELFNotes(f *testing.F) {
	if b, err := os.ReadFile("/bin/true"); err == nil {
		f.Add(b[:min(len(b), 4096)])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		notes, err := elfNotes(b)
		if err != nil {
			return
		}
		for _, n := range notes {
			if len(n) > 0 && !bytes.Contains(b, n) {
				t.Fatal("note not from the input")
			}
			linuxNote(n)
		}
	})
}
