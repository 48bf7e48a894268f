package prog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/btf"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

// TestAdversarialTracing: hostile targets and programs for Load and
// AttachTracing: every one an error that says what is wrong, none a
// panic, and no fd left open (the module BTF object's included).
func TestAdversarialTracing(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	tp := func(to prog.Target, at uint32) prog.Spec {
		s := retZeroSpec(prog.Tracing)
		s.AttachTo, s.ExpectedAttachType = to, at
		return s
	}
	kprobe := retZeroSpec(prog.Kprobe)
	kprobe.AttachTo = prog.Fentry("vfs_read")
	for what, c := range map[string]struct {
		spec  prog.Spec
		is    error
		parts []string
	}{
		"no target": {retZeroSpec(prog.Tracing), nil,
			[]string{"names its target in Spec.AttachTo"}},
		"target of a kprobe": {kprobe, prog.ErrWrongType, []string{"not of a kprobe program"}},
		"attach type lsm": {tp(prog.Fentry("vfs_read"), 27), prog.ErrWrongType,
			[]string{"ExpectedAttachType says lsm_mac"}},
		"attach type huge": {tp(prog.Fexit("vfs_read"), 1<<31), prog.ErrWrongType,
			[]string{"trace_fexit, and ExpectedAttachType says 2147483648"}},
		"no such function": {tp(prog.Fentry("bpfkit_no_such_function"), 0), btf.ErrNotFound,
			[]string{`FUNC "bpfkit_no_such_function"`}},
		"no such tracepoint": {tp(prog.TpBTF("bpfkit_no_such_tp"), 0), btf.ErrNotFound,
			[]string{`TYPEDEF "btf_trace_bpfkit_no_such_tp"`}},
		"a NUL": {tp(prog.Fexit("vfs\x00read"), 0), btf.ErrNotFound, []string{"without NUL"}},
		"no such module": {tp(prog.Fentry("bpfkit_mod:vfs_read"), 0), btf.ErrNotFound,
			[]string{`no loaded module "bpfkit_mod"`}},
		"empty module":         {tp(prog.Fentry(":vfs_read"), 0), nil, []string{"vfs_read"}},
		"a module but no name": {tp(prog.Fentry("bpfkit_mod:"), 0), btf.ErrNotFound, nil},
		"a function as tp_btf": {tp(prog.TpBTF("vfs_read"), 0), btf.ErrNotFound,
			[]string{"btf_trace_vfs_read"}},
		"a typedef as fentry": {tp(prog.Fentry("btf_trace_sys_enter"), 0), btf.ErrNotFound, nil},
		"a huge name": {tp(prog.Fentry(strings.Repeat("f", 1<<16)), 0), btf.ErrNotFound,
			nil},
		"an empty name": {tp(prog.TpBTF(""), 0), btf.ErrNotFound, nil},
	} {
		p, err := prog.Load(c.spec)
		if what == "empty module" { // ":vfs_read" is vmlinux's vfs_read: it loads where fentry does
			if err == nil {
				p.Close()
			}
			continue
		}
		if err == nil {
			p.Close()
			t.Errorf("%s: loaded", what)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", what, err, c.is)
		}
		wantErr(t, what, err, c.parts...)
	}

	// AttachTracing of what it cannot attach.
	var zero prog.Program
	if _, err := prog.AttachTracing(&zero, prog.AttachOptions{}); !errors.Is(err, prog.ErrClosed) {
		t.Errorf("AttachTracing of a zero Program: %v", err)
	}
	if _, err := prog.AttachTracing(nil, prog.AttachOptions{}); err == nil {
		t.Error("AttachTracing(nil) attached")
	}
	sf, err := prog.Load(retZeroSpec(prog.SocketFilter))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	_, err = prog.AttachTracing(sf, prog.AttachOptions{})
	wantErr(t, "AttachTracing of a socket filter", err, "needs type Tracing")
	if !errors.Is(err, prog.ErrWrongType) {
		t.Errorf("AttachTracing of a socket filter: %v, want ErrWrongType", err)
	}
	if ok, _ := prog.HaveTracing(prog.BPF_TRACE_RAW_TP); !ok {
		return
	}
	p, err := prog.Load(tp(prog.TpBTF("sys_enter"), prog.BPF_TRACE_RAW_TP))
	if err != nil {
		t.Fatal(err)
	}
	pin := testutil.BPFFS(t) + "/tp_btf"
	if err := p.Pin(pin); err != nil {
		t.Fatal(err)
	}
	defer mapfd.Unpin(pin)
	p.Close()
	_, err = prog.AttachTracing(p, prog.AttachOptions{})
	if !errors.Is(err, prog.ErrClosed) {
		t.Errorf("AttachTracing of a closed program: %v", err)
	}
	pinned, err := prog.Open(pin)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	_, err = prog.AttachTracing(pinned, prog.AttachOptions{})
	wantErr(t, "AttachTracing of a pinned tracing program", err,
		"not loaded with Spec.AttachTo by this process")
}

// TestTracingProbeArguments: the tracing probes refuse attach types that
// are not fentry, fexit or tp_btf, without probing.
func TestTracingProbeArguments(t *testing.T) {
	for _, at := range []uint32{0, 27, 1 << 31} {
		for name, f := range map[string]func(uint32) (bool, error){
			"HaveTracing": prog.HaveTracing, "HaveTracingLink": prog.HaveTracingLink,
			"HaveTracingCookie": prog.HaveTracingCookie,
		} {
			if ok, err := f(at); ok || !errors.Is(err, prog.ErrWrongType) {
				t.Errorf("%s(%s) = %v, %v", name, sys.AttachTypeName(at), ok, err)
			}
		}
	}
	_ = insn.MaxFuncArgs
}
