package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// perfRec is an attachment as bpftool perf prints it, and the process's
// name.
type perfRec struct {
	PID        int     `json:"pid"`
	Comm       string  `json:"comm"`
	FD         int     `json:"fd"`
	ProgID     uint32  `json:"prog_id"`
	FDType     string  `json:"fd_type"`
	Tracepoint string  `json:"tracepoint,omitempty"`
	Func       string  `json:"func,omitempty"`
	Filename   string  `json:"filename,omitempty"`
	Offset     *uint64 `json:"offset,omitempty"`
	Addr       *uint64 `json:"addr,omitempty"`
}

// perf prints every program attached through a perf event or a raw
// tracepoint link, asking the kernel about each such fd of each process.
func perf(t *tool.Tool, _ []uint32) error {
	return eachFD(func(p proc, fd int, kind string) error {
		if kind != "perf" && kind != "link" {
			return nil
		}
		a, err := queryFD(p.PID, fd)
		if a == nil || err != nil {
			return err
		}
		r := perfRec{PID: p.PID, Comm: p.Comm, FD: fd, ProgID: a.ProgID, FDType: a.Kind}
		where := a.Name
		switch {
		case a.Kind == "raw_tracepoint" || a.Kind == "tracepoint":
			r.Tracepoint = a.Name
		case strings.HasPrefix(a.Kind, "u"):
			r.Filename, r.Offset = a.Name, &a.Offset
			where = fmt.Sprintf("filename %s  offset %d", a.Name, a.Offset)
		case a.Name != "":
			r.Func, r.Offset = a.Name, &a.Offset
			where = fmt.Sprintf("func %s  offset %d", a.Name, a.Offset)
		default:
			r.Addr, where = &a.Addr, fmt.Sprintf("addr %#x", a.Addr)
		}
		if t.JSON {
			return t.Emit(r)
		}
		_, err = fmt.Fprintf(t.Stdout, "pid %d (%s)  fd %d: prog_id %d  %s  %s\n",
			r.PID, r.Comm, fd, a.ProgID, a.Kind, where)
		return err
	})
}

// queryFD asks which program runs through fd of pid; nil, and no error,
// for a perf event without a program, a link that is not a raw
// tracepoint's, or an fd or process gone meanwhile.
func queryFD(pid, fd int) (*prog.FDAttachment, error) {
	a, err := prog.QueryFD(pid, fd)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, sys.ENOTSUPP), errors.Is(err, unix.EBADF),
		errors.Is(err, unix.ESRCH):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return a, nil
}
