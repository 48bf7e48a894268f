package sys_test

import (
	"fmt"
	"testing"

	"github.com/bpfkit/bpfkit/sys"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]string{"0": "[0]", "0-1\n": "[0 1]", "0-3,5": "[0 1 2 3 5]", "0,2-4": "[0 2 3 4]"} {
		if cpus, err := sys.ParseCPUList(in); err != nil || fmt.Sprint(cpus) != want {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %s", in, cpus, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "0-", "-1", "2,1"} {
		if _, err := sys.ParseCPUList(in); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", in)
		}
	}
}

func TestParseCPUListBounded(t *testing.T) {
	for _, s := range []string{"0-4294967295", "8192", "0-9223372036854775807", "0,8192"} {
		cpus, err := sys.ParseCPUList(s)
		wantErr(t, "ParseCPUList("+s+")", err, 0, "not below 8192")
		if cpus != nil {
			t.Fatalf("ParseCPUList(%q) returned %d CPUs", s, len(cpus))
		}
	}
	if cpus, err := sys.ParseCPUList("0-8191\n"); err != nil || len(cpus) != 8192 {
		t.Fatalf("ParseCPUList of the largest list: %d, %v", len(cpus), err)
	}
	for _, s := range []string{"", "-1", "3-1", "1,1", "a", "1-", "-"} {
		if _, err := sys.ParseCPUList(s); err == nil {
			t.Fatalf("ParseCPUList(%q) accepted", s)
		}
	}
}
