package insn

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by Assemble, wrapped with the item index and names.
var (
	ErrUnknownLabel   = errors.New("unknown label")            // a jump or call to a label no Label item names
	ErrDuplicateLabel = errors.New("duplicate label")          // two Label items of one name
	ErrEmptyLabel     = errors.New("empty label name")         // a Label, or a jump target, named ""
	ErrOffsetRange    = errors.New("jump offset out of range") // too far for the field, or landing outside the program
	ErrUnknownHelper  = errors.New("unknown helper")           // CallName with a name not in the helper table
	ErrNilMap         = errors.New("nil map")                  // LoadMapFD or LoadMapValue of a nil MapFD
	ErrBadFD          = errors.New("invalid map fd")           // MapFD.FD answered a negative or too large fd
	ErrRegister       = errors.New("invalid register")         // above r10, or a pseudo source the kernel does not know
	ErrInvalid        = errors.New("invalid instruction")      // an opcode, width or field the verifier refuses
	ErrArgument       = errors.New("invalid argument")         // refused by a sequence builder such as MapIncrement
)

// Assemble lays items out into instruction slots. It resolves labels
// (offsets count slots from the next instruction, a 64-bit immediate load
// counting two), map references (calling FD now) and helper names, and
// checks every instruction as the kernel's verifier checks its encoding
// before it looks at types and bounds: registers, opcodes, widths, reserved
// fields, jumps that land outside the program or inside a 64-bit load.
func Assemble(items []Item) ([]Instruction, error) {
	labels := make(map[string]int)
	pc := 0
	for n := range items {
		it := &items[n] // an Item is ~56 bytes: do not copy it
		switch it.kind {
		case kindLabel:
			if it.name == "" {
				return nil, fmt.Errorf("insn: item %d: %w", n, ErrEmptyLabel)
			}
			if _, dup := labels[it.name]; dup {
				return nil, fmt.Errorf("insn: item %d: %w %q", n, ErrDuplicateLabel, it.name)
			}
			labels[it.name] = pc
		case kindErr:
			return nil, fmt.Errorf("insn: item %d: %w: %s", n, ErrArgument, it.name)
		case kindWide:
			pc += 2
		default:
			pc++
		}
	}

	out := make([]Instruction, 0, pc)
	type jump struct{ item, pc, target int }
	var jumps []jump
	for n := range items {
		it := &items[n]
		if it.kind == kindLabel {
			continue
		}
		pc := len(out)
		ins := it.ins
		switch it.ref {
		case refOff, refImm:
			if it.name == "" {
				return nil, fmt.Errorf("insn: item %d (insn %d): jump: %w", n, pc, ErrEmptyLabel)
			}
			target, ok := labels[it.name]
			if !ok {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %q", n, pc, ErrUnknownLabel, it.name)
			}
			d := target - (pc + 1)
			if it.ref == refImm {
				if d < math.MinInt32 || d > math.MaxInt32 {
					return nil, fmt.Errorf("insn: item %d (insn %d): %w: %d to %q", n, pc, ErrOffsetRange, d, it.name)
				}
				ins.Imm = int32(d)
			} else {
				if d < math.MinInt16 || d > math.MaxInt16 {
					return nil, fmt.Errorf("insn: item %d (insn %d): %w: %d to %q does not fit 16 bits", n, pc, ErrOffsetRange, d, it.name)
				}
				ins.Off = int16(d)
			}
		case refMap:
			if it.m == nil {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w", n, pc, ErrNilMap)
			}
			fd := it.m.FD()
			if fd < 0 || fd > math.MaxInt32 {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %d", n, pc, ErrBadFD, fd)
			}
			ins.Imm = int32(fd)
		case refHelper:
			h, ok := HelperByName(it.name)
			if !ok {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %q", n, pc, ErrUnknownHelper, it.name)
			}
			ins.Imm = int32(h)
		}
		err := check(ins)
		if err == nil && ins.IsLoadImm64() != (it.kind == kindWide) {
			err = fmt.Errorf("%w 0x18: a 64-bit immediate load takes two slots: LoadImm64Raw", ErrInvalid)
		}
		if err == nil && it.kind == kindWide && it.hi != 0 && (ins.Src == BPF_PSEUDO_MAP_FD || ins.Src == BPF_PSEUDO_MAP_IDX) {
			err = fmt.Errorf("%w 0x18: the upper imm of a map fd or index load must be 0, not %d", ErrInvalid, it.hi)
		}
		if err != nil {
			return nil, fmt.Errorf("insn: item %d (insn %d): %w", n, pc, err)
		}
		if d, ok := jumpOffset(ins); ok {
			jumps = append(jumps, jump{n, pc, pc + 1 + d})
		}
		out = append(out, ins)
		if it.kind == kindWide {
			out = append(out, Instruction{Imm: it.hi})
		}
	}
	for _, j := range jumps { // the kernel: "jump out of range", "jump into the middle of ldimm64 insn"
		why := fmt.Sprintf("to insn %d, outside the program's %d", j.target, len(out))
		if j.target >= 0 && j.target < len(out) {
			if j.target == 0 || !out[j.target-1].IsLoadImm64() {
				continue
			}
			why = fmt.Sprintf("to insn %d, the second slot of a 64-bit load", j.target)
		}
		return nil, fmt.Errorf("insn: item %d (insn %d): %w: %s", j.item, j.pc, ErrOffsetRange, why)
	}
	return out, nil
}

