package insn

import "fmt"

// MapFD is how a map is referenced: anything that can give its file
// descriptor when the program is assembled.
type MapFD interface{ FD() int }

type itemKind uint8

const (
	kindInsn  itemKind = iota // one slot
	kindWide                  // BPF_LD|BPF_IMM|BPF_DW, two slots
	kindLabel                 // position marker, no slot
	kindErr                   // a builder's refusal, name says why: Assemble fails
)

type refKind uint8

const (
	refNone   refKind = iota
	refOff            // label resolved into Off (16-bit)
	refImm            // label resolved into Imm (32-bit: gotol, bpf-to-bpf call)
	refMap            // map fd resolved into Imm
	refHelper         // a helper name not in the table: an error at Assemble
)

// Item is one element of a program being built: an instruction (a 64-bit
// immediate load is one Item of two slots), a label marker, or an
// instruction with a symbolic jump target, map or helper name that
// Assemble resolves. The zero Item is the instruction slot of all zeros.
type Item struct {
	ins  Instruction
	hi   int32 // imm of the second slot of a wide load
	kind itemKind
	ref  refKind
	name string // label name, jump target or helper name
	m    MapFD
}

// Instruction returns the instruction as built, with unresolved references
// left zero; for a wide load it is the first slot.
func (it Item) Instruction() Instruction { return it.ins }

// Raw returns an Item for the single slot i, as given; Assemble checks it
// like any other. A 64-bit immediate load takes LoadImm64Raw.
func Raw(i Instruction) Item { return Item{ins: i} }

func bad(format string, args ...any) []Item {
	return []Item{{kind: kindErr, name: fmt.Sprintf(format, args...)}}
}

// Label marks the position of the next instruction as name.
func Label(name string) Item { return Item{kind: kindLabel, name: name} }

func raw(code uint8, dst, src Register, off int16, imm int32) Item {
	return Item{ins: Instruction{Code: code, Dst: dst, Src: src, Off: off, Imm: imm}}
}

// withRef returns it with a label or helper name, or a map, for Assemble to
// resolve.
func withRef(it Item, ref refKind, name string, m MapFD) Item {
	it.ref, it.name, it.m = ref, name, m
	return it
}

// ALU64Imm is BPF_ALU64_IMM: dst op= imm.
func ALU64Imm(op ALUOp, dst Register, imm int32) Item { return ALU64ImmOff(op, dst, imm, 0) }

// ALU64Reg is BPF_ALU64_REG: dst op= src.
func ALU64Reg(op ALUOp, dst, src Register) Item { return ALU64RegOff(op, dst, src, 0) }

// ALU32Imm is BPF_ALU32_IMM: wdst op= imm.
func ALU32Imm(op ALUOp, dst Register, imm int32) Item { return ALU32ImmOff(op, dst, imm, 0) }

// ALU32Reg is BPF_ALU32_REG: wdst op= wsrc.
func ALU32Reg(op ALUOp, dst, src Register) Item { return ALU32RegOff(op, dst, src, 0) }

// ALU64ImmOff is BPF_ALU64_IMM_OFF, an ALU instruction with an explicit off
// (1 selects signed division and modulo).
func ALU64ImmOff(op ALUOp, dst Register, imm int32, off int16) Item {
	return raw(BPF_ALU64|uint8(op)|BPF_K, dst, 0, off, imm)
}

// ALU64RegOff is BPF_ALU64_REG_OFF.
func ALU64RegOff(op ALUOp, dst, src Register, off int16) Item {
	return raw(BPF_ALU64|uint8(op)|BPF_X, dst, src, off, 0)
}

// ALU32ImmOff is BPF_ALU32_IMM_OFF.
func ALU32ImmOff(op ALUOp, dst Register, imm int32, off int16) Item {
	return raw(BPF_ALU|uint8(op)|BPF_K, dst, 0, off, imm)
}

// ALU32RegOff is BPF_ALU32_REG_OFF.
func ALU32RegOff(op ALUOp, dst, src Register, off int16) Item {
	return raw(BPF_ALU|uint8(op)|BPF_X, dst, src, off, 0)
}

