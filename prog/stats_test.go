package prog

import (
	"errors"
	"reflect"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"golang.org/x/sys/unix"
)

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