// jumpOffset returns the offset of a jump or bpf-to-bpf call, relative to
// the next slot.
func jumpOffset(in Instruction) (int, bool) {
	switch {
	case in.Class() != BPF_JMP && in.Class() != BPF_JMP32 || in.JumpOp() == BPF_EXIT:
		return 0, false
	case in.JumpOp() == BPF_CALL:
		return int(in.Imm), in.Src == BPF_PSEUDO_CALL
	case in.Code == BPF_JMP32|uint8(BPF_JA):
		return int(in.Imm), true
	}
	return int(in.Off), true
}

// check returns why the verifier would refuse in for its encoding alone,
// following kernel/bpf/verifier.c of 6.18 (check_reg_arg, check_alu_op,
// check_atomic, check_ld_imm, check_ld_abs and do_check's class checks).
// Registers above r10 are refused everywhere: r11 is the kernel's own
// BPF_REG_AX. The src of a 64-bit load or a call holds a pseudo source.
func check(in Instruction) error {
	if in.Dst > R10 {
		return fmt.Errorf("%w: r%d as destination (r0 to r10)", ErrRegister, in.Dst)
	}
	call := in.Code == BPF_JMP|uint8(BPF_CALL)
	switch {
	case in.IsLoadImm64() && in.Src > BPF_PSEUDO_MAP_IDX_VALUE:
		return fmt.Errorf("%w: pseudo source %d of a 64-bit load (0 to %d)", ErrRegister, in.Src, BPF_PSEUDO_MAP_IDX_VALUE)
	case call && in.Src > BPF_PSEUDO_KFUNC_CALL:
		return fmt.Errorf("%w: pseudo source %d of a call (0 to %d)", ErrRegister, in.Src, BPF_PSEUDO_KFUNC_CALL)
	case !in.IsLoadImm64() && !call && in.Src > R10:
		return fmt.Errorf("%w: r%d as source (r0 to r10)", ErrRegister, in.Src)
	}
	var why string
	need := func(ok bool, format string, args ...any) {
		if !ok && why == "" {
			why = fmt.Sprintf(format, args...)
		}
	}
	zero := func(what string, v int64) { need(v == 0, "%s must be 0, not %d", what, v) }
	k, size, jmp32 := in.Source() == BPF_K, in.Size(), in.Class() == BPF_JMP32
	switch in.Class() {
	case BPF_ALU, BPF_ALU64:
		op, bits := in.ALUOp(), 32
		if in.Class() == BPF_ALU64 {
			bits = 64
		}
		switch {
		case op > BPF_END:
			need(false, "unknown ALU operation")
		case op == BPF_NEG:
			need(k, "neg takes no source")
			zero("src", int64(in.Src))
			zero("off", int64(in.Off))
			zero("imm", int64(in.Imm))
		case op == BPF_END:
			zero("src", int64(in.Src))
			zero("off", int64(in.Off))
			need(in.Imm == 16 || in.Imm == 32 || in.Imm == 64, "byte swap of %d bits (16, 32 or 64)", in.Imm)
			need(bits == 32 || k, "bswap has no big-endian form")
		case op == BPF_MOV && !k && bits == 64 && in.Off == BPF_ADDR_SPACE_CAST:
			need(in.Imm == 1 || in.Imm == 1<<16, "addr_space_cast between address spaces %d and %d (only 0 and 1)",
				uint32(in.Imm)>>16, uint16(in.Imm))
		case op == BPF_MOV && !k:
			zero("imm", int64(in.Imm))
			need(in.Off == 0 || in.Off == 8 || in.Off == 16 || in.Off == 32 && bits == 64,
				"sign extension from %d bits (8, 16 or, in 64 bits, 32)", in.Off)
		case op == BPF_MOV:
			zero("src", int64(in.Src))
			zero("off", int64(in.Off))
		default:
			if k {
				zero("src", int64(in.Src))
			} else {
				zero("imm", int64(in.Imm))
			}
			need(in.Off == 0 || in.Off == 1 && (op == BPF_DIV || op == BPF_MOD), "off %d (0, or 1 for signed div and mod)", in.Off)
			need(!k || in.Imm != 0 || op != BPF_DIV && op != BPF_MOD, "division by zero")
			need(!k || in.Imm >= 0 && int(in.Imm) < bits || op != BPF_LSH && op != BPF_RSH && op != BPF_ARSH,
				"shift by %d (0 to %d)", in.Imm, bits-1)
		}
	case BPF_LDX:
		need(in.Mode() == BPF_MEM || in.Mode() == BPF_MEMSX && size != BPF_DW, "unknown load mode")
		zero("imm", int64(in.Imm))
	case BPF_ST:
		need(in.Mode() == BPF_MEM, "unknown store mode")
		zero("src", int64(in.Src))
	case BPF_STX:
		switch op := AtomicOp(in.Imm); {
		case in.Mode() == BPF_MEM:
			zero("imm", int64(in.Imm))
		case in.Mode() != BPF_ATOMIC:
			need(false, "unknown store mode")
		case op == BPF_LOAD_ACQ || op == BPF_STORE_REL:
		case op == BPF_XCHG || op == BPF_CMPXCHG || op&^BPF_FETCH == BPF_ADD.Atomic() ||
			op&^BPF_FETCH == BPF_OR.Atomic() || op&^BPF_FETCH == BPF_AND.Atomic() || op&^BPF_FETCH == BPF_XOR.Atomic():
			need(size == BPF_W || size == BPF_DW, "atomic read-modify-write on %d bits (32 or 64)", [4]int{32, 16, 8, 64}[size>>3])
		default:
			need(false, "unknown atomic operation %#x", uint32(in.Imm))
		}
	case BPF_LD:
		switch in.Mode() {
		case BPF_ABS, BPF_IND:
			need(size != BPF_DW, "64-bit packet load")
			zero("dst", int64(in.Dst))
			zero("off", int64(in.Off))
			need(in.Mode() == BPF_IND || in.Src == 0, "src must be 0, not %d", in.Src)
		case BPF_IMM:
			need(size == BPF_DW, "immediate load of less than 64 bits")
		default:
			need(false, "unknown load mode")
		}
	case BPF_JMP, BPF_JMP32:
		switch op := in.JumpOp(); {
		case op == BPF_CALL || op == BPF_EXIT || op == BPF_JCOND:
			need(!jmp32 && k, "unknown jump operation")
			zero("dst", int64(in.Dst))
			need(op != BPF_CALL || in.Off == 0 || in.Src == BPF_PSEUDO_KFUNC_CALL, "off must be 0, not %d", in.Off)
			need(op == BPF_CALL || in.Src == 0, "src must be 0, not %d", in.Src)
			need(op != BPF_CALL || in.Src != 0 || in.Imm > 0 && int(in.Imm) < len(helperNames), "unknown helper %d", in.Imm)
			need(op == BPF_CALL || in.Imm == 0, "imm must be 0, not %d", in.Imm)
		case op == BPF_JA:
			need(k, "goto takes no source")
			zero("src", int64(in.Src))
			zero("dst", int64(in.Dst))
			if jmp32 {
				zero("off", int64(in.Off))
			} else {
				zero("imm", int64(in.Imm))
			}
		case op > BPF_JCOND:
			need(false, "unknown jump operation")
		case k:
			zero("src", int64(in.Src))
		default:
			zero("imm", int64(in.Imm))
		}
	}
	if why != "" {
		return fmt.Errorf("%w 0x%02x: %s", ErrInvalid, in.Code, why)
	}
	return nil
}
