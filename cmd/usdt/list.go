package main

import (
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/usdt"
)

// list prints the probes of the file at path (-l): each with its call
// sites, their semaphore and their arguments as the notes write them.
func list(t *tool.Tool, path string) error {
	f, err := usdt.Open(path)
	if err != nil {
		return err
	}
	for _, p := range f.Probes {
		sites := p.Sites
		if t.JSON {
			if err := t.Emit(struct {
				Probe string      `json:"probe"`
				Sites []usdt.Site `json:"sites"`
			}{p.String(), sites}); err != nil {
				return err
			}
			continue
		}
		sem := "no semaphore"
		if a := sites[0].Semaphore; a != 0 {
			sem = fmt.Sprintf("semaphore %#x", a)
		}
		plural := map[bool]string{true: "s"}[len(sites) > 1]
		fmt.Fprintf(t.Stdout, "%s  %d site%s  %s\n", p.String(), len(sites), plural, sem)
		for _, s := range sites {
			fmt.Fprintf(t.Stdout, "    %#x  %s\n", s.Address, s.Args)
		}
	}
	return nil
}
