package usdt

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }

// sdtProgram is the C program to trace: in the VMs, built statically by
// tests/vm/run.sh into the tools' directory; on the host, built now.
func sdtProgram(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BPFKIT_TOOLS"); d != "" {
		if p := filepath.Join(d, "sdt"); fileExists(p) {
			return p
		}
		t.Skip("no sdt program among the VM's tools: tests/vm/run.sh builds it where gcc, libc6-dev and systemtap-sdt-dev are installed")
	}
	return buildSDT(t, "gcc", "gcc")
}

// sdtProc is a running C program, driven through its stdin.
type sdtProc struct {
	t   *testing.T
	pid int
	in  io.Writer
	out *bufio.Reader
}

func startSDT(t *testing.T, path string) *sdtProc {
	t.Helper()
	cmd := exec.Command(path)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &sdtProc{t, cmd.Process.Pid, in, bufio.NewReader(out)}
	if line, err := p.out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("sdt said %q, %v", line, err)
	}
	return p
}

// do sends one command and returns the answer.
func (p *sdtProc) do(cmd string) string {
	p.t.Helper()
	fmt.Fprintln(p.in, cmd)
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("sdt %s: %v", cmd, err)
	}
	return strings.TrimSpace(line)
}

// open finds a probe of the C program.
func openProbe(t *testing.T, path, name string) *Probe {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Probe(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// attachMode is a way to attach: the Options that ask for it, and what
// the Attachment must say.
type attachMode struct {
	name           string
	o              Options
	cookies, multi bool
}

// attachModes are the ways to attach this kernel has: one program told
// apart by bpf_cookie attached through one uprobe_multi link (6.6), or
// through a uprobe per site (5.15), and one program per call site.
func attachModes(t *testing.T) []attachMode {
	t.Helper()
	links, err := prog.HavePerfLink()
	if err != nil {
		t.Fatal(err)
	}
	// The tests attach with and without a pid: uprobe_multi where its
	// links filter by process (6.10), as usdt uses them then.
	multi, err := prog.HaveUprobeMultiPIDFilter()
	if err != nil {
		t.Fatal(err)
	}
	var modes []attachMode
	if multi {
		modes = append(modes, attachMode{"uprobe_multi", Options{}, true, true})
	}
	if links {
		modes = append(modes, attachMode{"cookies", Options{NoMulti: true}, true, false})
	}
	return append(modes, attachMode{"no cookies", Options{NoCookies: true}, false, false})
}

// with is o with the mode's choices.
func (m attachMode) with(o Options) Options {
	o.NoCookies, o.NoMulti = m.o.NoCookies, m.o.NoMulti
	return o
}

// check fails t unless a was attached as the mode asks, with one program
// or one per site.
func (m attachMode) check(t *testing.T, a *Attachment, sites int) {
	t.Helper()
	programs := map[bool]int{true: 1, false: sites}[m.cookies]
	links := map[bool]int{true: 1, false: sites}[m.multi]
	if a.Cookies != m.cookies || a.Multi != m.multi ||
		len(a.Programs) != programs || len(a.links) != links {
		t.Errorf("%s: attached with cookies %v, multi %v, %d programs and %d links for %d sites",
			m.name, a.Cookies, a.Multi, len(a.Programs), len(a.links), sites)
	}
}

// TestArgs: a program pushes the twelve arguments of each firing of
// bpfkit:args (registers of 1 to 8 bytes, memory at a register plus an
// offset, on the stack, constants, signed and unsigned, and a string)
// into a queue map; the C program fires it 5 times: exactly 5 records
// come out, with the values it passed, with one program and bpf_cookie
// and with one program per call site (argModes: with a second site, whose
// arguments all differ, the one program reads the cookie's descriptions).
func TestArgs(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtProgram(t)
	probe := openProbe(t, path, "bpfkit:args")
	const rec = -Scratch - 104 // 11 numbers, then 16 bytes of string
	for _, m := range argModes(t, path, probe, zeros(probe, 12)) {
		mode, probe := m.name, m.probe
		proc := startSDT(t, path)
		q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 104, MaxEntries: 64, Name: "usdt_test"})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		a, err := Attach(probe, m.with(Options{PID: proc.pid}), func(args *Args) ([]Item, error) {
			items, err := loadArgs(args, 11, rec)
			if err != nil {
				return nil, err
			}
			// junk where the string goes, as a stack slot may hold
			items = append(items, StoreImm(BPF_DW, R10, rec+88, -1), StoreImm(BPF_DW, R10, rec+96, -1))
			str, err := args.String(R6, 11, rec+88, 16)
			items = append(append(items, str...), LoadMapFD(R1, q), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, rec),
				Mov64Imm(R3, 0), Call(BPF_FUNC_map_push_elem), Mov64Imm(R0, 0), Exit())
			return items, err
		})
		if err != nil {
			t.Fatal(err)
		}
		m.check(t, a, len(probe.Sites))
		if (a.specs != nil) != m.descriptions {
			t.Errorf("%s: descriptions %v", mode, a.specs)
		}
		if got := proc.do("fire 5"); got != "fired 5" {
			t.Fatal(got)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		v := make([]byte, 104)
		for i := range int64(5) {
			if err := q.LookupAndDelete(nil, v); err != nil {
				t.Fatalf("%s: firing %d: %v", mode, i, err)
			}
			want := []int64{-i, 3 * i, -42, 200, -7 * i, -300, -5, -0x123456789abcdf0, 1000 + i, -i, i}
			for n, w := range want {
				if got := int64(binary.LittleEndian.Uint64(v[8*n:])); got != w {
					t.Errorf("%s: firing %d argument %d (%q): %d, want %d", mode, i, n, strings.Fields(probe.Sites[0].Args)[n], got, w)
				}
			}
			if s := string(v[88:]); s != fmt.Sprintf("call %d", i)+strings.Repeat("\x00", 16-len(fmt.Sprint("call ", i))) {
				t.Errorf("%s: firing %d string %q", mode, i, s)
			}
		}
		if err := q.LookupAndDelete(nil, v); !errors.Is(err, mapfd.ErrKeyNotExist) {
			t.Errorf("%s: more than 5 firings: %v", mode, err)
		}
	}
}

