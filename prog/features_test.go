package prog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// TestFeatureAnswer: how a probe's answer reads the kernel's: success and
// the expected errno are a yes, an errno of no a no, anything else (no
// privilege, an errno it did not expect, an error without one) an error,
// each with the errno kept.
func TestFeatureAnswer(t *testing.T) {
	wrap := func(e unix.Errno) error { return fmt.Errorf("probe: %w", &sys.Error{Op: "BPF_LINK_CREATE", Errno: e}) }
	for _, c := range []struct {
		err    error
		yes    unix.Errno
		no     []unix.Errno
		ok     bool
		errno  unix.Errno
		failed bool
	}{
		{nil, 0, nil, true, 0, false},
		{nil, unix.EBADF, []unix.Errno{unix.EINVAL}, true, 0, false},
		{wrap(unix.EBADF), unix.EBADF, []unix.Errno{unix.EINVAL}, true, unix.EBADF, false},
		{wrap(unix.EINVAL), unix.EBADF, []unix.Errno{unix.EINVAL}, false, unix.EINVAL, false},
		{wrap(unix.EINVAL), 0, []unix.Errno{unix.EOPNOTSUPP, unix.EINVAL}, false, unix.EINVAL, false},
		{wrap(unix.EPERM), unix.EBADF, []unix.Errno{unix.EINVAL}, false, unix.EPERM, true},
		{wrap(unix.EINVAL), unix.EBADF, nil, false, unix.EINVAL, true},
		{errors.New("no errno"), 0, []unix.Errno{unix.EINVAL}, false, 0, true},
	} {
		f := Feature{Name: "x"}
		f.answer(c.err, c.yes, c.no...)
		explained := f.Note != "" // a yes that rests on an errno says why
		if f.OK != c.ok || f.Errno != c.errno || (f.Err != nil) != c.failed ||
			explained != (c.ok && c.errno != 0) {
			t.Errorf("answer(%v, yes %v, no %v) = %+v, want ok %v errno %v failed %v", c.err, c.yes, c.no, f, c.ok, c.errno, c.failed)
		}
	}
}

// TestFeatureBadArguments: no ISA version 1 or 5, no PMU of a kind that is
// none, no helper probing for the types that load only with a target: an
// error, no panic, no probe.
func TestFeatureBadArguments(t *testing.T) {
	for _, v := range []int{-1, 0, 1, 5} {
		if ok, err := HaveISA(v); ok || err == nil || !strings.Contains(err.Error(), "2 to 4") {
			t.Errorf("HaveISA(%d) = %v, %v", v, ok, err)
		}
	}
	for _, k := range []tracefs.ProbeKind{-1, 4, 1 << 20} {
		if ok, err := HavePMU(k); ok || !errors.Is(err, tracefs.ErrInvalid) {
			t.Errorf("HavePMU(%d) = %v, %v", k, ok, err)
		}
	}
	for _, typ := range []Type{unix.BPF_PROG_TYPE_TRACING, unix.BPF_PROG_TYPE_LSM, unix.BPF_PROG_TYPE_EXT, unix.BPF_PROG_TYPE_STRUCT_OPS} {
		if ok, err := HaveHelper(typ, insn.BPF_FUNC_map_lookup_elem); ok || err == nil || !strings.Contains(err.Error(), "only with a target") {
			t.Errorf("HaveHelper(%s) = %v, %v", typ, ok, err)
		}
	}
}

// TestFeaturesCookie: Features without arguments answers whether kprobe
// and raw tracepoint programs may read a bpf_cookie (tests.TestFeatures
// checks the answers on each kernel).
func TestFeaturesCookie(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	features.Lock()
	features.m = nil // nothing cached: only what Features runs itself
	features.Unlock()
	names := map[string]bool{}
	for _, f := range Features() {
		names[f.Name] = true
	}
	for _, want := range []string{"helper kprobe bpf_get_attach_cookie", "helper raw_tracepoint bpf_get_attach_cookie"} {
		if !names[want] {
			t.Errorf("Features() has no %q", want)
		}
	}
}

// TestFeaturesCached: a probe asks the kernel once; asked again it answers
// from the cache, with the same errno, without a system call; and a
// program or map type the kernel has never had is a no on EINVAL.
func TestFeaturesCached(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	defer sys.SetJournal(nil)
	first := probeOf(t, "map_type 999", func() (bool, error) { return HaveMapType(uint32(999)) })
	if !strings.Contains(journal.String(), "BPF_MAP_CREATE") {
		t.Fatalf("no BPF_MAP_CREATE in the journal of the first probe:\n%s", journal.String())
	}
	journal.Reset()
	if again := probeOf(t, "map_type 999", func() (bool, error) { return HaveMapType(uint32(999)) }); again != first || journal.Len() != 0 {
		t.Errorf("asked again: %+v (first %+v), journal:\n%s", again, first, journal.String())
	}
	if first.OK || first.Errno != unix.EINVAL || first.Err != nil {
		t.Errorf("map type 999: %+v, want no on EINVAL", first)
	}
	if f := probeOf(t, "prog_type 999", func() (bool, error) { return HaveProgType(999) }); f.OK || f.Errno != unix.EINVAL || f.Err != nil {
		t.Errorf("program type 999: %+v, want no on EINVAL", f)
	}
	if f := probeOf(t, "helper socket_filter unknown#9999", func() (bool, error) { return HaveHelper(SocketFilter, 9999) }); f.OK || f.Err != nil {
		t.Errorf("helper 9999: %+v, want no", f)
	}
	for _, f := range Features() {
		if f.Name == "" || strings.HasPrefix(f.Name, "map_type") && f.Err != nil {
			t.Errorf("Features: %+v", f)
		}
	}
}

// probeOf runs have and returns the cached Feature it made, which must
// agree with what have returned.
func probeOf(t *testing.T, name string, have func() (bool, error)) Feature {
	t.Helper()
	ok, err := have()
	features.Lock()
	f, cached := features.m[name]
	features.Unlock()
	if !cached || f.OK != ok || f.Err != err {
		t.Fatalf("%s: returned %v, %v; cached %v: %+v", name, ok, err, cached, f)
	}
	return f
}
