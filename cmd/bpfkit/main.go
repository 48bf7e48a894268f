// Command bpfkit inspects what BPF is doing in the running kernel, for
// security review and operations: the programs loaded (with the
// instructions as the verifier rewrote them), the maps and what they hold,
// the links, which process attached which program to which tracepoint,
// kprobe or uprobe, the kprobe and uprobe events of tracefs (telling this
// library's and the stale ones), what the kernel supports, found by
// trying. Each
// command prints text, or with -json one JSON object per line whose fields
// are bpftool's where bpftool has the fact.
//
// A command word may be cut short where only one command begins so, as
// bpftool takes them ("bpfkit prog sh 12").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
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
	if len(args) == 1 {
		switch args[0] {
		case "-version", "--version":
			fmt.Fprintln(stdout, tool.New("bpfkit", "", "").Version())
			return 0
		case "-h", "-help", "--help", "help":
			printUsage(stdout)
			return 0
		}
	}
	c, rest, where, err := find(args)
	switch {
	case errors.Is(err, flag.ErrHelp) && where == "bpfkit":
		printUsage(stdout)
		return 0
	case errors.Is(err, flag.ErrHelp):
		printGroupUsage(stdout, strings.TrimPrefix(where, "bpfkit "))
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "%s: %s\n", where, strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	return c.execute(rest, stdout, stderr)
}

// execute parses the command's flags and arguments, checks the privilege
// it needs and runs it.
func (c *command) execute(args []string, stdout, stderr io.Writer) int {
	t := tool.New("bpfkit "+c.words, c.summary, c.usage, c.examples...)
	t.Stdout, t.Stderr = stdout, stderr
	if c.flags != nil {
		c.flags(t.Flags)
	}
	id, err := parse(t, *c, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		t.PrintUsage(stdout)
		return 0
	case errors.Is(err, tool.ErrVersion):
		fmt.Fprintln(stdout, t.Version())
		return 0
	case err == nil:
		if err = sys.NeedCaps(sys.CAP_SYS_ADMIN); err != nil {
			err = fmt.Errorf("needs root: %w", err)
		} else {
			err = c.run(t, id)
		}
	}
	return t.Report(err)
}

// printUsage writes bpfkit -h: every command, then a few examples.
func printUsage(w io.Writer) {
	fmt.Fprintf(w, "bpfkit: inspect the BPF programs, maps, links, perf attachments and probe "+
		"events of this kernel\n\n"+
		"usage: bpfkit COMMAND [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", c.words+c.objectUsage(), c.summary)
	}
	fmt.Fprintf(w, "\nEvery command takes -json (one JSON object per line) and -h (its flags and "+
		"examples).\n\nexamples:\n"+
		"  bpfkit prog list              # every program: type, name, tag, maps, the processes holding it\n"+
		"  bpfkit prog dump -opcodes 12  # program 12's instructions as the verifier rewrote them\n"+
		"  bpfkit perf list -json        # which process attached which program where\n"+
		"  bpfkit features               # what this kernel supports, by trying\n")
}

// printGroupUsage writes bpfkit GROUP -h: the commands of one group, such
// as prog's list, show and dump.
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "usage:\n")
	for _, c := range commands {
		if first, _, _ := strings.Cut(c.words, " "); first == group {
			fmt.Fprintf(w, "  bpfkit %-22s %s\n", c.words+c.objectUsage(), c.summary)
		}
	}
}

// objectUsage is what follows a command's words in the list of commands.
func (c *command) objectUsage() string {
	if c.id {
		return " ID"
	}
	return ""
}

// groups is the first words of the commands, in their order, each once.
func groups() []string {
	var gs []string
	for _, c := range commands {
		if first, _, _ := strings.Cut(c.words, " "); !slices.Contains(gs, first) {
			gs = append(gs, first)
		}
	}
	return gs
}

// subcommands is the second words of the commands of group: "" for a
// group that is a command itself (probes, features, top).
func subcommands(group string) []string {
	var subs []string
	for _, c := range commands {
		if first, second, _ := strings.Cut(c.words, " "); first == group {
			subs = append(subs, second)
		}
	}
	return subs
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
