// Command bpfkit inspects what BPF is doing in the running kernel, for
// security review and operations: the programs loaded (with the
// instructions as the verifier rewrote them), the maps and what they hold,
// the links, which process attached which program to which tracepoint,
// kprobe or uprobe, the kprobe and uprobe events of tracefs (telling this
// library's and the stale ones), what the kernel supports, found by
// trying, and, live, what each program costs the machine (top). Each
// command prints text, or with -json one JSON object per line whose fields
// are bpftool's where bpftool has the fact.
//
// Commands take bpftool's forms too: "prog show id 12", "prog dump xlated
// name dropmon opcodes", "map dump pinned /sys/fs/bpf/m", and a command
// word may be cut short where only one command begins so ("bpfkit prog
// sh 12").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/sys"
)

// command is one subcommand: "prog show", "map dump".
type command struct {
	words    string   // what selects it: "prog show"
	usage    string   // what follows the words on its usage line
	summary  string   // one line for bpfkit -h
	examples []string // whole command lines, each with a comment after " # "
	// object is "prog" or "map" for a command that takes one (PROG or
	// MAP: an ID, or bpftool's id ID, name NAME, tag TAG, pinned PATH),
	// "" for one that takes none.
	object   string
	optional bool                     // the object may be left out, meaning every one
	dump     bool                     // bpftool's "xlated" may come first, "opcodes" last
	flags    func(t *tool.Tool)       // defines the command's own flags
	setup    func(t *tool.Tool)       // makes the tool periodic, say, before parsing
	check    func(t *tool.Tool) error // checks the flags' values once parsed
	// run runs the command on the objects ids names, nil for every one.
	run func(t *tool.Tool, ids []uint32) error
}

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
	if c.setup != nil {
		c.setup(t)
	}
	if c.flags != nil {
		c.flags(t)
	}
	ids, err := c.parse(t, args)
	if err == nil && c.check != nil {
		err = c.check(t)
	}
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
			err = c.run(t, ids)
		}
	}
	return t.Report(err)
}

// printUsage writes bpfkit -h: every command, then a few examples.
func printUsage(w io.Writer) {
	fmt.Fprintf(w, "bpfkit: inspect the BPF programs, maps, links, perf attachments and probe "+
		"events of this kernel, and what each program costs\n\n"+
		"usage: bpfkit COMMAND [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", c.words+c.objectUsage(), c.summary)
	}
	fmt.Fprintf(w, "\nPROG is a program's ID, or as bpftool has it id ID, name NAME, tag TAG or "+
		"pinned PATH;\nMAP the same without tag. Every command takes -json (one JSON object per "+
		"line)\nand -h (its flags and examples).\n\nexamples:\n"+
		"  bpfkit prog list              # every program: type, name, tag, maps, the processes holding it\n"+
		"  bpfkit prog dump -opcodes 12  # program 12's instructions as the verifier rewrote them\n"+
		"  bpfkit perf list -json        # which process attached which program where\n"+
		"  bpfkit top                    # what each program costs, live, like top\n"+
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
	object := strings.ToUpper(c.object)
	switch {
	case c.object == "":
		return ""
	case c.optional:
		return " [" + object + "]"
	}
	return " " + object
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
