package prog_test

import (
	"errors"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// loadKprobeMulti loads "r0 = 0; exit" as a Kprobe program for
// kprobe_multi links.
func loadKprobeMulti(t *testing.T) *prog.Program {
	t.Helper()
	spec := retZeroSpec(prog.Kprobe)
	spec.Name = "kmulti_test"
	spec.ExpectedAttachType = unix.BPF_TRACE_KPROBE_MULTI
	p, err := prog.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestKprobeMultiRefuses: the lists the kernel would refuse with a bare
// EINVAL or ESRCH, or not at all (an address twice), are refused before
// any bpf(2) call, naming what is wrong; so are programs that cannot run
// there.
func TestKprobeMultiRefuses(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	p := loadKprobeMulti(t)
	plain, err := prog.Load(retZeroSpec(prog.Kprobe))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	tp, err := prog.Load(retZeroSpec(prog.Tracepoint))
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	vfs := []string{"vfs_read", "vfs_write"}
	for _, c := range []struct {
		what string
		p    *prog.Program
		o    prog.KprobeMultiOptions
		want []string
	}{
		{"nil program", nil, prog.KprobeMultiOptions{Symbols: vfs}, []string{"nil program"}},
		{"tracepoint program", tp, prog.KprobeMultiOptions{Symbols: vfs}, []string{"needs type Kprobe"}},
		{"not loaded for it", plain, prog.KprobeMultiOptions{Symbols: vfs},
			[]string{"ExpectedAttachType unix.BPF_TRACE_KPROBE_MULTI"}},
		{"no function", p, prog.KprobeMultiOptions{}, []string{"no function"}},
		{"both lists", p, prog.KprobeMultiOptions{Symbols: vfs, Addresses: []uint64{1}},
			[]string{"both"}},
		{"name twice", p, prog.KprobeMultiOptions{Symbols: []string{"vfs_read", "vfs_write", "vfs_read"}},
			[]string{`"vfs_read" is given twice (at 0 and 2)`}},
		{"address twice", p, prog.KprobeMultiOptions{Addresses: []uint64{0x10, 0x10}},
			[]string{"address 0x10 is given twice"}},
		{"cookies short", p, prog.KprobeMultiOptions{Symbols: vfs, Cookies: []uint64{1}},
			[]string{"1 cookies for 2 functions"}},
		{"empty name", p, prog.KprobeMultiOptions{Symbols: []string{"vfs_read", ""}},
			[]string{`name ""`}},
		{"NUL in a name", p, prog.KprobeMultiOptions{Symbols: []string{"vfs_read\x00x"}},
			[]string{`"vfs_read\x00x"`}},
		{"newline in a name", p, prog.KprobeMultiOptions{Symbols: []string{"a\nb"}}, []string{`"a\nb"`}},
		{"too many", p, prog.KprobeMultiOptions{Addresses: make([]uint64, prog.MaxKprobeMulti+1)},
			[]string{"1048577 functions, more than one link takes"}},
	} {
		l, err := prog.AttachKprobeMulti(c.p, c.o)
		if err == nil {
			l.Close()
			t.Fatalf("%s: attached", c.what)
		}
		wantErr(t, c.what, err, c.want...)
	}
}

// TestKprobeMultiSupported: where the probe says the kernel has no
// kprobe_multi links (this host: no CONFIG_FPROBE), attaching says so
// with sys.ErrNotSupported; where it has them, one link on vfs_read and
// vfs_write is made and closed. The VMs' kernels with them run the
// counting tests in tests/.
func TestKprobeMultiSupported(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	have, err := prog.HaveKprobeMulti()
	if err != nil {
		t.Fatal(err)
	}
	p := loadKprobeMulti(t)
	l, err := prog.AttachKprobeMulti(p, prog.KprobeMultiOptions{
		Symbols: []string{"vfs_write", "vfs_read"},
		Cookies: []uint64{1, 2},
		Return:  true,
	})
	if !have {
		errno := errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)
		if !errors.Is(err, sys.ErrNotSupported) || !errno {
			t.Fatalf("no kprobe_multi links, yet attach said %v", err)
		}
		wantErr(t, "attach without kprobe_multi", err, "kretprobe_multi of 2 functions")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.String() != "kretprobe_multi of 2 functions" || l.FD() < 0 {
		t.Fatalf("link %q fd %d", l, l.FD())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
