package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// find picks the command args name and returns it with the arguments
// left for it; on an error, where says whose: "bpfkit" or "bpfkit prog".
// Words may be cut short where only one command word begins so, as
// bpftool takes them ("prog sh"); flags may come before the words
// ("-json prog list") and go to the command. A missing or unknown word is
// a usage error of one line that says what was expected and, for a typo,
// which word was meant; -h after a group's word alone is flag.ErrHelp.
func find(args []string) (c *command, rest []string, where string, err error) {
	var flags, words []string
	for i, arg := range args {
		if strings.HasPrefix(arg, "-") && len(arg) > 1 {
			flags = append(flags, arg)
			continue
		}
		words = args[i:]
		break
	}
	if len(words) == 0 {
		if slices.ContainsFunc(flags, isHelp) {
			return nil, nil, "bpfkit", flag.ErrHelp
		}
		err := tool.Usagef("no command: bpfkit -h lists them (%s)", strings.Join(groups(), ", "))
		return nil, nil, "bpfkit", err
	}
	group, err := pick(words[0], groups(), "bpfkit -h lists the commands")
	if err != nil {
		return nil, nil, "bpfkit", err
	}
	c, rest, err = findIn(group, words[1:])
	if err != nil {
		return nil, nil, "bpfkit " + group, err
	}
	return c, append(flags, rest...), "", nil
}

// findIn picks the command of group that args name: the group itself
// (probes, features, top) or one of its subcommands (prog show).
func findIn(group string, args []string) (*command, []string, error) {
	subs := subcommands(group)
	var flags []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		flags, args = append(flags, args[0]), args[1:]
	}
	sub := ""
	named := slices.DeleteFunc(slices.Clone(subs), func(s string) bool { return s == "" })
	if len(named) > 0 {
		takes := fmt.Sprintf("%s takes %s; bpfkit %s -h says more", group, orList(named), group)
		switch {
		case len(args) > 0 && (!slices.Contains(subs, "") || prefixOf(args[0], named) != ""):
			var err error
			if sub, err = pick(args[0], named, takes); err != nil {
				return nil, nil, err
			}
			args = args[1:]
		case !slices.Contains(subs, "") && slices.ContainsFunc(flags, isHelp):
			return nil, nil, flag.ErrHelp
		case !slices.Contains(subs, ""):
			return nil, nil, tool.Usagef("missing command: %s", takes)
		}
	}
	for i := range commands {
		if commands[i].words == strings.TrimSpace(group+" "+sub) {
			return &commands[i], append(flags, args...), nil
		}
	}
	// Unreached: subcommands lists only the commands there are.
	return nil, nil, fmt.Errorf("no command %q", group+" "+sub)
}

// pick is the command word of words that typed names: itself, or the one
// word it begins. Else it is a usage error naming what was typed, the
// closest word if one is close (a typo), and how to learn the words
// (hint).
func pick(typed string, words []string, hint string) (string, error) {
	if slices.Contains(words, typed) {
		return typed, nil
	}
	if w := prefixOf(typed, words); w != "" {
		return w, nil
	}
	var begun []string
	for _, w := range words {
		if strings.HasPrefix(w, typed) {
			begun = append(begun, w)
		}
	}
	if len(begun) > 1 {
		return "", tool.Usagef("ambiguous command %q: %s?", typed, orList(begun))
	}
	if w := closest(typed, words); w != "" {
		return "", tool.Usagef("unknown command %q: did you mean %q? (%s)", typed, w, hint)
	}
	return "", tool.Usagef("unknown command %q (%s)", typed, hint)
}

// prefixOf is the one word of words that typed begins, or "".
func prefixOf(typed string, words []string) string {
	found := ""
	for _, w := range words {
		if typed == "" || !strings.HasPrefix(w, typed) {
			continue
		}
		if found != "" {
			return ""
		}
		found = w
	}
	return found
}

// closest is the word of words nearest to typed by edit distance, if it
// is near enough to be a typo of it: one edit for a word of four letters
// or fewer ("prgo" for prog, not "nope" for top), two for a longer one.
func closest(typed string, words []string) string {
	limit := 2
	if len(typed) <= 4 {
		limit = 1
	}
	best, bestDistance := "", limit+1
	for _, w := range words {
		if d := editDistance(typed, w); d < bestDistance {
			best, bestDistance = w, d
		}
	}
	return best
}

// editDistance is the edit distance between a and b: the fewest
// insertions, deletions, substitutions and swaps of two neighbouring
// bytes (the commonest typo) that make one the other, each swapped pair
// edited no further (optimal string alignment).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			substitution := d[i-1][j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, substitution)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// orList joins words as a sentence does: "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// isHelp says whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}
