package sys

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestErrnoNames: the journal names every errno with its text, as the
// package doc promises: past errno-base.h's 34 (ENAMETOOLONG is 36), the
// uapi's EOPNOTSUPP, the kernel's own ENOTSUPP, which libc has no words
// for, and a number no header names (its number, and no text). An *Error
// says the same.
func TestErrnoNames(t *testing.T) {
	for _, c := range []struct {
		errno        unix.Errno
		line, errStr string
	}{
		{unix.EPERM, "-1 EPERM (operation not permitted)", "op: operation not permitted"},
		{unix.ERANGE, "-1 ERANGE (numerical result out of range)",
			"op: numerical result out of range"},
		{unix.ENAMETOOLONG, "-1 ENAMETOOLONG (file name too long)", "op: file name too long"},
		{unix.ELOOP, "-1 ELOOP (too many levels of symbolic links)",
			"op: too many levels of symbolic links"},
		{unix.EOPNOTSUPP, "-1 EOPNOTSUPP (operation not supported)", "op: operation not supported"},
		{unix.EHWPOISON, "-1 EHWPOISON <", "op: EHWPOISON"}, // Go has no text for it
		{ENOTSUPP, "-1 ENOTSUPP (operation not supported)",
			"op: operation not supported (ENOTSUPP)"},
		{512, "-1 ERESTARTSYS (restart the system call)",
			"op: restart the system call (ERESTARTSYS)"},
		{600, "-1 errno 600 <", "op: errno 600"},
	} {
		var buf bytes.Buffer
		j := &journalWriter{w: &buf}
		if err := j.record("op", "x", -1, c.errno, 0); err != nil {
			t.Fatal(err)
		}
		if want := "op(x) = " + c.line; !strings.HasPrefix(buf.String(), want) {
			t.Errorf("errno %d: journal line %q, want it to start %q", c.errno, buf.String(), want)
		}
		err := error(&Error{Op: "op", Errno: c.errno})
		if err.Error() != c.errStr || !errors.Is(err, c.errno) {
			t.Errorf("errno %d: error %q, want %q", c.errno, err, c.errStr)
		}
	}
}

// TestCommandOutOfRange: the command-name table was indexed without a
// bound, so an element command given 36 panicked. A command past the
// table, or negative, is named by its number, in the error and the journal.
func TestCommandOutOfRange(t *testing.T) {
	var buf bytes.Buffer
	SetJournal(&buf)
	defer SetJournal(nil)
	for _, cmd := range []int{-1, 36, 1 << 20} {
		var attr MapElemAttr
		_, err := call(cmd, unsafe.Pointer(&attr), attr.describe, noHint)
		name := fmt.Sprintf("bpf cmd %d", cmd)
		if err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("command %d: %v", cmd, err)
		}
		if !strings.Contains(buf.String(), "bpf("+name+", map_fd=0 flags=0x0) = -1 ") {
			t.Errorf("command %d: the journal says %q", cmd, buf.String())
		}
	}
}