// AddrSpaceCast is BPF_ADDR_SPACE_CAST (6.9): dst = src converted from
// address space srcAS to dstAS, "r1 = addr_space_cast(r2, 0, 1)", between
// an arena's user (1) and kernel (0) addresses.
func AddrSpaceCast(dst, src Register, dstAS, srcAS uint16) Item {
	spaces := int32(dstAS)<<16 | int32(srcAS)
	return raw(BPF_ALU64|uint8(BPF_MOV)|BPF_X, dst, src, BPF_ADDR_SPACE_CAST, spaces)
}

// Mov64Imm is BPF_MOV64_IMM: dst = imm (sign-extended).
func Mov64Imm(dst Register, imm int32) Item { return ALU64Imm(BPF_MOV, dst, imm) }

// Mov64Reg is BPF_MOV64_REG: dst = src.
func Mov64Reg(dst, src Register) Item { return ALU64Reg(BPF_MOV, dst, src) }

// Mov32Imm is BPF_MOV32_IMM: wdst = imm.
func Mov32Imm(dst Register, imm int32) Item { return ALU32Imm(BPF_MOV, dst, imm) }

// Mov32Reg is BPF_MOV32_REG: wdst = wsrc.
func Mov32Reg(dst, src Register) Item { return ALU32Reg(BPF_MOV, dst, src) }

// Neg64 is dst = -dst.
func Neg64(dst Register) Item { return ALU64Imm(BPF_NEG, dst, 0) }

// Neg32 is wdst = -wdst.
func Neg32(dst Register) Item { return ALU32Imm(BPF_NEG, dst, 0) }

// SDiv64Imm is signed division (ISA v4): dst s/= imm.
func SDiv64Imm(dst Register, imm int32) Item { return ALU64ImmOff(BPF_DIV, dst, imm, 1) }

// SDiv64Reg is dst s/= src.
func SDiv64Reg(dst, src Register) Item { return ALU64RegOff(BPF_DIV, dst, src, 1) }

// SMod64Imm is signed modulo (ISA v4): dst s%= imm.
func SMod64Imm(dst Register, imm int32) Item { return ALU64ImmOff(BPF_MOD, dst, imm, 1) }

// SMod64Reg is dst s%= src.
func SMod64Reg(dst, src Register) Item { return ALU64RegOff(BPF_MOD, dst, src, 1) }

// SDiv32Imm is wdst s/= imm.
func SDiv32Imm(dst Register, imm int32) Item { return ALU32ImmOff(BPF_DIV, dst, imm, 1) }

// SDiv32Reg is wdst s/= wsrc.
func SDiv32Reg(dst, src Register) Item { return ALU32RegOff(BPF_DIV, dst, src, 1) }

// SMod32Imm is wdst s%= imm.
func SMod32Imm(dst Register, imm int32) Item { return ALU32ImmOff(BPF_MOD, dst, imm, 1) }

// SMod32Reg is wdst s%= wsrc.
func SMod32Reg(dst, src Register) Item { return ALU32RegOff(BPF_MOD, dst, src, 1) }

// Movsx64Reg is BPF_MOVSX64_REG (ISA v4): dst = (s8|s16|s32)src, bits 8, 16 or 32.
func Movsx64Reg(dst, src Register, bits int16) Item { return ALU64RegOff(BPF_MOV, dst, src, bits) }

// Movsx32Reg is BPF_MOVSX32_REG (ISA v4): wdst = (s8|s16)wsrc, bits 8 or 16.
func Movsx32Reg(dst, src Register, bits int16) Item { return ALU32RegOff(BPF_MOV, dst, src, bits) }

// ToLE is BPF_ENDIAN(BPF_TO_LE, dst, bits): dst = le16|le32|le64 dst.
func ToLE(dst Register, bits int32) Item { return ALU32Imm(BPF_END, dst, bits) }

// ToBE is BPF_ENDIAN(BPF_TO_BE, dst, bits): dst = be16|be32|be64 dst.
func ToBE(dst Register, bits int32) Item {
	return raw(BPF_ALU|uint8(BPF_END)|BPF_TO_BE, dst, 0, 0, bits)
}

// Bswap is BPF_BSWAP (ISA v4): unconditional byte swap of 16, 32 or 64 bits.
func Bswap(dst Register, bits int32) Item { return ALU64Imm(BPF_END, dst, bits) }

// LoadMem is BPF_LDX_MEM: dst = *(size *)(src + off).
func LoadMem(size Size, dst, src Register, off int16) Item {
	return raw(BPF_LDX|uint8(size)|BPF_MEM, dst, src, off, 0)
}

