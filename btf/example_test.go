package btf_test

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/bpfkit/bpfkit/btf"
	"github.com/bpfkit/bpfkit/internal/testutil"
)

// Lookup names what a tracing program's load needs: vfs_read's FUNC id in
// vmlinux (no module object), for an fentry or fexit program; a
// tracepoint's btf_trace_ TYPEDEF, for tp_btf. A function in no BTF, after
// vmlinux's and every module's, is ErrNotFound.
func ExampleLookup() {
	id, module, err := btf.Lookup(btf.KindFunc, "vfs_read", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("vfs_read:", id > 0, module == nil)
	id, _, err = btf.Lookup(btf.KindTypedef, "btf_trace_sched_switch", "")
	fmt.Println("btf_trace_sched_switch:", id > 0, err)
	_, _, err = btf.Lookup(btf.KindFunc, "no_such_function", "")
	fmt.Println(errors.Is(err, btf.ErrNotFound), err)
	// As root, it prints:
	// vfs_read: true true
	// btf_trace_sched_switch: true <nil>
	// true btf: FUNC "no_such_function": not in vmlinux nor in a loaded module: btf: not found
}

// Vmlinux opens the kernel's BTF once for several lookups; a name two
// functions share is refused, as the kernel would attach to either.
func ExampleVmlinux() {
	vmlinux, err := btf.Vmlinux()
	if err != nil {
		fmt.Println(err) // btf.ErrNoKernelBTF on a kernel without BTF
		return
	}
	defer vmlinux.Close()
	for _, name := range []string{"vfs_read", "vfs_write"} {
		id, err := vmlinux.Find(btf.KindFunc, name)
		fmt.Println(name, id > 0, err)
	}
	// As root, it prints:
	// vfs_read true <nil>
	// vfs_write true <nil>
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples, as root, against their "it prints:"
// comments (testutil.RunExamples).
func TestExamples(t *testing.T) {
	skip := ""
	if _, err := os.Stat(btf.VmlinuxPath); err != nil {
		skip = "no kernel BTF"
	}
	testutil.RunExamples(t, exampleSource, []testutil.RootExample{{F: ExampleLookup, Skip: skip},
		{F: ExampleVmlinux, Skip: skip}})
}
