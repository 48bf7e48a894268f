package tests

import (
	"strconv"
	"strings"
	"testing"
)

// kfreeSkbLocationQuirk is why a test looking for the UDP receive site of
// its drops skips on Debian's arm64 5.10 kernel: gcc split kfree_skb there,
// and the tracepoint, with its location = __builtin_return_address(0), went
// into kfree_skb.part.0, whose caller is kfree_skb (+0x2c) itself. tracefs
// prints the same location; the real caller (x30 at kfree_skb's entry, and
// the next frame of the stack) is __udp4_lib_rcv. Its arm64 6.1 and later,
// and every x86 kernel, record the caller.
const kfreeSkbLocationQuirk = "this kernel records skb:kfree_skb's location inside kfree_skb itself, not at its caller (Debian's arm64 5.10)"

// skipIfDropsInKfreeSkb skips the test if out, a tool's table of drop
// counts (count in column countCol, site last), has exactly n drops at a
// site inside kfree_skb: the drops were all counted, where the kernel says.
func skipIfDropsInKfreeSkb(t *testing.T, out string, countCol, n int) {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) > countCol && strings.HasPrefix(f[len(f)-1], "kfree_skb+") && f[countCol] == strconv.Itoa(n) {
			t.Skipf("%s: the %d drops are at %s", kfreeSkbLocationQuirk, n, f[len(f)-1])
		}
	}
}
