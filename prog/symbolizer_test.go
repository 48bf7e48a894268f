package prog

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// kallsymsText is /proc/kallsyms as this process reads it, and its full
// table, or a skip when the addresses are hidden.
func kallsymsText(tb testing.TB) ([]byte, *Symbols) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (CAP_SYSLOG) to read kernel addresses")
	}
	text, err := os.ReadFile(kallsymsPath)
	if err != nil {
		tb.Skip(err)
	}
	table, err := readKallsyms(bytes.NewReader(text))
	if err != nil || table.hidden {
		tb.Skipf("kernel addresses are hidden (%v)", err)
	}
	return text, table
}

// probeAddrs picks addresses to name from a table: n symbols' addresses,
// one byte past and one before each, one at random inside the text, and
// the ends of the address space.
func probeAddrs(s *Symbols, n int) []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	addrs := []uint64{0, 1, math.MaxUint64, s.addrs[0] - 1, s.addrs[len(s.addrs)-1] + 0x1000}
	for range n {
		a := s.addrs[r.IntN(len(s.addrs))]
		addrs = append(addrs, a, a+1, a-1, s.addrs[0]+r.Uint64N(s.addrs[len(s.addrs)-1]-s.addrs[0]))
	}
	return addrs
}

// TestSymbolizerMatchesTable names 20,000 addresses of this kernel (the
// kernel's and modules' functions, between and around them) in one call,
// and again after more, and compares each name with the full table's.
func TestSymbolizerMatchesTable(t *testing.T) {
	text, table := kallsymsText(t)
	addrs := probeAddrs(table, 5000)
	for line := range strings.Lines(string(text)) { // the modules' functions
		if addr, _, ok := parseKallsymsLine([]byte(line)); ok && strings.Contains(line, "\t[") {
			addrs = append(addrs, addr, addr+1)
		}
	}
	path := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Symbolizer{path: path}
	for round, batch := range [][]uint64{addrs[:len(addrs)/2], addrs, addrs} {
		if round == 2 { // named already: the file is not read again
			os.Remove(path)
		}
		names, err := s.Names(batch)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, a := range batch {
			if want := table.Name(a); names[i] != want {
				t.Fatalf("round %d: Names(%#x) = %q, the table says %q", round, a, names[i], want)
			}
		}
	}
}

