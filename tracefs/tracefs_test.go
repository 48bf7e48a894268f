package tracefs_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

const sampleFormat = `name: sched_switch
ID: 316
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:__data_loc char[] filename;	offset:28;	size:4;	signed:0;
	field:const char * ptr;	offset:32;	size:8;	signed:0;
	field:long prev_state;	offset:40;	size:8;	signed:1;

print fmt: "prev_comm=%s state=%s", REC->prev_comm, __print_symbolic(REC->prev_state, { 0x0001, "S" }, { 0x0002, "D" }, { -1, "neg" }), __print_symbolic(REC->prev_pid, { 0, "idle" })
`

func TestParseFormat(t *testing.T) {
	f, err := tracefs.ParseFormat(sampleFormat)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "sched_switch" || f.ID != 316 || len(f.Fields) != 9 {
		t.Fatalf("%+v", f)
	}
	want := map[string]tracefs.Field{
		"common_pid": {Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true},
		"prev_comm":  {Name: "prev_comm", Type: "char [16]", Offset: 8, Size: 16},
		"filename":   {Name: "filename", Type: "__data_loc char[]", Offset: 28, Size: 4, DataLoc: true},
		"ptr":        {Name: "ptr", Type: "const char *", Offset: 32, Size: 8},
		"prev_state": {Name: "prev_state", Type: "long", Offset: 40, Size: 8, Signed: true},
	}
	for name, w := range want {
		got, err := f.Field(name)
		if err != nil || got != w {
			t.Errorf("field %s = %+v, %v; want %+v", name, got, err, w)
		}
	}
	if _, err := f.Field("nope"); err == nil || !strings.Contains(err.Error(), "prev_comm") {
		t.Errorf("missing field error does not list the fields: %v", err)
	}
	if s := f.Symbols["prev_state"]; len(s) != 3 || s[1] != "S" || s[2] != "D" || s[^uint64(0)] != "neg" {
		t.Errorf("prev_state symbols %v", s)
	}
	if s := f.Symbols["prev_pid"]; s[0] != "idle" {
		t.Errorf("prev_pid symbols %v", s)
	}
	if _, err := tracefs.ParseFormat("name: x\n"); err == nil {
		t.Error("a format without fields was accepted")
	}
}

func TestTracepoints(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := tracefs.Path(); err != nil {
		t.Fatal(err)
	}
	id, err := tracefs.TracepointID("syscalls", "sys_enter_getppid")
	if err != nil || id == 0 {
		t.Fatalf("sys_enter_getppid id %d, %v", id, err)
	}
	_, err = tracefs.TracepointID("syscalls", "sys_enter_nonexistent")
	if !errors.Is(err, tracefs.ErrNotExist) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing tracepoint: %v", err)
	}
	if _, err := tracefs.TracepointID("..", "x"); !errors.Is(err, tracefs.ErrInvalid) {
		t.Fatalf("path traversal accepted: %v", err)
	}
	f, err := tracefs.TracepointFormat("skb", "kfree_skb")
	if err != nil {
		t.Fatal(err)
	}
	loc, err := f.Field("location")
	if err != nil || loc.Size != 8 || f.ID == 0 {
		t.Fatalf("kfree_skb location %+v, %v", loc, err)
	}
	if _, err := f.Field("reason"); err != nil {
		return // drop reasons came in 5.17
	}
	names := map[string]bool{}
	for _, n := range f.Symbols["reason"] { // the numbers change between kernels
		names[n] = true
	}
	if !names["NOT_SPECIFIED"] || !names["NO_SOCKET"] {
		t.Fatalf("kfree_skb reasons: %v", f.Symbols["reason"])
	}
}

//go:noinline
func uprobeTarget(x int) int { return x*3 + 1 }

func fileOffset(t *testing.T, _ string) (string, uint64) {
	t.Helper()
	return testutil.FuncOffset(t, uprobeTarget)
}