// LoadMemSX is BPF_LDX_MEMSX (ISA v4): dst = *(signed size *)(src + off).
func LoadMemSX(size Size, dst, src Register, off int16) Item {
	return raw(BPF_LDX|uint8(size)|BPF_MEMSX, dst, src, off, 0)
}

// StoreMem is BPF_STX_MEM: *(size *)(dst + off) = src. Note the argument
// order, which follows the C expression rather than the macro.
func StoreMem(size Size, dst Register, off int16, src Register) Item {
	return raw(BPF_STX|uint8(size)|BPF_MEM, dst, src, off, 0)
}

// StoreImm is BPF_ST_MEM: *(size *)(dst + off) = imm.
func StoreImm(size Size, dst Register, off int16, imm int32) Item {
	return raw(BPF_ST|uint8(size)|BPF_MEM, dst, 0, off, imm)
}

// Atomic is BPF_ATOMIC_OP: an atomic operation on *(size *)(dst + off)
// with src. op is BPF_ADD.Atomic() (or BPF_OR, BPF_AND, BPF_XOR), optionally
// |BPF_FETCH, or BPF_XCHG or BPF_CMPXCHG; size is BPF_W or BPF_DW:
// Atomic(BPF_DW, BPF_ADD.Atomic(), R0, R1, 0) is "lock *(u64 *)(r0 +0) += r1".
func Atomic(size Size, op AtomicOp, dst, src Register, off int16) Item {
	return raw(BPF_STX|uint8(size)|BPF_ATOMIC, dst, src, off, int32(op))
}

// LoadAcquire (6.15) is dst = load_acquire((size *)(src + off)).
func LoadAcquire(size Size, dst, src Register, off int16) Item {
	return Atomic(size, BPF_LOAD_ACQ, dst, src, off)
}

// StoreRelease (6.15) is store_release((size *)(dst + off), src), the
// arguments in StoreMem's order.
func StoreRelease(size Size, dst Register, off int16, src Register) Item {
	return Atomic(size, BPF_STORE_REL, dst, src, off)
}

// LoadAbs is BPF_LD_ABS: r0 = *(size *)(skb->data + imm).
func LoadAbs(size Size, imm int32) Item { return raw(BPF_LD|uint8(size)|BPF_ABS, 0, 0, 0, imm) }

// LoadInd is BPF_LD_IND: r0 = *(size *)(skb->data + src + imm).
func LoadInd(size Size, src Register, imm int32) Item {
	return raw(BPF_LD|uint8(size)|BPF_IND, 0, src, 0, imm)
}

// LoadImm64Raw is BPF_LD_IMM64_RAW: a two-slot load of imm into dst with
// the given pseudo source in src.
func LoadImm64Raw(dst, src Register, imm int64) Item {
	it := raw(BPF_LD|uint8(BPF_DW)|BPF_IMM, dst, src, 0, int32(uint32(imm)))
	it.kind, it.hi = kindWide, int32(uint64(imm)>>32)
	return it
}

// LoadImm64 is BPF_LD_IMM64: dst = imm, two slots.
func LoadImm64(dst Register, imm int64) Item { return LoadImm64Raw(dst, 0, imm) }

// LoadMapFDRaw is BPF_LD_MAP_FD for a file descriptor already known.
func LoadMapFDRaw(dst Register, fd int32) Item {
	return LoadImm64Raw(dst, BPF_PSEUDO_MAP_FD, int64(uint32(fd)))
}

// LoadMapValueRaw is BPF_LD_MAP_VALUE for a file descriptor already known:
// dst = address of the map's value at byte offset off.
func LoadMapValueRaw(dst Register, fd int32, off uint32) Item {
	return LoadImm64Raw(dst, BPF_PSEUDO_MAP_VALUE, int64(off)<<32|int64(uint32(fd)))
}

// LoadMapFD is BPF_LD_MAP_FD with the fd taken from m.FD() at Assemble.
func LoadMapFD(dst Register, m MapFD) Item { return withRef(LoadMapFDRaw(dst, 0), refMap, "", m) }

// LoadMapValue is BPF_LD_MAP_VALUE with the fd taken from m.FD() at Assemble.
func LoadMapValue(dst Register, m MapFD, off uint32) Item {
	return withRef(LoadMapValueRaw(dst, 0, off), refMap, "", m)
}