// TestArgs386: a 32-bit (i386) program's arguments, read on this 64-bit
// kernel, whose pt_regs holds its registers in the same slots: the C
// program built freestanding fires bpfkit:args once as it starts, with 1.
func TestArgs386(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	if regs, err := prog.KernelPtRegs(); err != nil || regs.Size != BPF_DW || runtime.GOARCH != "amd64" {
		t.Skipf("not an amd64 test on a 64-bit kernel: %v", err)
	}
	path := buildSDT(t, "gcc", "gcc", "-m32", "-nostdlib", "-static", "-ffreestanding", "-DSDT_FREESTANDING")
	probe := openProbe(t, path, "bpfkit:args")
	const rec = -Scratch - 104
	for _, m := range argModes(t, path, probe, zeros(probe, 12)) {
		q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 104, MaxEntries: 8, Name: "usdt_test"})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		a, err := Attach(m.probe, m.with(Options{}), func(args *Args) ([]Item, error) {
			items, err := loadArgs(args, 11, rec)
			if err != nil {
				return nil, err
			}
			str, err := args.String(R6, 11, rec+88, 16)
			return append(append(items, str...), LoadMapFD(R1, q), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, rec),
				Mov64Imm(R3, 0), Call(BPF_FUNC_map_push_elem), Mov64Imm(R0, 0), Exit()), err
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(path) // fires, then spins
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		v := make([]byte, 104)
		for i := 0; q.LookupAndDelete(nil, v) != nil && i < 500; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		a.Close()
		var got []int64
		for n := range 11 {
			got = append(got, int64(binary.LittleEndian.Uint64(v[8*n:])))
		}
		if want := []int64{-1, 3, -42, 200, 0, 0, 0, 0, 1001, -1, 1}; !slices.Equal(got, want) || string(v[88:90]) != "x\x00" {
			t.Errorf("%s: %v %q, want %v \"x\"", m.name, got, v[88:], want)
		}
	}
}

// argMode is a way to attach a probe for reading its arguments.
type argMode struct {
	attachMode
	probe        *Probe
	descriptions bool // arguments that differ between sites are read through the cookie
}

// argModes are those this kernel has: each of attachModes, and with
// cookies also "descriptions": the probe given a second site, with the
// arguments second, on bpfkit:str's nop, which never runs, as
// bpfkit:str's semaphore stays zero; the one program reads arguments that
// differ between sites through the descriptions the cookie indexes.
func argModes(t *testing.T, path string, probe *Probe, second string) []argMode {
	str := openProbe(t, path, "bpfkit:str").Sites[0]
	differing := *probe
	differing.Sites = []Site{probe.Sites[0], {Address: str.Address, Offset: str.Offset, Semaphore: probe.Sites[0].Semaphore, Args: second}}
	var modes []argMode
	for _, m := range attachModes(t) {
		modes = append(modes, argMode{m, probe, false})
		if m.cookies {
			m.name += ", descriptions"
			modes = append(modes, argMode{m, &differing, true})
		}
	}
	return modes
}

