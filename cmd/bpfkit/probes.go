package main

import (
	"fmt"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/tracefs"
)

// probes lists the events of kprobe_events and uprobe_events.
func probes(t *tool.Tool, _ []uint32) error {
	n := 0
	for _, k := range []tracefs.ProbeKind{tracefs.Kprobe, tracefs.Uprobe} {
		evs, err := tracefs.Events(k)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			n++
			o := tracefs.Owner(ev)
			ours, stale, why := o.Bpfkit, o.Stale, o.Why
			if t.JSON {
				t.Emit(map[string]any{
					"file":   k.PMU() + "_events",
					"event":  ev,
					"bpfkit": ours,
					"stale":  stale,
					"reason": why,
				})
				continue
			}
			owner := "not bpfkit's"
			switch {
			case stale:
				owner = "bpfkit's, stale: its process is gone (bpfkit probes sweep removes it)"
			case ours:
				owner = "bpfkit's: " + why
			}
			fmt.Fprintf(t.Stdout, "%s_events  %s  %s\n", k.PMU(), ev, owner)
		}
	}
	if n == 0 && !t.JSON {
		fmt.Fprintln(t.Stdout, "no kprobe or uprobe events")
	}
	return nil
}

// sweep removes the events of bpfkit processes that are gone.
func sweep(t *tool.Tool, _ []uint32) error {
	removed, kept, err := tracefs.Sweep()
	for _, ev := range removed {
		if t.JSON {
			t.Emit(map[string]any{"event": ev, "removed": true})
		} else {
			fmt.Fprintf(t.Stdout, "removed %s\n", ev)
		}
	}
	for _, k := range kept {
		if t.JSON {
			t.Emit(map[string]any{"event": k.Event, "removed": false, "reason": k.Reason})
		} else {
			fmt.Fprintf(t.Stdout, "kept %s: %s\n", k.Event, k.Reason)
		}
	}
	if !t.JSON && len(removed)+len(kept) == 0 && err == nil {
		fmt.Fprintln(t.Stdout, "no bpfkit events")
	}
	return err
}
