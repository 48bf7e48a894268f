package tracefs_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// sweepChild is the child side of TestSweep, chosen by BPFKIT_SWEEP_CHILD:
// it creates a uprobe event and prints "created group/name"; in a PID
// namespace of its own ("pidns", or "pidns-proc" with that namespace's
// /proc mounted, as in a container) it then sweeps and prints what it
// kept; then it waits to be killed.
func sweepChild(t *testing.T, mode string) {
	if mode == "group" { // for TestGroupPIDNamespaces
		g, err := tracefs.Group()
		fmt.Println("created", g, err)
		return
	}
	exe, off := fileOffset(t, "")
	if mode == "pidns-proc" {
		// In a mount namespace of its own: no mount may reach the host's.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("proc", "/proc", "proc", 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		fmt.Printf("failed %v\n", err)
		return
	}
	line := "created " + e.Group + "/" + e.Name
	if mode != "plain" {
		removed, kept, err := tracefs.Sweep()
		line += fmt.Sprintf(" removed=%q err=%v", removed, err)
		for _, k := range kept {
			line += fmt.Sprintf(" kept=%q:%q", k.Event, k.Reason)
		}
	}
	fmt.Println(line)
	time.Sleep(time.Hour) // until killed
}

// startSweepChild runs the test binary as a sweepChild, in new namespaces
// for the clone flags, and returns it with the first line it printed.
func startSweepChild(t *testing.T, mode string, cloneflags uintptr) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweep$")
	cmd.Env = append(os.Environ(), "BPFKIT_SWEEP_CHILD="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: cloneflags}
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "created ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child %s: %q %v", mode, line, err)
	}
	return cmd, strings.TrimSpace(line)
}

func keptReason(kept []tracefs.Kept, ev string) string {
	for _, k := range kept {
		if k.Event == ev {
			return k.Reason
		}
	}
	return ""
}

// childKept parses the kept="event":"reason" pairs a pidns child printed.
func childKept(line string) map[string]string {
	m := map[string]string{}
	for _, k := range regexp.MustCompile(`kept="([^"]*)":"([^"]*)"`).FindAllStringSubmatch(line, -1) {
		m[k[1]] = k[2]
	}
	return m
}

// TestSweep: Sweep removes only the events whose owner it can prove dead.
// A child killed with SIGKILL is dead: its event goes. Live children in a
// PID namespace of their own, where they are pid 1 (so that the host's pid
// 1 would pass for a dead owner), keep their events; their own Sweeps keep
// this live process's event and their own, whether they see their own
// /proc (a container) or the host's. A group of the older form
// bpfkit_<pid>_<start> is kept too. Each kept event comes with its reason.
func TestSweep(t *testing.T) {
	testutil.RequireRoot(t)
	if mode := os.Getenv("BPFKIT_SWEEP_CHILD"); mode != "" {
		sweepChild(t, mode)
		return
	}
	exe, off := fileOffset(t, "")
	mine, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove()
	own := mine.Group + "/" + mine.Name

	// An event in the form of an older bpfkit, owned by "pid 1".
	legacy := &tracefs.ProbeEvent{Kind: tracefs.Uprobe, Group: "bpfkit_1_2", Name: "legacy"}
	if err := writeUprobeEvents(fmt.Sprintf("p:%s/%s %s:%#x", legacy.Group, legacy.Name, exe, off)); err != nil {
		t.Fatal(err)
	}
	defer legacy.Remove()

	dead, line := startSweepChild(t, "plain", 0)
	orphan := strings.TrimPrefix(line, "created ")
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()

	keep := map[string]string{own: "is alive", "bpfkit_1_2/legacy": "older bpfkit"}
	for _, mode := range []string{"pidns-proc", "pidns"} { // the namespace's own /proc, or the host's
		child, line := startSweepChild(t, mode, syscall.CLONE_NEWPID|syscall.CLONE_NEWNS)
		defer func() {
			child.Process.Signal(syscall.SIGKILL)
			child.Wait()
		}()
		ev := strings.Fields(line)[1]
		grp, name, _ := strings.Cut(ev, "/")
		defer (&tracefs.ProbeEvent{Kind: tracefs.Uprobe, Group: grp, Name: name}).Remove()
		if grp == mine.Group || !strings.Contains(grp, "_1_") {
			t.Fatalf("the contained child's group %s is not pid 1 of another namespace (ours: %s)", grp, mine.Group)
		}
		keep[ev] = "another PID namespace"
		ownWhy := "pid 1, is alive"
		if mode == "pidns" {
			ownWhy = "/proc is not this PID namespace's"
		}
		kept := childKept(line)
		if !strings.Contains(line, "removed=[] err=<nil>") || !strings.Contains(kept[ev], ownWhy) ||
			!strings.Contains(kept[own], "another PID namespace") {
			t.Errorf("the Sweep in a PID namespace (%s) must keep its own event (%q) and the host's: %s", mode, ownWhy, line)
		}
	}

	removed, kept, err := tracefs.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %v; kept %q", removed, kept)
	if !contains(removed, orphan) || contains(events(t, tracefs.Uprobe), orphan) {
		t.Errorf("the killed child's event %s was not removed: removed %v", orphan, removed)
	}
	for ev, why := range keep {
		if contains(removed, ev) || !contains(events(t, tracefs.Uprobe), ev) {
			t.Errorf("Sweep removed %s, whose owner may live", ev)
		}
		if r := keptReason(kept, ev); !strings.Contains(r, why) {
			t.Errorf("Sweep kept %s with reason %q, want one saying %q", ev, r, why)
		}
	}
}

// writeUprobeEvents writes a command straight to uprobe_events, as another
// tool would.
func writeUprobeEvents(cmd string) error {
	p, err := tracefs.Path()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p+"/uprobe_events", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(cmd + "\n")
	return err
}

// TestGroupPIDNamespaces: two processes, each pid 1 of a PID namespace of
// its own, started together, often in the same clock tick (when their
// pids and start times are the same), have groups that differ in the
// namespace: neither's Sweep takes the other's events for its own.
func TestGroupPIDNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	sameTick := 0
	for try := 0; try < 10; try++ {
		var groups [2][]string
		var cmds [2]*exec.Cmd
		var outs [2]*bufio.Reader
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^TestSweep$")
			cmds[i].Env = append(os.Environ(), "BPFKIT_SWEEP_CHILD=group")
			cmds[i].SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
			out, _ := cmds[i].StdoutPipe()
			outs[i] = bufio.NewReader(out)
		}
		for _, c := range cmds { // one right after the other
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cmds {
			line, _ := outs[i].ReadString('\n')
			c.Wait()
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "created" || f[2] != "<nil>" {
				t.Fatalf("child: %q", line)
			}
			groups[i] = strings.Split(f[1], "_")
		}
		a, b := groups[0], groups[1]
		if len(a) != 4 || len(b) != 4 || a[2] != "1" || b[2] != "1" {
			t.Fatalf("the children's groups %q and %q are not of pid 1", a, b)
		}
		if a[1] == b[1] || strings.Join(a, "_") == strings.Join(b, "_") {
			t.Fatalf("two pid 1s of two PID namespaces have the groups %s and %s", strings.Join(a, "_"), strings.Join(b, "_"))
		}
		if a[3] == b[3] {
			sameTick++
		}
	}
	t.Logf("%d of 10 pairs started in the same clock tick", sameTick)
}
