// Package insn is the eBPF instruction set as plain data: the opcode
// constants of the uapi headers, the 8-byte struct bpf_insn and its
// encoding, a builder DSL modelled on the kernel's BPF_* macros with
// symbolic labels, map and helper references resolved by Assemble, the
// helper id table, and a disassembler that prints the same text as the
// kernel verifier log and `bpftool prog dump xlated`.
//
// A program is a []Item: instructions from the builders (Mov64Imm,
// LoadMem, JumpImm, Call, ...), Label markers, and sequences such as
// MapIncrement and Log2 appended with "...". Assemble lays it out and
// checks each instruction as the verifier checks its encoding (registers
// r0 to r10, widths, offsets, reserved fields, jump targets), so that a
// slip fails here, naming the item, rather than in the kernel.
//
// The operations and sizes that builders take as parameters have types of
// their own, ALUOp, JumpOp, Size and AtomicOp, so that ALU64Imm(BPF_JGT, ...)
// does not compile. The uapi header uses BPF_ADD and the other ALU
// operations as atomic operations too; here they become one through their
// Atomic method: Atomic(BPF_DW, BPF_ADD.Atomic()|BPF_FETCH, ...). Classes,
// modes and sources stay untyped constants: they only ever combine into
// an opcode byte, where the typed values are converted explicitly, as in
// Instruction{Code: BPF_ALU64 | uint8(BPF_MOV) | BPF_X}.
//
// It imports only the standard library; loading programs is left to the
// packages built on top of it.
package insn
