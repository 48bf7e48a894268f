package main

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/prog"
)

// fakeMap stands for a map in programs assembled without the kernel.
type fakeMap int

func (m fakeMap) FD() int { return int(m) }

// TestRecords: every byte the programs write or read on their stack lies
// in frame, each access the size of the field it names, and what a
// syscall map's value is read as is syscallSlot.Event: the Go structs are
// the records, on every architecture bpfkit numbers system calls for.
func TestRecords(t *testing.T) {
	if unsafe.Sizeof(syscallSlot{}) != 4 || unsafe.Offsetof(syscallSlot{}.Event) != 0 {
		t.Fatalf("syscallSlot is %d bytes, Event at %d: the program reads a u32 at 0",
			unsafe.Sizeof(syscallSlot{}), unsafe.Offsetof(syscallSlot{}.Event))
	}
	var programs [][]insn.Item
	for _, machine := range []string{"x86_64", "aarch64", "riscv64", "i686"} {
		regs, err := prog.PtRegsOf(machine)
		if err != nil {
			t.Fatal(err)
		}
		for _, exit := range []bool{false, true} {
			for _, pid := range []uint32{0, 1234} {
				programs = append(programs, syscallInsns(fakeMap(3), fakeMap(4), exit, regs, pid))
			}
		}
	}
	for _, k := range []counterKind{perfTracepoint, rawTracepoint, kprobe, kprobeMulti} {
		for _, index := range []int{byCookie, 7} {
			programs = append(programs, counterInsns(fakeMap(3), k, index, 1234))
		}
	}
	for _, items := range programs {
		code, err := insn.Assemble(items)
		if err != nil {
			t.Fatal(err)
		}
		if err := stackInFrame(code); err != nil {
			t.Fatalf("%v in:\n%s", err, code)
		}
	}
}

// fields are frame's fields: where each lies from the frame pointer, and
// its size.
var fields = map[int16]int16{
	keyAt: int16(unsafe.Sizeof(frame{}.Key)),
	regAt: int16(unsafe.Sizeof(frame{}.Reg)),
}

// stackInFrame checks code's accesses through r10: loads and stores at a
// field of frame, no wider than it, and the helpers' destinations (r1 =
// r10 + a field's offset, r2 = the bytes to write) within that field.
func stackInFrame(code []insn.Instruction) error {
	sizes := map[insn.Size]int16{insn.BPF_B: 1, insn.BPF_H: 2, insn.BPF_W: 4, insn.BPF_DW: 8}
	var r1, r2 int16 // r1's offset from r10, r2's constant, as the code sets them
	for i, in := range code {
		through := in.Class() == insn.BPF_LDX && in.Src == insn.R10 ||
			(in.Class() == insn.BPF_STX || in.Class() == insn.BPF_ST) && in.Dst == insn.R10
		if size, ok := fields[in.Off]; through && (!ok || sizes[in.Size()] > size) {
			return fmt.Errorf("instruction %d: %d bytes at r10%+d, in no field of frame",
				i, sizes[in.Size()], in.Off)
		}
		alu := in.Class() == insn.BPF_ALU64
		switch {
		case alu && in.ALUOp() == insn.BPF_MOV && in.Source() == insn.BPF_X &&
			in.Dst == insn.R1 && in.Src == insn.R10:
			r1 = 0
		case alu && in.ALUOp() == insn.BPF_ADD && in.Source() == insn.BPF_K && in.Dst == insn.R1:
			r1 += int16(in.Imm)
		case alu && in.ALUOp() == insn.BPF_MOV && in.Source() == insn.BPF_K && in.Dst == insn.R2:
			r2 = int16(in.Imm)
		case in.Class() == insn.BPF_JMP && in.JumpOp() == insn.BPF_CALL &&
			in.Imm == int32(insn.BPF_FUNC_probe_read_kernel):
			if size, ok := fields[r1]; !ok || r2 > size {
				return fmt.Errorf("instruction %d: probe_read_kernel of %d bytes to r10%+d, "+
					"in no field of frame", i, r2, r1)
			}
		}
	}
	return nil
}