// JumpImmOff is BPF_JMP_IMM: if dst op imm goto pc+off.
func JumpImmOff(op JumpOp, dst Register, imm int32, off int16) Item {
	return raw(BPF_JMP|uint8(op)|BPF_K, dst, 0, off, imm)
}

// JumpRegOff is BPF_JMP_REG: if dst op src goto pc+off.
func JumpRegOff(op JumpOp, dst, src Register, off int16) Item {
	return raw(BPF_JMP|uint8(op)|BPF_X, dst, src, off, 0)
}

// Jump32ImmOff is BPF_JMP32_IMM: if wdst op imm goto pc+off.
func Jump32ImmOff(op JumpOp, dst Register, imm int32, off int16) Item {
	return raw(BPF_JMP32|uint8(op)|BPF_K, dst, 0, off, imm)
}

// Jump32RegOff is BPF_JMP32_REG: if wdst op wsrc goto pc+off.
func Jump32RegOff(op JumpOp, dst, src Register, off int16) Item {
	return raw(BPF_JMP32|uint8(op)|BPF_X, dst, src, off, 0)
}

// JaOff is BPF_JMP_A: goto pc+off.
func JaOff(off int16) Item { return JumpImmOff(BPF_JA, 0, 0, off) }

// Ja32Off is BPF_JMP32_A (ISA v4 gotol): goto pc+imm with a 32-bit offset.
func Ja32Off(imm int32) Item { return Jump32ImmOff(BPF_JA, 0, imm, 0) }

// MayGotoOff is may_goto pc+off (6.9): goto pc+off once the kernel's loop
// budget for the program is spent, else fall through. It lets the verifier
// accept a loop it cannot bound.
func MayGotoOff(off int16) Item { return JumpImmOff(BPF_JCOND, 0, 0, off) }

// MayGoto is MayGotoOff with the offset taken from label.
func MayGoto(label string) Item { return withRef(MayGotoOff(0), refOff, label, nil) }

// JumpImm is JumpImmOff with the offset taken from label.
func JumpImm(op JumpOp, dst Register, imm int32, label string) Item {
	return withRef(JumpImmOff(op, dst, imm, 0), refOff, label, nil)
}

// JumpReg is JumpRegOff with the offset taken from label.
func JumpReg(op JumpOp, dst, src Register, label string) Item {
	return withRef(JumpRegOff(op, dst, src, 0), refOff, label, nil)
}

// Jump32Imm is Jump32ImmOff with the offset taken from label.
func Jump32Imm(op JumpOp, dst Register, imm int32, label string) Item {
	return withRef(Jump32ImmOff(op, dst, imm, 0), refOff, label, nil)
}

// Jump32Reg is Jump32RegOff with the offset taken from label.
func Jump32Reg(op JumpOp, dst, src Register, label string) Item {
	return withRef(Jump32RegOff(op, dst, src, 0), refOff, label, nil)
}

// Ja is an unconditional jump to label.
func Ja(label string) Item { return withRef(JaOff(0), refOff, label, nil) }

// Ja32 is an unconditional jump to label with a 32-bit offset (gotol).
func Ja32(label string) Item { return withRef(Ja32Off(0), refImm, label, nil) }

// Call is BPF_EMIT_CALL: call helper h.
func Call(h Helper) Item { return JumpImmOff(BPF_CALL, 0, int32(h), 0) }

// CallName calls the helper named name ("map_lookup_elem" or
// "bpf_map_lookup_elem"); an unknown name is an error at Assemble.
func CallName(name string) Item {
	if h, ok := HelperByName(name); ok {
		return Call(h)
	}
	return withRef(Call(0), refHelper, name, nil)
}

// CallRel is BPF_CALL_REL: a bpf-to-bpf call to pc+imm.
func CallRel(imm int32) Item { return raw(BPF_JMP|uint8(BPF_CALL), 0, BPF_PSEUDO_CALL, 0, imm) }

// CallFunc is a bpf-to-bpf call to the function starting at label.
func CallFunc(label string) Item { return withRef(CallRel(0), refImm, label, nil) }

// Exit is BPF_EXIT_INSN: return r0.
func Exit() Item { return JumpImmOff(BPF_EXIT, 0, 0, 0) }
