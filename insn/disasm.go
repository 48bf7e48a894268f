package insn

import (
	"fmt"
	"strings"
)

// Tables from kernel/bpf/disasm.c, indexed by BPF_OP >> 4 or BPF_SIZE >> 3.
var (
	aluOpStr = [16]string{
		"+=", "-=", "*=", "/=", "|=", "&=", "<<=", ">>=",
		"neg", "%=", "^=", "=", "s>>=", "endian",
	}
	jmpOpStr = [16]string{
		"jmp", "==", ">", ">=", "&", "!=", "s>", "s>=",
		"call", "exit", "<", "<=", "s<", "s<=",
	}
	atomicOpStr = [16]string{
		BPF_ADD >> 4: "add",
		BPF_OR >> 4:  "or",
		BPF_AND >> 4: "and",
		BPF_XOR >> 4: "xor",
	}
	ldstStr = [4]string{"u32", "u16", "u8", "u64"}
	ldsxStr = [4]string{"s32", "s16", "s8", ""}
)

// String returns the disassembly of the single slot i; for the first slot
// of a 64-bit immediate load the upper half is taken as zero.
func (i Instruction) String() string {
	s, _ := Format([]Instruction{i}, 0)
	return s
}

// Disassemble returns a listing of insns in the form of `bpftool prog dump
// xlated`, one line per instruction: "   0: (b7) r0 = 0". The second slot of
// a 64-bit immediate load gets no line of its own.
func Disassemble(insns []Instruction) string { return disassemble(insns, false, nil) }

// DisassembleFunc is Disassemble for a program as the kernel hands it back
// (prog.Info's Xlated). A helper call's imm is then the helper's address
// less __bpf_call_base, which callName names as bpftool does from kallsyms:
// "call __htab_map_lookup_elem#161296". A bpf-to-bpf call holds its offset
// in off and the callee's index in imm (jit_subprogs, fixup_call_args):
// "call pc+OFF", then "#" and callName's name if it gives one (bpftool's
// is the JIT's symbol). callName may be nil or answer "".
func DisassembleFunc(insns []Instruction, callName func(call Instruction) string) string {
	return disassemble(insns, true, callName)
}

func disassemble(insns []Instruction, xlated bool, callName func(call Instruction) string) string {
	var b strings.Builder
	for i := 0; i < len(insns); {
		text, n := Format(insns, i)
		in := insns[i]
		if xlated && in.Code == BPF_JMP|uint8(BPF_CALL) && in.Src != BPF_PSEUDO_KFUNC_CALL {
			name := ""
			if callName != nil {
				name = callName(in)
			}
			switch {
			case in.Src == BPF_PSEUDO_CALL && name != "":
				text = fmt.Sprintf("call pc%+d#%s", in.Off, name)
			case in.Src == BPF_PSEUDO_CALL:
				text = fmt.Sprintf("call pc%+d", in.Off)
			case name != "":
				text = fmt.Sprintf("call %s#%d", name, in.Imm)
			}
		}
		fmt.Fprintf(&b, "% 4d: (%02x) %s\n", i, insns[i].Code, text)
		i += n
	}
	return b.String()
}

// Format returns the text of insns[i] as print_bpf_insn (kernel/bpf/disasm.c)
// prints it with bpftool's callbacks, without index and opcode, and the
// slots it used: 2 for a whole 64-bit load, 0 if i is out of range, else
// 1. An invalid slot reads "invalid insn code 0xNN".
func Format(insns []Instruction, i int) (text string, slots int) {
	if i < 0 || i >= len(insns) {
		return "", 0
	}
	in := insns[i]
	if in.IsLoadImm64() && i+1 < len(insns) {
		return formatLoadImm64(in, insns[i+1]), 2
	}
	if s, ok := format(in); ok {
		return s, 1
	}
	return fmt.Sprintf("invalid insn code 0x%02x", in.Code), 1
}

func reg(wide bool, r Register) string {
	if wide {
		return fmt.Sprintf("r%d", r)
	}
	return fmt.Sprintf("w%d", r)
}