func events(t *testing.T, kind tracefs.ProbeKind) []string {
	t.Helper()
	l, err := tracefs.Events(kind)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// probeEvents lists the kprobe and uprobe events but other bpfkit
// processes' groups: go test runs packages at once, and the tests
// package's probes come and go meanwhile.
func probeEvents(t *testing.T) string {
	t.Helper()
	own, err := tracefs.Group()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range append(events(t, tracefs.Kprobe), events(t, tracefs.Uprobe)...) {
		if g, _, _ := strings.Cut(e, "/"); !strings.HasPrefix(g, "bpfkit_") || g == own {
			out = append(out, e)
		}
	}
	return strings.Join(out, " ")
}

func TestUprobeEvent(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "github.com/bpfkit/bpfkit/tracefs_test.uprobeTarget")
	for _, kind := range []tracefs.ProbeKind{tracefs.Uprobe, tracefs.Uretprobe} {
		e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: kind, Path: exe, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if g, err := tracefs.Group(); e.ID == 0 || e.Group != g || err != nil || !strings.HasPrefix(e.Group, "bpfkit_") {
			t.Fatalf("%+v", e)
		}
		if !contains(events(t, tracefs.Uprobe), e.Group+"/"+e.Name) {
			t.Fatalf("%s/%s not in uprobe_events", e.Group, e.Name)
		}
		if err := e.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := e.Remove(); err != nil {
			t.Fatal("second Remove:", err)
		}
		if contains(events(t, tracefs.Uprobe), e.Group+"/"+e.Name) {
			t.Fatal("event still there after Remove")
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestBadInputWritesNothing: every malformed probe is refused with
// ErrInvalid or a clear error, and neither events file changes.
func TestBadInputWritesNothing(t *testing.T) {
	testutil.RequireRoot(t)
	exe, off := fileOffset(t, "github.com/bpfkit/bpfkit/tracefs_test.uprobeTarget")
	before := probeEvents(t)
	bad := []tracefs.ProbeSpec{
		{Kind: tracefs.Kprobe, Symbol: "do_sys_open\n-:kprobes/everything"},
		{Kind: tracefs.Kprobe, Symbol: "do_sys_open p:evil/x do_exit"},
		{Kind: tracefs.Kprobe, Symbol: ""},
		{Kind: tracefs.Kprobe, Symbol: strings.Repeat("a", 600)},
		{Kind: tracefs.Kprobe, Symbol: "mod:"},
		{Kind: tracefs.Kprobe, Symbol: "sym%x"},
		{Kind: tracefs.Kretprobe, Symbol: "f", MaxActive: -1},
		{Kind: tracefs.Kprobe, Symbol: "f", RefCtrOffset: 8},
		{Kind: tracefs.Uprobe, Path: "relative/path", Offset: off},
		{Kind: tracefs.Uprobe, Path: exe + "\n-:x/y", Offset: off},
		{Kind: tracefs.Uprobe, Path: "/tmp/a b", Offset: off},
		{Kind: tracefs.Uprobe, Path: "/", Offset: off},
		{Kind: tracefs.Uprobe, Path: "/nonexistent/bin", Offset: off},
		{Kind: tracefs.Uprobe, Path: exe, Offset: off, MaxActive: 3},
	}
	for _, spec := range bad {
		e, err := tracefs.CreateProbe(spec)
		if err == nil {
			e.Remove()
			t.Errorf("accepted %+v", spec)
			continue
		}
		t.Logf("%q: %v", spec.Symbol+spec.Path, err)
	}
	after := probeEvents(t)
	if before != after {
		t.Fatalf("events changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestKprobeEventsAbsent: on a kernel without kprobes, creating one says so.
func TestKprobeEventsAbsent(t *testing.T) {
	testutil.RequireRoot(t)
	p, _ := tracefs.Path()
	if _, err := os.Stat(p + "/kprobe_events"); err == nil {
		t.Skip("this kernel has kprobe_events; the VM suite tests creating kprobes")
	}
	_, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: "do_sys_openat2"})
	if err == nil || !strings.Contains(err.Error(), "CONFIG_KPROBE_EVENTS") {
		t.Fatalf("kprobe on a kernel without kprobes: %v", err)
	}
}

// TestMountWhenAbsent runs a child in a mount namespace of its own, with
// every tracefs and debugfs mount removed: Path must mount tracefs at
// /sys/kernel/tracing, and tracepoints must be readable through it. The
// host's mounts are not touched.
func TestMountWhenAbsent(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("BPFKIT_MOUNT_CHILD") != "" {
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		var points []string
		for line := range strings.SplitSeq(string(mounts), "\n") {
			if strings.Contains(line, " - tracefs ") || strings.Contains(line, " - debugfs ") {
				points = append(points, strings.Fields(line)[4])
			}
		}
		for i := len(points) - 1; i >= 0; i-- { // innermost first
			if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil {
				t.Fatalf("unmount %s in the child's namespace: %v", points[i], err)
			}
		}
		p, err := tracefs.Path()
		if err != nil {
			t.Fatal(err)
		}
		if p != tracefs.DefaultMount {
			t.Fatalf("mounted at %s, want %s", p, tracefs.DefaultMount)
		}
		if _, err := tracefs.TracepointID("syscalls", "sys_enter_getppid"); err != nil {
			t.Fatal(err)
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a private mount namespace")
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestMountWhenAbsent$", "-test.v")
	cmd.Env = append(os.Environ(), "BPFKIT_MOUNT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMountWhenAbsent") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
