package tests

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// TestXlatedMatchesBpftool loads a program with bpf-to-bpf calls, a map
// value load and helper calls, and compares prog.Info's Listing with what
// `bpftool prog dump xlated` prints for it. The kernel moves a bpf-to-bpf
// call's offset into off in the xlated instructions; bpftool adds the JIT's
// symbol for the callee ("call pc+5#bpf_prog_TAG_F"), which Listing does not
// know, so that suffix is cut from bpftool's lines.
func TestXlatedMatchesBpftool(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	bpftool, err := exec.LookPath("bpftool")
	if err != nil {
		t.Skip("no bpftool on PATH (Debian package bpftool)")
	}
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Name: "xlated"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "xlated", License: "GPL", Insns: []Item{
		LoadMapValue(R6, m, 8),
		CallFunc("double"),
		Mov64Reg(R1, R0),
		CallFunc("inc"),
		StoreMem(BPF_DW, R6, 0, R0),
		Call(BPF_FUNC_ktime_get_ns),
		Mov64Imm(R0, 0),
		Exit(),
		Label("double"),
		Mov64Imm(R0, 21),
		ALU64Imm(BPF_LSH, R0, 1),
		Exit(),
		Label("inc"),
		Mov64Reg(R0, R1),
		ALU64Imm(BPF_ADD, R0, 1),
		Exit(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64)})
	if err != nil || res.Retval != 0 {
		t.Fatalf("test run: %v, %+v", err, res)
	}
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bpftool, "prog", "dump", "xlated", "id", strconv.Itoa(int(info.ID))).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Skipf("bpftool cannot dump: %v\n%s", err, out)
		}
		t.Fatal(err)
	}
	jitSym := regexp.MustCompile(`(call pc[-+]\d+)#\S+`)
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line = strings.TrimRight(line, " "); line != "" {
			want = append(want, jitSym.ReplaceAllString(line, "$1"))
		}
	}
	got := strings.Split(strings.TrimRight(info.Listing(), "\n"), "\n")
	t.Logf("bpftool:\n%s", out)
	t.Logf("Listing:\n%s", info.Listing())
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = strings.TrimSpace(got[i])
		}
		if i < len(want) {
			w = strings.TrimSpace(want[i])
		}
		if g != w {
			t.Errorf("line %d:\n\tListing %q\n\tbpftool %q", i, g, w)
		}
	}
}
