package tracefs_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
)

// The tests in this file call every exported function of tracefs as a
// hostile caller would: strings with a NUL (which the kernel would read as
// their end), a newline (a second command), 0xA0 (a space to the kernel),
// 300 bytes; kinds that are none; offsets at their maximum. Each checks
// the exact answer, and that nothing reached the kernel.

var hostile = []string{"", "do\x00sys", "do\nsys", "do\xa0sys", strings.Repeat("a", 300), "..", "a/b"}

// wantInvalid fails t unless err is ErrInvalid, starts with "tracefs: " (every
// error tracefs returns does) and says says.
func wantInvalid(t *testing.T, what string, err error, says string) {
	t.Helper()
	if !errors.Is(err, tracefs.ErrInvalid) || !strings.HasPrefix(err.Error(), "tracefs: ") || !strings.Contains(err.Error(), says) {
		t.Errorf("%s: %v; want ErrInvalid saying %q", what, err, says)
	}
}

func TestAdversarialKinds(t *testing.T) {
	for k, want := range map[tracefs.ProbeKind]string{-1: "ProbeKind(-1)", 99: "ProbeKind(99)", math.MinInt: "ProbeKind(-9223372036854775808)", tracefs.Uretprobe: "uretprobe"} {
		if k.String() != want && !(k == math.MinInt && strings.HasPrefix(k.String(), "ProbeKind(-")) {
			t.Errorf("ProbeKind(%d).String() = %q, want %q", int(k), k.String(), want)
		}
		if k != tracefs.Uretprobe && (k.PMU() != "" || k.EventsFile() != "" || k.IsUprobe() || k.IsReturn()) {
			t.Errorf("ProbeKind(%d): PMU %q, EventsFile %q, IsUprobe %v, IsReturn %v", int(k), k.PMU(), k.EventsFile(), k.IsUprobe(), k.IsReturn())
		}
		if k == tracefs.Uretprobe {
			continue
		}
		_, err := tracefs.Events(k)
		wantInvalid(t, "Events of a kind that is none", err, "kind")
		err = tracefs.ProbeSpec{Kind: k, Symbol: "do_sys_openat2"}.Check()
		wantInvalid(t, "Check of a kind that is none", err, "kind")
		_, err = tracefs.CreateProbe(tracefs.ProbeSpec{Kind: k, Symbol: "do_sys_openat2"})
		wantInvalid(t, "CreateProbe of a kind that is none", err, "kind")
		err = (&tracefs.ProbeEvent{Kind: k, Group: "g", Name: "n"}).Remove()
		wantInvalid(t, "Remove of a kind that is none", err, "kind")
	}
}

func TestAdversarialLookups(t *testing.T) {
	testutil.RequireRoot(t)
	for _, s := range hostile {
		_, err := tracefs.TracepointID(s, "sys_enter_getppid")
		_, err2 := tracefs.TracepointFormat("syscalls", s)
		switch {
		case s == "do\xa0sys":
			// A valid file name: no such tracepoint.
			if !errors.Is(err, tracefs.ErrNotExist) || !errors.Is(err2, tracefs.ErrNotExist) {
				t.Errorf("%q: %v, %v; want ErrNotExist", s, err, err2)
			}
		default:
			wantInvalid(t, "TracepointID group "+s, err, "tracepoint name")
			wantInvalid(t, "TracepointFormat name "+s, err2, "tracepoint name")
		}
	}
	f, err := tracefs.TracepointFormat("syscalls", "sys_enter_getppid")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hostile {
		if _, err := f.Field(s); err == nil || !strings.Contains(err.Error(), "has no field") {
			t.Errorf("Field(%q): %v", s, err)
		}
	}
}

