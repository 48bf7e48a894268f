package prog

import (
	"errors"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
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

// TestVerifierRefusal: only a refusal is a *VerifierError: an errno the
// verifier refuses with and a log that says more than its statistics,
// which it writes accepting a program too. EMFILE after an accepted pass,
// or EACCES with only the statistics (an LSM's, after the verifier), is a
// plain error.
func TestVerifierRefusal(t *testing.T) {
	stats := "processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 " +
		"peak_states 0 mark_read 0\n"
	for _, c := range []struct {
		errno   unix.Errno
		log     string
		refused bool
	}{
		{unix.EACCES, "0: (95) exit\nR0 !read_ok\n" + stats, true},
		{unix.EINVAL, "unknown opcode 8d\n" + stats, true},
		{unix.E2BIG, "BPF program is too large. Processed 1000001 insn\n" + stats, true},
		{unix.ENOSPC, "0: (b7) r0 = 0\n1: (95) exit\n", true},
		{unix.EACCES, "verification time 7 usec\nstack depth 0\n" + stats, false},
		{unix.EACCES, stats, false},
		{unix.EMFILE, stats, false},
		{unix.EMFILE, "0: (b7) r0 = 0\n1: (95) exit\n" + stats, false},
		{unix.ENOMEM, "0: (95) exit\nR0 !read_ok\n", false},
		{unix.EINVAL, "", false},
	} {
		err := newVerifierError("x", &sys.Error{Op: "BPF_PROG_LOAD", Errno: c.errno}, c.log)
		var ve *VerifierError
		if errors.As(err, &ve) != c.refused || !errors.Is(err, c.errno) {
			t.Errorf("%s with log %q: %v; a refusal: %v", unix.ErrnoName(c.errno), c.log, err,
				c.refused)
		}
	}
}

func FuzzVerifierLog(f *testing.F) {
	f.Add("0: (b7) r0 = 0\n1: (95) exit\nR0 !read_ok\n")
	f.Fuzz(func(t *testing.T, log string) {
		e, ok := newVerifierError("x", unix.EACCES, log).(*VerifierError)
		if ok && e.Insn < -1 {
			t.Fatalf("insn %d", e.Insn)
		}
		_ = newVerifierError("x", unix.EACCES, log).Error()
	})
}
