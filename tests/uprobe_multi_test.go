package tests

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/usdt"
	"golang.org/x/sys/unix"
)

// cookieCounter loads a program for uprobe_multi links that adds one to
// counts[cookie].
func cookieCounter(t *testing.T, counts *mapfd.Map) (*prog.Program, error) {
	t.Helper()
	items := []Item{
		Call(BPF_FUNC_get_attach_cookie), // r1 is the context
		StoreMem(BPF_W, R10, -4, R0),
	}
	items = append(items, testutil.AddOne(counts, "out")...)
	items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{
		Type:               prog.Kprobe,
		Name:               "umulti_count",
		License:            "GPL",
		Insns:              items,
		ExpectedAttachType: unix.BPF_TRACE_UPROBE_MULTI,
	})
	if err == nil {
		t.Cleanup(func() { p.Close() })
	}
	return p, err
}

// TestUprobeMultiUSDT: one uprobe_multi link on the three USDT call sites of
// the C program sdt (bpfkit:args, and bpfkit:str's two), cookies 0 to 2,
// their semaphores as ref_ctr_offsets and -p one of two processes: the
// semaphores of that process count one per site, the other's none; its
// firings are counted exactly by site, the other's not at all; a
// uretprobe_multi link on the function fire counts its returns; closing
// the links sets the semaphores back. Where the kernel has no
// uprobe_multi links (before 6.6: the 5.10 and 6.1 VMs) the attach says
// sys.ErrNotSupported.
func TestUprobeMultiUSDT(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	path := sdtBinary(t)
	have, err := prog.HaveUprobeMulti()
	if err != nil {
		t.Fatal(err)
	}
	fireOff, err := prog.SymbolOffset(path, "fire")
	if err != nil {
		t.Fatal(err)
	}
	counts, tm := newArray(t, 4)
	p, err := cookieCounter(t, counts)
	if !have {
		// Kernels before 6.6 may load the program (6.1 does not check a
		// kprobe program's expected attach type); the link is refused.
		if err == nil {
			o := prog.UprobeMultiOptions{Offsets: []uint64{fireOff}}
			_, err = prog.AttachUprobeMulti(p, path, o)
			if !errors.Is(err, sys.ErrNotSupported) {
				t.Fatalf("no uprobe_multi links, yet the attach said %v", err)
			}
		}
		t.Logf("no uprobe_multi links here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := usdt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var o prog.UprobeMultiOptions
	odd := -1 // the site of bpfkit:str that fires for odd i, its argument the constant 99
	for _, name := range []string{"bpfkit:args", "bpfkit:str"} {
		probe, err := f.Probe(name)
		if err != nil {
			t.Fatal(err)
		}
		args, err := probe.ParseArgs()
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range probe.Sites {
			if name == "bpfkit:str" && args[i][1].Kind == usdt.ArgConst && args[i][1].Value == 99 {
				odd = len(o.Offsets)
			}
			o.Offsets = append(o.Offsets, s.Offset)
			o.RefCtrOffsets = append(o.RefCtrOffsets, semaphoreOffset(t, path, s))
			o.Cookies = append(o.Cookies, uint64(len(o.Cookies)))
		}
	}
	if len(o.Offsets) != 3 || odd < 1 {
		t.Fatalf("sites %#x, the odd one %d: want 3, one of bpfkit:str's passing 99",
			o.Offsets, odd)
	}
	traced, other := startSDTBinary(t, path), startSDTBinary(t, path)
	o.PID = traced.pid
	var journal strings.Builder
	sys.SetJournal(&journal)
	l, err := prog.AttachUprobeMulti(p, path, o)
	sys.SetJournal(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := fmt.Sprintf(`attach_type=trace_uprobe_multi uprobe_multi.path=%q `+
		`flags=0x0 cnt=3 pid=%d)`, path, traced.pid)
	if !strings.Contains(journal.String(), want) {
		t.Errorf("the journal lacks %s:\n%s", want, journal.String())
	}
	if want := fmt.Sprintf("uprobe_multi of 3 places in %s", path); l.String() != want {
		t.Errorf("link %q, want %q", l, want)
	}
	checkLinkTarget(t, p, fmt.Sprintf("%s+%#x and 2 more offsets, pid %d",
		path, o.Offsets[0], traced.pid), fmt.Sprintf("0 offsets, pid %d", traced.pid))
	ret, err := prog.AttachUprobeMulti(p, path, prog.UprobeMultiOptions{Offsets: []uint64{fireOff},
		Cookies: []uint64{3}, PID: traced.pid, Return: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ret.Close()
	traced.send("sem", "sem 1 2") // a count per uprobe: bpfkit:str has two sites
	other.send("sem", "sem 0 0")
	traced.send("fire 7", "fired 7")
	other.send("fire 5", "fired 5")
	// i = 0..6: bpfkit:args 7 times, bpfkit:str's even site 4, its odd 3.
	even := 3 - odd
	expectCounts(t, tm, map[uint32]uint64{0: 7, uint32(even): 4, uint32(odd): 3, 3: 7})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	traced.send("sem", "sem 0 0")
}

// checkLinkTarget checks that prog.LinkByID says of p's one link that it
// is a uprobe_multi link on want, or on before where the kernel is older
// than 6.8 and tells only the head of the link's info.
func checkLinkTarget(t *testing.T, p *prog.Program, want, before string) {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	for id, err := prog.NextLinkID(0); id != 0 || err != nil; id, err = prog.NextLinkID(id) {
		if err != nil {
			t.Fatal(err)
		}
		l, err := prog.LinkByID(id)
		if err != nil || l.ProgID != info.ID {
			continue // gone since, or another program's
		}
		if v, err := prog.KernelVersion(); err == nil && v < 6<<16|8<<8 {
			want = before
		}
		if l.Type != "uprobe_multi" || l.Target != want {
			t.Errorf("link %d of the program: %+v, want uprobe_multi on %q", id, l, want)
		}
		return
	}
	t.Errorf("no link of program %d found", info.ID)
}

// semaphoreOffset is the file offset of a site's semaphore, 0 for none:
// its address less its PT_LOAD segment's, plus the segment's offset.
func semaphoreOffset(t *testing.T, path string, s usdt.Site) uint64 {
	t.Helper()
	if s.Semaphore == 0 {
		return 0
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && s.Semaphore >= p.Vaddr && s.Semaphore < p.Vaddr+p.Filesz {
			return s.Semaphore - p.Vaddr + p.Off
		}
	}
	t.Fatalf("semaphore %#x is in no segment of %s", s.Semaphore, path)
	return 0
}
