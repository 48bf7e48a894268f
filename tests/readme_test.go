package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestReadmeQuickstart builds the README's quickstart program from the
// README's own text, in a module that uses this checkout, runs it, and
// checks that it counted this process's openat calls.
func TestReadmeQuickstart(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("BPFKIT_VM") != "" {
		t.Skip("the VMs have no Go toolchain; the host builds and runs the quickstart")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n```go\n")
	if start < 0 {
		t.Fatal("README.md has no ```go block")
	}
	src := text[start+len("\n```go\n"):]
	src = src[:strings.Index(src, "\n```")+1]
	root, _ := filepath.Abs("..")
	dir := t.TempDir()
	gosum, _ := os.ReadFile("../go.sum")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.sum"), gosum, 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module quickstart\n\ngo 1.26\n\nrequire github.com/bpfkit/bpfkit v0.0.0\n\nreplace github.com/bpfkit/bpfkit => "+root+"\n"), 0o644)
	build := exec.Command("go", "mod", "tidy")
	build.Dir, build.Env = dir, append(os.Environ(), "GOFLAGS=-mod=mod", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	build = exec.Command("go", "build", "-o", "quickstart", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's quickstart does not build: %v\n%s", err, out)
	}
	run := exec.Command(filepath.Join(dir, "quickstart"))
	out := &lockedBuffer{}
	run.Stdout, run.Stderr = out, out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(900 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ { // openat calls of this process while it counts
		if f, err := os.Open("/dev/null"); err == nil {
			f.Close()
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the quickstart failed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pid "+strconv.Itoa(os.Getpid())+": ") {
		t.Fatalf("the quickstart did not count this process (pid %d):\n%s", os.Getpid(), out.String())
	}
}