func TestAdversarialProbes(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "")
	before := probeEvents(t)
	// What a uprobe on "/"+s and a kprobe on s are told.
	uprobeErr := map[string]string{"": "/ is not a regular file", "do\x00sys": "free of NUL", "do\nsys": "no such file",
		"do\xa0sys": "no such file", strings.Repeat("a", 300): "file name too long", "..": "/.. is not a regular file", "a/b": "no such file"}
	kprobeErr := map[string]string{"": "must be 1 to 512 bytes", "do\x00sys": `character '\x00'`, "do\nsys": `character '\n'`,
		"do\xa0sys": `character '\u00a0'`, "a/b": `character '/'`}
	for _, s := range hostile {
		if want, ok := kprobeErr[s]; ok {
			wantInvalid(t, "kprobe symbol "+s, tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: s}.Check(), want)
		} else if err := (tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: s}).Check(); err != nil {
			t.Errorf("kprobe symbol %q of good characters: %v", s, err)
		}
		_, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: "/" + s, Offset: off})
		if err == nil || !strings.Contains(err.Error(), uprobeErr[s]) {
			t.Errorf("uprobe path %q: %v, want an error saying %q", "/"+s, err, uprobeErr[s])
		}
		err = (&tracefs.ProbeEvent{Kind: tracefs.Uprobe, Group: s, Name: "e1"}).Remove()
		wantInvalid(t, "Remove of group "+s, err, "name")
		err = (&tracefs.ProbeEvent{Kind: tracefs.Kprobe, Group: "g", Name: s}).Remove()
		wantInvalid(t, "Remove of name "+s, err, "name")
	}
	// A long symbol of good characters reaches kprobe_events, or is refused
	// for the kernel's lack of kprobes.
	_, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: strings.Repeat("a", 300)})
	if p, _ := tracefs.Path(); err == nil || fileMissing(p+"/kprobe_events") && !errors.Is(err, sys.ErrNotSupported) {
		t.Errorf("kprobe on a 300-byte symbol: %v", err)
	}
	wantInvalid(t, "a 513-byte symbol", tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: strings.Repeat("a", 513)}.Check(), "1 to 512 bytes")
	for _, spec := range []tracefs.ProbeSpec{
		{Kind: tracefs.Uprobe, Path: exe, Offset: math.MaxUint64},
		{Kind: tracefs.Uprobe, Path: exe, Offset: off, RefCtrOffset: math.MaxUint64},
		{Kind: tracefs.Uprobe, Path: exe, Offset: off, Symbol: "main.main"},
		{Kind: tracefs.Kretprobe, Symbol: "f", MaxActive: math.MinInt},
		{Kind: tracefs.Kprobe, Symbol: "f", MaxActive: math.MaxInt},
		{Kind: tracefs.Kprobe, Symbol: "f", Path: exe},
		{Kind: tracefs.Uprobe, Path: exe + strings.Repeat("/x", 2100), Offset: off},
	} {
		_, err := tracefs.CreateProbe(spec)
		wantInvalid(t, "hostile spec", err, "")
	}
	if after := probeEvents(t); after != before {
		t.Fatalf("events changed:\nbefore %s\nafter  %s", before, after)
	}
}

func fileMissing(p string) bool {
	_, err := os.Stat(p)
	return errors.Is(err, os.ErrNotExist)
}

func TestAdversarialParseFormat(t *testing.T) {
	for _, text := range []string{"", "\x00", "field:", "\tfield:int x;\toffset:99999999999999999999;\tsize:4;\tsigned:1;",
		"ID: -1\n", "name: x\n\tfield:;\toffset:0;\tsize:4;\tsigned:1;"} {
		if f, err := tracefs.ParseFormat(text); err == nil {
			t.Errorf("ParseFormat(%q) = %+v, want an error", text, f)
		}
	}
	// __print_symbolic tables keep the pairs with a number of 64 bits.
	const field = "\tfield:int x;\toffset:0;\tsize:4;\tsigned:1;\nprint fmt: "
	for pf, want := range map[string]map[uint64]string{
		`__print_symbolic(REC->x, {0x, "a"})`:                                   nil,
		`__print_symbolic(REC->x, { 0xffffffffffffffff, "max" }, {-1, "m1"})`:   {math.MaxUint64: "m1"},
		`__print_symbolic(REC->x, { 0x10000000000000000, "big" }, {1, "\x00"})`: {1: `\x00`},
		`__print_symbolic(REC->x, { TCP_CLOSE, "CLOSE" }, { 7, "SEVEN" })`:      {7: "SEVEN"},
		`__print_symbolic(REC->x, { 1, "A" } { 2, "B" }, {3 "C"}, {4, "D"}`:     {1: "A", 2: "B"},
	} {
		f, err := tracefs.ParseFormat(field + pf)
		if err != nil || !reflect.DeepEqual(f.Symbols["x"], want) {
			t.Errorf("print fmt %s: symbols %v, %v; want %v", pf, f.Symbols["x"], err, want)
		}
	}
}

