package prog

import (
	"strings"
	"testing"
)

func TestEchoedInsn(t *testing.T) {
	for line, want := range map[string]int{
		"12: (bf) r1 = r6":               12,
		"0: (b7) r0 = 0":                 0,
		"202: (79) r0 = *(u64 *)(r2 +0)": 202,
		"12: R1=ctx() R10=fp0":           -1,
		"from 4 to 6: R0=0":              -1,
		"+3: (bf) r1 = r6":               -1,
		"-3: (bf) r1 = r6":               -1,
		"3: (BF) r1 = r6":                -1,
		"3: (bf)r1":                      -1,
		": (bf) x":                       -1,
		"":                               -1,
	} {
		n, text, ok := echoedInsn(line)
		if !ok {
			n = -1
		}
		if n != want || ok && !strings.HasSuffix(line, ") "+text) {
			t.Errorf("%q: %d %q, want %d", line, n, text, want)
		}
	}
}

func FuzzVerifierLog(f *testing.F) {
	f.Add("0: (b7) r0 = 0\n1: (95) exit\nR0 !read_ok\n")
	f.Fuzz(func(t *testing.T, log string) {
		e, ok := newVerifierError("x", ErrClosed, log).(*VerifierError)
		if ok && e.Insn < -1 {
			t.Fatalf("insn %d", e.Insn)
		}
		_ = newVerifierError("x", ErrClosed, log).Error()
	})
}
