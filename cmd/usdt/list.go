package main

import (
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/usdt"
)

// list prints the probes of the file at path (-l): each with its call
// sites, their semaphore and their arguments as the notes write them.
// What the file says is untrusted: a name that is not an identifier, and
// arguments that are not printable, are quoted, so that a newline in a
// name cannot forge a line and an escape sequence does not reach the
// terminal.
func list(t *tool.Tool, path string) error {
	f, err := usdt.Open(path)
	if err != nil {
		return err
	}
	for _, p := range f.Probes {
		sites := make([]usdt.Site, len(p.Sites))
		for i, s := range p.Sites {
			s.Args = printable(s.Args)
			sites[i] = s
		}
		if t.JSON {
			if err := t.Emit(struct {
				Probe string      `json:"probe"`
				Sites []usdt.Site `json:"sites"`
			}{p.Quoted(), sites}); err != nil {
				return err
			}
			continue
		}
		sem := "no semaphore"
		if a := sites[0].Semaphore; a != 0 {
			sem = fmt.Sprintf("semaphore %#x", a)
		}
		plural := map[bool]string{true: "s"}[len(sites) > 1]
		fmt.Fprintf(t.Stdout, "%s  %d site%s  %s\n", p.Quoted(), len(sites), plural, sem)
		for _, s := range sites {
			fmt.Fprintf(t.Stdout, "    %#x  %s\n", s.Address, s.Args)
		}
	}
	return nil
}