// zeros is n arguments of the constant 0, 8 bytes each, in the syntax of
// p's machine: "8@$0" on x86, "8@0" on arm64.
func zeros(p *Probe, n int) string {
	zero := "8@$0"
	if p.file.Machine == elf.EM_AARCH64 {
		zero = "8@0"
	}
	return strings.TrimSpace(strings.Repeat(zero+" ", n))
}

// loadArgs is r6 = ctx, then arguments 0 to n-1 stored from r10+rec, 8
// bytes each.
func loadArgs(args *Args, n int, rec int16) ([]Item, error) {
	items := []Item{Mov64Reg(R6, R1)}
	for i := range n {
		load, err := args.Load(R7, R6, i)
		if err != nil {
			return nil, err
		}
		items = append(append(items, load...), StoreMem(BPF_DW, R10, rec+int16(8*i), R7))
	}
	return items, nil
}

// TestGlobals: bpfkit:global's arguments are global variables, which x86
// writes relative to %rip ("-4@bpfkit_global(%rip) -8@8+counter(%rip)"):
// read through the site's address and the symbols, they are the values
// the C program set, at both its sites, with one program (the arguments at
// different offsets from each site: through the descriptions the cookie
// indexes, 0 and 1) and with a program per site (as written there). In a
// stripped copy the variables are unknown: Load says so.
func TestGlobals(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtProgram(t)
	probe := openProbe(t, path, "bpfkit:global")
	if len(probe.Sites) != 2 {
		t.Fatalf("bpfkit:global has %d sites, want 2", len(probe.Sites))
	}
	for _, m := range attachModes(t) {
		mode := m.name
		proc := startSDT(t, path)
		q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 16, MaxEntries: 8, Name: "usdt_test"})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		a, err := Attach(probe, m.with(Options{PID: proc.pid}), func(args *Args) ([]Item, error) {
			items, err := loadArgs(args, 2, -32)
			return append(items, LoadMapFD(R1, q), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -32),
				Mov64Imm(R3, 0), Call(BPF_FUNC_map_push_elem), Mov64Imm(R0, 0), Exit()), err
		})
		if err != nil {
			t.Fatal(err)
		}
		m.check(t, a, 2)
		// x86 reads the variables relative to each site's address, so the
		// one program reads them through the descriptions; arm64 loads
		// their addresses into registers, the same at both sites.
		sites, err := probe.ParseArgs()
		if err != nil {
			t.Fatal(err)
		}
		differ := !slices.EqualFunc(sites[0], sites[1], Arg.same)
		if (a.specs != nil) != (m.cookies && differ) {
			t.Errorf("%s: descriptions %v, the sites' arguments differ %v", mode, a.specs, differ)
		}
		proc.do("global 1234")
		proc.do("global -5")
		a.Close()
		v := make([]byte, 16)
		for _, want := range []int64{1234, 1234, -5, -5} {
			err := q.LookupAndDelete(nil, v)
			if got := [2]int64{int64(binary.LittleEndian.Uint64(v)), int64(binary.LittleEndian.Uint64(v[8:]))}; err != nil || got != [2]int64{want, -want} {
				t.Errorf("%s: %v, %v; want %d and %d", mode, got, err, want, -want)
			}
		}
	}
	stripped := filepath.Join(t.TempDir(), "sdt")
	if b, err := exec.Command("strip", "-o", stripped, path).CombinedOutput(); err != nil {
		t.Skipf("strip: %v %s", err, b)
	}
	args, err := openProbe(t, stripped, "bpfkit:global").ParseArgs()
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Args{N: 2, sites: args}).Load(R7, R6, 0)
	wantErr(t, "a stripped program's global variable", err, `the variable "bpfkit_global" is in neither the symbol table nor the dynamic symbols (stripped?)`)
}

