package main

import (
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/prog"
)

// links prints every BPF link.
func links(t *tool.Tool, _ []uint32) error {
	held, err := holders()
	if err != nil {
		return err
	}
	return each(prog.NextLinkID, nil, func(id uint32) error {
		l, err := prog.LinkByID(id)
		if err != nil {
			return err
		}
		ps := sortedProcs(held[key{"link", id}])
		if t.JSON {
			return t.Emit(struct {
				*prog.LinkInfo
				Pids []proc `json:"pids,omitempty"`
			}{l, ps})
		}
		fmt.Fprintf(t.Stdout, "%d: %s  prog %d", l.ID, l.Type, l.ProgID)
		if l.AttachType != "" {
			fmt.Fprintf(t.Stdout, "  attach_type %s", l.AttachType)
		}
		if l.Target != "" {
			fmt.Fprintf(t.Stdout, "  target %s", l.Target)
		}
		fmt.Fprintln(t.Stdout)
		printPids(t, ps)
		return nil
	})
}
