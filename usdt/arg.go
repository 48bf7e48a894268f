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

// Arg is one argument of a call site: "-4@%edi" a signed 4-byte value in
// edi, "8@-16(%rbp)" (arm64: "8@[x29, -16]"; arm: "8@[fp, #-16]") 8 bytes
// at rbp-16, "-4@$5" (arm64: "-4@5"; arm: "-4@#5") the constant 5. On
// 32-bit arm an 8-byte value in a register is in two, "8@r2" in r2 (low
// half) and r3.
type Arg struct {
	Kind   ArgKind // a register, memory at a register plus Value, or a constant
	Reg    string  // the register as written, without %: "rdi", "eax", "x1", "r1", "sp"
	Value  int64   // ArgConst: the value; ArgDeref: the offset from Reg
	Size   int     // bytes: 1, 2, 4 or 8
	Signed bool    // the size is written negative ("-4@...")
	// PtRegs is Reg's offset in the struct pt_regs of the x86_64 (for all
	// x86), arm64 or 32-bit arm kernel (uregs[], 4 bytes each).
	PtRegs int16
	// Err, from Probe.ParseArgs, says why the argument cannot be read
	// (its other fields are then zero); Args.Load of it returns Err.
	Err error
}

// ParseArgs parses a call site's arguments ("8@%rdi -4@$5") in the
// assembler syntax of machine: x86 (EM_X86_64, EM_386), arm64 or 32-bit arm
// (EM_ARM).
func ParseArgs(machine elf.Machine, s string) ([]Arg, error) {
	var out []Arg
	for i, f := range splitArgs(s) {
		a, err := parseArg(machine, f)
		if err != nil {
			return nil, fmt.Errorf("usdt: argument %d %q: %w", i, f, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// splitArgs splits at spaces outside brackets: arm64 writes "8@[sp, 16]",
// arm "4@[sp, #16]".
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s + " " {
		depth += map[rune]int{'[': 1, ']': -1}[c]
		if c == ' ' && (depth <= 0 || i == len(s)) {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func parseArg(machine elf.Machine, s string) (a Arg, err error) {
	size, loc, ok := strings.Cut(s, "@")
	if a.Size, err = strconv.Atoi(size); !ok || err != nil || loc == "" {
		return a, fmt.Errorf("want size@location")
	}
	if a.Signed = a.Size < 0; a.Signed {
		a.Size = -a.Size
	}
	if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
		return a, fmt.Errorf("size %s: want 1, 2, 4 or 8 bytes, negative when signed", size)
	}
	// Each syntax to "const", "reg" or "[reg, offset]".
	switch machine {
	case elf.EM_X86_64, elf.EM_386:
		if off, reg, ok := strings.Cut(loc, "("); ok {
			switch {
			case !strings.HasSuffix(reg, ")"):
				return a, fmt.Errorf("want offset(%%register)")
			case strings.Contains(reg, ","):
				return a, fmt.Errorf("an index register (base, index, scale) is not supported")
			case reg == "%rip)":
				return a, fmt.Errorf("%%rip-relative: a global variable, " +
					"which Probe.ParseArgs finds in the file's symbols")
			}
			loc = "[" + strings.TrimSuffix(reg, ")") + ", " + off + "]"
		}
		if c, ok := strings.CutPrefix(loc, "$"); ok {
			loc = c
		} else if loc == "" || loc[0] >= '0' && loc[0] <= '9' || loc[0] == '-' {
			loc = "$" + loc // not a constant
		}
		loc = strings.ReplaceAll(loc, "%", "")
	case elf.EM_AARCH64, elf.EM_ARM:
		loc = strings.ReplaceAll(loc, "#", "")
	default:
		const known = "x86, arm64 and arm are"
		return a, fmt.Errorf("the arguments of %v binaries are not supported (%s)", machine, known)
	}
	if strings.HasPrefix(loc, "[") && strings.HasSuffix(loc, "]") {
		reg, off, _ := strings.Cut(loc[1:len(loc)-1], ",")
		a.Kind, a.Reg, off = ArgDeref, strings.TrimSpace(reg), strings.TrimSpace(off)
		if off != "" {
			if a.Value, err = strconv.ParseInt(off, 0, 64); err != nil {
				return a, fmt.Errorf("offset %q: want a number "+
					"(symbols, as for global variables, are not supported)", off)
			}
		}
	} else if a.Value, err = strconv.ParseInt(loc, 0, 64); err != nil {
		a.Kind, a.Reg, a.Value = ArgReg, loc, 0
	}
	if a.Kind != ArgConst {
		if a.PtRegs, ok = regOffset(machine, a.Reg); !ok {
			return a, fmt.Errorf("register %q: not one bpfkit can read", a.Reg)
		}
		// The pair's second register must be one too: r0 to r13 start one.
		if machine == elf.EM_ARM && a.Kind == ArgReg && a.Size == 8 && a.PtRegs > 13*4 {
			const pair = "the register after it: the pair must start at r0 to r13"
			return a, fmt.Errorf("8 bytes in %s and %s", a.Reg, pair)
		}
	}
	return a, nil
}

// x86Regs names each register, in 64, 32, 16 and 8 bits, before its
// offset in the x86_64 struct pt_regs, where 32-bit programs' are too.
const x86Regs = "r15 r15d r15w r15b:0 r14 r14d r14w r14b:8 " +
	"r13 r13d r13w r13b:16 r12 r12d r12w r12b:24 " +
	"rbp ebp bp bpl:32 rbx ebx bx bl:40 " +
	"r11 r11d r11w r11b:48 r10 r10d r10w r10b:56 " +
	"r9 r9d r9w r9b:64 r8 r8d r8w r8b:72 " +
	"rax eax ax al:80 rcx ecx cx cl:88 " +
	"rdx edx dx dl:96 rsi esi si sil:104 " +
	"rdi edi di dil:112 rsp esp sp spl:152"

// armRegs names 32-bit arm's registers by their offsets in its struct
// pt_regs, uregs[18]: r0-r12 (r9, r10, r11 and r12 also as sb, sl, fp and
// ip), sp, lr. Not pc: at a uprobe it is the site, not what an instruction
// reading it there would see (the site plus 8).
var armRegs = map[string]int16{
	"sb": 9 * 4, "sl": 10 * 4, "fp": 11 * 4, "ip": 12 * 4, "sp": 13 * 4, "lr": 14 * 4,
}

// regOffset is the offset in the kernel's struct pt_regs (uapi
// asm/ptrace.h) of a register of machine.
func regOffset(machine elf.Machine, name string) (int16, bool) {
	if machine == elf.EM_ARM {
		if off, ok := armRegs[name]; ok {
			return off, true
		}
		n, err := strconv.Atoi(strings.TrimPrefix(name, "r"))
		return int16(n * 4), err == nil && name == "r"+strconv.Itoa(n) && n >= 0 && n <= 14
	}
	if machine == elf.EM_AARCH64 {
		// struct user_pt_regs: regs[31] (x0-x30, or w0-w30), sp, pc, pstate
		if name == "sp" {
			return 31 * 8, true
		}
		n, err := strconv.Atoi(name[min(1, len(name)):])
		if err != nil { // name has a prefix and a number past here
			return int16(n * 8), false
		}
		width := name[0] == 'x' || name[0] == 'w'
		canonical := name[1] >= '0' && name[1] <= '9' && (n > 9 || len(name) == 2) // not "x01", "x+1"
		return int16(n * 8), width && canonical && n <= 30
	}
	found := false
	for _, f := range strings.Fields(x86Regs) {
		reg, off, last := strings.Cut(f, ":")
		found = found || reg == name
		if n, _ := strconv.Atoi(off); last && found {
			return int16(n), true
		}
	}
	return 0, false
}
