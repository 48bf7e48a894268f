package insn

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Errors returned by Assemble, wrapped with the item index and names.
var (
	// ErrUnknownLabel: a jump or call to a label no Label item names.
	ErrUnknownLabel = errors.New("insn: unknown label")
	// ErrDuplicateLabel: two Label items of one name.
	ErrDuplicateLabel = errors.New("insn: duplicate label")
	// ErrEmptyLabel: a Label, or a jump target, named "".
	ErrEmptyLabel = errors.New("insn: empty label name")
	// ErrOffsetRange: a jump too far for its field, or landing outside the
	// program.
	ErrOffsetRange = errors.New("insn: jump offset out of range")
	// ErrUnknownHelper: CallName with a name not in the helper table.
	ErrUnknownHelper = errors.New("insn: unknown helper")
	// ErrNilMap: LoadMapFD or LoadMapValue of a nil MapFD.
	ErrNilMap = errors.New("insn: nil map")
	// ErrBadFD: MapFD.FD answered a negative or too large fd.
	ErrBadFD = errors.New("insn: invalid map fd")
	// ErrRegister: a register above r10, or a pseudo source the kernel
	// does not know.
	ErrRegister = errors.New("insn: invalid register")
	// ErrInvalid: an opcode, width or field the verifier refuses.
	ErrInvalid = errors.New("insn: invalid instruction")
	// ErrArgument: an argument a sequence builder such as MapIncrement
	// refuses.
	ErrArgument = errors.New("insn: invalid argument")
)

// Assemble lays items out into instruction slots. It resolves labels
// (offsets count slots from the next one; a 64-bit load takes two), map
// references (calling FD now) and helper names. It checks every
// instruction's encoding as the verifier does before types and bounds:
// registers, opcodes, widths, reserved fields, and jumps outside the
// program or into a 64-bit load.
func Assemble(items []Item) ([]Instruction, error) {
	labels := make(map[string]int)
	pc := 0
	for n := range items {
		it := &items[n] // an Item is several words: do not copy it
		switch it.kind {
		case kindLabel:
			if it.name == "" {
				return nil, at(n, -1, ErrEmptyLabel)
			}
			if _, dup := labels[it.name]; dup {
				return nil, at(n, -1, fmt.Errorf("%w %q", ErrDuplicateLabel, it.name))
			}
			labels[it.name] = pc
		case kindErr:
			return nil, at(n, -1, fmt.Errorf("%w: %s", ErrArgument, it.name))
		case kindWide:
			pc += 2
		default:
			pc++
		}
	}

	out := make([]Instruction, 0, pc)
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
				return nil, &itemError{fmt.Sprintf("item %d (insn %d): jump", n, pc), ErrEmptyLabel}
			}
			target, ok := labels[it.name]
			if !ok {
				return nil, at(n, pc, fmt.Errorf("%w %q", ErrUnknownLabel, it.name))
			}
			switch d := target - (pc + 1); {
			case it.ref == refOff && d == int(int16(d)):
				ins.Off = int16(d)
			case it.ref == refImm && d == int(int32(d)):
				ins.Imm = int32(d)
			default: // off holds 16 bits, imm 32
				bits := 16 << (it.ref - refOff)
				err := fmt.Errorf("%w: %d to %q does not fit %d bits",
					ErrOffsetRange, d, it.name, bits)
				return nil, at(n, pc, err)
			}
		case refMap:
			if it.m == nil {
				return nil, at(n, pc, ErrNilMap)
			}
			fd := it.m.FD()
			if fd < 0 || fd > math.MaxInt32 {
				return nil, at(n, pc, fmt.Errorf("%w %d", ErrBadFD, fd))
			}
			ins.Imm = int32(fd)
		case refHelper: // CallName of a name not in the table
			return nil, at(n, pc, fmt.Errorf("%w %q", ErrUnknownHelper, it.name))
		}
		if err := check(ins, it.kind == kindWide, it.hi); err != nil {
			return nil, at(n, pc, err)
		}
		out = append(out, ins)
		if it.kind == kindWide {
			out = append(out, Instruction{Imm: it.hi})
		}
	}
	// The kernel's "jump out of range" and "jump into the middle of ldimm64
	// insn", found before it.
	for pc, ins := range out {
		d, ok := jumpOffset(ins)
		to, why := int64(pc)+1+int64(d), "" // in 64 bits: a gotol's pc+1+imm overflows a 32-bit int
		switch {
		case !ok:
		case to < 0 || to >= int64(len(out)):
			why = fmt.Sprintf("to insn %d, outside the program's %d", to, len(out))
		case to > 0 && out[to-1].IsLoadImm64():
			why = fmt.Sprintf("to insn %d, the second slot of a 64-bit load", to)
		}
		if why != "" {
			n := 0 // the item of slot pc
			for slots := 0; slots <= pc; n++ {
				slots += [4]int{1, 2, 0, 0}[items[n].kind]
			}
			return nil, at(n-1, pc, fmt.Errorf("%w: %s", ErrOffsetRange, why))
		}
	}
	return out, nil
}

