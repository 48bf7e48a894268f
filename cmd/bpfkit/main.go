// Command bpfkit inspects what BPF is doing in the running kernel, for
// security review and operations: the programs loaded (with the
// instructions as the verifier rewrote them), the maps and what they hold,
// the links, which process attached which program to which tracepoint,
// kprobe or uprobe, the kprobe and uprobe events of tracefs (telling this
// library's and the stale ones), and what the kernel supports, found by
// trying. Each command prints text, or with -json one JSON object per line
// whose fields are bpftool's where bpftool has the fact.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

// command is one subcommand: "prog list", "map dump ID".
type command struct {
	words, usage, summary string
	examples              []string
	id                    bool // takes the ID of a program or map
	flags                 func(fs *flag.FlagSet)
	run                   func(t *tool.Tool, id uint32) error
}

var commands []command

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command that args name and returns the exit status:
// 0, 1 when the kernel or the system refuses, 2 for bad arguments.
func dispatch(args []string, stdout, stderr io.Writer) int {
	for _, c := range commands {
		words := strings.Fields(c.words)
		if len(args) < len(words) || strings.Join(args[:len(words)], " ") != c.words ||
			c.words == "probes" && len(args) > 1 && args[1] == "sweep" {
			continue
		}
		t := tool.New("bpfkit "+c.words, c.summary, c.usage, c.examples...)
		t.Stdout, t.Stderr = stdout, stderr
		if c.flags != nil {
			c.flags(t.Flags)
		}
		id, err := parse(t, c, args[len(words):])
		switch {
		case errors.Is(err, flag.ErrHelp):
			t.PrintUsage(stdout)
			return 0
		case errors.Is(err, tool.ErrVersion):
			fmt.Fprintln(stdout, t.Version())
			return 0
		case err == nil:
			err = sys.NeedCaps(sys.CAP_SYS_ADMIN)
			if err != nil {
				err = fmt.Errorf("needs root: %w", err)
			} else {
				err = c.run(t, id)
			}
		}
		return t.Report(err)
	}
	w, status := stderr, 2
	if len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintln(stdout, tool.New("bpfkit", "", "").Version())
		return 0
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		w, status = stdout, 0
	} else if len(args) > 0 {
		fmt.Fprintf(stderr, "bpfkit: unknown command %q\n\n", strings.Join(args, " "))
	}
	fmt.Fprintf(w, "bpfkit: inspect the BPF programs, maps, links, perf attachments and probe events of this kernel\n\nusage: bpfkit COMMAND [flags] [ID]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", c.words+map[bool]string{true: " ID"}[c.id], c.summary)
	}
	fmt.Fprintf(w, "\nEvery command takes -json (one JSON object per line) and -h (its flags and examples).\n\nexamples:\n"+
		"  bpfkit prog list              # every program: type, name, tag, maps, the processes holding it\n"+
		"  bpfkit prog dump -opcodes 12  # program 12's instructions as the verifier rewrote them\n"+
		"  bpfkit perf list -json        # which process attached which program where\n"+
		"  bpfkit features               # what this kernel supports, by trying\n")
	return status
}

// parse parses flags and the ID, which may come before, between or after
// the flags.
func parse(t *tool.Tool, c command, args []string) (uint32, error) {
	if err := t.TakesArgs().Parse(args); err != nil {
		return 0, err
	}
	pos := t.Args
	switch {
	case !c.id && len(pos) > 0:
		return 0, tool.Usagef("unexpected argument %q", pos[0])
	case c.id && len(pos) != 1:
		return 0, tool.Usagef("want one ID (usage: %s %s)", t.Name, c.usage)
	case !c.id:
		return 0, nil
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(pos[0], "id="), 10, 32)
	if err != nil || id == 0 {
		return 0, tool.Usagef("ID %q: want a number from 1 to %d", pos[0], uint32(1<<32-1))
	}
	return uint32(id), nil
}

// hexBytes is b as bpftool's JSON has it: ["0x01", "0x02"].
func hexBytes(b []byte) []string {
	out := make([]string, len(b))
	for i, c := range b {
		out[i] = fmt.Sprintf("0x%02x", c)
	}
	return out
}

// spaced is b as bpftool's text has it: "01 02".
func spaced(b []byte) string {
	return strings.TrimSuffix(fmt.Sprintf("% x", b), " ")
}

// ids joins numbers with commas.
func ids(n []uint32) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = strconv.FormatUint(uint64(v), 10)
	}
	return strings.Join(s, ",")
}

// sortedProcs is the holders of one object, each process once, by pid.
func sortedProcs(ps []proc) []proc {
	sort.Slice(ps, func(i, j int) bool { return ps[i].PID < ps[j].PID })
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || p.PID != ps[i-1].PID {
			out = append(out, p)
		}
	}
	return out
}
