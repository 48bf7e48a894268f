package insn

import "strconv"

// Register is an eBPF register number. Programs may use R0 to R10; the 4-bit
// register fields of an instruction hold 0 to 15, and Assemble refuses
// anything above R10 (the kernel keeps r11, BPF_REG_AX, to itself).
type Register uint8

// The eBPF registers.
const (
	R0  Register = iota // return value
	R1                  // first argument; the context at program start
	R2                  // second argument
	R3                  // third argument
	R4                  // fourth argument
	R5                  // fifth argument
	R6                  // callee saved
	R7                  // callee saved
	R8                  // callee saved
	R9                  // callee saved
	R10                 // read-only frame pointer
	RFP = R10           // the frame pointer, R10
)

// String returns "r0" ... "r10".
func (r Register) String() string { return "r" + strconv.Itoa(int(r)) }

// The fields of an opcode byte; which are typed and why: see the package
// documentation.
type (
	Class  uint8 // Class is BPF_CLASS(code)
	Size   uint8 // Size is BPF_SIZE(code) of a load or store: BPF_W, BPF_H, BPF_B, BPF_DW
	Mode   uint8 // Mode is BPF_MODE(code) of a load or store
	ALUOp  uint8 // ALUOp is BPF_OP(code) of an ALU or ALU64 instruction
	JumpOp uint8 // JumpOp is BPF_OP(code) of a JMP or JMP32 instruction
	Source uint8 // Source is BPF_SRC(code): BPF_K or BPF_X (for BPF_END, BPF_TO_LE or BPF_TO_BE)
)

// AtomicOp is the imm of a BPF_STX|BPF_ATOMIC instruction: an ALU operation
// made atomic (BPF_ADD.Atomic(), optionally |BPF_FETCH), BPF_XCHG,
// BPF_CMPXCHG, BPF_LOAD_ACQ or BPF_STORE_REL.
type AtomicOp int32

// Atomic returns op as the imm of an atomic read-modify-write. The kernel
// accepts BPF_ADD, BPF_OR, BPF_AND and BPF_XOR.
func (op ALUOp) Atomic() AtomicOp { return AtomicOp(op) }

// Instruction classes.
const (
	BPF_LD    = 0x00 // BPF_LD: loads from an immediate or the packet
	BPF_LDX   = 0x01 // BPF_LDX: loads from memory into a register
	BPF_ST    = 0x02 // BPF_ST: stores of an immediate
	BPF_STX   = 0x03 // BPF_STX: stores of a register, atomics
	BPF_ALU   = 0x04 // BPF_ALU: 32-bit arithmetic
	BPF_JMP   = 0x05 // BPF_JMP: 64-bit jumps, calls, exit
	BPF_JMP32 = 0x06 // BPF_JMP32: 32-bit jumps, gotol
	BPF_ALU64 = 0x07 // BPF_ALU64: 64-bit arithmetic
)

// Load and store sizes.
const (
	BPF_W  Size = 0x00 // BPF_W: 32-bit word
	BPF_H  Size = 0x08 // BPF_H: 16-bit half word
	BPF_B  Size = 0x10 // BPF_B: byte
	BPF_DW Size = 0x18 // BPF_DW: 64-bit double word
)

// Load and store modes.
const (
	BPF_IMM    = 0x00 // BPF_IMM: 64-bit immediate load (two slots)
	BPF_ABS    = 0x20 // BPF_ABS: legacy packet load at a constant offset
	BPF_IND    = 0x40 // BPF_IND: legacy packet load at a register offset
	BPF_MEM    = 0x60 // BPF_MEM: memory load or store
	BPF_MEMSX  = 0x80 // BPF_MEMSX: sign-extending load (ISA v4)
	BPF_ATOMIC = 0xc0 // BPF_ATOMIC: atomic operation, the op in imm
)

// ALU operations.
const (
	BPF_ADD  ALUOp = 0x00 // BPF_ADD: dst += src
	BPF_SUB  ALUOp = 0x10 // BPF_SUB: dst -= src
	BPF_MUL  ALUOp = 0x20 // BPF_MUL: dst *= src
	BPF_DIV  ALUOp = 0x30 // BPF_DIV: dst /= src (off 1: signed)
	BPF_OR   ALUOp = 0x40 // BPF_OR: dst |= src
	BPF_AND  ALUOp = 0x50 // BPF_AND: dst &= src
	BPF_LSH  ALUOp = 0x60 // BPF_LSH: dst <<= src
	BPF_RSH  ALUOp = 0x70 // BPF_RSH: dst >>= src
	BPF_NEG  ALUOp = 0x80 // BPF_NEG: dst = -dst
	BPF_MOD  ALUOp = 0x90 // BPF_MOD: dst %= src (off 1: signed)
	BPF_XOR  ALUOp = 0xa0 // BPF_XOR: dst ^= src
	BPF_MOV  ALUOp = 0xb0 // BPF_MOV: dst = src (off 8, 16, 32: sign-extending)
	BPF_ARSH ALUOp = 0xc0 // BPF_ARSH: dst s>>= src
	BPF_END  ALUOp = 0xd0 // BPF_END: byte order conversion, the width in imm
)

// Sources: immediate or register operand; for BPF_END the byte order.
const (
	BPF_K       = 0x00      // BPF_K: the operand is imm
	BPF_X       = 0x08      // BPF_X: the operand is src
	BPF_TO_LE   = 0x00      // BPF_TO_LE: BPF_END converts to little-endian
	BPF_TO_BE   = 0x08      // BPF_TO_BE: BPF_END converts to big-endian
	BPF_FROM_LE = BPF_TO_LE // BPF_FROM_LE: the same as BPF_TO_LE
	BPF_FROM_BE = BPF_TO_BE // BPF_FROM_BE: the same as BPF_TO_BE
)

