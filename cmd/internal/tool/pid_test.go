package tool

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestPIDFlag: a pid is 1 to PID_MAX_LIMIT, or 0 where the tool says 0
// means every process; anything else, 2^32 + 1 included (which a 32-bit
// conversion made pid 1), is a usage error quoting it.
func TestPIDFlag(t *testing.T) {
	for _, c := range []struct {
		arg   string
		all   bool
		want  uint32
		error string
	}{
		{"1", false, 1, ""},
		{"4194304", false, 4194304, ""},
		{"007", false, 7, ""},
		{"0", false, 0, `-p "0": want a process id from 1 to 4194304`},
		{"0", true, 0, ""},
		{"4194305", false, 0, `-p "4194305": want a process id from 1 to 4194304`},
		{"4194305", true, 0, `"4194305": want a process id from 1 to 4194304, or 0 for every`},
		{"4294967296", false, 0, `-p "4294967296"`},
		{"4294967297", false, 0, `-p "4294967297"`},
		{"18446744073709551617", false, 0, `-p "18446744073709551617"`},
		{"-3", false, 0, `-p "-3"`},
		{"+5", false, 0, `-p "+5"`},
		{"0x10", false, 0, `-p "0x10"`},
		{" 5", false, 0, `-p " 5"`},
		{"5\n", false, 0, `-p "5\n"`},
		{"", false, 0, `-p ""`},
	} {
		tl := New("x", "test", "")
		define := tl.PIDFlag
		if c.all {
			define = tl.PIDOrAllFlag
		}
		pid := define("p", "trace process `PID` only")
		err := tl.Parse([]string{"-p", c.arg})
		switch {
		case c.error == "" && (err != nil || *pid != c.want):
			t.Errorf("-p %q: %d, %v; want %d", c.arg, *pid, err, c.want)
		case c.error != "" && !(errors.Is(err, ErrUsage) && strings.Contains(err.Error(), c.error)):
			t.Errorf("-p %q: %d, %v; want a usage error with %q", c.arg, *pid, err, c.error)
		}
	}
	tl := New("x", "test", "")
	pid := tl.PIDFlag("p", "trace process `PID` only")
	var b bytes.Buffer
	tl.PrintUsage(&b)
	err := tl.Parse(nil)
	usage := b.String()
	if err != nil || *pid != 0 || !strings.Contains(usage, "-p PID\n") ||
		strings.Contains(usage, "default") {
		t.Errorf("no -p: %d, %v; usage:\n%s", *pid, err, b.String())
	}
}
