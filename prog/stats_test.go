package prog

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// statsSysctlValue reads kernel.bpf_stats_enabled.
func statsSysctlValue(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(statsSysctl)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestStatsByID: StatsByID reads what Info reads of a program, but its
// instructions and map ids, with the runs counted while statistics were
// on; a program gone is ENOENT.
func TestStatsByID(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	p, err := Load(Spec{Type: SocketFilter, Name: "stats_by_id", License: "GPL", Insns: retZero})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := EnableStats()
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.TestRun(RunOptions{Data: make([]byte, 64), Repeat: 5})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	got, err := StatsByID(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *info
	want.Xlated, want.MapIDs = nil, nil
	if !reflect.DeepEqual(*got, want) || got.RunCount != 5 || got.RunTime <= 0 {
		t.Errorf("StatsByID(%d):\n%+v\nwant\n%+v with 5 runs", info.ID, *got, want)
	}
	p.Close()
	if _, err := StatsByID(info.ID); !errors.Is(err, unix.ENOENT) {
		t.Errorf("StatsByID of a program closed: %v, want ENOENT", err)
	}
}

// TestEnableStatsSysctl: before 5.8 the statistics go on through the
// sysctl, written through sys's journal, and Close sets it back; one on
// already stays on.
func TestEnableStatsSysctl(t *testing.T) {
	testutil.RequireRoot(t)
	if v := statsSysctlValue(t); v != "0" {
		t.Skipf("kernel.bpf_stats_enabled is %s: set by someone else, left alone", v)
	}
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	s, err := enableStatsSysctl()
	sys.SetJournal(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := statsSysctlValue(t); v != "1" || s.How() != "kernel.bpf_stats_enabled" {
		t.Errorf("statistics on by %q: the sysctl is %s, want 1", s.How(), v)
	}
	p, err := Load(Spec{Type: SocketFilter, Name: "stats_sysctl", License: "GPL", Insns: retZero})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.TestRun(RunOptions{Data: make([]byte, 64), Repeat: 3}); err != nil {
		t.Fatal(err)
	}
	if info, err := p.Info(); err != nil || info.RunCount != 3 {
		t.Errorf("runs counted with the sysctl on: %v, %v", info, err)
	}
	again, err := enableStatsSysctl()
	if err != nil || again.How() != "kernel.bpf_stats_enabled, on already" {
		t.Errorf("the sysctl on already: %v, %v", again, err)
	}
	again.Close()
	if v := statsSysctlValue(t); v != "1" {
		t.Errorf("closing statistics that were on already turned the sysctl to %s", v)
	}
	sys.SetJournal(&journal)
	err = s.Close()
	sys.SetJournal(nil)
	if v := statsSysctlValue(t); err != nil || v != "0" {
		t.Errorf("Close: %v; the sysctl is %s, want 0", err, v)
	}
	for _, v := range []string{"1", "0"} {
		line := `write("` + statsSysctl + `", "` + v + `\n") = 2`
		if !strings.Contains(journal.String(), line) {
			t.Errorf("the journal lacks %s:\n%s", line, journal.String())
		}
	}
	if err := s.Close(); err != nil || statsSysctlValue(t) != "0" {
		t.Errorf("second Close: %v", err)
	}
}

// TestMeasureStatsCost: the statistics count some time for a run of a
// program that does nothing, and holding them makes runs longer; neither
// is more than a few microseconds.
func TestMeasureStatsCost(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	c, err := MeasureStatsCost()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("statistics: floor %v, added %v a run", c.Floor, c.Added)
	limit := 10 * time.Microsecond
	if c.Floor <= 0 || c.Floor > limit || c.Added < 0 || c.Added > limit {
		t.Errorf("statistics' cost %+v", c)
	}
	if statsSysctlValue(t) == "0" && c.Added == 0 {
		t.Logf("added 0: another process held the statistics on in every round")
	}
}
