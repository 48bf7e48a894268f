package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxDropmonOver is what bpfkit may add to a tracepoint tool: dropmon,
// stripped, at most this many bytes over tests/bench/sizebase, a program
// using the standard library as dropmon does and no BPF (issue #13). It
// buys the library dropmon loads, attaches and reads its programs with
// (sys, with the journal and an errno's name in every error, insn, mapfd,
// prog, tracefs and perfring), dropmon itself, and the tools' shared
// parser with -version and their Prometheus exposition and /metrics
// server (issue #24), which net/http would have made megabytes, and the
// perf reader's event times and loss counts (issue #21). It is dropmon's
// size when last trimmed, rounded up to 10,000 bytes: what grows it past
// that is looked at before the budget is raised.
const maxDropmonOver = 450_000

// TestDropmonSize builds dropmon and the baseline as `make bench` does and
// fails when dropmon outgrows the baseline by more than maxDropmonOver, and
// when it links packages a tracepoint tool does not need. What links a
// symbol is easy to change by accident: a package variable made by a call
// (sync.OnceValue) is made at start-up and links what it holds; a value put
// in an interface links its type's String method.
func TestDropmonSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dropmon and the baseline from scratch: not under -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build with")
	}
	dir := t.TempDir()
	size := func(pkg string) int64 {
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
		st, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	d, b := size("../cmd/dropmon"), size("./bench/sizebase")
	t.Logf("dropmon %d bytes, baseline %d bytes: %d over", d, b, d-b)
	if d-b > maxDropmonOver {
		t.Errorf("dropmon is %d bytes over the baseline, more than %d", d-b, maxDropmonOver)
	}
	deps, err := exec.Command("go", "list", "-deps", "../cmd/dropmon").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, heavy := range []string{"regexp", "debug/elf", "debug/dwarf", "internal/zstd", "net/http"} {
		for dep := range strings.FieldsSeq(string(deps)) {
			if dep == heavy {
				t.Errorf("dropmon links %s", heavy)
			}
		}
	}
}
