package insn

import "strconv"

// Register is an eBPF register number, R0 to R10.
type Register uint8

// The eBPF registers. R0 holds return values, R1-R5 arguments, R6-R9 are
// callee saved and R10 is the read-only frame pointer.
const (
	R0 Register = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10
	RFP = R10
)

// String returns "r0" ... "r10".
func (r Register) String() string { return "r" + strconv.Itoa(int(r)) }

// Named parameter types for the builders. The opcode constants below are
// untyped so that they combine freely into an opcode byte, as in C:
// Instruction{Code: BPF_ALU64 | BPF_MOV | BPF_K}.
type (
	Class  uint8 // BPF_CLASS(code)
	Size   uint8 // BPF_SIZE(code): BPF_W, BPF_H, BPF_B, BPF_DW
	Mode   uint8 // BPF_MODE(code)
	ALUOp  uint8 // BPF_OP(code) of an ALU instruction
	JumpOp uint8 // BPF_OP(code) of a jump instruction
	Source uint8 // BPF_SRC(code): BPF_K, BPF_X (or BPF_TO_LE, BPF_TO_BE)
)

// Instruction classes.
const (
	BPF_LD    = 0x00
	BPF_LDX   = 0x01
	BPF_ST    = 0x02
	BPF_STX   = 0x03
	BPF_ALU   = 0x04
	BPF_JMP   = 0x05
	BPF_JMP32 = 0x06
	BPF_ALU64 = 0x07
)

// Load and store sizes.
const (
	BPF_W  = 0x00
	BPF_H  = 0x08
	BPF_B  = 0x10
	BPF_DW = 0x18
)

// Load and store modes.
const (
	BPF_IMM    = 0x00
	BPF_ABS    = 0x20
	BPF_IND    = 0x40
	BPF_MEM    = 0x60
	BPF_MEMSX  = 0x80
	BPF_ATOMIC = 0xc0
)

// ALU operations.
const (
	BPF_ADD  = 0x00
	BPF_SUB  = 0x10
	BPF_MUL  = 0x20
	BPF_DIV  = 0x30
	BPF_OR   = 0x40
	BPF_AND  = 0x50
	BPF_LSH  = 0x60
	BPF_RSH  = 0x70
	BPF_NEG  = 0x80
	BPF_MOD  = 0x90
	BPF_XOR  = 0xa0
	BPF_MOV  = 0xb0
	BPF_ARSH = 0xc0
	BPF_END  = 0xd0
)

// Sources: immediate or register operand; for BPF_END the byte order.
const (
	BPF_K       = 0x00
	BPF_X       = 0x08
	BPF_TO_LE   = 0x00
	BPF_TO_BE   = 0x08
	BPF_FROM_LE = BPF_TO_LE
	BPF_FROM_BE = BPF_TO_BE
)

// Jump operations.
const (
	BPF_JA    = 0x00
	BPF_JEQ   = 0x10
	BPF_JGT   = 0x20
	BPF_JGE   = 0x30
	BPF_JSET  = 0x40
	BPF_JNE   = 0x50
	BPF_JSGT  = 0x60
	BPF_JSGE  = 0x70
	BPF_CALL  = 0x80
	BPF_EXIT  = 0x90
	BPF_JLT   = 0xa0
	BPF_JLE   = 0xb0
	BPF_JSLT  = 0xc0
	BPF_JSLE  = 0xd0
	BPF_JCOND = 0xe0 // with src_reg BPF_MAY_GOTO
)

// Atomic operations, in the imm of a BPF_STX|BPF_ATOMIC instruction.
const (
	BPF_FETCH     = 0x01 // modifier: return the old value in src
	BPF_XCHG      = 0xe0 | BPF_FETCH
	BPF_CMPXCHG   = 0xf0 | BPF_FETCH
	BPF_LOAD_ACQ  = 0x100 // load-acquire (kernel 6.15)
	BPF_STORE_REL = 0x110 // store-release (kernel 6.15)
)

// Special encodings of newer kernels.
const (
	BPF_MAY_GOTO        = 0 // src_reg of BPF_JMP|BPF_JCOND
	BPF_ADDR_SPACE_CAST = 1 // off of BPF_ALU64|BPF_MOV|BPF_X
)

// Pseudo sources: src_reg values of BPF_LD|BPF_IMM|BPF_DW and BPF_CALL.
const (
	BPF_PSEUDO_MAP_FD        = 1
	BPF_PSEUDO_MAP_VALUE     = 2
	BPF_PSEUDO_BTF_ID        = 3
	BPF_PSEUDO_FUNC          = 4
	BPF_PSEUDO_MAP_IDX       = 5
	BPF_PSEUDO_MAP_IDX_VALUE = 6
	BPF_PSEUDO_CALL          = 1
	BPF_PSEUDO_KFUNC_CALL    = 2
)