func format(in Instruction) (string, bool) {
	size := ldstStr[in.Size()>>3]
	switch in.Class() {
	case BPF_ALU, BPF_ALU64:
		return formatALU(in)
	case BPF_STX:
		return formatSTX(in, size)
	case BPF_ST:
		switch in.Mode() {
		case BPF_MEM:
			return fmt.Sprintf("*(%s *)(r%d %+d) = %d", size, in.Dst, in.Off, in.Imm), true
		case 0xc0: // BPF_NOSPEC, kernel internal
			return "nospec", true
		}
	case BPF_LDX:
		switch {
		case in.Mode() == BPF_MEM:
		case in.Mode() == BPF_MEMSX && in.Size() != BPF_DW:
			size = ldsxStr[in.Size()>>3]
		default:
			return "", false
		}
		return fmt.Sprintf("r%d = *(%s *)(r%d %+d)", in.Dst, size, in.Src, in.Off), true
	case BPF_LD:
		switch {
		case in.Mode() == BPF_ABS:
			return fmt.Sprintf("r0 = *(%s *)skb[%d]", size, in.Imm), true
		case in.Mode() == BPF_IND:
			return fmt.Sprintf("r0 = *(%s *)skb[r%d + %d]", size, in.Src, in.Imm), true
		case in.IsLoadImm64():
			return formatLoadImm64(in, Instruction{}), true
		}
	case BPF_JMP, BPF_JMP32:
		return formatJump(in)
	}
	return "", false
}

func formatALU(in Instruction) (string, bool) {
	wide, op := in.Class() == BPF_ALU64, in.ALUOp()
	d := reg(wide, in.Dst)
	switch {
	case op == BPF_END && !wide:
		order := "le"
		if in.Source() == BPF_TO_BE {
			order = "be"
		}
		return fmt.Sprintf("r%d = %s%d r%d", in.Dst, order, in.Imm, in.Dst), true
	case op == BPF_END:
		return fmt.Sprintf("r%d = bswap%d r%d", in.Dst, in.Imm, in.Dst), true
	case op == BPF_NEG:
		return fmt.Sprintf("%s = -%s", d, d), true
	case op > BPF_END:
		return "", false
	case in.Code == BPF_ALU64|uint8(BPF_MOV)|BPF_X && in.Off == BPF_ADDR_SPACE_CAST:
		dstAS, srcAS := uint32(in.Imm)>>16, uint16(in.Imm)
		return fmt.Sprintf("r%d = addr_space_cast(r%d, %d, %d)", in.Dst, in.Src, dstAS, srcAS), true
	case in.Code == BPF_ALU64|uint8(BPF_MOV)|BPF_X && in.Off == -1:
		return fmt.Sprintf("r%d = &(void __percpu *)(r%d)", in.Dst, in.Src), true
	}
	sym := aluOpStr[op>>4]
	if (op == BPF_DIV || op == BPF_MOD) && in.Off == 1 {
		sym = "s" + sym
	}
	if in.Source() == BPF_K {
		return fmt.Sprintf("%s %s %d", d, sym, in.Imm), true
	}
	cast := ""
	if op == BPF_MOV {
		cast = movsxCast(in.Off)
	}
	return fmt.Sprintf("%s %s %s%s", d, sym, cast, reg(wide, in.Src)), true
}

// movsxCast is the cast of a sign-extending move from off bits ("(s8)"),
// or "" for a plain move. A switch, not a map: a package's map is built
// at start-up in every program that links the package.
func movsxCast(off int16) string {
	switch off {
	case 8:
		return "(s8)"
	case 16:
		return "(s16)"
	case 32:
		return "(s32)"
	}
	return ""
}