// TestSites: bpfkit:str has two call sites, one passing i in a register,
// the other the constant 99: each firing reads its own site's arguments,
// through the cookie's index or its own program.
func TestSites(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtProgram(t)
	probe := openProbe(t, path, "bpfkit:str")
	if len(probe.Sites) != 2 || probe.Sites[0].Args == probe.Sites[1].Args {
		t.Fatalf("bpfkit:str: %+v, want two sites with different arguments", probe.Sites)
	}
	for _, m := range attachModes(t) {
		proc := startSDT(t, path)
		q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 24, MaxEntries: 64, Name: "usdt_test"})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		a, err := Attach(probe, m.with(Options{PID: proc.pid}), func(args *Args) ([]Item, error) {
			load, err := args.Load(R7, R6, 1)
			str, err2 := args.String(R6, 0, -40, 16)
			items := append(append([]Item{Mov64Reg(R6, R1)}, load...), StoreMem(BPF_DW, R10, -48, R7))
			return append(append(items, str...), LoadMapFD(R1, q), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -48),
				Mov64Imm(R3, 0), Call(BPF_FUNC_map_push_elem), Mov64Imm(R0, 0), Exit()), errors.Join(err, err2)
		})
		if err != nil {
			t.Fatal(err)
		}
		m.check(t, a, 2)
		// Each site's uprobe counts in the semaphore.
		if got := proc.do("sem"); got != "sem 0 2" {
			t.Errorf("%s: %s, want sem 0 2", m.name, got)
		}
		proc.do("fire 4")
		a.Close()
		v := make([]byte, 24)
		var got []string
		for q.LookupAndDelete(nil, v) == nil {
			got = append(got, fmt.Sprintf("%s %d", strings.TrimRight(string(v[8:]), "\x00"), binary.LittleEndian.Uint64(v)))
		}
		if want := "call 0 0,call 1 99,call 2 2,call 3 99"; strings.Join(got, ",") != want {
			t.Errorf("%s: %q, want %q", m.name, got, want)
		}
	}
}

// TestEnable: Enable sets bpfkit:str's semaphore with one uprobe on the
// entry point, none on the probe's sites, and Close clears it.
func TestEnable(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtProgram(t)
	proc := startSDT(t, path)
	e, err := Enable(openProbe(t, path, "bpfkit:str"), Options{PID: proc.pid})
	if err != nil {
		t.Fatal(err)
	}
	if got := proc.do("sem"); got != "sem 0 1" || len(e.links) != 1 {
		t.Errorf("enabled: %s with %d uprobes, want sem 0 1 and one", got, len(e.links))
	}
	proc.do("fire 3")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := proc.do("sem"); got != "sem 0 0" {
		t.Errorf("after Close: %s", got)
	}
}