// Jump operations.
const (
	BPF_JA    JumpOp = 0x00 // BPF_JA: goto
	BPF_JEQ   JumpOp = 0x10 // BPF_JEQ: if dst == src
	BPF_JGT   JumpOp = 0x20 // BPF_JGT: if dst > src, unsigned
	BPF_JGE   JumpOp = 0x30 // BPF_JGE: if dst >= src, unsigned
	BPF_JSET  JumpOp = 0x40 // BPF_JSET: if dst & src
	BPF_JNE   JumpOp = 0x50 // BPF_JNE: if dst != src
	BPF_JSGT  JumpOp = 0x60 // BPF_JSGT: if dst > src, signed
	BPF_JSGE  JumpOp = 0x70 // BPF_JSGE: if dst >= src, signed
	BPF_CALL  JumpOp = 0x80 // BPF_CALL: helper, bpf-to-bpf or kfunc call
	BPF_EXIT  JumpOp = 0x90 // BPF_EXIT: return r0
	BPF_JLT   JumpOp = 0xa0 // BPF_JLT: if dst < src, unsigned
	BPF_JLE   JumpOp = 0xb0 // BPF_JLE: if dst <= src, unsigned
	BPF_JSLT  JumpOp = 0xc0 // BPF_JSLT: if dst < src, signed
	BPF_JSLE  JumpOp = 0xd0 // BPF_JSLE: if dst <= src, signed
	BPF_JCOND JumpOp = 0xe0 // BPF_JCOND: may_goto, with src_reg BPF_MAY_GOTO (6.9)
)

// Atomic operations other than the ALU ones (see ALUOp.Atomic).
const (
	// BPF_FETCH: also return the old value in src.
	BPF_FETCH AtomicOp = 0x01
	// BPF_XCHG: exchange src with memory.
	BPF_XCHG AtomicOp = 0xe0 | BPF_FETCH
	// BPF_CMPXCHG: compare with r0 and exchange.
	BPF_CMPXCHG AtomicOp = 0xf0 | BPF_FETCH
	// BPF_LOAD_ACQ: load-acquire, dst = *(src + off) (6.15).
	BPF_LOAD_ACQ AtomicOp = 0x100
	// BPF_STORE_REL: store-release, *(dst + off) = src (6.15).
	BPF_STORE_REL AtomicOp = 0x110
)

// Special encodings of newer kernels.
const (
	BPF_MAY_GOTO        = 0 // BPF_MAY_GOTO: src_reg of BPF_JMP|BPF_JCOND (6.9)
	BPF_ADDR_SPACE_CAST = 1 // BPF_ADDR_SPACE_CAST: off of BPF_ALU64|BPF_MOV|BPF_X (6.9)
)

// Pseudo sources: src_reg values of BPF_LD|BPF_IMM|BPF_DW and BPF_CALL.
const (
	BPF_PSEUDO_MAP_FD        = 1 // BPF_PSEUDO_MAP_FD: imm is a map fd (xlated: its id)
	BPF_PSEUDO_MAP_VALUE     = 2 // BPF_PSEUDO_MAP_VALUE: a map fd and a value offset
	BPF_PSEUDO_BTF_ID        = 3 // BPF_PSEUDO_BTF_ID: a kernel variable by BTF id
	BPF_PSEUDO_FUNC          = 4 // BPF_PSEUDO_FUNC: the address of a subprogram at pc+imm
	BPF_PSEUDO_MAP_IDX       = 5 // BPF_PSEUDO_MAP_IDX: imm indexes the load's fd_array
	BPF_PSEUDO_MAP_IDX_VALUE = 6 // BPF_PSEUDO_MAP_IDX_VALUE: fd_array index and value offset
	BPF_PSEUDO_CALL          = 1 // BPF_PSEUDO_CALL: call of a bpf function at pc+imm
	BPF_PSEUDO_KFUNC_CALL    = 2 // BPF_PSEUDO_KFUNC_CALL: call of a kernel function by BTF id
)

// Flags that helpers take as arguments, for programs to load as immediates.
// They are untyped, so that each goes where its value fits and nowhere
// else. BPF_F_CURRENT_CPU, a u64 flags value 0x00000000ffffffff, goes in
// with LoadImm64(r, BPF_F_CURRENT_CPU). It does not compile as Mov64Imm's
// int32, which the kernel would sign-extend to all ones: a flags value
// that bpf_perf_event_output refuses (EINVAL: bits outside
// BPF_F_INDEX_MASK).
const (
	// BPF_ANY: a map update creates or replaces.
	BPF_ANY = 0
	// BPF_NOEXIST: a map update creates only.
	BPF_NOEXIST = 1
	// BPF_EXIST: a map update replaces only.
	BPF_EXIST = 2
	// BPF_F_INDEX_MASK: the cpu or index part of perf_event_output's flags.
	BPF_F_INDEX_MASK = 0xffffffff
	// BPF_F_CURRENT_CPU: this CPU's perf ring, in perf_event_output's
	// flags; LoadImm64 it.
	BPF_F_CURRENT_CPU = 0xffffffff
	// BPF_F_USER_STACK: get_stackid and get_stack walk the user stack.
	BPF_F_USER_STACK = 1 << 8
	// BPF_F_FAST_STACK_CMP: get_stackid compares stacks by hash only.
	BPF_F_FAST_STACK_CMP = 1 << 9
	// BPF_F_REUSE_STACKID: get_stackid replaces a colliding stack.
	BPF_F_REUSE_STACKID = 1 << 10
)
