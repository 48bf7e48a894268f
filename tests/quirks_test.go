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

// tracepointStackQuirk is why TestDropmonStacks skips on Debian's armhf 6.1
// and later: for a tracepoint, arm's perf_arch_fetch_caller_regs gives the
// unwinder the handler's caller as pc (in __traceiter_kfree_skb) but the
// handler's own sp, and the unwind-table unwinder (UNWINDER_ARM) reads that
// frame's return address from the wrong slot: every stack ends there, or a
// frame or two of whatever the slots held later (a bare address, one far
// past the last symbol, "_einittext+0x178f1973", or a stale return address,
// once __udp4_lib_rcv's). Their 5.10, built with frame pointers
// (UNWINDER_FRAME_POINTER), unwinds through the UDP receive path. A raw
// tracepoint program's stack (dropmon's since it counts through one) is
// fetched in bpf_get_stackid_raw_tp, whose caller is the program: its
// first frame is the interpreter, ___bpf_prog_run (the JIT is off there),
// or the JITed code, bpf_prog_<tag>_<name>, and it ends the same way.
const tracepointStackQuirk = "this kernel's stacks of tracepoint programs stop at the tracepoint " +
	"or the program (arm's unwind tables, given a callee's sp with its caller's pc)"

// skipIfStackStopsAtTracepoint skips the test if out, dropmon's -stacks
// table, has exactly n drops under stacks that start at the tracepoint's
// frame (__traceiter_kfree_skb) or the program's (a raw tracepoint's:
// ___bpf_prog_run or bpf_prog_*) and end within two more, where a real one
// through udp goes a dozen frames deep: the drops were all counted, under
// what the kernel unwound.
func skipIfStackStopsAtTracepoint(t *testing.T, out string, n int) {
	t.Helper()
	var frames []string
	count, stopped := 0, 0
	for line := range strings.SplitSeq(out+"\n0 end", "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(line, "          ") { // a stack's count and reason
			short := len(frames) > 0 && len(frames) <= 3
			if short && (strings.HasPrefix(frames[0], "__traceiter_kfree_skb+") ||
				strings.HasPrefix(frames[0], "___bpf_prog_run+") ||
				strings.HasPrefix(frames[0], "bpf_prog_")) {
				stopped += count
			}
			count, _ = strconv.Atoi(f[0])
			frames = nil
		} else if len(f) == 1 {
			frames = append(frames, f[0])
		}
	}
	if stopped == n {
		t.Skipf("%s: the %d drops are under stacks that end there", tracepointStackQuirk, n)
	}
}
