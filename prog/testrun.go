package prog

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
)

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// RunOptions are the inputs of a test run: socket filters, XDP and
// sched_cls take Data (a packet of 14 bytes or more), raw tracepoints Ctx;
// tracepoint and kprobe programs cannot be test-run.
type RunOptions struct {
	Data    []byte // packet in
	DataOut []byte // room for the packet out; the result's DataOut is a prefix of it
	Ctx     []byte // context in (struct __sk_buff, xdp_md, raw tracepoint args...)
	CtxOut  []byte // room for the context out; the result's CtxOut is a prefix of it
	Repeat  uint32 // run this many times and report the mean duration
	Flags   uint32 // BPF_F_TEST_RUN_ON_CPU, ...
	CPU     uint32 // where to run, with BPF_F_TEST_RUN_ON_CPU
}

// RunResult is what a test run returned.
type RunResult struct {
	Retval   uint32        // what the program returned (r0), of the last run
	Duration time.Duration // mean per run, as the kernel measured it
	DataOut  []byte        // the packet as the program left it
	CtxOut   []byte        // the context as the program left it
}

// TestRun runs the program once, or Repeat times, with BPF_PROG_TEST_RUN.
func (p *Program) TestRun(o RunOptions) (RunResult, error) {
	if p.fd.Int() < 0 {
		return RunResult{}, ErrClosed
	}
	attr := sys.TestRunAttr{
		ProgFD:      uint32(p.fd.Int()),
		Repeat:      o.Repeat,
		Flags:       o.Flags,
		CPU:         o.CPU,
		DataIn:      sys.SlicePointer(o.Data),
		DataSizeIn:  uint32(len(o.Data)),
		DataOut:     sys.SlicePointer(o.DataOut),
		DataSizeOut: uint32(len(o.DataOut)),
		CtxIn:       sys.SlicePointer(o.Ctx),
		CtxSizeIn:   uint32(len(o.Ctx)),
		CtxOut:      sys.SlicePointer(o.CtxOut),
		CtxSizeOut:  uint32(len(o.CtxOut)),
	}
	if err := sys.ProgTestRun(&attr); err != nil {
		return RunResult{}, fmt.Errorf("prog: test run of %s: %w", sys.QuoteName(p.name), err)
	}
	// A nil DataOut or CtxOut stays nil.
	return RunResult{
		Retval:   attr.Retval,
		Duration: time.Duration(attr.Duration),
		DataOut:  o.DataOut[:min(int(attr.DataSizeOut), len(o.DataOut))],
		CtxOut:   o.CtxOut[:min(int(attr.CtxSizeOut), len(o.CtxOut))],
	}, nil
}
