package main

import (
	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

var opcodes bool     // prog dump -opcodes
var helpersOf string // features -helpers

// commands are bpfkit's commands, in the order bpfkit -h lists them.
var commands = []command{
	{
		words: "prog list",
		usage: "[-json] [PROG]",
		summary: "programs: type, name, tag, when and by whom loaded, maps, statistics, " +
			"the processes holding them",
		examples: []string{
			"bpfkit prog list",
			"bpfkit prog list -json | jq 'select(.type == \"kprobe\")'",
		},
		object:   "prog",
		optional: true,
		run:      listProgs,
	},
	{
		words:   "prog show",
		usage:   "[-json] [PROG]",
		summary: "the same as prog list, as bpftool has both",
		examples: []string{
			"bpfkit prog show 12",
			"bpfkit prog show id 12",
			"bpfkit prog show name dropmon",
		},
		object:   "prog",
		optional: true,
		run:      listProgs,
	},
	{
		words: "prog dump",
		usage: "[-opcodes] [-json] [xlated] PROG [opcodes]",
		summary: "a program's instructions as the verifier rewrote them " +
			"(bpftool prog dump xlated)",
		examples: []string{
			"bpfkit prog dump 12",
			"bpfkit prog dump xlated id 12 opcodes   # as bpftool takes it",
			"bpfkit prog dump -opcodes -json 12",
		},
		object: "prog",
		dump:   true,
		flags: func(t *tool.Tool) {
			t.Flags.BoolVar(&opcodes, "opcodes", false, "print each instruction's bytes too")
		},
		run: dumpProg,
	},
	{
		words:    "map list",
		usage:    "[-json] [MAP]",
		summary:  "maps: type, name, flags, key and value sizes, the processes holding them",
		examples: []string{"bpfkit map list"},
		object:   "map",
		optional: true,
		run:      listMaps,
	},
	{
		words:    "map show",
		usage:    "[-json] [MAP]",
		summary:  "the same as map list, as bpftool has both",
		examples: []string{"bpfkit map show 3", "bpfkit map show name drops"},
		object:   "map",
		optional: true,
		run:      listMaps,
	},
	{
		words:    "map dump",
		usage:    "[-json] MAP",
		summary:  "a map's keys and values in hex, per-CPU values CPU by CPU",
		examples: []string{"bpfkit map dump 3", "bpfkit map dump -json id 3"},
		object:   "map",
		run:      dumpMap,
	},
	{
		words:    "link list",
		usage:    "[-json]",
		summary:  "every BPF link: type, program, attach type and target",
		examples: []string{"bpfkit link list"},
		run:      links,
	},
	{
		words: "perf list",
		usage: "[-json]",
		summary: "which process attached which program to which tracepoint, kprobe or uprobe " +
			"(bpftool perf)",
		examples: []string{"bpfkit perf list", "bpfkit perf list -json"},
		run:      perf,
	},
	{
		words:    "probes",
		usage:    "[-json]",
		summary:  "the kprobe and uprobe events of tracefs; bpfkit's marked, stale ones too",
		examples: []string{"bpfkit probes"},
		run:      probes,
	},
	{
		words: "probes sweep",
		usage: "[-json]",
		summary: "remove the events of bpfkit processes that are gone; " +
			"say why the others stay",
		examples: []string{"bpfkit probes sweep"},
		run:      sweep,
	},
	{
		words:   "features",
		usage:   "[-helpers TYPE] [-json]",
		summary: "what this kernel supports, by trying, with the errno each answer rests on",
		examples: []string{
			"bpfkit features",
			"bpfkit features -helpers kprobe   # and which helpers kprobe programs may call",
		},
		flags: func(t *tool.Tool) {
			t.Flags.StringVar(&helpersOf, "helpers", "",
				"probe every helper for programs of type `TYPE` (kprobe, xdp, ... or a number)")
		},
		run: features,
	},
	topCommand,
}
