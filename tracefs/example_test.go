package tracefs_test

import (
	_ "embed"
	"errors"
	"fmt"
	"log"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
)

// ParseFormat reads the text of a tracepoint's format file: each field's
// offset and size in the record a program gets, and the names that
// __print_symbolic gives to a field's values.
func ExampleParseFormat() {
	f, err := tracefs.ParseFormat(`name: kfree_skb
ID: 1520
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:void * skbaddr;	offset:8;	size:8;	signed:0;
	field:void * location;	offset:16;	size:8;	signed:0;
	field:unsigned short protocol;	offset:24;	size:2;	signed:0;
	field:enum skb_drop_reason reason;	offset:28;	size:4;	signed:0;

print fmt: "skbaddr=%p protocol=%u location=%pS reason: %s", REC->skbaddr, REC->protocol, REC->location, __print_symbolic(REC->reason, { 2, "NOT_SPECIFIED" }, { 3, "NO_SOCKET" }, { 4, "PKT_TOO_SMALL" })
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name, f.ID)
	for _, fl := range f.Fields[4:] { // after the common fields
		fmt.Printf("%-8s %-24s offset %2d size %d\n", fl.Name, fl.Type, fl.Offset, fl.Size)
	}
	fmt.Println(f.Symbols["reason"][3])
	// Output:
	// kfree_skb 1520
	// skbaddr  void *                   offset  8 size 8
	// location void *                   offset 16 size 8
	// protocol unsigned short           offset 24 size 2
	// reason   enum skb_drop_reason     offset 28 size 4
	// NO_SOCKET
}

// TracepointFormat reads a tracepoint's format from tracefs: what a
// program attached to it finds where.
func ExampleTracepointFormat() {
	f, err := tracefs.TracepointFormat("syscalls", "sys_enter_openat")
	if err != nil {
		fmt.Println(err)
		return
	}
	filename, err := f.Field("filename")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.ID != 0, filename.Type, filename.Offset, filename.Size)

	// As root, it prints:
	// true const char * 24 8
}

// Field finds a field by name; its error names the fields the tracepoint
// has.
func ExampleFormat_Field() {
	f, err := tracefs.TracepointFormat("syscalls", "sys_enter_getppid")
	if err != nil {
		fmt.Println(err)
		return
	}
	nr, err := f.Field("__syscall_nr")
	fmt.Println(nr.Type, nr.Offset, nr.Size, nr.Signed, err)
	_, err = f.Field("pid")
	fmt.Println(err)

	// As root, it prints:
	// int 8 4 true <nil>
	// tracefs: tracepoint syscalls:sys_enter_getppid has no field "pid" (it has common_type, common_flags, common_preempt_count, common_pid, __syscall_nr)
}

// uprobed is the function the examples probe.
//
//go:noinline
func uprobed(x int) int { return x*2 + 1 }

// CreateProbe makes a uprobe event, here on a function of this program,
// at its offset in the file (found by funcOffset in /proc/self/maps);
// prog.AttachUprobe does this and attaches a program to the event's ID.
func ExampleCreateProbe() {
	exe, off, err := funcOffset(uprobed)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		fmt.Println(err)
		return
	}
	events, _ := tracefs.Events(tracefs.Uprobe)
	fmt.Println(e.Kind, e.ID != 0, slices.Contains(events, e.Group+"/"+e.Name))
	if err := e.Remove(); err != nil {
		fmt.Println(err)
	}
	events, _ = tracefs.Events(tracefs.Uprobe)
	fmt.Println(slices.Contains(events, e.Group+"/"+e.Name))

	// As root, it prints:
	// uprobe true true
	// false
}

// funcOffset returns the file that holds the code of the Go function fn
// and the offset of fn in it.
func funcOffset(fn any) (string, uint64, error) {
	addr := uint64(reflect.ValueOf(fn).Pointer())
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "", 0, err
	}
	for line := range strings.SplitSeq(string(maps), "\n") {
		f := strings.Fields(line) // start-end perms offset dev inode path
		if len(f) < 6 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		if addr >= start && addr < end {
			return f[5], addr - start + off, nil
		}
	}
	return "", 0, fmt.Errorf("address %#x is in no file mapping", addr)
}

// Sweep removes the events of bpfkit processes that died without removing
// them, and says why it kept the others: here one of this live process.
func ExampleSweep() {
	exe, off, err := funcOffset(uprobed)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := tracefs.CreateProbe(tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: exe, Offset: off})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Remove()
	removed, kept, err := tracefs.Sweep()
	if err != nil {
		fmt.Println(err)
	}
	for _, ev := range removed {
		log.Printf("removed %s, left by a process that is gone", ev)
	}
	pid := strconv.Itoa(os.Getpid())
	for _, k := range kept {
		if k.Event == e.Group+"/"+e.Name {
			fmt.Println("kept this process's event:", strings.ReplaceAll(k.Reason, pid, "<pid>"))
		}
	}

	// As root, it prints:
	// kept this process's event: the owner, pid <pid>, is alive
}

// Group names this process's events so that Sweep can tell whether their
// owner is alive: the PID namespace, the pid, and the start time.
func ExampleGroup() {
	g, err := tracefs.Group()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(regexp.MustCompile(`[0-9]+`).ReplaceAllString(g, "N"))
	// Output:
	// bpfkit_N_N_N
}

// Check refuses what cannot be handed to the kernel safely before a byte
// is written: here a newline, which would make a second command.
func ExampleProbeSpec_Check() {
	err := tracefs.ProbeSpec{Kind: tracefs.Kprobe, Symbol: "do_sys_open\n-:kprobes/other"}.Check()
	fmt.Println(errors.Is(err, tracefs.ErrInvalid))
	fmt.Println(err)
	err = tracefs.ProbeSpec{Kind: tracefs.Uprobe, Path: "bin/sh"}.Check()
	fmt.Println(err)
	// Output:
	// true
	// tracefs: invalid probe: symbol "do_sys_open\n-:kprobes/other": character '\n' is not allowed
	// tracefs: invalid probe: path "bin/sh" must be absolute, shorter than 4096 bytes and free of NUL
}

// rootExamples are the examples that need root: TestExamples runs them.
func rootExamples(t *testing.T) []testutil.RootExample {
	return []testutil.RootExample{{F: ExampleTracepointFormat}, {F: ExampleFormat_Field}, {F: ExampleCreateProbe}, {F: ExampleSweep}}
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
