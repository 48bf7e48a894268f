package usdt

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// ArgKind says where an argument is.
type ArgKind uint8

// Where an argument may be, as libbpf's usdt.bpf.h names them.
const (
	ArgConst ArgKind = iota // a constant: Value
	ArgReg                  // in register Reg
	ArgDeref                // in memory at register Reg plus Value
)

// Arg is one argument of a call site, parsed from its note: "-4@%edi" is
// a signed 4-byte value in register edi, "8@-16(%rbp)" (on arm64
// "8@[x29, -16]") an 8-byte value at rbp-16, "-4@$5" (on arm64 "-4@5") the
// constant 5.
type Arg struct {
	Kind   ArgKind
	Reg    string // the register as written, without %: "rdi", "eax", "x1", "sp"
	Value  int64  // ArgConst: the value; ArgDeref: the offset from Reg
	Size   int    // bytes: 1, 2, 4 or 8
	Signed bool
	// PtRegs is the offset of Reg in the kernel's struct pt_regs, the
	// context of the program: the x86_64 one for x86 binaries, 32-bit
	// ones too, and the arm64 one for arm64 binaries.
	PtRegs int16
}

// ParseArgs parses a site's argument string ("8@%rdi -4@$5") in the
// assembler syntax of machine: x86 (EM_X86_64, EM_386) or arm64
// (EM_AARCH64).
func ParseArgs(machine elf.Machine, s string) ([]Arg, error) {
	var out []Arg
	for i, f := range splitArgs(s) {
		a, err := parseArg(machine, f)
		if err != nil {
			return nil, fmt.Errorf("argument %d %q: %w", i, f, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// splitArgs splits at spaces outside brackets: arm64 writes "8@[sp, 16]".
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == ' ' && depth <= 0:
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func parseArg(machine elf.Machine, s string) (Arg, error) {
	size, loc, ok := strings.Cut(s, "@")
	n, err := strconv.Atoi(size)
	if !ok || err != nil {
		return Arg{}, fmt.Errorf("want size@location")
	}
	a := Arg{Size: n, Signed: n < 0}
	if a.Signed {
		a.Size = -n
	}
	if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
		return Arg{}, fmt.Errorf("size %d: want 1, 2, 4 or 8 bytes, negative when signed", n)
	}
	x86 := machine == elf.EM_X86_64 || machine == elf.EM_386
	switch {
	case x86 && strings.HasPrefix(loc, "$"):
		a.Kind = ArgConst
		a.Value, err = strconv.ParseInt(loc[1:], 0, 64)
	case x86 && strings.HasPrefix(loc, "%"):
		a.Kind, a.Reg = ArgReg, loc[1:]
	case x86 && strings.HasSuffix(loc, ")"):
		off, reg, _ := strings.Cut(strings.TrimSuffix(loc, ")"), "(")
		a.Kind, a.Reg = ArgDeref, strings.TrimPrefix(reg, "%")
		if off != "" {
			a.Value, err = strconv.ParseInt(off, 0, 64)
		}
		if !strings.HasPrefix(reg, "%") || err != nil {
			return Arg{}, fmt.Errorf("want offset(%%register) with a number for offset (symbols, as for global variables, are not supported)")
		}
	case machine == elf.EM_AARCH64 && strings.HasPrefix(loc, "[") && strings.HasSuffix(loc, "]"):
		reg, off, hasOff := strings.Cut(loc[1:len(loc)-1], ",")
		a.Kind, a.Reg = ArgDeref, strings.TrimSpace(reg)
		if hasOff {
			a.Value, err = strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(off), "#"), 0, 64)
		}
	case machine == elf.EM_AARCH64 && loc != "" && (loc[0] == '-' || loc[0] >= '0' && loc[0] <= '9'):
		a.Kind = ArgConst
		a.Value, err = strconv.ParseInt(loc, 0, 64)
	case machine == elf.EM_AARCH64:
		a.Kind, a.Reg = ArgReg, loc
	default:
		return Arg{}, fmt.Errorf("the arguments of %v binaries are not supported (x86 and arm64 are)", machine)
	}
	if err != nil {
		return Arg{}, err
	}
	if a.Kind != ArgConst {
		if a.PtRegs, ok = regOffset(machine, a.Reg); !ok {
			return Arg{}, fmt.Errorf("register %q: not one bpfkit can read", a.Reg)
		}
	}
	return a, nil
}

// regOffset is the offset in the kernel's struct pt_regs, from uapi
// asm/ptrace.h, of the register named in an argument of a binary for
// machine. x86 binaries, 32-bit ones too, run on x86_64 kernels, whose
// pt_regs has every register in 8 bytes, the sub-registers (eax, ax, al)
// in its low bytes.
func regOffset(machine elf.Machine, name string) (int16, bool) {
	switch machine {
	case elf.EM_AARCH64:
		// struct user_pt_regs: regs[31] (x0-x30), sp, pc, pstate
		if name == "sp" {
			return 31 * 8, true
		}
		n, ok := regNumber(name, "x", "w")
		return int16(n) * 8, ok && n <= 30
	case elf.EM_X86_64, elf.EM_386:
		if off, ok := x86Regs[name]; ok {
			return off, true
		}
		// r8 to r15, and their low 32, 16 and 8 bits: r8d, r8w, r8b
		n, ok := regNumber(strings.TrimRight(name, "dwb"), "r")
		if ok && n >= 8 && n <= 15 && len(strings.TrimRight(name, "dwb")) >= len(name)-1 {
			return [...]int16{72, 64, 56, 48, 24, 16, 8, 0}[n-8], true
		}
	}
	return 0, false
}

// x86Regs are the registers before r8 by their offsets in the x86_64
// struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di
// orig_ax ip cs flags sp ss.
var x86Regs = map[string]int16{
	"rax": 80, "eax": 80, "ax": 80, "al": 80,
	"rbx": 40, "ebx": 40, "bx": 40, "bl": 40,
	"rcx": 88, "ecx": 88, "cx": 88, "cl": 88,
	"rdx": 96, "edx": 96, "dx": 96, "dl": 96,
	"rsi": 104, "esi": 104, "si": 104, "sil": 104,
	"rdi": 112, "edi": 112, "di": 112, "dil": 112,
	"rbp": 32, "ebp": 32, "bp": 32, "bpl": 32,
	"rsp": 152, "esp": 152, "sp": 152, "spl": 152,
}

// regNumber reads names like x12: one of the prefixes, then a number in
// decimal without a sign or a leading zero.
func regNumber(name string, prefixes ...string) (int, bool) {
	for _, p := range prefixes {
		digits, ok := strings.CutPrefix(name, p)
		if !ok || digits == "" || len(digits) > 2 || digits[0] == '0' && len(digits) > 1 {
			continue
		}
		if n, err := strconv.Atoi(digits); err == nil && digits[0] != '+' && digits[0] != '-' {
			return n, true
		}
	}
	return 0, false
}
