package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
)

// pipeLines are trace_pipe's lines as 6.18 and 5.4 write them: packets of
// lo and of another device, another program's line, and the kernel's note
// of events the trace buffer lost on two CPUs.
var pipeLines = strings.Join([]string{
	"          <idle>-0       [001] ..s2. 24211.331022: " +
		"bpf_trace_printk: tracex1: dev lo ns 24211331016123 len 805",
	"CPU:0 [LOST 4511 EVENTS]",
	"       tests.test-8812    (   8800) [000] b..1. 24211.331500: " +
		"bpf_trace_printk: tracex1: dev eth0 ns 24211331499000 len 60",
	"            curl-9001    [000] d.s1 24211.332000: " +
		"0: tracex1: dev lo ns 24211331999000 len 1500",
	"            bash-77      [001] .... 24211.333000: " +
		"bpf_trace_printk: hello from another program",
	"CPU:1 [LOST 12 EVENTS]",
	"",
}, "\n")

// readLines feeds lines to readPipe through a pipe, as tracex1 -printk
// would read them for lo, and returns what it printed, with its summary,
// and the events it counted lost.
func readLines(t *testing.T, lines string, asJSON bool) (string, uint64) {
	t.Helper()
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	go func() {
		wr.WriteString(lines)
		wr.Close()
	}()
	var out bytes.Buffer
	tl := tool.New("tracex1", "", "")
	tl.JSON, tl.Stdout = asJSON, &out
	p := &printer{t: tl}
	lost, err := readPipe(tl, rd, "lo", p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.summary(lost, "trace events"); err != nil {
		t.Fatal(err)
	}
	return out.String(), lost
}

// TestReadPipeLost: the lines where trace_pipe says the trace buffer lost
// events are reported as the perf ring's losses are, in text and as
// {"time", "lost", "cpu"} with -json, and summed in the summary; lo's
// packets are printed, others' lines left out.
func TestReadPipeLost(t *testing.T) {
	out, lost := readLines(t, pipeLines, false)
	for _, want := range []string{
		"lost 4511 trace events on CPU 0: the trace buffer was full\n",
		"lost 12 trace events on CPU 1: the trace buffer was full\n",
		"dev lo ns 24211331016123 len 805\n",
		"dev lo ns 24211331999000 len 1500\n",
		"\n2 packets, 4523 trace events lost\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if lost != 4523 || strings.Contains(out, "eth0") || strings.Contains(out, "another program") {
		t.Errorf("%d events lost, want 4523; and only lo's packets:\n%s", lost, out)
	}
	out, _ = readLines(t, pipeLines, true)
	for _, want := range []string{`"lost":4511,"cpu":0}`, `"lost":12,"cpu":1}`,
		`"cpu":1,"comm":"\u003cidle\u003e","device":"lo","len":805}`,
		`"cpu":0,"tid":9001,"comm":"curl","device":"lo","len":1500}`} {
		if !strings.Contains(out, want) {
			t.Errorf("-json: no %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("-json: %d lines, want 4 (2 losses, 2 packets):\n%s", n, out)
	}
}

// TestLostEvents: only the kernel's whole note reads as a loss.
func TestLostEvents(t *testing.T) {
	for line, want := range map[string]uint64{
		"CPU:3 [LOST 18446744073709551615 EVENTS]": 1<<64 - 1,
		"CPU:0 [LOST 1 EVENTS]":                    1,
		"CPU:0 [LOST 1 EVENTS] ":                   0,
		"CPU:x [LOST 1 EVENTS]":                    0,
		"CPU:0 [LOST -1 EVENTS]":                   0,
		"bash-1 [000] CPU:0 [LOST 1 EVENTS]":       0,
	} {
		_, n, ok := lostEvents([]byte(line))
		if ok != (want > 0) || ok && n != want {
			t.Errorf("%q: %d, %v; want %d", line, n, ok, want)
		}
	}
}
