package sys_test

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
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
func rootExamples(t *testing.T) []testutil.RootExample {
	return []testutil.RootExample{{F: ExampleSetJournal}, {F: ExampleNeedCaps}, {F: ExampleError}}
}

func ExampleParseCPUList() {
	cpus, err := sys.ParseCPUList("0-3,8,10-11")
	fmt.Println(cpus, err)
	// Output:
	// [0 1 2 3 8 10 11] <nil>
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
