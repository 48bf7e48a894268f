package sys_test

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The kernel reads a C string up to its first NUL: a Go string holding one
// is refused rather than cut short.
func ExampleStringPointer() {
	_, err := sys.StringPointer("/sys/fs/bpf/a\x00b")
	fmt.Println(errors.Is(err, unix.EINVAL))
	fmt.Println(err)
	// Output:
	// true
	// sys: string "/sys/fs/bpf/a\x00b" holds a NUL byte at 13, where the kernel would end it: invalid argument
}

// Object names are checked against what the kernel accepts, and kept to
// their first 15 bytes.
func ExampleNewObjName() {
	n, err := sys.NewObjName("tcp_retransmits_by_port")
	fmt.Println(unix.ByteSliceToString(n[:]), err)
	_, err = sys.NewObjName("drops/s")
	fmt.Println(err)
	// Output:
	// tcp_retransmits <nil>
	// sys: name "drops/s": byte "/" at 5 is not allowed (only A-Z, a-z, 0-9, '_' and '.'): invalid argument
}

// SetJournal records every call bpfkit makes to the kernel, one line each
// in strace's shape. Here a map is made and a missing key looked up; the
// map's lines are printed with their fds and durations, which vary from
// run to run, masked.
func ExampleSetJournal() {
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Name: "counts"})
	if err == nil {
		err = m.Lookup(make([]byte, 4), make([]byte, 8))
		m.Close()
	}
	sys.SetJournal(nil)
	fmt.Println("lookup:", err)

	fd := regexp.MustCompile(`(map_fd=|= )\d+`)
	took := regexp.MustCompile(` <[^>]*>$`)
	for _, line := range strings.Split(journal.String(), "\n") {
		if strings.HasPrefix(line, "bpf(BPF_MAP_") { // the map's calls, of all the process made
			fmt.Println(took.ReplaceAllString(fd.ReplaceAllString(line, "${1}N"), ""))
		}
	}

	// As root, it prints:
	// lookup: mapfd: key does not exist
	// bpf(BPF_MAP_CREATE, map_type=hash key_size=4 value_size=8 max_entries=16 map_flags=0x0 name="counts") = N
	// bpf(BPF_MAP_LOOKUP_ELEM, map_fd=N flags=0x0) = -1 ENOENT (no such file or directory)
}

// NeedCaps says up front, before anything is asked of the kernel, whether
// the process may do what it is about to: its error wraps EPERM and names
// the capabilities that are missing.
func ExampleNeedCaps() {
	if err := sys.NeedCaps(sys.CAP_BPF, sys.CAP_PERFMON); errors.Is(err, unix.EPERM) {
		fmt.Println("cannot trace:", err)
		return
	}
	fmt.Println("may load tracing programs")

	// As root, it prints:
	// may load tracing programs
}

// Every failed call is a *sys.Error that names the command and keeps the
// errno for errors.Is; an EPERM carries a hint naming what is missing.
func ExampleError() {
	key, value := uint32(0), uint64(0)
	err := sys.MapLookupElem(&sys.MapElemAttr{
		MapFD: 1<<31 - 1, // no such fd
		Key:   sys.NewPointer(unsafe.Pointer(&key)),
		Value: sys.NewPointer(unsafe.Pointer(&value)),
	})
	var se *sys.Error
	switch {
	case errors.Is(err, unix.EPERM):
		fmt.Println("not allowed:", err)
	case errors.As(err, &se):
		fmt.Println(se.Op, unix.ErrnoName(se.Errno))
		fmt.Println(err)
	}

	// As root, it prints:
	// BPF_MAP_LOOKUP_ELEM EBADF
	// BPF_MAP_LOOKUP_ELEM: bad file descriptor
}

// rootExamples are the examples that need root: TestExamples runs them.
func rootExamples(t *testing.T) []rootExample {
	return []rootExample{{f: ExampleSetJournal}, {f: ExampleNeedCaps}, {f: ExampleError}}
}

func ExampleParseCPUList() {
	cpus, err := sys.ParseCPUList("0-3,8,10-11")
	fmt.Println(cpus, err)
	// Output:
	// [0 1 2 3 8 10 11] <nil>
}

// The rest of this file is the same in every package's example_test.go.

// rootExample is an example that needs root or prints what depends on the
// machine. It has no Output comment, so go test compiles it but does not
// run it; its comment "As root, it prints:" (or "On x86-64, ...", any line
// ending in "it prints:"), and the lines after, show what it prints, and
// TestExamples checks that as root. want, if set, replaces that text where
// this kernel answers otherwise; skip, if set, says why the example cannot
// run here.
type rootExample struct {
	f          func()
	want, skip string
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples (which may make what they
// need, with t), as root, and checks that each prints what its "it prints:"
// comment says; and that every example of this file has an Output comment
// or is one of them.
func TestExamples(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "example_test.go", exampleSource, parser.ParseComments)
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
			t.Errorf("%s has neither an Output comment nor an \"it prints:\" comment: nothing checks it", name)
		}
	}
	for _, ex := range rootExamples(t) {
		name := runtime.FuncForPC(reflect.ValueOf(ex.f).Pointer()).Name()
		name = name[strings.LastIndex(name, ".")+1:]
		want, ok := prints[name]
		if !ok {
			t.Errorf("%s is in rootExamples without an \"it prints:\" comment", name)
			continue
		}
		delete(prints, name)
		if ex.want != "" {
			want = ex.want
		}
		t.Run(name, func(t *testing.T) {
			testutil.RequireRoot(t)
			if ex.skip != "" {
				t.Skip(ex.skip)
			}
			testutil.CheckNoLeaks(t)
			if got := stdoutOf(t, ex.f); strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	for name := range prints {
		t.Errorf("%s is not in rootExamples: nothing runs it", name)
	}
}

// stdoutOf runs f and returns what it printed to os.Stdout.
func stdoutOf(t *testing.T, f func()) string {
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
