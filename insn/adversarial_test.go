package insn

import (
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// assembleErr assembles items and checks the exact error, its sentinel and
// that it starts with "insn: ", as every error insn returns does.
func assembleErr(t *testing.T, name string, items []Item, sentinel error, want string) {
	t.Helper()
	_, err := Assemble(items)
	if !errors.Is(err, sentinel) || err.Error() != want || !strings.HasPrefix(want, "insn: ") {
		t.Errorf("%s:\n\tgot  %v\n\twant %s", name, err, want)
	}
}

var hostileRegs = []Register{11, 15, 16, 255}

// dstBuilders are the builders that take a register as dst, each with
// that register in it.
func dstBuilders() map[string]func(r Register) Item {
	m := fakeMap(3)
	return map[string]func(r Register) Item{
		"ALU64Imm": func(r Register) Item { return ALU64Imm(BPF_ADD, r, 1) }, "ALU64Reg": func(r Register) Item { return ALU64Reg(BPF_ADD, r, R1) },
		"ALU32Imm": func(r Register) Item { return ALU32Imm(BPF_OR, r, 1) }, "ALU32Reg": func(r Register) Item { return ALU32Reg(BPF_OR, r, R1) },
		"Mov64Imm": func(r Register) Item { return Mov64Imm(r, 1) }, "Mov64Reg": func(r Register) Item { return Mov64Reg(r, R1) },
		"Mov32Imm": func(r Register) Item { return Mov32Imm(r, 1) }, "Mov32Reg": func(r Register) Item { return Mov32Reg(r, R1) },
		"Neg64": Neg64, "Neg32": Neg32,
		"SDiv64Imm": func(r Register) Item { return SDiv64Imm(r, 3) }, "SMod32Reg": func(r Register) Item { return SMod32Reg(r, R1) },
		"Movsx64Reg": func(r Register) Item { return Movsx64Reg(r, R1, 8) }, "Movsx32Reg": func(r Register) Item { return Movsx32Reg(r, R1, 16) },
		"ToLE": func(r Register) Item { return ToLE(r, 16) }, "ToBE": func(r Register) Item { return ToBE(r, 32) },
		"Bswap":         func(r Register) Item { return Bswap(r, 64) },
		"AddrSpaceCast": func(r Register) Item { return AddrSpaceCast(r, R1, 0, 1) },
		"LoadMem":       func(r Register) Item { return LoadMem(BPF_DW, r, R10, -8) },
		"LoadMemSX":     func(r Register) Item { return LoadMemSX(BPF_B, r, R10, -8) },
		"StoreMem":      func(r Register) Item { return StoreMem(BPF_DW, r, -8, R1) },
		"StoreImm":      func(r Register) Item { return StoreImm(BPF_DW, r, -8, 1) },
		"Atomic":        func(r Register) Item { return Atomic(BPF_DW, BPF_ADD.Atomic(), r, R1, -8) },
		"LoadAcquire":   func(r Register) Item { return LoadAcquire(BPF_W, r, R10, -8) },
		"StoreRelease":  func(r Register) Item { return StoreRelease(BPF_W, r, -8, R1) },
		"LoadImm64":     func(r Register) Item { return LoadImm64(r, 1) },
		"LoadImm64Raw":  func(r Register) Item { return LoadImm64Raw(r, BPF_PSEUDO_BTF_ID, 1) },
		"LoadMapFD":     func(r Register) Item { return LoadMapFD(r, m) },
		"LoadMapValue":  func(r Register) Item { return LoadMapValue(r, m, 8) },
		"LoadMapFDRaw":  func(r Register) Item { return LoadMapFDRaw(r, 3) },
		"JumpImmOff":    func(r Register) Item { return JumpImmOff(BPF_JEQ, r, 0, 0) },
		"JumpRegOff":    func(r Register) Item { return JumpRegOff(BPF_JNE, r, R1, 0) },
		"Jump32ImmOff":  func(r Register) Item { return Jump32ImmOff(BPF_JGT, r, 0, 0) },
		"Jump32RegOff":  func(r Register) Item { return Jump32RegOff(BPF_JSLE, r, R1, 0) },
		"JumpImm":       func(r Register) Item { return JumpImm(BPF_JEQ, r, 0, "top") },
		"JumpReg":       func(r Register) Item { return JumpReg(BPF_JEQ, r, R1, "top") },
		"Jump32Imm":     func(r Register) Item { return Jump32Imm(BPF_JEQ, r, 0, "top") },
		"Jump32Reg":     func(r Register) Item { return Jump32Reg(BPF_JEQ, r, R1, "top") },
		"Raw":           func(r Register) Item { return Raw(Instruction{Code: 0xb7, Dst: r}) },
		"Log2":          func(r Register) Item { return Log2(r, R1, R2)[0] },
		"FuncArg":       func(r Register) Item { return FuncArg(r, R1, 0) },
		"FuncRet":       func(r Register) Item { return FuncRet(r, R1, 2) },
	}
}

// srcBuilders are the builders that take a register as src, each with
// that register in it.
func srcBuilders() map[string]func(r Register) Item {
	return map[string]func(r Register) Item{
		"ALU64Reg": func(r Register) Item { return ALU64Reg(BPF_ADD, R1, r) }, "ALU32RegOff": func(r Register) Item { return ALU32RegOff(BPF_DIV, R1, r, 1) },
		"Mov64Reg": func(r Register) Item { return Mov64Reg(R1, r) }, "Mov32Reg": func(r Register) Item { return Mov32Reg(R1, r) },
		"SDiv64Reg":     func(r Register) Item { return SDiv64Reg(R1, r) },
		"Movsx64Reg":    func(r Register) Item { return Movsx64Reg(R1, r, 32) },
		"AddrSpaceCast": func(r Register) Item { return AddrSpaceCast(R1, r, 1, 0) },
		"LoadMem":       func(r Register) Item { return LoadMem(BPF_DW, R1, r, 0) },
		"StoreMem":      func(r Register) Item { return StoreMem(BPF_B, R10, -8, r) },
		"Atomic":        func(r Register) Item { return Atomic(BPF_W, BPF_XCHG, R10, r, -8) },
		"LoadAcquire":   func(r Register) Item { return LoadAcquire(BPF_H, R1, r, 0) },
		"StoreRelease":  func(r Register) Item { return StoreRelease(BPF_DW, R10, -8, r) },
		"LoadInd":       func(r Register) Item { return LoadInd(BPF_B, r, 0) },
		"JumpReg":       func(r Register) Item { return JumpReg(BPF_JEQ, R1, r, "top") },
		"Jump32RegOff":  func(r Register) Item { return Jump32RegOff(BPF_JSET, R1, r, 0) },
		"FuncArg ctx":   func(r Register) Item { return FuncArg(R0, r, 1) },
	}
}

// TestAdversarialRegisters gives every builder that takes a register each
// register above r10, in each position, behind a label so that the item
// index (1) and the instruction index (0) differ.
func TestAdversarialRegisters(t *testing.T) {
	m := fakeMap(3)
	dst, src := dstBuilders(), srcBuilders()
	for _, r := range hostileRegs {
		for name, build := range dst {
			assembleErr(t, fmt.Sprintf("%s dst r%d", name, r), []Item{Label("top"), build(r), Exit()},
				ErrRegister, fmt.Sprintf("insn: item 1 (insn 0): invalid register: r%d as destination (r0 to r10)", r))
		}
		for name, build := range src {
			assembleErr(t, fmt.Sprintf("%s src r%d", name, r), []Item{Label("top"), build(r), Exit()},
				ErrRegister, fmt.Sprintf("insn: item 1 (insn 0): invalid register: r%d as source (r0 to r10)", r))
		}
		assembleErr(t, "LoadImm64Raw pseudo", []Item{LoadImm64Raw(R1, r, 0), Exit()},
			ErrRegister, fmt.Sprintf("insn: item 0 (insn 0): invalid register: pseudo source %d of a 64-bit load (0 to 6)", r))
		assembleErr(t, "call pseudo", []Item{Raw(Instruction{Code: 0x85, Src: r, Imm: 1}), Exit()},
			ErrRegister, fmt.Sprintf("insn: item 0 (insn 0): invalid register: pseudo source %d of a call (0 to 2)", r))
		assembleErr(t, "MapAdd by", MapAdd(m, -8, -16, r), ErrArgument,
			fmt.Sprintf("insn: item 0: invalid argument: MapAdd: r%d is not one of r6 to r9", r))
	}
	// The pseudo sources the kernel knows are accepted.
	for src := Register(0); src <= BPF_PSEUDO_MAP_IDX_VALUE; src++ {
		if _, err := Assemble([]Item{LoadImm64Raw(R1, src, 0), Exit()}); err != nil {
			t.Errorf("pseudo source %d: %v", src, err)
		}
	}
}

// TestFramePointerReadOnly: r10 in each builder's dst, and in each's src,
// is refused where the verifier refuses a write to it ("frame pointer is
// read only", check_reg_arg's DST_OP), with the item and instruction
// index: the destination of an ALU operation or a load, and the src of an
// atomic that fetches the old value into it. A store's or an atomic's dst,
// an address, and any other src, are read, and accepted.
func TestFramePointerReadOnly(t *testing.T) {
	reads := map[string]bool{"StoreMem": true, "StoreImm": true, "Atomic": true,
		"StoreRelease": true, "JumpImmOff": true, "JumpRegOff": true, "Jump32ImmOff": true,
		"Jump32RegOff": true, "JumpImm": true, "JumpReg": true, "Jump32Imm": true,
		"Jump32Reg": true}
	for name, build := range dstBuilders() {
		items := []Item{Label("top"), build(R10), Exit()}
		if reads[name] {
			if _, err := Assemble(items); err != nil {
				t.Errorf("%s with dst r10: %v", name, err)
			}
			continue
		}
		assembleErr(t, name+" dst r10", items, ErrRegister, "insn: item 1 (insn 0): "+
			"invalid register: r10 as destination: the frame pointer is read-only")
	}
	for name, build := range srcBuilders() {
		items := []Item{Label("top"), build(R10), Exit()}
		if name != "Atomic" { // BPF_XCHG: src gets the old value
			if _, err := Assemble(items); err != nil {
				t.Errorf("%s with src r10: %v", name, err)
			}
			continue
		}
		assembleErr(t, name+" src r10", items, ErrRegister, "insn: item 1 (insn 0): "+
			"invalid register: r10 as the source a fetch writes the old value to: "+
			"the frame pointer is read-only")
	}
	for op, refused := range map[AtomicOp]bool{BPF_ADD.Atomic(): false,
		BPF_ADD.Atomic() | BPF_FETCH: true, BPF_XOR.Atomic() | BPF_FETCH: true,
		BPF_XCHG: true, BPF_CMPXCHG: false} {
		_, err := Assemble([]Item{Mov64Imm(R0, 0), Atomic(BPF_DW, op, R10, R10, -8), Exit()})
		if refused != errors.Is(err, ErrRegister) {
			t.Errorf("atomic %#x of r10 into the stack: %v", op, err)
		}
	}
}

// TestAdversarialFields gives widths, offsets, shifts and operations at
// and around their limits.
func TestAdversarialFields(t *testing.T) {
	cases := []struct {
		name string
		it   Item
		want string // the problem after the fields, "" for accepted
	}{
		{"movsx64 0", Movsx64Reg(R1, R2, 0), ""},
		{"movsx64 8", Movsx64Reg(R1, R2, 8), ""},
		{"movsx64 32", Movsx64Reg(R1, R2, 32), ""},
		{"movsx64 7", Movsx64Reg(R1, R2, 7), "sign extension is from 8, 16 or, in 64 bits, 32 bits"},
		{"movsx64 -1", Movsx64Reg(R1, R2, -1), "sign extension is from 8, 16 or, in 64 bits, 32 bits"},
		{"movsx64 max", Movsx64Reg(R1, R2, math.MaxInt16), "sign extension is from 8, 16 or, in 64 bits, 32 bits"},
		{"movsx64 min", Movsx64Reg(R1, R2, math.MinInt16), "sign extension is from 8, 16 or, in 64 bits, 32 bits"},
		{"movsx32 32", Movsx32Reg(R1, R2, 32), "sign extension is from 8, 16 or, in 64 bits, 32 bits"},
		{"mov with imm", Raw(Instruction{Code: 0xbf, Dst: R1, Src: R2, Imm: 1}), "imm must be 0"},
		{"mov imm with src", Raw(Instruction{Code: 0xb7, Dst: R1, Src: R2}), "src must be 0"},
		{"mov imm with off", ALU64ImmOff(BPF_MOV, R1, 1, 8), "off must be 0"},
		{"bswap 16", Bswap(R1, 16), ""},
		{"bswap 8", Bswap(R1, 8), "a byte swap is of 16, 32 or 64 bits"},
		{"bswap 0", Bswap(R1, 0), "a byte swap is of 16, 32 or 64 bits"},
		{"bswap -1", Bswap(R1, -1), "a byte swap is of 16, 32 or 64 bits"},
		{"le max", ToLE(R1, math.MaxInt32), "a byte swap is of 16, 32 or 64 bits"},
		{"be min", ToBE(R1, math.MinInt32), "a byte swap is of 16, 32 or 64 bits"},
		{"bswap be", Raw(Instruction{Code: 0xdf, Dst: R1, Imm: 16}), "bswap has no big-endian form"},
		{"sdiv off 1", SDiv32Imm(R1, -1), ""},
		{"sdiv by 0", SDiv64Imm(R1, 0), "division by zero"},
		{"mod by 0", ALU32Imm(BPF_MOD, R1, 0), "division by zero"},
		{"div off 2", ALU64ImmOff(BPF_DIV, R1, 3, 2), "off must be 0, or 1 for signed div and mod"},
		{"div off -1", ALU32RegOff(BPF_MOD, R1, R2, -1), "off must be 0, or 1 for signed div and mod"},
		{"mul off 1", ALU64ImmOff(BPF_MUL, R1, 3, 1), "off must be 0, or 1 for signed div and mod"},
		{"lsh 63", ALU64Imm(BPF_LSH, R1, 63), ""},
		{"lsh 64", ALU64Imm(BPF_LSH, R1, 64), "a shift is by 0 to 31, or 63 in 64 bits"},
		{"rsh32 32", ALU32Imm(BPF_RSH, R1, 32), "a shift is by 0 to 31, or 63 in 64 bits"},
		{"arsh -1", ALU64Imm(BPF_ARSH, R1, -1), "a shift is by 0 to 31, or 63 in 64 bits"},
		{"neg with imm", ALU64Imm(BPF_NEG, R1, -1), "imm must be 0"},
		{"neg of reg", ALU64Reg(BPF_NEG, R1, R2), "neg takes no source"},
		{"alu 0xe0", ALU64Imm(0xe0, R1, 0), "unknown ALU operation"},
		{"cast 0 0", AddrSpaceCast(R1, R2, 0, 0), "addr_space_cast is between address spaces 0 and 1"},
		{"cast max", AddrSpaceCast(R1, R2, math.MaxUint16, math.MaxUint16), "addr_space_cast is between address spaces 0 and 1"},
		{"ldx sx dw", LoadMemSX(BPF_DW, R1, R10, -8), "unknown load mode"},
		{"ldx size 0x18 mode abs", Raw(Instruction{Code: 0x39, Dst: R1, Src: R10}), "unknown load mode"},
		{"st with src", Raw(Instruction{Code: 0x7a, Dst: R10, Src: R1, Off: -8}), "src must be 0"},
		{"stx with imm", Raw(Instruction{Code: 0x7b, Dst: R10, Src: R1, Off: -8, Imm: -1}), "imm must be 0"},
		{"stx mode ind", Raw(Instruction{Code: 0x5b, Dst: R10, Src: R1}), "unknown store mode"},
		{"atomic b", Atomic(BPF_B, BPF_ADD.Atomic(), R10, R1, -8), "an atomic read-modify-write is of 32 or 64 bits"},
		{"cmpxchg h", Atomic(BPF_H, BPF_CMPXCHG, R10, R1, -8), "an atomic read-modify-write is of 32 or 64 bits"},
		{"atomic mul", Atomic(BPF_DW, BPF_MUL.Atomic(), R10, R1, -8), "unknown atomic operation"},
		{"atomic -1", Atomic(BPF_DW, -1, R10, R1, -8), "unknown atomic operation"},
		{"atomic high bits", Atomic(BPF_W, 0x1000|BPF_FETCH, R10, R1, -8), "unknown atomic operation"},
		{"load-acquire b", LoadAcquire(BPF_B, R1, R10, -8), ""},
		{"ld_abs dw", LoadAbs(BPF_DW, 0), "a packet load is of 8, 16 or 32 bits"},
		{"ld_ind dst", Raw(Instruction{Code: 0x50, Dst: R1, Src: R2}), "dst must be 0"},
		{"ld_abs src", Raw(Instruction{Code: 0x30, Src: R2}), "src must be 0"},
		{"ld imm w", Raw(Instruction{Code: 0x00, Dst: R1}), "unknown load mode or size"},
		{"raw ld_imm64", Raw(Instruction{Code: 0x18, Dst: R1}), "a 64-bit immediate load takes two slots: LoadImm64Raw"},
		{"map fd with value", LoadImm64Raw(R1, BPF_PSEUDO_MAP_FD, 1<<32|3), "the upper imm of a map fd or index load must be 0"},
		{"map idx with value", LoadImm64Raw(R1, BPF_PSEUDO_MAP_IDX, -1), "the upper imm of a map fd or index load must be 0"},
		{"jeq with src", Raw(Instruction{Code: 0x15, Dst: R1, Src: R2}), "src must be 0"},
		{"jeq reg with imm", Raw(Instruction{Code: 0x1e, Dst: R1, Src: R2, Imm: 9}), "imm must be 0"},
		{"jump 0xf0", JumpImmOff(0xf0, R1, 0, 0), "unknown jump operation"},
		{"ja with imm", Raw(Instruction{Code: 0x05, Imm: 1}), "imm must be 0"},
		{"ja with src", Raw(Instruction{Code: 0x0d, Dst: R3}), "goto takes no source"},
		{"gotol with off", Raw(Instruction{Code: 0x06, Off: 1}), "off must be 0"},
		{"exit with imm", Raw(Instruction{Code: 0x95, Imm: 1}), "imm must be 0"},
		{"exit32", Raw(Instruction{Code: 0x96}), "unknown jump operation"},
		{"call32", Raw(Instruction{Code: 0x86, Imm: 5}), "unknown jump operation"},
		{"call with dst", Raw(Instruction{Code: 0x85, Dst: R1, Imm: 5}), "dst must be 0"},
		{"call with off", Raw(Instruction{Code: 0x85, Off: 1, Imm: 5}), "off must be 0"},
		{"kfunc with off", Raw(Instruction{Code: 0x85, Src: BPF_PSEUDO_KFUNC_CALL, Off: 1, Imm: 5}), ""},
		{"call helper 0", Call(BPF_FUNC_unspec), "unknown helper"},
		{"call helper 212", Call(212), "unknown helper"},
		{"call helper -1", Call(-1), "unknown helper"},
		{"may_goto with imm", Raw(Instruction{Code: 0xe5, Imm: 1}), "imm must be 0"},
		{"may_goto src 1", Raw(Instruction{Code: 0xe5, Src: 1}), "src must be 0"},
		{"jcond32", Raw(Instruction{Code: 0xe6}), "unknown jump operation"},
	}
	for _, c := range cases {
		items := []Item{c.it, Exit()}
		if c.want == "" {
			if _, err := Assemble(items); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		in := c.it.Instruction()
		assembleErr(t, c.name, items, ErrInvalid, fmt.Sprintf("insn: item 0 (insn 0): invalid instruction %#02x (dst r%d, src r%d, off %d, imm %d): %s",
			in.Code, in.Dst, in.Src, in.Off, in.Imm, c.want))
	}
}

// TestAdversarialJumps: labels and offsets that lead nowhere.
func TestAdversarialJumps(t *testing.T) {
	cases := []struct {
		name     string
		items    []Item
		sentinel error
		want     string
	}{
		{"empty label", []Item{Exit(), Label("")}, ErrEmptyLabel, "insn: item 1: empty label name"},
		{"duplicate label", []Item{Label("a"), Exit(), Label("a")}, ErrDuplicateLabel, `insn: item 2: duplicate label "a"`},
		{"unknown label", []Item{Ja("b"), Exit()}, ErrUnknownLabel, `insn: item 0 (insn 0): unknown label "b"`},
		{"empty target", []Item{Exit(), MayGoto("")}, ErrEmptyLabel, "insn: item 1 (insn 1): jump: empty label name"},
		{"unknown function", []Item{CallFunc("f"), Exit()}, ErrUnknownLabel, `insn: item 0 (insn 0): unknown label "f"`},
		{"unknown helper", []Item{CallName(""), Exit()}, ErrUnknownHelper, `insn: item 0 (insn 0): unknown helper ""`},
		{"label at the end", []Item{Ja("end"), Exit(), Label("end")}, ErrOffsetRange, "insn: item 0 (insn 0): jump offset out of range: to insn 2, outside the program's 2"},
		{"off max", []Item{JaOff(math.MaxInt16)}, ErrOffsetRange, "insn: item 0 (insn 0): jump offset out of range: to insn 32768, outside the program's 1"},
		{"off min", []Item{Exit(), JaOff(math.MinInt16)}, ErrOffsetRange, "insn: item 1 (insn 1): jump offset out of range: to insn -32766, outside the program's 2"},
		{"off -2", []Item{Label("x"), JaOff(-2)}, ErrOffsetRange, "insn: item 1 (insn 0): jump offset out of range: to insn -1, outside the program's 1"},
		{"gotol min", []Item{Ja32Off(math.MinInt32)}, ErrOffsetRange, "insn: item 0 (insn 0): jump offset out of range: to insn -2147483647, outside the program's 1"},
		{"gotol max", []Item{Ja32Off(math.MaxInt32)}, ErrOffsetRange, "insn: item 0 (insn 0): jump offset out of range: to insn 2147483648, outside the program's 1"},
		{"call rel", []Item{CallRel(-2), Exit()}, ErrOffsetRange, "insn: item 0 (insn 0): jump offset out of range: to insn -1, outside the program's 2"},
		{"into ld_imm64", []Item{JumpImmOff(BPF_JEQ, R1, 0, 2), Exit(), LoadImm64(R0, 1), Exit()}, ErrOffsetRange,
			"insn: item 0 (insn 0): jump offset out of range: to insn 3, the second slot of a 64-bit load"},
		{"may_goto into ld_imm64", []Item{LoadImm64(R0, 1), MayGotoOff(-2), Exit()}, ErrOffsetRange,
			"insn: item 1 (insn 2): jump offset out of range: to insn 1, the second slot of a 64-bit load"},
		{"nil map", []Item{Exit(), LoadMapFD(R1, nil)}, ErrNilMap, "insn: item 1 (insn 1): nil map"},
		{"nil map in MapIncrement", MapIncrement(nil, -8, -16), ErrNilMap, "insn: item 2 (insn 2): nil map"},
		{"fd -1", []Item{LoadMapValue(R1, fakeMap(-1), 0)}, ErrBadFD, "insn: item 0 (insn 0): invalid map fd -1"},
		{"key at 0", MapIncrement(fakeMap(3), 0, -16), ErrArgument,
			"insn: item 0: invalid argument: map increment: key at r10+0, value at r10-16: the stack is r10-512 to r10-1, the value 8-byte aligned"},
		{"key below the stack", MapIncrement(fakeMap(3), -513, -16), ErrArgument,
			"insn: item 0: invalid argument: map increment: key at r10-513, value at r10-16: the stack is r10-512 to r10-1, the value 8-byte aligned"},
		{"value misaligned", MapAdd(fakeMap(3), -8, -12, R6), ErrArgument,
			"insn: item 0: invalid argument: map increment: key at r10-8, value at r10-12: the stack is r10-512 to r10-1, the value 8-byte aligned"},
		{"value min", MapIncrement(fakeMap(3), -8, math.MinInt16), ErrArgument,
			"insn: item 0: invalid argument: map increment: key at r10-8, value at r10-32768: the stack is r10-512 to r10-1, the value 8-byte aligned"},
		{"log2 same", Log2(R1, R2, R1), ErrArgument, "insn: item 0: invalid argument: Log2: dst r1, src r2 and tmp r1 must differ"},
		{"func arg -1", []Item{FuncArg(R0, R1, -1)}, ErrArgument,
			"insn: item 0: invalid argument: FuncArg: argument -1 is not in 0 to 11"},
		{"func arg 12", []Item{FuncArg(R0, R1, 12)}, ErrArgument,
			"insn: item 0: invalid argument: FuncArg: argument 12 is not in 0 to 11"},
		{"func arg huge", []Item{FuncArg(R0, R1, math.MaxInt32)}, ErrArgument,
			"insn: item 0: invalid argument: FuncArg: argument 2147483647 is not in 0 to 11"},
		{"func arg min", []Item{FuncArg(R0, R1, math.MinInt32)}, ErrArgument,
			"insn: item 0: invalid argument: FuncArg: argument -2147483648 is not in 0 to 11"},
		{"func ret 13", []Item{FuncRet(R0, R1, 13)}, ErrArgument,
			"insn: item 0: invalid argument: FuncRet: 13 arguments is not in 0 to 12"},
	}
	for _, c := range cases {
		assembleErr(t, c.name, c.items, c.sentinel, c.want)
	}
	if insns, err := Assemble([]Item{JaOff(-1)}); err != nil || insns[0].Off != -1 {
		t.Errorf("a jump to itself: %v", err)
	}
}

// TestAdversarialHuge: a program of a million slots, jumped across with
// gotol, and a 16-bit jump that cannot reach as far.
func TestAdversarialHuge(t *testing.T) {
	const n = 1 << 20
	items := make([]Item, 0, n+4)
	items = append(items, Ja32("end"), JumpImm(BPF_JEQ, R1, 0, "end"))
	for range n {
		items = append(items, Mov64Imm(R0, 0))
	}
	items = append(items, Label("end"), Exit())
	assembleErr(t, "huge", items, ErrOffsetRange, fmt.Sprintf(`insn: item 1 (insn 1): jump offset out of range: %d to "end" does not fit 16 bits`, n))
	items[1] = Mov64Imm(R0, 0)
	insns, err := Assemble(items)
	if err != nil || len(insns) != n+3 || insns[0].Imm != n+1 {
		t.Errorf("huge: %v, %d slots", err, len(insns))
	}
}

// TestAdversarialEncode: registers that do not fit 4 bits, and Decode's
// lengths.
func TestAdversarialEncode(t *testing.T) {
	for _, r := range []Register{16, 17, 255} {
		for _, in := range []Instruction{{Code: 0xbf, Dst: r}, {Code: 0xbf, Src: r}} {
			b, err := AppendEncode([]byte{0xaa}, []Instruction{{Code: 0x95}, in})
			want := fmt.Sprintf("insn: encode: instruction 1: invalid register: r%d does not fit 4 bits", r)
			if !errors.Is(err, ErrRegister) || err.Error() != want || string(b) != "\xaa" {
				t.Errorf("AppendEncode(%+v) = %x, %v", in, b, err)
			}
			_ = in.String()
		}
	}
	if b, err := Encode([]Instruction{{Dst: 15, Src: 15}}); err != nil || b[1] != 0xff {
		t.Errorf("r15 encodes: %x, %v", b, err)
	}
	for _, n := range []int{1, 7, 9, math.MaxUint16 + 1} {
		_, err := Decode(make([]byte, n))
		want := fmt.Sprintf("insn: decode: %d bytes is not a multiple of 8", n)
		if (n%8 == 0) != (err == nil) || err != nil && err.Error() != want {
			t.Errorf("Decode(%d bytes): %v", n, err)
		}
	}
}

// TestOpcodeTypes type-checks code that mixes operations up: an ALU
// operation where a jump one goes, and the reverse, an ALU operation as an
// atomic one or as a size; and BPF_F_CURRENT_CPU as Mov64Imm's immediate
// (tests.TestCurrentCPUFlag shows the kernel refusing what that would
// load). None may compile; the right forms must.
func TestOpcodeTypes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to find the package source with")
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil) // one importer: it parses each package once
	check := func(expr string) error {
		f, err := parser.ParseFile(fset, "p.go", "package p\nimport . \"github.com/bpfkit/bpfkit/insn\"\nvar _ = "+expr+"\n", 0)
		if err != nil {
			t.Fatal(err)
		}
		conf := types.Config{Importer: imp}
		_, err = conf.Check("p", fset, []*ast.File{f}, nil)
		return err
	}
	for _, bad := range []string{
		"ALU64Imm(BPF_JGT, R1, 1)",
		"ALU32Reg(BPF_JEQ, R1, R2)",
		"JumpImm(BPF_ADD, R1, 1, \"l\")",
		"Jump32RegOff(BPF_MUL, R1, R2, 1)",
		"Atomic(BPF_DW, BPF_ADD, R0, R1, 0)",
		"Atomic(BPF_DW, BPF_ADD|BPF_FETCH, R0, R1, 0)",
		"LoadMem(BPF_ADD, R0, R1, 0)",
		"Atomic(BPF_ADD, BPF_XCHG, R0, R1, 0)",
		"Mov64Imm(R3, BPF_F_CURRENT_CPU)", // sign-extended, all ones: EINVAL
	} {
		if err := check(bad); err == nil {
			t.Errorf("%s compiles", bad)
		}
	}
	for _, good := range []string{
		"Atomic(BPF_DW, BPF_ADD.Atomic()|BPF_FETCH, R0, R1, 0)",
		"Instruction{Code: BPF_ALU64 | uint8(BPF_MOV) | BPF_X}",
		"LoadImm64(R3, BPF_F_CURRENT_CPU)",
	} {
		if err := check(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
}