// TestSymbolizerProc names addresses through /proc/kallsyms itself: a
// function's own address is named +0x0, and the answer is the table's.
func TestSymbolizerProc(t *testing.T) {
	addr, first := firstAt(t, "__bpf_call_base")
	if addr == 0 {
		t.Skip("kernel addresses are hidden")
	}
	names, err := NewSymbolizer().Names([]uint64{addr, addr + 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{first + "+0x0", first + "+0x3", "0x1"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("Names = %q, want %q", names, want)
	}
}

// TestSymbolizerText: on a small table, out of order as the kernel's is
// (a module, a BPF program after the kernel's text), with two names at one
// address, data symbols and a module's [name], each address is named as
// the table names it.
func TestSymbolizerText(t *testing.T) {
	text := "ffffffff81000000 T _stext\n" +
		"ffffffff81000100 t first_of_two\n" +
		"ffffffff81000100 T second_of_two\n" +
		"ffffffff81000200 D some_data\n" +
		"ffffffff81000300 W weak_fn\n" +
		"ffffffffc0200000 t mod_fn\t[mymod]\n" +
		"ffffffffa0001000 t bpf_prog_6deef7357e7b4530_x\t[bpf]\n" +
		"ffffffff81000080 t late_fn\n"
	cases := map[uint64]string{
		0xffffffff80ffffff: "0xffffffff80ffffff",
		0xffffffff81000000: "_stext+0x0",
		0xffffffff81000090: "late_fn+0x10",
		0xffffffff81000104: "first_of_two+0x4",
		0xffffffff81000250: "first_of_two+0x150",
		0xffffffff81000300: "weak_fn+0x0",
		0xffffffffa0001008: "bpf_prog_6deef7357e7b4530_x+0x8",
		0xffffffffc0200010: "mod_fn+0x10",
	}
	var addrs []uint64
	for a := range cases {
		addrs = append(addrs, a, a) // repeats are named too
	}
	names, err := nameAddrs(strings.NewReader(text), addrs)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs {
		if names[i] != cases[a] {
			t.Errorf("%#x: %q, want %q", a, names[i], cases[a])
		}
	}
}

// TestSymbolizerAddress: Address finds the first text symbol of a name; a
// name not listed is not found; hidden addresses say why.
func TestSymbolizerAddress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	text := "ffffffff81000000 T _stext\n" +
		"ffffffff81000200 D wanted\n" + // data: not a text symbol
		"ffffffff81000100 t wanted\n" +
		"ffffffff81000300 T wanted\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Symbolizer{path: path}
	for name, want := range map[string]struct {
		addr uint64
		ok   bool
	}{"wanted": {0xffffffff81000100, true}, "_stext": {0xffffffff81000000, true}, "absent": {}} {
		addr, ok, err := s.Address(name)
		if err != nil || addr != want.addr || ok != want.ok {
			t.Errorf("Address(%q) = %#x, %v, %v; want %#x, %v", name, addr, ok, err, want.addr, want.ok)
		}
	}
	if err := os.WriteFile(path, []byte("0000000000000000 T _stext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Address("_stext"); !errors.Is(err, ErrKallsymsHidden) {
		t.Errorf("Address with hidden addresses: %v, want ErrKallsymsHidden", err)
	}
}

// TestSymbolizerHidden: a table whose addresses all read zero (a process
// without CAP_SYSLOG) names nothing and says why; nothing is kept, so a
// later call reads again. A file that cannot be read says why.
func TestSymbolizerHidden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	hidden := []byte("0000000000000000 T _stext\n0000000000000000 t f\n")
	if err := os.WriteFile(path, hidden, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Symbolizer{path: path}
	if names, err := s.Names([]uint64{0xffffffff81000010}); !errors.Is(err, ErrKallsymsHidden) {
		t.Fatalf("Names with hidden addresses = %q, %v; want ErrKallsymsHidden", names, err)
	}
	if err := os.WriteFile(path, []byte("ffffffff81000000 T _stext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := s.Names([]uint64{0xffffffff81000010})
	if err != nil || names[0] != "_stext+0x10" {
		t.Fatalf("Names once the addresses show = %q, %v; want _stext+0x10", names, err)
	}
	os.Remove(path)
	if _, err := s.Names([]uint64{1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file gone: %v, want ErrNotExist", err)
	}
}

// TestSymbolizerAllocs: naming 100 addresses from the kernel's table of
// about 120,000 lines allocates a few times per address, never per line.
func TestSymbolizerAllocs(t *testing.T) {
	text, table := kallsymsText(t)
	addrs := probeAddrs(table, 25)
	r := bytes.NewReader(nil)
	allocs := testing.AllocsPerRun(5, func() {
		r.Reset(text)
		if _, err := nameAddrs(r, addrs); err != nil {
			t.Fatal(err)
		}
	})
	lines := bytes.Count(text, []byte("\n"))
	if limit := 8*len(addrs) + 16; allocs > float64(limit) {
		t.Errorf("%v allocations to name %d addresses from %d lines, want at most %d",
			allocs, len(addrs), lines, limit)
	}
}

// fieldsLine is parseKallsymsLine as it was written first, with
// strings.Fields and strconv: what the allocation-free parser must match.
func fieldsLine(line string) (uint64, string, bool) {
	fields := strings.Fields(line)
	if len(fields) < 3 || len(fields[1]) != 1 || !strings.Contains("tTwW", fields[1]) {
		return 0, "", false
	}
	addr, err := strconv.ParseUint(fields[0], 16, 64)
	return addr, fields[2], err == nil
}

// FuzzKallsymsLine: the parser reads every line as strings.Fields and
// strconv.ParseUint would (on text without non-ASCII white space, which
// Fields also splits on and the kernel never writes).
func FuzzKallsymsLine(f *testing.F) {
	for _, l := range []string{
		"ffffffff81234560 T do_sys_openat2",
		"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]",
		"0000000000000000 D jiffies",
		"zz T x",
		"1 T",
		"10000000000000000 T overflow",
		"00000000000000000001 t zeros",
		"0x10 T prefixed",
		" \tffff  w\vspaced\r\n",
	} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, r := range line {
			if r >= utf8.RuneSelf && unicode.IsSpace(r) {
				return
			}
		}
		addr, name, ok := parseKallsymsLine([]byte(line))
		wantAddr, wantName, wantOK := fieldsLine(line)
		if ok != wantOK || ok && (addr != wantAddr || string(name) != wantName) {
			t.Fatalf("parseKallsymsLine(%q) = %#x, %q, %v; want %#x, %q, %v",
				line, addr, name, ok, wantAddr, wantName, wantOK)
		}
	})
}

// FuzzSymbolizer: for any table and addresses, the Symbolizer's names are
// the full table's.
func FuzzSymbolizer(f *testing.F) {
	f.Add("ffffffff81000100 t a\nffffffff81000100 T b\n"+
		"ffffffff81000000 T c\nffffffffc0000000 t m\t[mod]\n",
		uint64(0xffffffff81000180), uint64(0xffffffff81000000), uint64(0xffffffffc0000001))
	f.Add("0 T zero\n10 t ten\n", uint64(0), uint64(5), uint64(16))
	f.Fuzz(func(t *testing.T, text string, a, b, c uint64) {
		table, err := readKallsyms(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		addrs := []uint64{a, b, c, a + 1, b - 1}
		names, err := nameAddrs(strings.NewReader(text), addrs)
		if table.hidden {
			if !errors.Is(err, ErrKallsymsHidden) {
				t.Fatalf("hidden table: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, addr := range addrs {
			if want := table.Name(addr); names[i] != want {
				t.Fatalf("%#x: %q, the table says %q", addr, names[i], want)
			}
		}
	})
}

// BenchmarkKallsyms names 100 addresses from /proc/kallsyms as each kind
// of caller would: through Kallsyms's whole table, then through a new
// Symbolizer. Both read the file once; the time is mostly the kernel's
// writing of it, the allocations are what each builds.
func BenchmarkKallsyms(b *testing.B) {
	_, table := kallsymsText(b)
	addrs := probeAddrs(table, 25)
	b.Run("table", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Open(kallsymsPath)
			if err != nil {
				b.Fatal(err)
			}
			s, err := readKallsyms(f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			for _, a := range addrs {
				s.Name(a)
			}
		}
	})
	b.Run("symbolizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewSymbolizer().Names(addrs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