// written is the register that in writes, and what it is to in; what is ""
// for none. The verifier calls check_reg_arg(DST_OP) on that register,
// which refuses r10 ("frame pointer is read only"). It is the destination
// of an ALU operation or of a load (LDX, a 64-bit immediate, a
// load-acquire), and the src of an atomic with BPF_FETCH, which gets the
// old value (BPF_XCHG too; BPF_CMPXCHG's goes to r0). A store's dst is an
// address, read, and so is an atomic's.
func written(in Instruction) (r Register, what string) {
	switch a, class := AtomicOp(in.Imm), in.Class(); {
	case class == BPF_ALU || class == BPF_ALU64 || class == BPF_LDX || in.IsLoadImm64():
		return in.Dst, "destination"
	case class != BPF_STX || in.Mode() != BPF_ATOMIC:
	case a == BPF_LOAD_ACQ:
		return in.Dst, "destination"
	case a == BPF_CMPXCHG:
		return R0, "destination"
	case a&BPF_FETCH != 0:
		return in.Src, "the source a fetch writes the old value to"
	}
	return 0, ""
}

// itemError is an error of Assemble or Encode: where, then what, without a
// second "insn: " from the sentinel it wraps.
type itemError struct {
	where string
	err   error
}

func (e *itemError) Error() string {
	return "insn: " + e.where + ": " + strings.TrimPrefix(e.err.Error(), "insn: ")
}
func (e *itemError) Unwrap() error { return e.err }

// at is the error err of item n, at instruction pc (-1: before layout).
func at(n, pc int, err error) error {
	if pc < 0 {
		return &itemError{fmt.Sprintf("item %d", n), err}
	}
	return &itemError{fmt.Sprintf("item %d (insn %d)", n, pc), err}
}

// jumpOffset returns a jump's or bpf-to-bpf call's offset from the next slot.
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

// fieldSet is a set of an instruction's operand fields, for check to say
// which must be zero.
type fieldSet uint8

// The operand fields, in the order of mustBeZero.
const (
	fieldDst fieldSet = 1 << iota
	fieldSrc
	fieldOff
	fieldImm
)

// mustBeZero is check's complaint about each field, by bit.
var mustBeZero = [...]string{"dst must be 0", "src must be 0", "off must be 0", "imm must be 0"}