// TestSharedLibrary: the C program's probes in a shared library, whose
// entry point is 0: Enable sets bpfkit:str's semaphore (through a uprobe
// on the library's .init), and bpfkit:args, attached by the library's
// path, counts the firings of the program that loaded it, and only while
// attached.
func TestSharedLibrary(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	lib := buildSDT(t, "gcc", "gcc", "-shared", "-fPIC", "-Dmain=sdt_main")
	main := filepath.Join(filepath.Dir(lib), "main.c")
	os.WriteFile(main, []byte("int sdt_main(void);\nint main(void) { return sdt_main(); }\n"), 0o644)
	exe := filepath.Join(filepath.Dir(lib), "sdtlib")
	os.Rename(lib, filepath.Join(filepath.Dir(lib), "libsdt.so"))
	lib = filepath.Join(filepath.Dir(lib), "libsdt.so")
	if b, err := exec.Command("gcc", "-o", exe, main, "-L"+filepath.Dir(lib), "-lsdt", "-Wl,-rpath,"+filepath.Dir(lib)).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	proc := startSDT(t, exe)
	e, err := Enable(openProbe(t, lib, "bpfkit:str"), Options{PID: proc.pid})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := proc.do("sem"); got != "sem 0 1" {
		t.Errorf("enabled: %s, want sem 0 1", got)
	}
	a, count := counter(t, openProbe(t, lib, "bpfkit:args"), Options{PID: proc.pid})
	if got := proc.do("fire 3"); got != "fired 3" || count() != 3 {
		t.Errorf("attached: %s, %d firings counted, want 3", got, count())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	proc.do("fire 2")
	if got := proc.do("sem"); got != "sem 0 1" || count() != 3 {
		t.Errorf("after Close: %s, %d firings counted, want sem 0 1 and 3", got, count())
	}
}

// counter attaches a program that counts firings into an array at 0.
func counter(t *testing.T, p *Probe, o Options) (*Attachment, func() uint64) {
	t.Helper()
	m, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "usdt_count"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	a, err := Attach(p, o, func(*Args) ([]Item, error) {
		items := append([]Item{StoreImm(BPF_W, R10, -4, 0)}, testutil.AddOne(m, "out")...)
		return append(items, Label("out"), Mov64Imm(R0, 0), Exit()), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, func() uint64 {
		v, err := m.Lookup(0)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestSemaphore: bpfkit:str fires only while its semaphore is set, as
// probes guarded by *_ENABLED() do. Attached, the program sees it set and
// the probe counts each firing; after Close it is zero again; with a pid
// only that process sees it set and is counted. Nothing is left in
// uprobe_events.
func TestSemaphore(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtProgram(t)
	probe := openProbe(t, path, "bpfkit:str")
	for _, m := range attachModes(t) {
		for _, pid := range []bool{false, true} {
			traced, other := startSDT(t, path), startSDT(t, path)
			o := m.with(Options{})
			if pid {
				o.PID = traced.pid
			}
			if got := traced.do("sem"); got != "sem 0 0" {
				t.Fatalf("before attaching: %s", got)
			}
			a, count := counter(t, probe, o)
			wantOther := map[bool]string{false: "sem 0 2", true: "sem 0 0"}[pid]
			if got, gotOther := traced.do("sem"), other.do("sem"); got != "sem 0 2" || gotOther != wantOther {
				t.Errorf("%s, pid %v: attached, the traced process says %q and the other %q, "+
					"want sem 0 2 (a uprobe on each site) and %s",
					m.name, pid, got, gotOther, wantOther)
			}
			traced.do("fire 7")
			other.do("fire 3")
			if n, want := count(), map[bool]uint64{false: 10, true: 7}[pid]; n != want {
				t.Errorf("%s, pid %v: %d firings, want %d", m.name, pid, n, want)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if got, gotOther := traced.do("sem"), other.do("sem"); got != "sem 0 0" || gotOther != "sem 0 0" {
				t.Errorf("%s, pid %v: after Close: %q and %q, want sem 0 0",
					m.name, pid, got, gotOther)
			}
		}
	}
	// Other test processes may have events: this one's are in its group.
	events, err := tracefs.Events(tracefs.Uprobe)
	for _, e := range events {
		if strings.Contains(e, fmt.Sprintf("_%d_", os.Getpid())) {
			t.Errorf("left in uprobe_events: %s", e)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails t unless err is non-nil, starts with "usdt: " (every error
// usdt returns does) and holds every part.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), "usdt: ") {
		t.Errorf("%s: %v, want an error starting with \"usdt: \"", what, err)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not say %q", what, err, p)
		}
	}
}

// TestBadInput: arguments the probe does not have, a context outside
// r6-r9, a string buffer over the scratch stack or misaligned, and probes
// that are not a File's are refused, without a panic.
func TestBadInput(t *testing.T) {
	a := &Args{N: 2, sites: [][]Arg{{{Kind: ArgReg, Size: 8}, {Kind: ArgConst, Size: 4}}}}
	for _, c := range []struct {
		dst, ctx Register
		n        int
	}{{R0, R6, 2}, {R0, R6, -1}, {R0, R1, 0}, {R10, R6, 0}} {
		_, err := a.Load(c.dst, c.ctx, c.n)
		wantErr(t, fmt.Sprintf("Load(%v, %v, %d)", c.dst, c.ctx, c.n), err)
	}
	_, err := (&Args{N: 1}).Load(R0, R6, 0)
	wantErr(t, "Load of Args of no site", err)
	build := func(*Args) ([]Item, error) { return nil, nil }
	for _, p := range []*Probe{nil, {}, {Provider: "p", Name: "n", Sites: []Site{{}}}} {
		_, err := Attach(p, Options{}, build)
		wantErr(t, fmt.Sprintf("Attach(%v)", p), err)
		_, err = Enable(p, Options{})
		wantErr(t, fmt.Sprintf("Enable(%v)", p), err)
	}
	for _, c := range [][2]int{{-16, 8}, {-36, 16}, {-40, 12}, {-520, 8}, {-40, 0}} {
		_, err := a.String(R6, 0, int16(c[0]), int32(c[1]))
		wantErr(t, fmt.Sprintf("a string buffer of %d bytes at r10%+d", c[1], c[0]), err)
	}
}