// TestAdversarialOwner: event names of hostile bytes and groups that only
// look like bpfkit's are no bpfkit event or are kept with the reason; a
// group of this namespace whose owner is provably gone is stale.
func TestAdversarialOwner(t *testing.T) {
	group, err := tracefs.Group()
	if err != nil {
		t.Skip(err)
	}
	parts := strings.Split(group, "_") // bpfkit, namespace, pid, start
	ns, pid, start := parts[1], parts[2], parts[3]
	older := "the group is not bpfkit_<pid namespace>_<pid>_<start>: an older bpfkit's, whose owner cannot be told apart"
	for _, c := range []struct {
		event         string
		bpfkit, stale bool
		why           string
	}{
		{"", false, false, ""},
		{"kprobes/p_do_sys_openat2", false, false, ""},
		{"bpfkit/e", false, false, ""},
		{"BPFKIT_" + ns + "_1_1/e", false, false, ""},
		{"bpfkit_/e", true, false, older},
		{"bpfkit_1_2/e", true, false, older},
		{"bpfkit_" + ns + "_" + pid + "_" + start + "\x00/e", true, false, older},
		{"bpfkit_" + ns + "_" + pid + "_" + start + "\n/e", true, false, older},
		{"bpfkit_" + ns + "_" + pid + "\xa0_" + start + "/e", true, false, older},
		{"bpfkit_" + ns + "_0" + pid + "_" + start + "/e", true, false, older},
		{"bpfkit_" + ns + "_+" + pid + "_" + start + "/e", true, false, older},
		{"bpfkit_" + ns + "_-1_" + start + "/e", true, false, older},
		{"bpfkit_" + ns + "_18446744073709551616_1/e", true, false, older},
		{"bpfkit_" + ns + "_" + pid + "_" + start + "_x/e", true, false, older},
		{"bpfkit_" + strings.Repeat("1", 300) + "_1_1/e", true, false, older},
		{"bpfkit_1_" + pid + "_" + start + "/e", true, false, "the owner, pid " + pid + ", runs in another PID namespace (pid:[1]; this is pid:[" + ns + "]): it cannot be seen from here"},
		{group + "/e", true, false, "the owner, pid " + pid + ", is alive"},
		{group + "/" + strings.Repeat("e", 300), true, false, "the owner, pid " + pid + ", is alive"},
		{group, true, false, "the owner, pid " + pid + ", is alive"},
		// This pid with another start time, no pid at all, a pid past
		// pid_t: owners provably gone.
		{"bpfkit_" + ns + "_" + pid + "_" + start + "1/e", true, true, ""},
		{"bpfkit_" + ns + "_0_1/e", true, true, ""},
		{"bpfkit_" + ns + "_4294967297_1/e", true, true, ""},
	} {
		got := tracefs.Owner(c.event)
		if got != (tracefs.Ownership{Bpfkit: c.bpfkit, Stale: c.stale, Why: c.why}) {
			t.Errorf("Owner(%q) = %v, %v, %q\nwant %v, %v, %q",
				c.event, got.Bpfkit, got.Stale, got.Why, c.bpfkit, c.stale, c.why)
		}
	}
}

// TestAdversarialSweep: two Sweeps at once, over an event whose owner is
// gone, both succeed: the second's removal of what the first removed is
// no error.
func TestAdversarialSweep(t *testing.T) {
	testutil.RequireRoot(t)
	group, err := tracefs.Group()
	if err != nil {
		t.Fatal(err)
	}
	exe, off := fileOffset(t, "")
	parts := strings.Split(group, "_")
	for i := range 20 {
		// This process's pid with another start time: a dead owner.
		dead := fmt.Sprintf("bpfkit_%s_%s_%s%d", parts[1], parts[2], parts[3], i)
		if err := writeUprobeEvents(fmt.Sprintf("p:%s/e %s:%#x", dead, exe, off)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		removed := make([][]string, 2)
		errs := make([]error, 2)
		for j := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); removed[j], _, errs[j] = tracefs.Sweep() }()
		}
		wg.Wait()
		if contains(events(t, tracefs.Uprobe), dead+"/e") {
			(&tracefs.ProbeEvent{Kind: tracefs.Uprobe, Group: dead, Name: "e"}).Remove()
			t.Fatalf("%s/e is still there after two Sweeps", dead)
		}
		if errs[0] != nil || errs[1] != nil || !contains(append(removed[0], removed[1]...), dead+"/e") {
			t.Fatalf("two Sweeps at once: removed %q and %q, errors %v and %v", removed[0], removed[1], errs[0], errs[1])
		}
	}
}
