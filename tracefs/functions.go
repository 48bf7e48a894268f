package tracefs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Functions lists the kernel functions ftrace can trace, from
// available_filter_functions: those a kprobe_multi link accepts, and those
// a kprobe may be put on without the kernel refusing them as unsafe to
// probe. A function of a module is listed by its name alone. Names can
// repeat: static functions of the same name in different files are one
// line each (a kprobe or a kprobe_multi link by name takes the first that
// kallsyms lists).
//
// The file needs CONFIG_DYNAMIC_FTRACE; reading it needs root. The error
// keeps the errno: EPERM where the kernel keeps the list to itself, ENOENT
// where it has none.
func Functions() ([]string, error) {
	dir, err := Path()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(dir + "/available_filter_functions")
	if err != nil {
		return nil, fmt.Errorf("tracefs: the traceable kernel functions: %w", err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// "name" or "name [module]"; 6.5 added an address column only to
		// available_filter_functions_addrs, not to this file.
		if name, _, _ := strings.Cut(s.Text(), " "); name != "" {
			names = append(names, name)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("tracefs: available_filter_functions: %w", err)
	}
	return names, nil
}
