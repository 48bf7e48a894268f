package usdt

import (
	"debug/elf"
	"fmt"
	"testing"
)

// TestParseArgs: the argument forms of x86, arm64 and 32-bit arm, and the
// strings that must be refused rather than read wrong.
func TestParseArgs(t *testing.T) {
	x86, arm, a32 := elf.EM_X86_64, elf.EM_AARCH64, elf.EM_ARM
	for _, c := range []struct {
		m    elf.Machine
		s    string
		want []Arg
	}{
		{x86, "-4@%edi", []Arg{{ArgReg, "edi", 0, 4, true, 112, nil}}},
		{x86, "8@-16(%rbp)", []Arg{{ArgDeref, "rbp", -16, 8, false, 32, nil}}},
		{x86, "8@%rax -4@$5", []Arg{{ArgReg, "rax", 0, 8, false, 80, nil}, {ArgConst, "", 5, 4, true, 0, nil}}},
		{x86, "2@(%r9w)  1@0x10(%r15b) -1@%sil 8@%r12", []Arg{{ArgDeref, "r9w", 0, 2, false, 64, nil}, {ArgDeref, "r15b", 16, 1, false, 0, nil},
			{ArgReg, "sil", 0, 1, true, 104, nil}, {ArgReg, "r12", 0, 8, false, 24, nil}}},
		{elf.EM_386, "-4@%esp 4@8(%ebx) 1@$-56", []Arg{{ArgReg, "esp", 0, 4, true, 152, nil}, {ArgDeref, "ebx", 8, 4, false, 40, nil}, {ArgConst, "", -56, 1, false, 0, nil}}},
		{arm, "-4@x0", []Arg{{ArgReg, "x0", 0, 4, true, 0, nil}}},
		{arm, "8@[sp, 16] 8@[x1]", []Arg{{ArgDeref, "sp", 16, 8, false, 248, nil}, {ArgDeref, "x1", 0, 8, false, 8, nil}}},
		{arm, "-4@-42 -8@[x29, -8] 4@w30 2@[x2, #4]", []Arg{{ArgConst, "", -42, 4, true, 0, nil}, {ArgDeref, "x29", -8, 8, true, 232, nil},
			{ArgReg, "w30", 0, 4, false, 240, nil}, {ArgDeref, "x2", 4, 2, false, 16, nil}}},
		{a32, "-4@r3 4@lr -4@#-42 1@#-56", []Arg{{ArgReg, "r3", 0, 4, true, 12, nil},
			{ArgReg, "lr", 0, 4, false, 56, nil}, {ArgConst, "", -42, 4, true, 0, nil},
			{ArgConst, "", -56, 1, false, 0, nil}}},
		{a32, "-4@[r0] -2@[r0, #8] 8@[fp, #-16] 4@[sp, #8]", []Arg{
			{ArgDeref, "r0", 0, 4, true, 0, nil}, {ArgDeref, "r0", 8, 2, true, 0, nil},
			{ArgDeref, "fp", -16, 8, false, 44, nil}, {ArgDeref, "sp", 8, 4, false, 52, nil}}},
		{a32, "-8@r0 8@r12 4@ip 4@sb 4@sl 4@r14", []Arg{{ArgReg, "r0", 0, 8, true, 0, nil},
			{ArgReg, "r12", 0, 8, false, 48, nil}, {ArgReg, "ip", 0, 4, false, 48, nil},
			{ArgReg, "sb", 0, 4, false, 36, nil}, {ArgReg, "sl", 0, 4, false, 40, nil},
			{ArgReg, "r14", 0, 4, false, 56, nil}}},
		{x86, "", nil},
	} {
		got, err := ParseArgs(c.m, c.s)
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%q: %+v, %v, want %+v", c.s, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q argument %d: %+v, want %+v", c.s, i, got[i], c.want[i])
			}
		}
	}
	for _, c := range []struct {
		m      elf.Machine
		s, err string
	}{
		{x86, "8@sym(%rip)", "%rip-relative: a global variable, which Probe.ParseArgs finds"},
		{x86, "8@8(%rip)", "%rip-relative"},
		{x86, "8@-16(%rbp", "want offset(%register)"},
		{x86, "8@ %rsi", "want size@location"},
		{x86, "3@%eax", "size 3"},
		{x86, "16@%xmm0", "size 16"},
		{x86, "8@%xmm0", `register "xmm0"`},
		{x86, "8@%ah", `register "ah"`},
		{x86, "8@%r16", `register "r16"`},
		{x86, "8@%r08", `register "r08"`},
		{x86, "8@(%rax,%rbx,8)", "an index register (base, index, scale) is not supported"},
		{x86, "4@-96(%rbp,%rax)", "an index register"},
		{x86, "8@$sym", `"sym"`},
		{x86, "8@5", `"$5"`},
		{x86, "8%rax", "size@location"},
		{x86, "8@x0", `register "x0"`},
		{arm, "8@x01", `register "x01"`},
		{arm, "8@x+1", `register "x+1"`},
		{arm, "8@xw1", `register "xw1"`},
		{arm, "8@x31", `register "x31"`},
		{arm, "8@[x1, 16", "register"},
		{arm, "8@[x1, sym]", "symbols"},
		{arm, "8@%rax", "register"},
		{elf.EM_RISCV, "8@a0", "EM_RISCV"},
		{x86, "8@%rax 8@%rbx -4@%ecx x", "argument 3"},
	} {
		_, err := ParseArgs(c.m, c.s)
		wantErr(t, fmt.Sprintf("%v %q", c.m, c.s), err, c.err)
	}
}
