package prog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
)

// ErrClosed is returned by operations on a closed Program or attachment.
var ErrClosed = errors.New("prog: closed")

// VerifierError is a load the kernel refused, with the verifier's log.
// errors.Is(err, unix.EACCES) and the like see the errno.
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

func newVerifierError(name string, err error, log string) error {
	if log == "" {
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
func wrap(err error, format string, args ...any) error { return sys.Wrap("prog", err, format, args...) }
