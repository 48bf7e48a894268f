// Package insn is the eBPF instruction set as plain data: the opcode
// constants of the uapi headers, the 8-byte struct bpf_insn and its
// encoding, a builder DSL modelled on the kernel's BPF_* macros with
// symbolic labels, map and helper references resolved by Assemble, the
// helper id table, and a disassembler that prints the same text as the
// kernel verifier log and `bpftool prog dump xlated`.
//
// It imports only the standard library; loading programs is left to the
// packages built on top of it.
package insn
