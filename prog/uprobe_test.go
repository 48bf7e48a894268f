package prog_test

import (
	"os"
	"runtime"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// TestUprobeCountUnderPreemption: a uprobe on uprobed, the function
// ExampleAttachUprobe probes, counts each of 20000 calls once while
// another goroutine runs the GC again and again, whose stack scans ask the
// calling goroutine to stop at its next function's stack check. A
// function whose first instruction is that check runs again from it once
// the goroutine resumes, and the uprobe there fired twice for one call:
// 386 builds counted about 130 too many here, and ExampleAttachUprobe 4
// calls for 3 in about one run of 30. uprobed, nosplit, has no check.
func TestUprobeCountUnderPreemption(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	spec := mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "calls"}
	calls, err := mapfd.CreateTyped[uint32, uint64](spec)
	if err != nil {
		t.Fatal(err)
	}
	defer calls.Close()
	items := append([]Item{StoreImm(BPF_W, R10, -4, 0)}, MapIncrement(calls, -4, -16)...)
	items = append(items, Mov64Imm(R0, 0), Exit())
	p := load(t, prog.Spec{Type: prog.Kprobe, Name: "calls", Insns: items})
	exe, off := testutil.FuncOffset(t, uprobed)
	l, err := prog.AttachUprobe(p, exe, prog.UprobeOptions{Offset: off, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	const n = 20000
	for i := range n {
		_ = uprobed(i) // the call is what the uprobe counts
	}
	close(stop)
	<-stopped
	if got, err := calls.Lookup(0); got != n || err != nil {
		t.Fatalf("%d calls of uprobed counted %d times (%v)", n, got, err)
	}
}
