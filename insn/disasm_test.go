package insn

import (
	"fmt"
	"strings"
	"testing"
)

func ins(it Item) Instruction { return it.Instruction() }

// Expected texts follow print_bpf_insn in kernel/bpf/disasm.c, with
// bpftool's print_imm for 64-bit loads; several are verbatim from verifier
// logs and bpftool dumps quoted in kernel selftests and mailing list posts.
var formatCases = []struct {
	in   Instruction
	want string
}{
	{ins(Mov64Imm(R0, 0)), "r0 = 0"},
	{ins(Mov64Imm(R1, -1)), "r1 = -1"},
	{ins(Mov64Reg(R3, R10)), "r3 = r10"},
	{ins(Mov32Imm(R0, 7)), "w0 = 7"},
	{ins(Mov32Reg(R1, R2)), "w1 = w2"},
	{ins(ALU64Imm(BPF_ADD, R1, 1)), "r1 += 1"},
	{ins(ALU64Imm(BPF_ADD, R2, -8)), "r2 += -8"},
	{ins(ALU32Imm(BPF_ADD, R1, 1)), "w1 += 1"},
	{ins(ALU64Imm(BPF_SUB, R1, 2)), "r1 -= 2"},
	{ins(ALU64Reg(BPF_MUL, R1, R2)), "r1 *= r2"},
	{ins(ALU64Imm(BPF_DIV, R1, 3)), "r1 /= 3"},
	{ins(ALU32Reg(BPF_OR, R1, R2)), "w1 |= w2"},
	{ins(ALU64Imm(BPF_AND, R1, 256)), "r1 &= 256"},
	{ins(ALU64Imm(BPF_LSH, R2, 16)), "r2 <<= 16"},
	{ins(ALU32Imm(BPF_RSH, R0, 24)), "w0 >>= 24"},
	{ins(ALU64Reg(BPF_MOD, R1, R2)), "r1 %= r2"},
	{ins(ALU64Reg(BPF_XOR, R4, R5)), "r4 ^= r5"},
	{ins(ALU64Imm(BPF_ARSH, R3, 63)), "r3 s>>= 63"},
	{ins(Neg64(R1)), "r1 = -r1"},
	{ins(Neg32(R1)), "w1 = -w1"},
	{ins(SDiv64Imm(R1, 3)), "r1 s/= 3"},
	{ins(SDiv64Reg(R1, R2)), "r1 s/= r2"},
	{ins(SMod64Reg(R1, R2)), "r1 s%= r2"},
	{ins(SMod32Imm(R1, -7)), "w1 s%= -7"},
	{ins(SDiv32Reg(R1, R2)), "w1 s/= w2"},
	{ins(ALU64ImmOff(BPF_ADD, R1, 1, 1)), "r1 += 1"}, // off only matters for div/mod
	{ins(Movsx64Reg(R1, R2, 8)), "r1 = (s8)r2"},
	{ins(Movsx64Reg(R1, R2, 16)), "r1 = (s16)r2"},
	{ins(Movsx64Reg(R1, R2, 32)), "r1 = (s32)r2"},
	{ins(Movsx32Reg(R1, R2, 8)), "w1 = (s8)w2"},
	{ins(Movsx32Reg(R1, R2, 16)), "w1 = (s16)w2"},
	{ins(ToBE(R1, 16)), "r1 = be16 r1"},
	{ins(ToLE(R2, 32)), "r2 = le32 r2"},
	{ins(ToBE(R3, 64)), "r3 = be64 r3"},
	{ins(Bswap(R1, 16)), "r1 = bswap16 r1"},
	{ins(Bswap(R2, 64)), "r2 = bswap64 r2"},
	{Instruction{Code: BPF_ALU64 | uint8(BPF_MOV) | BPF_X, Dst: R1, Src: R2, Off: 1, Imm: 1 << 16}, "r1 = addr_space_cast(r2, 1, 0)"},
	{ins(AddrSpaceCast(R1, R2, 1, 0)), "r1 = addr_space_cast(r2, 1, 0)"},
	{ins(AddrSpaceCast(R3, R3, 0, 1)), "r3 = addr_space_cast(r3, 0, 1)"},
	{Instruction{Code: BPF_ALU64 | uint8(BPF_MOV) | BPF_X, Dst: R0, Src: R0, Off: -1}, "r0 = &(void __percpu *)(r0)"},
	{ins(LoadMem(BPF_DW, R1, R8, 24)), "r1 = *(u64 *)(r8 +24)"},
	{ins(LoadMem(BPF_W, R3, R6, 0)), "r3 = *(u32 *)(r6 +0)"},
	{ins(LoadMem(BPF_H, R2, R10, -2)), "r2 = *(u16 *)(r10 -2)"},
	{ins(LoadMem(BPF_B, R0, R1, 12)), "r0 = *(u8 *)(r1 +12)"},
	{ins(LoadMemSX(BPF_B, R0, R1, 0)), "r0 = *(s8 *)(r1 +0)"},
	{ins(LoadMemSX(BPF_H, R0, R1, -4)), "r0 = *(s16 *)(r1 -4)"},
	{ins(LoadMemSX(BPF_W, R0, R1, 8)), "r0 = *(s32 *)(r1 +8)"},
	{ins(StoreMem(BPF_DW, R10, -8, R1)), "*(u64 *)(r10 -8) = r1"},
	{ins(StoreMem(BPF_W, R0, 4, R7)), "*(u32 *)(r0 +4) = r7"},
	{ins(StoreImm(BPF_W, R10, -4, 0)), "*(u32 *)(r10 -4) = 0"},
	{ins(StoreImm(BPF_DW, R10, -16, -1)), "*(u64 *)(r10 -16) = -1"},
	{ins(Atomic(BPF_DW, BPF_ADD.Atomic(), R10, R1, -8)), "lock *(u64 *)(r10 -8) += r1"},
	{ins(Atomic(BPF_W, BPF_OR.Atomic(), R1, R2, 0)), "lock *(u32 *)(r1 +0) |= r2"},
	{ins(Atomic(BPF_DW, BPF_AND.Atomic(), R1, R2, 0)), "lock *(u64 *)(r1 +0) &= r2"},
	{ins(Atomic(BPF_DW, BPF_XOR.Atomic(), R1, R2, 0)), "lock *(u64 *)(r1 +0) ^= r2"},
	{ins(Atomic(BPF_DW, BPF_ADD.Atomic()|BPF_FETCH, R10, R0, -8)), "r0 = atomic64_fetch_add((u64 *)(r10 -8), r0)"},
	{ins(Atomic(BPF_W, BPF_ADD.Atomic()|BPF_FETCH, R10, R1, -8)), "r1 = atomic_fetch_add((u32 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_DW, BPF_AND.Atomic()|BPF_FETCH, R10, R1, -8)), "r1 = atomic64_fetch_and((u64 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_DW, BPF_OR.Atomic()|BPF_FETCH, R10, R1, -8)), "r1 = atomic64_fetch_or((u64 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_W, BPF_XOR.Atomic()|BPF_FETCH, R10, R1, -8)), "r1 = atomic_fetch_xor((u32 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_DW, BPF_XCHG, R10, R1, -8)), "r1 = atomic64_xchg((u64 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_W, BPF_XCHG, R10, R1, -8)), "r1 = atomic_xchg((u32 *)(r10 -8), r1)"},
	{ins(Atomic(BPF_DW, BPF_CMPXCHG, R10, R2, -8)), "r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r2)"},
	{ins(Atomic(BPF_DW, BPF_LOAD_ACQ, R0, R1, 8)), "r0 = load_acquire((u64 *)(r1 +8))"},
	{ins(Atomic(BPF_DW, BPF_STORE_REL, R10, R1, -8)), "store_release((u64 *)(r10 -8), r1)"},
	{ins(LoadAcquire(BPF_B, R2, R3, -1)), "r2 = load_acquire((u8 *)(r3 -1))"},
	{ins(StoreRelease(BPF_H, R4, 2, R5)), "store_release((u16 *)(r4 +2), r5)"},
	{ins(LoadAbs(BPF_B, 12)), "r0 = *(u8 *)skb[12]"},
	{ins(LoadAbs(BPF_W, -4)), "r0 = *(u32 *)skb[-4]"},
	{ins(LoadInd(BPF_H, R7, 14)), "r0 = *(u16 *)skb[r7 + 14]"},
	{ins(JumpImmOff(BPF_JEQ, R0, 0, 5)), "if r0 == 0x0 goto pc+5"},
	{ins(JumpImmOff(BPF_JNE, R1, 0, -1)), "if r1 != 0x0 goto pc-1"},
	{ins(JumpImmOff(BPF_JEQ, R1, -11, 3)), "if r1 == 0xfffffff5 goto pc+3"},
	{ins(JumpImmOff(BPF_JGT, R1, 7, 2)), "if r1 > 0x7 goto pc+2"},
	{ins(JumpImmOff(BPF_JGE, R1, 7, 0)), "if r1 >= 0x7 goto pc+0"},
	{ins(JumpImmOff(BPF_JSET, R1, 8, 1)), "if r1 & 0x8 goto pc+1"},
	{ins(JumpImmOff(BPF_JSGT, R1, 1, 1)), "if r1 s> 0x1 goto pc+1"},
	{ins(JumpImmOff(BPF_JSGE, R1, 1, 1)), "if r1 s>= 0x1 goto pc+1"},
	{ins(JumpImmOff(BPF_JLT, R1, 1, 1)), "if r1 < 0x1 goto pc+1"},
	{ins(JumpImmOff(BPF_JLE, R1, 1, 1)), "if r1 <= 0x1 goto pc+1"},
	{ins(JumpImmOff(BPF_JSLT, R1, 1, 1)), "if r1 s< 0x1 goto pc+1"},
	{ins(JumpImmOff(BPF_JSLE, R1, 1, 1)), "if r1 s<= 0x1 goto pc+1"},
	{ins(JumpRegOff(BPF_JGT, R1, R2, 4)), "if r1 > r2 goto pc+4"},
	{ins(JumpRegOff(BPF_JGE, R8, R7, 156)), "if r8 >= r7 goto pc+156"},
	{ins(JumpRegOff(BPF_JLE, R2, R10, -1)), "if r2 <= r10 goto pc-1"},
	{ins(Jump32ImmOff(BPF_JEQ, R1, 1, 2)), "if w1 == 0x1 goto pc+2"},
	{ins(Jump32RegOff(BPF_JSLT, R1, R2, -3)), "if w1 s< w2 goto pc-3"},
	{ins(JaOff(3)), "goto pc+3"},
	{ins(JaOff(-1)), "goto pc-1"},
	{ins(Ja32Off(1)), "gotol pc+1"},
	{ins(Ja32Off(-100000)), "gotol pc-100000"},
	{Instruction{Code: BPF_JMP | uint8(BPF_JCOND), Off: 4}, "may_goto pc+4"},
	{ins(MayGotoOff(-3)), "may_goto pc-3"},
	{Instruction{Code: BPF_JMP | uint8(BPF_JA) | BPF_X, Dst: R3}, "gotox r3"},
	{ins(Call(BPF_FUNC_map_lookup_elem)), "call bpf_map_lookup_elem#1"},
	{ins(Call(BPF_FUNC_tail_call)), "call bpf_tail_call#12"},
	{ins(Call(BPF_FUNC_cgrp_storage_delete)), "call bpf_cgrp_storage_delete#211"},
	{ins(Call(BPF_FUNC_unspec)), "call bpf_unspec#0"},
	{ins(Call(212)), "call unknown#212"},
	{ins(Call(-108416)), "call unknown#-108416"},
	{ins(CallRel(7)), "call pc+7"},
	{ins(CallRel(-3)), "call pc-3"},
	{Instruction{Code: BPF_JMP | uint8(BPF_CALL), Src: BPF_PSEUDO_KFUNC_CALL, Imm: 1234}, "call kernel-function#1234"},
	{ins(Exit()), "exit"},
	{Instruction{Code: BPF_ST | 0xc0}, "nospec"},
	// Not instructions.
	{Instruction{Code: 0x00}, "invalid insn code 0x00"},
	{Instruction{Code: BPF_ALU64 | 0xe0}, "invalid insn code 0xe7"},
	{Instruction{Code: BPF_ALU | 0xf0 | BPF_X}, "invalid insn code 0xfc"},
	{Instruction{Code: BPF_LDX | uint8(BPF_DW) | BPF_MEMSX}, "invalid insn code 0x99"},
	{Instruction{Code: BPF_LDX | uint8(BPF_W) | BPF_ABS}, "invalid insn code 0x21"},
	{Instruction{Code: BPF_STX | uint8(BPF_DW) | BPF_IND}, "invalid insn code 0x5b"},
	{Instruction{Code: BPF_STX | uint8(BPF_DW) | BPF_ATOMIC, Imm: int32(BPF_SUB)}, "invalid insn code 0xdb"},
	{Instruction{Code: BPF_STX | uint8(BPF_DW) | BPF_ATOMIC, Imm: 0xe0}, "invalid insn code 0xdb"},
	{Instruction{Code: BPF_ST | uint8(BPF_W) | BPF_ABS}, "invalid insn code 0x22"},
	{Instruction{Code: BPF_JMP | 0xf0}, "invalid insn code 0xf5"},
	{Instruction{Code: BPF_JMP | uint8(BPF_JCOND), Src: 1}, "invalid insn code 0xe5"},
	{Instruction{Code: BPF_JMP32 | uint8(BPF_EXIT)}, "invalid insn code 0x96"},
	{Instruction{Code: BPF_JMP32 | uint8(BPF_CALL)}, "invalid insn code 0x86"},
	{Instruction{Code: BPF_JMP | uint8(BPF_EXIT) | BPF_X}, "invalid insn code 0x9d"},
}

func TestFormat(t *testing.T) {
	for _, c := range formatCases {
		got, n := Format([]Instruction{c.in}, 0)
		if got != c.want || n != 1 {
			t.Errorf("Format(%+v) = %q, %d; want %q, 1", c.in, got, n, c.want)
		}
		if s := c.in.String(); s != c.want {
			t.Errorf("String(%+v) = %q; want %q", c.in, s, c.want)
		}
	}
}

func TestFormatLoadImm64(t *testing.T) {
	cases := []struct {
		it   Item
		want string
	}{
		{LoadImm64(R1, 0x1234), "r1 = 0x1234"},
		{LoadImm64(R0, 0xfffbeef), "r0 = 0xfffbeef"},
		{LoadImm64(R2, -1), "r2 = 0xffffffffffffffff"},
		{LoadImm64(R0, 0x700000000000000), "r0 = 0x700000000000000"},
		{LoadMapFDRaw(R1, 5), "r1 = map[id:5]"},
		{LoadMapFDRaw(R2, 526), "r2 = map[id:526]"},
		{LoadMapValueRaw(R1, 5, 16), "r1 = map[id:5][0]+16"},
		{LoadMapValueRaw(R2, 82, 65536), "r2 = map[id:82][0]+65536"},
		{LoadImm64Raw(R1, BPF_PSEUDO_FUNC, 3), "r1 = subprog[+3]"},
		{LoadImm64Raw(R2, BPF_PSEUDO_MAP_IDX_VALUE, 24<<32|2), "r2 = map[idx:2]+24"},
		{LoadImm64Raw(R3, BPF_PSEUDO_MAP_IDX, 1), "r3 = 0x1"}, // bpftool has no case for it
		{LoadImm64Raw(R1, BPF_PSEUDO_BTF_ID, 0x42), "r1 = 0x42"},
	}
	for _, c := range cases {
		insns, err := Assemble([]Item{c.it})
		if err != nil {
			t.Fatal(err)
		}
		got, n := Format(insns, 0)
		if got != c.want || n != 2 {
			t.Errorf("Format(%+v) = %q, %d; want %q, 2", insns, got, n, c.want)
		}
	}
	// A first slot without its second one: one slot, upper half zero.
	if got, n := Format([]Instruction{{Code: BPF_LD | uint8(BPF_DW) | BPF_IMM, Dst: R3, Imm: -1}}, 0); got != "r3 = 0xffffffff" || n != 1 {
		t.Errorf("truncated ld_imm64: %q, %d", got, n)
	}
	// Out of range.
	if got, n := Format(nil, 0); got != "" || n != 0 {
		t.Errorf("Format(nil, 0) = %q, %d", got, n)
	}
	if got, n := Format(make([]Instruction, 2), -1); got != "" || n != 0 {
		t.Errorf("Format(_, -1) = %q, %d", got, n)
	}
}

// TestDisassembleBpftool compares whole listings with `bpftool prog dump
// xlated` output quoted on the bpf mailing list and in the "Learning eBPF"
// hello example (helper calls carry the helper id here, where bpftool shows
// the xlated call offset).
func TestDisassembleBpftool(t *testing.T) {
	cases := []struct {
		prog []Item
		want string
	}{{
		[]Item{
			Mov64Imm(R0, 0),
			StoreMem(BPF_DW, R10, -8, R0),
			Mov64Imm(R1, 1),
			Atomic(BPF_DW, BPF_ADD.Atomic()|BPF_FETCH, R10, R1, -8),
			Label("spin"),
			JumpImm(BPF_JNE, R1, 0, "spin"),
			Exit(),
		}, `   0: (b7) r0 = 0
   1: (7b) *(u64 *)(r10 -8) = r0
   2: (b7) r1 = 1
   3: (db) r1 = atomic64_fetch_add((u64 *)(r10 -8), r1)
   4: (55) if r1 != 0x0 goto pc-1
   5: (95) exit
`,
	}, {
		[]Item{
			LoadMapValueRaw(R6, 20, 0),
			LoadMem(BPF_W, R3, R6, 0),
			LoadMapValueRaw(R1, 21, 0),
			Mov64Imm(R2, 15),
			CallName("trace_printk"),
			LoadMem(BPF_W, R1, R6, 0),
			ALU64Imm(BPF_ADD, R1, 1),
			StoreMem(BPF_W, R6, 0, R1),
			Mov64Imm(R0, 2),
			Exit(),
		}, `   0: (18) r6 = map[id:20][0]+0
   2: (61) r3 = *(u32 *)(r6 +0)
   3: (18) r1 = map[id:21][0]+0
   5: (b7) r2 = 15
   6: (85) call bpf_trace_printk#6
   7: (61) r1 = *(u32 *)(r6 +0)
   8: (07) r1 += 1
   9: (63) *(u32 *)(r6 +0) = r1
  10: (b7) r0 = 2
  11: (95) exit
`,
	}, {
		[]Item{
			Mov64Imm(R3, 0),
			LoadMapFDRaw(R2, 526),
			Call(BPF_FUNC_tail_call),
			Mov64Imm(R0, 1),
			Exit(),
		}, `   0: (b7) r3 = 0
   1: (18) r2 = map[id:526]
   3: (85) call bpf_tail_call#12
   4: (b7) r0 = 1
   5: (95) exit
`,
	}}
	for i, c := range cases {
		insns, err := Assemble(c.prog)
		if err != nil {
			t.Fatal(err)
		}
		if got := Disassemble(insns); got != c.want {
			t.Errorf("program %d:\ngot:\n%s\nwant:\n%s", i, got, c.want)
		}
	}
}

func TestDisassembleIndexWidth(t *testing.T) {
	insns := make([]Instruction, 10001)
	for i := range insns {
		insns[i] = ins(Exit())
	}
	lines := strings.Split(Disassemble(insns), "\n")
	if lines[9] != "   9: (95) exit" || lines[999] != " 999: (95) exit" || lines[10000] != " 10000: (95) exit" {
		t.Errorf("index format: %q %q %q", lines[9], lines[999], lines[10000])
	}
}

// TestDisassembleFuncXlated: in the xlated instructions a bpf-to-bpf call
// holds its offset in off and the callee's subprogram index in imm, as the
// kernel leaves them after JIT (tests/xlated_test.go compares a real dump
// with bpftool's).
func TestDisassembleFuncXlated(t *testing.T) {
	insns := []Instruction{
		{Code: 0x85, Src: BPF_PSEUDO_CALL, Off: 3, Imm: 1},
		{Code: 0x85, Imm: 269488},
		{Code: 0x85, Src: BPF_PSEUDO_KFUNC_CALL, Imm: 77},
		ins(Exit()),
		ins(Exit()),
	}
	want := `   0: (85) call pc+3
   1: (85) call unknown#269488
   2: (85) call kernel-function#77
   3: (95) exit
   4: (95) exit
`
	if got := DisassembleFunc(insns, nil); got != want {
		t.Errorf("without names:\n%s\nwant:\n%s", got, want)
	}
	names := func(call Instruction) string {
		if call.Src == BPF_PSEUDO_CALL {
			return fmt.Sprintf("bpf_prog_%d_F", call.Imm)
		}
		return "bpf_ktime_get_ns"
	}
	want = strings.Replace(want, "call pc+3", "call pc+3#bpf_prog_1_F", 1)
	want = strings.Replace(want, "call unknown#269488", "call bpf_ktime_get_ns#269488", 1)
	if got := DisassembleFunc(insns, names); got != want {
		t.Errorf("with names:\n%s\nwant:\n%s", got, want)
	}
	// Format and Disassemble read a program as built: the offset is imm.
	if got := Disassemble(insns[:1]); got != "   0: (85) call pc+1\n" {
		t.Errorf("Disassemble: %q", got)
	}
}
