package sys_test

import (
	"fmt"
	"strings"
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

// cpuList writes cpus, sorted and unique, as the kernel writes a CPU mask
// (bitmap_list_string, %*pbl): maximal runs as "a-b", a lone CPU as "a".
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, fmt.Sprint(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// TestParseCPUListStrict: lists the kernel never writes are refused: signs,
// leading zeros, "n-n", runs that touch ("0,1" is "0-1"), spaces, empty
// parts.
func TestParseCPUListStrict(t *testing.T) {
	for _, s := range []string{"+1", "01", "0-03", "3-3", "0,1", "0-1,2", "0,1-3", " 0", "0 ", "0\n\n", "0,,2", "0,", ",0", "0-1-2", "0\t", "1\x00", "\n"} {
		if cpus, err := sys.ParseCPUList(s); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", s, cpus)
		}
	}
	for _, s := range []string{"0", "0-1", "0,2", "0-3,5,7-8\n", "8191"} {
		if cpus, err := sys.ParseCPUList(s); err != nil || cpuList(cpus) != strings.TrimSuffix(s, "\n") {
			t.Errorf("ParseCPUList(%q) = %v, %v", s, cpus, err)
		}
	}
}

// FuzzParseCPUList: what ParseCPUList accepts is a list the kernel writes,
// and gives back CPUs sorted, unique and below MaxCPUs, which written again
// are the list; any set of CPUs written as the kernel does parses back.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-3\n", "0,2-5", "0-8191", "8192", "3-1", "01", "0,1", "-", "0-18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := sys.ParseCPUList(s)
		if err == nil {
			if len(cpus) == 0 || cpus[len(cpus)-1] >= sys.MaxCPUs {
				t.Fatalf("ParseCPUList(%q) = %v", s, cpus)
			}
			for i := 1; i < len(cpus); i++ {
				if cpus[i] <= cpus[i-1] || cpus[i-1] < 0 {
					t.Fatalf("ParseCPUList(%q) = %v: not sorted and unique", s, cpus)
				}
			}
			if l := cpuList(cpus); l != strings.TrimSuffix(s, "\n") {
				t.Fatalf("ParseCPUList(%q) = %v, which the kernel writes %q", s, cpus, l)
			}
		}
		// s's bytes as a mask of up to MaxCPUs bits.
		var set []int
		for i := range min(len(s)*8, sys.MaxCPUs) {
			if s[i/8]&(1<<(i%8)) != 0 {
				set = append(set, i)
			}
		}
		if len(set) == 0 {
			return
		}
		got, err := sys.ParseCPUList(cpuList(set) + "\n")
		if err != nil || fmt.Sprint(got) != fmt.Sprint(set) {
			t.Fatalf("ParseCPUList(%q) = %v, %v; want %v", cpuList(set), got, err, set)
		}
	})
}
