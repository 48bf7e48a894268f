package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/usdt"
)

// sdtProbe builds usdt/testdata/sdt.c, a C program with USDT probes, and
// returns its probe bpfkit:args and the arguments of its site.
func sdtProbe(t *testing.T) (*usdt.Probe, [][]usdt.Arg) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the programs are loaded")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc: install gcc, libc6-dev and systemtap-sdt-dev")
	}
	path := filepath.Join(t.TempDir(), "sdt")
	gcc := exec.Command("gcc", "-O2", "-o", path, "../../usdt/testdata/sdt.c")
	if b, err := gcc.CombinedOutput(); err != nil {
		t.Skipf("gcc: %v\n%s", err, b)
	}
	f, err := usdt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Probe("bpfkit:args")
	if err != nil {
		t.Fatal(err)
	}
	sites, err := p.ParseArgs()
	if err != nil {
		t.Fatal(err)
	}
	return p, sites
}

// built attaches build's program to p, in this process only (which never
// fires it): the verifier accepts it, and its instructions are returned.
func built(t *testing.T, p *usdt.Probe, build usdt.Builder) []insn.Instruction {
	t.Helper()
	var items []insn.Item
	kept := func(args *usdt.Args) ([]insn.Item, error) {
		var err error
		items, err = build(args)
		return items, err
	}
	a, err := usdt.Attach(p, usdt.Options{PID: os.Getpid()}, kept)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	ins, err := insn.Assemble(items)
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

// stackUse is what a reading of a program, in order and ignoring jumps,
// finds it does with its stack: the bytes it writes, by offset from r10,
// and what r4 and r5 hold (as r10+N, and a constant) when it calls
// bpf_perf_event_output. The programs set each helper's arguments right
// before its call, so this reading is enough; it is no verifier.
type stackUse struct {
	written              map[int64]bool
	outputAt, outputSize int64
	outputCalls          int
}

func readStack(ins []insn.Instruction) stackUse {
	type reg struct {
		known, stack bool
		n            int64 // the constant, or the offset from r10
	}
	var regs [11]reg
	regs[insn.R10] = reg{known: true, stack: true}
	u := stackUse{written: map[int64]bool{}}
	mark := func(from, n int64) {
		for b := from; b < from+n; b++ {
			u.written[b] = true
		}
	}
	sizes := map[insn.Size]int64{insn.BPF_B: 1, insn.BPF_H: 2, insn.BPF_W: 4, insn.BPF_DW: 8}
	for i := 0; i < len(ins); i++ {
		in := ins[i]
		switch class, op := in.Class(), in.ALUOp(); {
		case class == insn.BPF_ALU64 && op == insn.BPF_MOV && in.Source() == insn.BPF_X:
			regs[in.Dst] = regs[in.Src]
		case class == insn.BPF_ALU64 && op == insn.BPF_MOV:
			regs[in.Dst] = reg{known: true, n: int64(in.Imm)}
		case class == insn.BPF_ALU64 && op == insn.BPF_ADD && in.Source() == insn.BPF_K:
			regs[in.Dst].n += int64(in.Imm)
		case class == insn.BPF_ALU || class == insn.BPF_ALU64 || class == insn.BPF_LDX:
			regs[in.Dst] = reg{}
		case in.IsLoadImm64():
			regs[in.Dst] = reg{}
			i++
		case (class == insn.BPF_ST || class == insn.BPF_STX) && in.Mode() == insn.BPF_MEM &&
			regs[in.Dst].stack:
			mark(regs[in.Dst].n+int64(in.Off), sizes[in.Size()])
		case class == insn.BPF_JMP && in.JumpOp() == insn.BPF_CALL:
			r1, r2 := regs[insn.R1], regs[insn.R2]
			switch insn.Helper(in.Imm) {
			case insn.BPF_FUNC_get_current_comm, insn.BPF_FUNC_probe_read_user:
				mark(r1.n, r2.n) // they fill the buffer whole, zeros on failure
			case insn.BPF_FUNC_perf_event_output:
				u.outputCalls++
				u.outputAt, u.outputSize = regs[insn.R4].n, regs[insn.R5].n
			}
			for r := insn.R0; r <= insn.R5; r++ {
				regs[r] = reg{}
			}
		}
	}
	return u
}

// checkWritten fails t unless u writes every byte of what, size bytes at
// r10+at.
func checkWritten(t *testing.T, u stackUse, what string, at, size int64) {
	t.Helper()
	for b := at; b < at+size; b++ {
		if !u.written[b] {
			t.Errorf("%s: %d bytes at r10%+d: byte %d is never written", what, size, at, b-at)
			return
		}
	}
}

// layouts are the arguments of bpfkit:args the tests choose: none, two
// numbers (one in memory), numbers and a string.
var layouts = []struct{ nums, strs string }{{"", ""}, {"1,5", ""}, {"0,2", "11"}}

// TestEventRecord: the events' program hands bpf_perf_event_output the
// record where layout.go puts it, an eventHeader and the arguments'
// bytes, having written every byte of it (a privileged program may pass
// uninitialized stack, which would send whatever was there).
func TestEventRecord(t *testing.T) {
	p, sites := sdtProbe(t)
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "usdt_test"})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	for _, c := range layouts {
		l, err := newArgLayout(c.nums, c.strs, sites)
		if err != nil {
			t.Fatal(err)
		}
		u := readStack(built(t, p, eventProgram(l, events)))
		size := int64(unsafe.Sizeof(eventHeader{})) + int64(l.size)
		rec := -int64(usdt.Scratch) - size
		if u.outputCalls != 1 || u.outputAt != rec || u.outputSize != size {
			t.Errorf("-a %q -s %q: %d outputs of %d bytes at r10%+d, want one of %d at r10%+d",
				c.nums, c.strs, u.outputCalls, u.outputSize, u.outputAt, size, rec)
		}
		checkWritten(t, u, "event of -a "+c.nums+" -s "+c.strs, rec, size)
	}
}

// TestCountKey: the counting program writes every byte of the key the
// counter reads, laid out as layout.go says, whichever counter the kernel
// gets (the table, or before 5.12 the hash map).
func TestCountKey(t *testing.T) {
	p, sites := sdtProbe(t)
	for _, c := range layouts {
		l, err := newArgLayout(c.nums, c.strs, sites)
		if err != nil {
			t.Fatal(err)
		}
		keySize := l.keySize()
		counts, err := newCounter(keySize)
		if err != nil {
			t.Fatal(err)
		}
		u := readStack(built(t, p, countProgram(l, counts)))
		counts.Close()
		key := -int64(usdt.Scratch) - int64(keySize)
		checkWritten(t, u, "key of -a "+c.nums+" -s "+c.strs, key, int64(keySize))
	}
}
