package main

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/tracefs"
)

// event is one thing funccount counts: a tracepoint or a kernel function.
type event struct {
	name       string // as printed: "syscalls:sys_enter_read", "vfs_read"
	tracepoint bool
}

// group and tpName split a tracepoint's name, "group:name".
func (e event) group() string  { g, _, _ := strings.Cut(e.name, ":"); return g }
func (e event) tpName() string { _, n, _ := strings.Cut(e.name, ":"); return n }

// pattern is one argument, read: a glob over tracepoints ("group:name")
// or over kernel functions.
type pattern struct {
	text       string // as given, for messages
	glob       string // without its prefix
	tracepoint bool
}

// The prefixes bcc's funccount (t:) and bpftrace (tracepoint:, t:,
// kprobe:, k:) put before a tracepoint or a kernel function.
var (
	tracepointPrefixes = []string{"tracepoint:", "t:"}
	functionPrefixes   = []string{"kprobe:", "k:"}
)

// parsePattern reads one pattern: "t:group:name", "tracepoint:...",
// "k:func", "kprobe:func", or without a prefix "group:name" (a
// tracepoint) or "func". Anything else is a usage error that quotes it.
func parsePattern(text string) (pattern, error) {
	bad := func(why string) (pattern, error) {
		return pattern{}, tool.Usagef("pattern %q %s", text, why)
	}
	switch {
	case text == "":
		return bad("is empty: give a tracepoint (group:name) or a kernel function")
	case strings.ContainsAny(text, " \t\n\r\x00"):
		return bad("holds white space or a NUL: no tracepoint or function name has one")
	case tool.IsNumber(text) && !strings.Contains(text, ":"):
		return bad("is a number: the interval and count come last, after the patterns, " +
			"at most two of them")
	}
	p := pattern{text: text, glob: text}
	prefixed := false
	for _, pre := range tracepointPrefixes {
		if rest, ok := strings.CutPrefix(text, pre); ok {
			p.glob, p.tracepoint, prefixed = rest, true, true
		}
	}
	for _, pre := range functionPrefixes {
		if rest, ok := strings.CutPrefix(text, pre); ok {
			p.glob, prefixed = rest, true
		}
	}
	if !prefixed {
		p.tracepoint = strings.Contains(text, ":")
	}
	if _, err := path.Match(p.glob, ""); err != nil {
		return pattern{}, tool.Usagef("pattern %q: %v", text, err)
	}
	group, name, colon := strings.Cut(p.glob, ":")
	switch {
	case p.tracepoint && (group == "" || name == "" || strings.Contains(name, ":")):
		return bad("is no tracepoint: give group:name, both (globs allowed): syscalls:sys_enter_*")
	case !p.tracepoint && colon:
		return bad("is no kernel function, which has no ':' (prefixes: t: or tracepoint:, " +
			"k: or kprobe:)")
	case !p.tracepoint && p.glob == "":
		return bad("has no function after its prefix")
	}
	return p, nil
}

// expand turns patterns into events, in the order given, each once:
// tracepoint globs against tracefs's events, function globs against the
// functions ftrace can trace, plain function names as given. It fails
// when a pattern matches nothing or all match more than maxEvents.
func expand(patterns []pattern, maxEvents int) ([]event, error) {
	var out []event
	seen := map[string]bool{}
	var funcs []string // read once, if a function glob needs it
	for _, p := range patterns {
		var matches []string
		var err error
		switch {
		case p.tracepoint:
			matches, err = tracepoints(p.glob)
		case strings.ContainsAny(p.glob, "*?["):
			if funcs == nil {
				if funcs, err = traceableFunctions(p); err != nil {
					return nil, err
				}
			}
			matches = matching(funcs, p.glob)
		default:
			matches = []string{p.glob}
		}
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			what := map[bool]string{true: "tracepoint", false: "kernel function"}[p.tracepoint]
			return nil, fmt.Errorf("pattern %q matches no %s", p.text, what)
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, event{name: m, tracepoint: p.tracepoint})
			}
		}
		if len(out) > maxEvents {
			return nil, tool.Usagef("the patterns match %d events or more, more than -max %d",
				len(out), maxEvents)
		}
	}
	return out, nil
}

// tracepoints lists the tracepoints "group:name" matching glob, sorted.
func tracepoints(glob string) ([]string, error) {
	dir, err := tracefs.Path()
	if err != nil {
		return nil, err
	}
	group, name, _ := strings.Cut(glob, ":")
	ids, err := filepath.Glob(filepath.Join(dir, "events", group, name, "id"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		rel, _ := filepath.Rel(filepath.Join(dir, "events"), filepath.Dir(id))
		g, n, _ := strings.Cut(rel, string(filepath.Separator))
		out = append(out, g+":"+n)
	}
	return out, nil
}

// traceableFunctions is the list a function glob is matched against. A
// kernel without kprobes or kprobe_multi links is said to be one before
// the list is read: its refusal (EPERM here) would not say why.
func traceableFunctions(p pattern) ([]string, error) {
	if err := canCountFunctions(p.text); err != nil {
		return nil, err
	}
	funcs, err := ftraceFunctions()
	if err != nil {
		return nil, fmt.Errorf("pattern %q needs the list of kernel functions: %w", p.text, err)
	}
	return funcs, nil
}

// functionList is tracefs.Functions's answer, asked once: the list is
// long (40,000 functions and more), and a glob and the kprobe_multi link
// both need it.
var functionList struct {
	read  bool
	names []string
	err   error
}

func ftraceFunctions() ([]string, error) {
	if !functionList.read {
		functionList.names, functionList.err = tracefs.Functions()
		functionList.read = true
	}
	return functionList.names, functionList.err
}

// canCountFunctions says why kernel functions cannot be counted here, if
// they cannot: neither kprobe_multi links nor kprobes.
func canCountFunctions(what string) error {
	if multi, err := prog.HaveKprobeMulti(); err == nil && multi {
		return nil
	}
	if err := prog.ProbesSupported(tracefs.Kprobe); err != nil {
		return fmt.Errorf("%q names kernel functions: %w", what, err)
	}
	return nil
}

// matching is the names that match glob, each once, in the list's order.
func matching(names []string, glob string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if ok, _ := path.Match(glob, n); ok && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// dynamicEvents is the set of the events, "group:name", that are not
// kernel tracepoints but made at run time (tracefs.DynamicEvents): a raw
// tracepoint of the same name would be another thing.
func dynamicEvents() (map[string]bool, error) {
	evs, err := tracefs.DynamicEvents()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range evs {
		out[strings.Replace(e, "/", ":", 1)] = true
	}
	return out, nil
}