// check returns why the verifier would refuse in for its encoding alone, as
// kernel/bpf/verifier.c of 6.18 does (check_reg_arg, check_alu_op,
// check_atomic, check_ld_imm, check_ld_abs, do_check). r11 is the kernel's
// BPF_REG_AX; r10, the frame pointer, is read-only; a 64-bit load's or
// call's src is a pseudo source. wide: in is the first of two slots, hi the
// second's imm. It allocates only to fail.
func check(in Instruction, wide bool, hi int32) error {
	call := in.Code == BPF_JMP|uint8(BPF_CALL)
	switch {
	case in.Dst > R10:
		return fmt.Errorf("%w: r%d as destination (r0 to r10)", ErrRegister, in.Dst)
	case in.IsLoadImm64() && in.Src > BPF_PSEUDO_MAP_IDX_VALUE:
		return fmt.Errorf("%w: pseudo source %d of a 64-bit load (0 to %d)",
			ErrRegister, in.Src, BPF_PSEUDO_MAP_IDX_VALUE)
	case call && in.Src > BPF_PSEUDO_KFUNC_CALL:
		return fmt.Errorf("%w: pseudo source %d of a call (0 to %d)",
			ErrRegister, in.Src, BPF_PSEUDO_KFUNC_CALL)
	case !in.IsLoadImm64() && !call && in.Src > R10:
		return fmt.Errorf("%w: r%d as source (r0 to r10)", ErrRegister, in.Src)
	}
	if r, what := written(in); r == R10 {
		return fmt.Errorf("%w: r10 as %s: the frame pointer is read-only", ErrRegister, what)
	}
	why := ""
	need := func(ok bool, problem string) {
		if !ok && why == "" {
			why = problem
		}
	}
	k, size, jmp32, op := in.Source() == BPF_K, in.Size(), in.Class() == BPF_JMP32, in.Code&0xf0
	unused := fieldImm // the operand field that the source leaves unused
	if k {
		unused = fieldSrc
	}
	zero := func(fields fieldSet) {
		if why == "" {
			why = nonzero(in, fields)
		}
	}
	switch bits := int32(32 << (in.Code & 1)); in.Class() { // ALU64 is odd: 64 bits
	case BPF_ALU, BPF_ALU64:
		switch op := ALUOp(op); {
		case op > BPF_END:
			need(false, "unknown ALU operation")
		case op == BPF_NEG:
			need(k, "neg takes no source")
			zero(fieldSrc | fieldOff | fieldImm)
		case op == BPF_END:
			zero(fieldSrc | fieldOff)
			need(in.Imm == 16 || in.Imm == 32 || in.Imm == 64, "a byte swap is of 16, 32 or 64 bits")
			need(bits == 32 || k, "bswap has no big-endian form")
		case op == BPF_MOV && !k && bits == 64 && in.Off == BPF_ADDR_SPACE_CAST:
			need(in.Imm == 1 || in.Imm == 1<<16, "addr_space_cast is between address spaces 0 and 1")
		case op == BPF_MOV && !k:
			zero(fieldImm)
			need(in.Off == 0 || in.Off == 8 || in.Off == 16 || in.Off == 32 && bits == 64,
				"sign extension is from 8, 16 or, in 64 bits, 32 bits")
		case op == BPF_MOV:
			zero(fieldSrc | fieldOff)
		default:
			zero(unused)
			need(in.Off == 0 || in.Off == 1 && (op == BPF_DIV || op == BPF_MOD),
				"off must be 0, or 1 for signed div and mod")
			need(!k || in.Imm != 0 || op != BPF_DIV && op != BPF_MOD, "division by zero")
			need(!k || in.Imm >= 0 && in.Imm < bits || op != BPF_LSH && op != BPF_RSH && op != BPF_ARSH,
				"a shift is by 0 to 31, or 63 in 64 bits")
		}
	case BPF_LDX:
		need(in.Mode() == BPF_MEM || in.Mode() == BPF_MEMSX && size != BPF_DW, "unknown load mode")
		zero(fieldImm)
	case BPF_ST:
		need(in.Mode() == BPF_MEM, "unknown store mode")
		zero(fieldSrc)
	case BPF_STX:
		switch a, rmw := AtomicOp(in.Imm), AtomicOp(in.Imm)&^BPF_FETCH; {
		case in.Mode() == BPF_MEM:
			zero(fieldImm)
		case in.Mode() != BPF_ATOMIC:
			need(false, "unknown store mode")
		case a == BPF_XCHG || a == BPF_CMPXCHG || rmw == BPF_ADD.Atomic() || rmw == BPF_OR.Atomic() ||
			rmw == BPF_AND.Atomic() || rmw == BPF_XOR.Atomic():
			need(size == BPF_W || size == BPF_DW, "an atomic read-modify-write is of 32 or 64 bits")
		default:
			need(a == BPF_LOAD_ACQ || a == BPF_STORE_REL, "unknown atomic operation")
		}
	case BPF_LD:
		switch in.Mode() {
		case BPF_ABS, BPF_IND:
			need(size != BPF_DW, "a packet load is of 8, 16 or 32 bits")
			zero(fieldDst | fieldOff)
			need(in.Mode() == BPF_IND || in.Src == 0, "src must be 0")
		default:
			need(in.IsLoadImm64(), "unknown load mode or size")
			need(wide, "a 64-bit immediate load takes two slots: LoadImm64Raw")
			need(hi == 0 || in.Src != BPF_PSEUDO_MAP_FD && in.Src != BPF_PSEUDO_MAP_IDX,
				"the upper imm of a map fd or index load must be 0")
		}
	case BPF_JMP, BPF_JMP32:
		switch op := JumpOp(op); {
		case op == BPF_CALL || op == BPF_EXIT || op == BPF_JCOND:
			need(!jmp32 && k, "unknown jump operation")
			zero(fieldDst)
			if op != BPF_CALL {
				zero(fieldSrc | fieldImm)
			}
			need(op != BPF_CALL || in.Off == 0 || in.Src == BPF_PSEUDO_KFUNC_CALL, "off must be 0")
			need(op != BPF_CALL || in.Src != 0 || in.Imm > 0 && Helper(in.Imm) < numHelpers,
				"unknown helper")
		case op == BPF_JA:
			need(k, "goto takes no source")
			if zero(fieldSrc | fieldDst); jmp32 { // gotol: the offset is in imm
				zero(fieldOff)
			} else {
				zero(fieldImm)
			}
		case op > BPF_JCOND:
			need(false, "unknown jump operation")
		default:
			zero(unused)
		}
	}
	if why != "" {
		return fmt.Errorf("%w 0x%02x (dst r%d, src r%d, off %d, imm %d): %s",
			ErrInvalid, in.Code, in.Dst, in.Src, in.Off, in.Imm, why)
	}
	return nil
}

// nonzero names the first of fields that is not 0 in in, as "src must be
// 0", or is "". It is a function, not a closure in check, and not inlined,
// on purpose: inlined at each of check's thirteen uses, it made every
// program larger (tests/size_test.go).
//
//go:noinline
func nonzero(in Instruction, fields fieldSet) string {
	for i, v := range [...]int64{int64(in.Dst), int64(in.Src), int64(in.Off), int64(in.Imm)} {
		if v != 0 && fields&(1<<i) != 0 {
			return mustBeZero[i]
		}
	}
	return ""
}
