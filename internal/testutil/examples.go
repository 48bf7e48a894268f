package testutil

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// RootExample is an example that needs root or prints what depends on the
// machine. It has no Output comment, so go test compiles it but does not
// run it. Instead a comment line ending in "it prints:" ("As root, it
// prints:", "On x86-64, ...") and the lines after it show what it prints,
// and RunExamples checks that as root. Want, if set, replaces that text
// where this kernel answers otherwise; Skip, if set, says why the example
// cannot run here.
type RootExample struct {
	F          func()
	Want, Skip string
}

// RunExamples is each package's TestExamples. It runs examples, as root,
// and checks that each prints what its "it prints:" comment in source says.
// It also checks that every example of source has an Output comment or is
// one of them. source is the package's example_test.go, embedded, for the
// test binaries that run without their sources in the VMs.
func RunExamples(t *testing.T, source []byte, examples []RootExample) {
	file, err := parser.ParseFile(token.NewFileSet(), "example_test.go", source, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	prints := map[string]string{} // example -> the output its comment shows
	for _, ex := range doc.Examples(file) {
		if ex.Output != "" || ex.EmptyOutput {
			continue
		}
		name := "Example" + ex.Name
		for _, c := range ex.Comments {
			first, rest, _ := strings.Cut(c.Text(), "\n")
			if c.Pos() > ex.Code.Pos() && c.End() < ex.Code.End() && strings.HasSuffix(first, "it prints:") {
				prints[name] = rest
			}
		}
		if _, ok := prints[name]; !ok {
			t.Errorf("%s has neither an Output comment nor an \"it prints:\" comment: "+
				"nothing checks it", name)
		}
	}
	for _, ex := range examples {
		name := runtime.FuncForPC(reflect.ValueOf(ex.F).Pointer()).Name()
		name = name[strings.LastIndex(name, ".")+1:]
		want, ok := prints[name]
		if !ok {
			t.Errorf("%s is in rootExamples without an \"it prints:\" comment", name)
			continue
		}
		delete(prints, name)
		if ex.Want != "" {
			want = ex.Want
		}
		t.Run(name, func(t *testing.T) {
			RequireRoot(t)
			if ex.Skip != "" {
				t.Skip(ex.Skip)
			}
			CheckNoLeaks(t)
			if got := StdoutOf(t, ex.F); strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	for name := range prints {
		t.Errorf("%s is not in rootExamples: nothing runs it", name)
	}
}

// StdoutOf runs f and returns what it printed to os.Stdout.
func StdoutOf(t *testing.T, f func()) string {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	stdout := os.Stdout
	os.Stdout = w
	func() {
		defer func() { os.Stdout = stdout; w.Close() }()
		f()
	}()
	s := <-out
	r.Close()
	return s
}
