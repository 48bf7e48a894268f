package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex2WriteSizes: a process makes writes of known sizes while
// tracex2 -p watches it; each log2 slot must hold exactly the writes of
// its sizes (bcc's slots: 1 is in 0 -> 1, 100 in 64 -> 127, ...).
func TestTracex2WriteSizes(t *testing.T) {
	testutil.RequireRoot(t)
	sizes := []int{1, 100, 100, 100, 5000, 5000, 70000}
	var list []string
	for _, s := range sizes {
		list = append(list, strconv.Itoa(s))
	}
	w := exec.Command(os.Args[0])
	w.Env = append(os.Environ(), "BPFKIT_TEST_WRITER="+strings.Join(list, ","))
	stdin, err := w.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	r := startTool(t, "tracex2", "-p", strconv.Itoa(w.Process.Pid), "60")
	r.waitFor("Ctrl-C to stop")
	fmt.Fprintln(stdin)
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	out := r.stop()
	want := map[string]int{"0 -> 1": 1, "64 -> 127": 3, "4096 -> 8191": 2, "65536 -> 131071": 1}
	got := map[string]int{}
	for _, line := range strings.Split(out[strings.LastIndex(out, "write bytes"):], "\n")[1:] {
		if lo, rest, ok := strings.Cut(line, ":"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, _ := strconv.Atoi(f[0]); n > 0 {
					got[strings.Join(strings.Fields(lo), " ")] = n
				}
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slots %v, want %v:\n%s", got, want, out)
	}
}

// TestTracex2Drops: 100 datagrams to a closed UDP port are 100 packets
// freed at one site of the UDP receive path.
func TestTracex2Drops(t *testing.T) {
	testutil.RequireRoot(t)
	r := startTool(t, "tracex2", "60")
	r.waitFor("Ctrl-C to stop")
	dropUDP(t, 100)
	out := r.stop()
	if site, n := udpDropSite(out, 0); n != 100 {
		t.Fatalf("%d packets freed at the UDP receive site %q, want 100:\n%s", n, site, out)
	}
}
