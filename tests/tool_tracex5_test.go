package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestTracex5: the handlers reached by tail calls see exactly the calls a
// workload makes after it is attached: its two openat with their paths,
// its read of 123 bytes, and its seven writes with their sizes.
func TestTracex5(t *testing.T) {
	testutil.RequireRoot(t)
	sizes := []int{1, 100, 100, 100, 5000, 5000, 70000}
	pid, run := workload(t, 0, sizes...)
	r := startTool(t, "tracex5", "-p", strconv.Itoa(pid), "60")
	r.waitFor("Ctrl-C to stop")
	run()
	waitOutput(r, func(out string) bool { return strings.Count(out, "write(") >= len(sizes) })
	out := r.stop()
	for _, want := range []string{`openat(dfd=-100, "/dev/null", `, `openat(dfd=-100, "/dev/zero", `, `, count=123)`} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q %d times, want once", want, n)
		}
	}
	var writes []string
	for line := range strings.SplitSeq(out, "\n") {
		if i := strings.Index(line, "write("); i >= 0 {
			writes = append(writes, line[strings.LastIndex(line, "count=")+6:len(line)-1])
		}
	}
	if strings.Join(writes, ",") != "1,100,100,100,5000,5000,70000" {
		t.Errorf("write sizes %q, want %v", writes, sizes)
	}
	if t.Failed() {
		t.Log("\n" + out)
	}
}

// TestTracex5Swap: while -swap replaces the write program every 300 ms, a
// workload writes 20 times over 2 s: each write is reported once, by one
// program or the other, and both programs report some. The prog array's
// slot is never empty.
func TestTracex5Swap(t *testing.T) {
	testutil.RequireRoot(t)
	sizes := make([]int, 20)
	for i := range sizes {
		sizes[i] = 5
	}
	pid, run := spacedWorkload(t, 0, 100*time.Millisecond, sizes...)
	r := startTool(t, "tracex5", "-p", strconv.Itoa(pid), "-swap", "0.3")
	r.waitFor("Ctrl-C to stop")
	run()
	waitOutput(r, func(out string) bool { return strings.Count(out, "write(") >= 20 })
	out := r.stop()
	plain, bytes := strings.Count(out, ", count=5)")-strings.Count(out, `"xxxxx", count=5)`), strings.Count(out, `"xxxxx", count=5)`)
	if plain+bytes != 20 || plain == 0 || bytes == 0 || !strings.Contains(out, "write program is now tracex5_write2") {
		t.Fatalf("%d writes by the first program and %d by the second, want 20 in all and some by each:\n%s", plain, bytes, out)
	}
}
