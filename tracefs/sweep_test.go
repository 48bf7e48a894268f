package tracefs_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// sweepChild is the child side of TestSweep, chosen by BPFKIT_SWEEP_CHILD:
// it creates a uprobe event and prints "created group/name"; in a PID
// namespace of its own ("pidns") it then sweeps, and prints what became of
// its own event and of the parent's (BPFKIT_SWEEP_PARENT); then it waits
// to be killed.
func sweepChild(t *testing.T, mode string) {
	exe, off := fileOffset(t, "")
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		fmt.Printf("failed %v\n", err)
		return
	}
	line := "created " + e.Group + "/" + e.Name
	if mode == "pidns" {
		removed, kept, err := tracefs.Sweep()
		line += fmt.Sprintf(" removed=%q err=%v", removed, err)
		for _, k := range kept {
			if k.Event == e.Group+"/"+e.Name || k.Event == os.Getenv("BPFKIT_SWEEP_PARENT") {
				line += fmt.Sprintf(" kept=%q:%q", k.Event, k.Reason)
			}
		}
	}
	fmt.Println(line)
	time.Sleep(time.Hour) // until killed
}

// startSweepChild runs the test binary as a sweepChild, under the given
// command prefix, and returns it with the first line it printed.
func startSweepChild(t *testing.T, mode, parent string, prefix ...string) (*exec.Cmd, string) {
	t.Helper()
	args := append(prefix, os.Args[0], "-test.run=^TestSweep$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "BPFKIT_SWEEP_CHILD="+mode, "BPFKIT_SWEEP_PARENT="+parent)
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

// TestSweep: Sweep removes only the events whose owner it can prove dead.
// A child killed with SIGKILL is dead: its event goes. A live child in a
// PID namespace of its own (pid 1 there, so that the host's pid 1 would
// pass for a dead owner) keeps its event, and its own Sweep, which sees the
// host's /proc, keeps both its event and this live process's. A group of
// the older form bpfkit_<pid>_<start> is kept too, with the reason.
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

	dead, line := startSweepChild(t, "plain", own)
	orphan := strings.TrimPrefix(line, "created ")
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()

	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("no unshare(1) to make a PID namespace")
	}
	contained, line := startSweepChild(t, "pidns", own, unshare, "--pid", "--kill-child")
	defer func() {
		contained.Process.Signal(syscall.SIGKILL)
		contained.Wait()
	}()
	fields := strings.Fields(line)
	inNS := fields[1]
	if !strings.Contains(line, "removed=[] err=<nil>") ||
		!strings.Contains(line, fmt.Sprintf("kept=%q:", inNS)) || !strings.Contains(line, fmt.Sprintf("kept=%q:", own)) {
		t.Fatalf("the Sweep in a PID namespace of its own, seeing the host's /proc, must keep its own event and the host's: %s", line)
	}
	nsGroup, _, _ := strings.Cut(inNS, "/")
	if nsGroup == mine.Group || !strings.Contains(nsGroup, "_1_") {
		t.Fatalf("the contained child's group %s is not pid 1 of another namespace (ours: %s)", nsGroup, mine.Group)
	}
	defer (&tracefs.ProbeEvent{Kind: tracefs.Uprobe, Group: nsGroup, Name: strings.TrimPrefix(inNS, nsGroup+"/")}).Remove()

	removed, kept, err := tracefs.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %v; kept %q", removed, kept)
	if !contains(removed, orphan) || contains(events(t, tracefs.Uprobe), orphan) {
		t.Errorf("the killed child's event %s was not removed: removed %v", orphan, removed)
	}
	for ev, why := range map[string]string{own: "is alive", inNS: "another PID namespace", "bpfkit_1_2/legacy": "older bpfkit"} {
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
