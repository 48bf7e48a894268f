package sys

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestKernelLongSize: this machine's kernel is 64-bit, so 8, also for the
// 386 build of these tests (make test-386), whose own words are 4 bytes.
func TestKernelLongSize(t *testing.T) {
	n, err := KernelLongSize()
	if err != nil {
		t.Fatal(err)
	}
	if n != 8 {
		t.Fatalf("KernelLongSize %d on %s (this process's words: %d bytes), want 8",
			n, runtime.GOARCH, unsafe.Sizeof(uintptr(0)))
	}
}

func TestParseKallsymsWidth(t *testing.T) {
	for in, want := range map[string]int{
		"ffffffff81000000 T startup_64\n":    8,
		"0000000000000000 T startup_64\n":    8, // hidden addresses keep the width
		"c0008000 T stext\nc0008000 T _text": 4,
	} {
		if n, err := parseKallsymsWidth([]byte(in)); err != nil || n != want {
			t.Errorf("parseKallsymsWidth(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	bad := []string{"", "ffff T x", "ffffffff81000000", "FFFFFFFF T x", "ffffffff81000000a", " T x"}
	for _, in := range bad {
		if n, err := parseKallsymsWidth([]byte(in)); err == nil {
			t.Errorf("parseKallsymsWidth(%q) = %d, want an error", in, n)
		}
	}
}
