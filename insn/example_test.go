package insn_test

import (
	"errors"
	"fmt"

	"github.com/bpfkit/bpfkit/insn"
)

// counts stands for a map: anything with an FD method can be referenced by
// a program, here a mapfd.Map whose fd would be 5.
type counts struct{}

func (counts) FD() int { return 5 }

// A program is a list of items: instructions, labels and map references,
// which Assemble resolves. The listing is the verifier's syntax.
func Example() {
	var m counts
	prog, err := insn.Assemble([]insn.Item{
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0), // u32 key = 0
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, m),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.Mov64Imm(insn.R1, 1),
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R0, insn.R1, 0),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(insn.Disassemble(prog))
	// Output:
	//    0: (62) *(u32 *)(r10 -4) = 0
	//    1: (bf) r2 = r10
	//    2: (07) r2 += -4
	//    3: (18) r1 = map[id:5]
	//    5: (85) call bpf_map_lookup_elem#1
	//    6: (15) if r0 == 0x0 goto pc+2
	//    7: (b7) r1 = 1
	//    8: (db) lock *(u64 *)(r0 +0) += r1
	//    9: (b7) r0 = 0
	//   10: (95) exit
}

// A label that is never placed fails at Assemble, before any kernel is
// asked.
func ExampleAssemble() {
	_, err := insn.Assemble([]insn.Item{
		insn.JumpImm(insn.BPF_JGT, insn.R1, 10, "big"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	})
	fmt.Println(errors.Is(err, insn.ErrUnknownLabel))
	fmt.Println(err)
	// Output:
	// true
	// insn: item 0 (insn 0): unknown label "big"
}

func ExampleDisassemble() {
	prog, _ := insn.Assemble([]insn.Item{
		insn.LoadImm64(insn.R1, 0x1122334455667788),
		insn.LoadMem(insn.BPF_H, insn.R2, insn.R1, 6),
		insn.ToBE(insn.R2, 16),
		insn.Mov32Reg(insn.R0, insn.R2),
		insn.Exit(),
	})
	fmt.Print(insn.Disassemble(prog))
	// Output:
	//    0: (18) r1 = 0x1122334455667788
	//    2: (69) r2 = *(u16 *)(r1 +6)
	//    3: (dc) r2 = be16 r2
	//    4: (bc) w0 = w2
	//    5: (95) exit
}

// Format prints one instruction as the verifier's log shows it, and says
// how many slots it takes.
func ExampleFormat() {
	prog, _ := insn.Assemble([]insn.Item{
		insn.LoadImm64(insn.R1, 1<<40),
		insn.LoadMem(insn.BPF_DW, insn.R0, insn.R1, 8),
		insn.Exit(),
	})
	for i := 0; i < len(prog); {
		text, slots := insn.Format(prog, i)
		fmt.Printf("%d: %s\n", i, text)
		i += slots
	}
	// Output:
	// 0: r1 = 0x10000000000
	// 2: r0 = *(u64 *)(r1 +8)
	// 3: exit
}

// MapIncrement counts in a hash map under a key the program has put on
// its stack: here the helper's return value, as a u32 at r10-4.
func ExampleMapIncrement() {
	var m counts
	items := []insn.Item{
		insn.Call(insn.BPF_FUNC_get_smp_processor_id),
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R0),
	}
	items = append(items, insn.MapIncrement(m, -4, -16)...)
	items = append(items, insn.Mov64Imm(insn.R0, 0), insn.Exit())
	prog, err := insn.Assemble(items)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(insn.Disassemble(prog))
	// Output:
	//    0: (85) call bpf_get_smp_processor_id#8
	//    1: (63) *(u32 *)(r10 -4) = r0
	//    2: (bf) r2 = r10
	//    3: (07) r2 += -4
	//    4: (18) r1 = map[id:5]
	//    6: (85) call bpf_map_lookup_elem#1
	//    7: (15) if r0 == 0x0 goto pc+3
	//    8: (b7) r1 = 1
	//    9: (db) lock *(u64 *)(r0 +0) += r1
	//   10: (05) goto pc+18
	//   11: (7a) *(u64 *)(r10 -16) = 1
	//   12: (bf) r2 = r10
	//   13: (07) r2 += -4
	//   14: (bf) r3 = r10
	//   15: (07) r3 += -16
	//   16: (b7) r4 = 1
	//   17: (18) r1 = map[id:5]
	//   19: (85) call bpf_map_update_elem#2
	//   20: (15) if r0 == 0x0 goto pc+8
	//   21: (bf) r2 = r10
	//   22: (07) r2 += -4
	//   23: (18) r1 = map[id:5]
	//   25: (85) call bpf_map_lookup_elem#1
	//   26: (15) if r0 == 0x0 goto pc+2
	//   27: (b7) r1 = 1
	//   28: (db) lock *(u64 *)(r0 +0) += r1
	//   29: (b7) r0 = 0
	//   30: (95) exit
}

// Log2 makes the slot of a power-of-two histogram (bcc's log2l): here of
// the value in r1, into r0.
func ExampleLog2() {
	items := append([]insn.Item{insn.Mov64Reg(insn.R2, insn.R1)}, insn.Log2(insn.R0, insn.R2, insn.R3)...)
	prog, err := insn.Assemble(append(items, insn.Exit()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(prog), "instructions")
	fmt.Print(insn.Disassemble(prog[:6]))
	// Output:
	// 33 instructions
	//    0: (bf) r2 = r1
	//    1: (b7) r0 = 0
	//    2: (bf) r3 = r2
	//    3: (77) r3 >>= 32
	//    4: (15) if r3 == 0x0 goto pc+2
	//    5: (bf) r2 = r3
}

// FuncArg and FuncRet read an fexit program's context: on
// vfs_read(file, buf, count, pos), the count asked for (argument 2) and
// what the function returned (the slot after its 4 arguments).
func ExampleFuncRet() {
	prog, err := insn.Assemble([]insn.Item{
		insn.FuncArg(insn.R6, insn.R1, 2), // r6 = count
		insn.FuncRet(insn.R7, insn.R1, 4), // r7 = the bytes read, or an error
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(insn.Disassemble(prog))
	// Output:
	//    0: (79) r6 = *(u64 *)(r1 +16)
	//    1: (79) r7 = *(u64 *)(r1 +32)
	//    2: (b7) r0 = 0
	//    3: (95) exit
}

// Encode gives the bytes the kernel takes; Decode reads them back.
func ExampleEncode() {
	b, _ := insn.Encode([]insn.Instruction{
		{Code: insn.BPF_ALU64 | uint8(insn.BPF_MOV) | insn.BPF_K, Dst: insn.R0, Imm: 2},
		{Code: insn.BPF_JMP | uint8(insn.BPF_EXIT)},
	})
	fmt.Printf("% x\n", b)
	prog, _ := insn.Decode(b)
	fmt.Print(insn.Disassemble(prog))
	// Output:
	// b7 00 00 00 02 00 00 00 95 00 00 00 00 00 00 00
	//    0: (b7) r0 = 2
	//    1: (95) exit
}

func ExampleHelperByName() {
	h, ok := insn.HelperByName("bpf_get_current_pid_tgid")
	fmt.Println(int32(h), ok, h)
	// Output:
	// 14 true bpf_get_current_pid_tgid
}
