package tool

import "github.com/bpfkit/bpfkit/insn"

// Program is a tool's BPF program as it is built, block by block:
//
//	var p tool.Program
//	// r6 = ctx, kept across calls
//	p.Add(insn.Mov64Reg(insn.R6, insn.R1))
//
// and then loaded with Insns: p.
type Program []insn.Item

// Add appends items to the program.
//
// It is not inlined, on purpose: an append inlined where the instructions
// are built costs some 150 bytes of code per instruction (each Item is
// built, then copied with write barriers), a call some 50, and the
// tools' binaries are kept small (tests/size_test.go).
//
//go:noinline
func (p *Program) Add(items ...insn.Item) { *p = append(*p, items...) }
