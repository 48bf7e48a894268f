package insn

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// InstructionSize is the size of one encoded instruction slot.
const InstructionSize = 8

// Instruction is one 8-byte slot, struct bpf_insn. A 64-bit immediate load
// (BPF_LD|BPF_IMM|BPF_DW) occupies two consecutive slots.
type Instruction struct {
	Code uint8    // opcode byte
	Dst  Register // destination register, 4 bits
	Src  Register // source register, 4 bits
	Off  int16    // signed offset
	Imm  int32    // signed immediate
}

// Class returns BPF_CLASS(code).
func (i Instruction) Class() Class { return Class(i.Code & 0x07) }

// Size returns BPF_SIZE(code).
func (i Instruction) Size() Size { return Size(i.Code & 0x18) }

// Mode returns BPF_MODE(code).
func (i Instruction) Mode() Mode { return Mode(i.Code & 0xe0) }

// ALUOp returns BPF_OP(code) as an ALU operation.
func (i Instruction) ALUOp() ALUOp { return ALUOp(i.Code & 0xf0) }

// JumpOp returns BPF_OP(code) as a jump operation.
func (i Instruction) JumpOp() JumpOp { return JumpOp(i.Code & 0xf0) }

// Source returns BPF_SRC(code).
func (i Instruction) Source() Source { return Source(i.Code & 0x08) }

// IsLoadImm64 reports whether i is the first slot of a 64-bit immediate
// load, which takes two slots.
func (i Instruction) IsLoadImm64() bool { return i.Code == BPF_LD|BPF_IMM|uint8(BPF_DW) }

// Encode returns the little-endian encoding of insns, 8 bytes each. A
// register above 15 does not fit its 4 bits and is an ErrRegister.
func Encode(insns []Instruction) ([]byte, error) { return AppendEncode(nil, insns) }

// AppendEncode appends the encoding of insns to b, allocating only if b's
// capacity is short; on error it returns b unchanged.
func AppendEncode(b []byte, insns []Instruction) ([]byte, error) {
	at := len(b)
	b = slices.Grow(b, len(insns)*InstructionSize)[:at+len(insns)*InstructionSize]
	for n, in := range insns {
		if r := max(in.Dst, in.Src); r > 15 {
			err := fmt.Errorf("%w: r%d does not fit 4 bits", ErrRegister, r)
			return b[:at], &itemError{fmt.Sprintf("encode: instruction %d", n), err}
		}
		s := b[at+n*InstructionSize : at+n*InstructionSize+InstructionSize]
		s[0], s[1] = in.Code, byte(in.Dst)|byte(in.Src)<<4
		binary.LittleEndian.PutUint16(s[2:], uint16(in.Off))
		binary.LittleEndian.PutUint32(s[4:], uint32(in.Imm))
	}
	return b, nil
}

// Decode parses little-endian instruction slots. len(b) must be a multiple
// of InstructionSize.
func Decode(b []byte) ([]Instruction, error) {
	if len(b)%InstructionSize != 0 {
		return nil, fmt.Errorf("insn: decode: %d bytes is not a multiple of %d", len(b), InstructionSize)
	}
	insns := make([]Instruction, len(b)/InstructionSize)
	for n := range insns {
		s := b[n*InstructionSize:]
		insns[n] = Instruction{
			Code: s[0],
			Dst:  Register(s[1] & 0x0f),
			Src:  Register(s[1] >> 4),
			Off:  int16(binary.LittleEndian.Uint16(s[2:])),
			Imm:  int32(binary.LittleEndian.Uint32(s[4:])),
		}
	}
	return insns, nil
}
