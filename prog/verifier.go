package prog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// ErrClosed is returned by operations on a closed Program or attachment.
var ErrClosed = errors.New("prog: closed")

// VerifierError is a load the verifier refused, with its log: EACCES (the
// program is unsafe), EINVAL (malformed) or E2BIG (too complex), or ENOSPC
// (its log outgrew MaxLogSize), with a log that says more than the
// verifier's closing statistics. errors.Is(err, unix.EACCES) and the like
// see the errno.
type VerifierError struct {
	Name string // the program's name
	Err  error  // the bpf(2) error, with its errno
	Log  string // the verifier's whole log (its end, if it outgrew MaxLogSize)
	Insn int    // where the verifier stopped, or -1 if the log does not say
	Text string // the log's text of that instruction, "r0 = *(u64 *)(r2 +0)"
}

// Error shows the errno, the failing instruction and the log's last lines.
func (e *VerifierError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prog: load %s: %v: the verifier rejected it", sys.QuoteName(e.Name), e.Err)
	if e.Insn >= 0 {
		fmt.Fprintf(&b, " at instruction %d: %s", e.Insn, e.Text)
	}
	lines := strings.Split(strings.TrimRight(e.Log, "\n"), "\n")
	if n := len(lines) - 8; n > 0 { // the last 8 lines
		fmt.Fprintf(&b, "\n\t... (%d lines of log before)", n)
		lines = lines[n:]
	}
	for _, l := range lines {
		b.WriteString("\n\t" + l)
	}
	return b.String()
}

// Unwrap is the bpf(2) error, for errors.Is(err, unix.EACCES).
func (e *VerifierError) Unwrap() error { return e.Err }

// refusal says whether err is an errno the verifier refuses a program
// with (besides ENOSPC, which only a log brings). What the kernel answers
// after the verifier accepted the program is none of them: EMFILE or
// ENFILE (no fd for it: bpf_prog_new_fd runs after bpf_check), ENOMEM (the
// JIT). EOPNOTSUPP is the verifier's refusal of what the architecture
// cannot run: a 32-bit kernel's of an 8-byte load-acquire or store-release
// (6.15, "only supported on 64-bit arches").
func refusal(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.E2BIG) || errors.Is(err, unix.EOPNOTSUPP)
}

// verdict is the log less the statistics the verifier ends it with, which
// it writes whether it accepted the program or not: "processed 5 insns
// ...", and at BPF_LOG_STATS "verification time" and "stack depth". What
// is left of a level 1 log of an accepted program is "". A refusal says
// why.
func verdict(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	stats := func(line string) bool {
		for _, prefix := range []string{"processed ", "verification time ", "stack depth "} {
			if strings.HasPrefix(line, prefix) {
				return true
			}
		}
		return false
	}
	for len(lines) > 0 && stats(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// newVerifierError is the error of a failed load: a *VerifierError if the
// verifier refused the program, with its log.
func newVerifierError(name string, err error, log string) error {
	if !refusal(err) && !errors.Is(err, unix.ENOSPC) || verdict(log) == "" {
		return fmt.Errorf("prog: load %s: %w", sys.QuoteName(name), err)
	}
	e := &VerifierError{Name: name, Err: err, Log: log, Insn: -1}
	for line := range strings.SplitSeq(log, "\n") {
		if n, text, ok := echoedInsn(line); ok {
			e.Insn, e.Text = n, text
		}
	}
	return e
}

// echoedInsn reads the index and the text from the verifier's echo of an
// instruction, "12: (bf) r1 = r6".
func echoedInsn(line string) (int, string, bool) {
	num, rest, ok := strings.Cut(line, ": (")
	if !ok || len(rest) < 4 || rest[2] != ')' || rest[3] != ' ' || !isHex(rest[0]) || !isHex(rest[1]) {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	return n, rest[4:], err == nil && n >= 0 && num[0] != '+'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// wrap is sys.Wrap for prog's errors.
func wrap(err error, format string, args ...any) error {
	return sys.Wrap("prog", err, format, args...)
}