func formatSTX(in Instruction, size string) (string, bool) {
	mem := fmt.Sprintf("(%s *)(r%d %+d)", size, in.Dst, in.Off)
	if in.Mode() == BPF_MEM {
		return fmt.Sprintf("*%s = r%d", mem, in.Src), true
	}
	if in.Mode() != BPF_ATOMIC {
		return "", false
	}
	bits := ""
	if in.Size() == BPF_DW {
		bits = "64"
	}
	switch AtomicOp(in.Imm) {
	case BPF_CMPXCHG:
		return fmt.Sprintf("r0 = atomic%s_cmpxchg(%s, r0, r%d)", bits, mem, in.Src), true
	case BPF_XCHG:
		return fmt.Sprintf("r%d = atomic%s_xchg(%s, r%d)", in.Src, bits, mem, in.Src), true
	case BPF_LOAD_ACQ:
		return fmt.Sprintf("r%d = load_acquire((%s *)(r%d %+d))", in.Dst, size, in.Src, in.Off), true
	case BPF_STORE_REL:
		return fmt.Sprintf("store_release(%s, r%d)", mem, in.Src), true
	}
	switch op := in.Imm &^ int32(BPF_FETCH); {
	case op != int32(BPF_ADD) && op != int32(BPF_OR) && op != int32(BPF_AND) && op != int32(BPF_XOR):
		return "", false
	case in.Imm&int32(BPF_FETCH) != 0:
		name := atomicOpStr[op>>4]
		return fmt.Sprintf("r%d = atomic%s_fetch_%s(%s, r%d)", in.Src, bits, name, mem, in.Src), true
	default:
		return fmt.Sprintf("lock *%s %s r%d", mem, aluOpStr[op>>4], in.Src), true
	}
}

func formatJump(in Instruction) (string, bool) {
	wide := in.Class() == BPF_JMP
	switch op := in.JumpOp(); {
	case op == BPF_CALL && wide:
		switch in.Src {
		case BPF_PSEUDO_CALL:
			return fmt.Sprintf("call pc%+d", in.Imm), true
		case BPF_PSEUDO_KFUNC_CALL:
			return fmt.Sprintf("call kernel-function#%d", in.Imm), true
		case 0:
			if name, ok := Helper(in.Imm).name(); ok {
				return fmt.Sprintf("call %s#%d", name, in.Imm), true
			}
		}
		return fmt.Sprintf("call unknown#%d", in.Imm), true
	case in.Code == BPF_JMP|uint8(BPF_JA):
		return fmt.Sprintf("goto pc%+d", in.Off), true
	case in.Code == BPF_JMP|uint8(BPF_JA)|BPF_X:
		return fmt.Sprintf("gotox r%d", in.Dst), true
	case in.Code == BPF_JMP32|uint8(BPF_JA):
		return fmt.Sprintf("gotol pc%+d", in.Imm), true
	case in.Code == BPF_JMP|uint8(BPF_JCOND) && in.Src == BPF_MAY_GOTO:
		return fmt.Sprintf("may_goto pc%+d", in.Off), true
	case in.Code == BPF_JMP|uint8(BPF_EXIT):
		return "exit", true
	case op == BPF_JA || op == BPF_CALL || op == BPF_EXIT || op > BPF_JSLE:
		return "", false
	case in.Source() == BPF_X:
		dst, src := reg(wide, in.Dst), reg(wide, in.Src)
		return fmt.Sprintf("if %s %s %s goto pc%+d", dst, jmpOpStr[op>>4], src, in.Off), true
	default:
		dst := reg(wide, in.Dst)
		return fmt.Sprintf("if %s %s 0x%x goto pc%+d", dst, jmpOpStr[op>>4], uint32(in.Imm), in.Off), true
	}
}

// formatLoadImm64 prints a 64-bit load as bpftool's print_imm does: maps by
// id or fd_array index, other values (BPF_PSEUDO_MAP_IDX too) in hex.
func formatLoadImm64(lo, hi Instruction) string {
	var v string
	switch lo.Src {
	case BPF_PSEUDO_MAP_FD:
		v = fmt.Sprintf("map[id:%d]", uint32(lo.Imm))
	case BPF_PSEUDO_MAP_VALUE:
		v = fmt.Sprintf("map[id:%d][0]+%d", uint32(lo.Imm), uint32(hi.Imm))
	case BPF_PSEUDO_MAP_IDX_VALUE:
		v = fmt.Sprintf("map[idx:%d]+%d", uint32(lo.Imm), uint32(hi.Imm))
	case BPF_PSEUDO_FUNC:
		v = fmt.Sprintf("subprog[%+d]", lo.Imm)
	default:
		v = fmt.Sprintf("0x%x", uint64(uint32(hi.Imm))<<32|uint64(uint32(lo.Imm)))
	}
	return fmt.Sprintf("r%d = %s", lo.Dst, v)
}
