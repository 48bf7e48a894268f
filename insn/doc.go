// Package insn is the eBPF instruction set as plain data. It holds the
// uapi's opcode constants, struct bpf_insn and its encoding, and the helper
// ids. Its builder DSL is modelled on the kernel's BPF_* macros, with
// labels and map and helper references that Assemble resolves. Its
// disassembler prints what the verifier log and `bpftool prog dump xlated`
// print. It imports only the standard library.
//
// A program is a []Item: instructions from the builders (Mov64Imm,
// LoadMem, JumpImm, Call, ...), Label markers, and sequences such as
// MapIncrement and Log2 appended with "...". Assemble lays it out and
// checks each instruction's encoding as the verifier does (registers,
// widths, offsets, reserved fields, jump targets): a slip fails here,
// naming the item, rather than in the kernel.
//
// Operations and sizes have types, ALUOp, JumpOp, Size and AtomicOp, so
// that ALU64Imm(BPF_JGT, ...) does not compile; an ALU operation becomes
// an atomic one with its Atomic method: Atomic(BPF_DW,
// BPF_ADD.Atomic()|BPF_FETCH, ...). Classes, modes and sources stay
// untyped: they only combine into an opcode byte, as in
// Instruction{Code: BPF_ALU64 | uint8(BPF_MOV) | BPF_X}.
package insn
