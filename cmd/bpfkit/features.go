package main

import (
	"fmt"
	"strconv"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// features prints every feature probe's answer.
func features(t *tool.Tool, _ []uint32) error {
	var of []prog.Type
	if helpersOf != "" {
		typ, ok := progType(helpersOf)
		if !ok {
			return tool.Usagef("-helpers %q: not a program type "+
				"(kprobe, tracepoint, xdp, ... or a number)", helpersOf)
		}
		of = append(of, typ)
	}
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-48s %-4s %-10s %s\n", "FEATURE", "OK", "ERRNO", "NOTE")
	}
	for _, f := range prog.Features(of...) {
		errno := unix.ErrnoName(f.Errno)
		switch f.Errno {
		case sys.ENOTSUPP: // 524 has no name in libc
			errno = "ENOTSUPP"
		case unix.EOPNOTSUPP: // 95 is ENOTSUP in libc too
			errno = "EOPNOTSUPP"
		case 0:
			errno = "-"
		}
		if t.JSON {
			r := map[string]any{"feature": f.Name, "supported": f.OK, "errno": errno}
			if f.Name == "tail_call_limit" {
				r["value"] = f.Value
			}
			if f.Err != nil {
				r["error"] = f.Err.Error()
			}
			if f.Note != "" {
				r["note"] = f.Note
			}
			t.Emit(r)
			continue
		}
		answer, note := map[bool]string{true: "yes", false: "no"}[f.OK], f.Note
		switch {
		case f.Err != nil:
			answer, note = "?", f.Err.Error()
		case f.Name == "tail_call_limit":
			note = strconv.Itoa(f.Value)
		case f.OK && note == "":
			errno = "-" // a yes's errno, unexplained, would read as a failure
		}
		fmt.Fprintf(t.Stdout, "%-48s %-4s %-10s %s\n", f.Name, answer, errno, note)
	}
	return nil
}

// progType reads a program type by name ("kprobe") or number.
func progType(s string) (prog.Type, bool) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return prog.Type(n), n > 0
	}
	for t := prog.Type(1); t.String() != strconv.Itoa(int(t)); t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}
