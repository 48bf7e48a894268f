package main

import (
	"flag"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

var opcodes bool // prog dump -opcodes

var helpersOf string // features -helpers

func init() {
	commands = []command{
		{words: "prog list", usage: "[-json]", summary: "every program: type, name, tag, when and by whom loaded, maps, statistics, the processes holding it",
			examples: []string{"bpfkit prog list", "bpfkit prog list -json | jq 'select(.type == \"kprobe\")'"},
			run:      func(t *tool.Tool, _ uint32) error { return progs(t, 0) }},
		{words: "prog show", usage: "[-json] ID", summary: "one program, as prog list shows it", id: true,
			examples: []string{"bpfkit prog show 12"}, run: progs},
		{words: "prog dump", usage: "[-opcodes] [-json] ID", summary: "a program's instructions as the verifier rewrote them (bpftool prog dump xlated)", id: true,
			examples: []string{"bpfkit prog dump 12", "bpfkit prog dump -opcodes -json 12"},
			flags:    func(fs *flag.FlagSet) { fs.BoolVar(&opcodes, "opcodes", false, "print each instruction's bytes too") },
			run:      dumpProg},
		{words: "map list", usage: "[-json]", summary: "every map: type, name, flags, key and value sizes, the processes holding it",
			examples: []string{"bpfkit map list"}, run: func(t *tool.Tool, _ uint32) error { return maps(t, 0) }},
		{words: "map show", usage: "[-json] ID", summary: "one map, as map list shows it", id: true,
			examples: []string{"bpfkit map show 3"}, run: maps},
		{words: "map dump", usage: "[-json] ID", summary: "a map's keys and values in hex, per-CPU values CPU by CPU", id: true,
			examples: []string{"bpfkit map dump 3", "bpfkit map dump -json 3"}, run: dumpMap},
		{words: "link list", usage: "[-json]", summary: "every BPF link: type, program, attach type and target",
			examples: []string{"bpfkit link list"}, run: links},
		{words: "perf list", usage: "[-json]", summary: "which process attached which program to which tracepoint, kprobe or uprobe (bpftool perf)",
			examples: []string{"bpfkit perf list", "bpfkit perf list -json"}, run: perf},
		{words: "probes", usage: "[-json]", summary: "the kprobe and uprobe events of tracefs; bpfkit's marked, stale ones too",
			examples: []string{"bpfkit probes"}, run: probes},
		{words: "probes sweep", usage: "[-json]", summary: "remove the events of bpfkit processes that are gone; say why the others stay",
			examples: []string{"bpfkit probes sweep"}, run: sweep},
		{words: "features", usage: "[-helpers TYPE] [-json]", summary: "what this kernel supports, by trying, with the errno each answer rests on",
			examples: []string{"bpfkit features", "bpfkit features -helpers kprobe   # and which helpers kprobe programs may call"},
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&helpersOf, "helpers", "", "probe every helper for programs of type `TYPE` (kprobe, xdp, ... or a number)")
			},
			run: features},
	}
}
