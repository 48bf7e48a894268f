package tests

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
)

// counted reads funccount's rows ("name count") into a map, summed over
// the intervals printed.
func counted(out string) map[string]int {
	got := map[string]int{}
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			if n, err := strconv.Atoi(f[1]); err == nil {
				got[f[0]] += n
			}
		}
	}
	return got
}

// countedJSON is counted for -json's lines.
func countedJSON(t *testing.T, out string) map[string]int {
	got := map[string]int{}
	for _, l := range jsonLines[struct {
		Counts []struct {
			Name  string
			Count int
		}
	}](t, out) {
		for _, c := range l.Counts {
			got[c.Name] += c.Count
		}
	}
	return got
}

// TestFunccountTracepoints: a process calls getppid 37 times and writes 7
// times while funccount -p counts the syscalls:sys_enter_get* tracepoints
// and sys_enter_write (twenty-odd, named twice: once each) with one
// program: the two counts must be exact, in text and in -json, and on
// kernels without perf links funccount must say it fell back to a program
// per event.
func TestFunccountTracepoints(t *testing.T) {
	testutil.RequireRoot(t)
	for _, asJSON := range []bool{false, true} {
		args, got, out, said := runFunccount(t, asJSON, "syscalls:sys_enter_get*", "syscalls:sys_enter_write", "syscalls:sys_enter_getppid")
		if got["syscalls:sys_enter_getppid"] != 37 || got["syscalls:sys_enter_write"] != 7 {
			t.Fatalf("funccount %q: getppid %d and write %d, want 37 and 7:\n%s", args, got["syscalls:sys_enter_getppid"], got["syscalls:sys_enter_write"], out)
		}
		checkFallback(t, said)
	}
}

// runFunccount counts patterns over the workload of 37 getppid calls and
// 7 writes, for its pid, in text or -json: the arguments, the counts, the
// output and, with stderr, all it said.
func runFunccount(t *testing.T, asJSON bool, patterns ...string) (args []string, got map[string]int, out, said string) {
	t.Helper()
	pid, run := workload(t, 37, 1, 100, 100, 100, 5000, 5000, 70000)
	args = append(append([]string{"-p", strconv.Itoa(pid)}, patterns...), "60")
	if asJSON {
		args = append([]string{"-json"}, args...)
	}
	r := startTool(t, "funccount", args...)
	r.waitFor("Ctrl-C to stop")
	run()
	out = r.stop()
	got = counted(out)
	if asJSON {
		got = countedJSON(t, out)
	}
	return args, got, out, out + r.err.String()
}

// checkFallback: the tool says whether it used cookies, and that is what
// the kernel has.
func checkFallback(t *testing.T, out string) {
	t.Helper()
	links, err := prog.HavePerfLink()
	if err != nil {
		t.Fatal(err)
	}
	if said := strings.Contains(out, "told apart by bpf_cookie"); said != links {
		t.Fatalf("perf links %v, but funccount said:\n%s", links, out)
	}
	if !links && !strings.Contains(out, "this kernel has no BPF perf links") {
		t.Fatalf("no word of the fallback:\n%s", out)
	}
}

// TestFunccountKprobes: the kernel functions behind the same workload,
// through kprobes (in the VMs): vfs_write 7 times and the getppid handler
// 37 times, in text and in -json.
func TestFunccountKprobes(t *testing.T) {
	requireKprobes(t)
	getppid, err := prog.SyscallSymbol("getppid")
	if err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		args, got, out, said := runFunccount(t, asJSON, "vfs_write", getppid)
		if got[getppid] != 37 || got["vfs_write"] != 7 {
			t.Fatalf("funccount %q: %s %d and vfs_write %d, want 37 and 7:\n%s", args, getppid, got[getppid], got["vfs_write"], out)
		}
		checkFallback(t, said)
		t.Log("\n" + out)
		if os.Getenv("BPFKIT_VM") == "5.10" && !strings.Contains(said, "one program per event") {
			t.Fatal("5.10 has no perf links, yet funccount did not fall back")
		}
	}
}
