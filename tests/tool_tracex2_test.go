package tests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex2WriteSizes: a process makes writes of known sizes while
// tracex2 -p watches it; each log2 slot must hold exactly the writes of
// its sizes (bcc's slots: 1 is in 0 -> 1, 100 in 64 -> 127, ...), in the
// text's histogram and in -json's.
func TestTracex2WriteSizes(t *testing.T) {
	testutil.RequireRoot(t)
	for _, asJSON := range []bool{false, true} {
		pid, write := writerProcess(t, 1, 100, 100, 100, 5000, 5000, 70000)
		args := []string{"-p", strconv.Itoa(pid), "60"}
		if asJSON {
			args = append([]string{"-json"}, args...)
		}
		r := startTool(t, "tracex2", args...)
		r.waitFor("Ctrl-C to stop")
		write()
		out := r.stop()
		var got string
		if asJSON {
			var hists [][]histSlot
			for _, l := range jsonLines[struct {
				WriteBytes []histSlot `json:"write_bytes"`
			}](t, out) {
				hists = append(hists, l.WriteBytes)
			}
			got = jsonSlots(hists...)
		} else {
			got = histSlots(out[strings.LastIndex(out, "write bytes"):])
		}
		if got != writerSlots {
			t.Fatalf("tracex2 %q: slots %v, want %v:\n%s", args, got, writerSlots, out)
		}
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
		skipIfDropsInKfreeSkb(t, out, 0, 100)
		t.Fatalf("%d packets freed at the UDP receive site %q, want 100:\n%s", n, site, out)
	}
}
