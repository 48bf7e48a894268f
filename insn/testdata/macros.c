// Golden encodings from the kernel's instruction macros.
//
// The macros below are typed from samples/bpf/bpf_insn.h and
// include/linux/filter.h (ISA v4 forms from filter.h of kernel 6.6+);
// struct bpf_insn and the opcode constants come from the uapi header.
// Regenerate with:
//
//	gcc -o /tmp/macros macros.c && /tmp/macros > macros.golden
#include <stdio.h>
#include <string.h>
#include <linux/bpf.h>

#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80
#endif
/* Values of the 6.9 and 6.15 uapi headers, for older installed ones. */
#ifndef BPF_LOAD_ACQ
#define BPF_LOAD_ACQ 0x100
#define BPF_STORE_REL 0x110
#endif
#ifndef BPF_JCOND
#define BPF_JCOND 0xe0
#define BPF_MAY_GOTO 0
#endif
#define BPF_ADDR_SPACE_CAST 1

#define BPF_ALU64_REG_OFF(OP, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_OP(OP) | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_ALU64_REG(OP, DST, SRC) BPF_ALU64_REG_OFF(OP, DST, SRC, 0)
#define BPF_ALU32_REG_OFF(OP, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_OP(OP) | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_ALU32_REG(OP, DST, SRC) BPF_ALU32_REG_OFF(OP, DST, SRC, 0)
#define BPF_ALU64_IMM_OFF(OP, DST, IMM, OFF) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_OP(OP) | BPF_K, .dst_reg = DST, .src_reg = 0, .off = OFF, .imm = IMM })
#define BPF_ALU64_IMM(OP, DST, IMM) BPF_ALU64_IMM_OFF(OP, DST, IMM, 0)
#define BPF_ALU32_IMM_OFF(OP, DST, IMM, OFF) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_OP(OP) | BPF_K, .dst_reg = DST, .src_reg = 0, .off = OFF, .imm = IMM })
#define BPF_ALU32_IMM(OP, DST, IMM) BPF_ALU32_IMM_OFF(OP, DST, IMM, 0)
#define BPF_ENDIAN(TYPE, DST, LEN) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_END | BPF_SRC(TYPE), .dst_reg = DST, .src_reg = 0, .off = 0, .imm = LEN })
#define BPF_BSWAP(DST, LEN) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_END | BPF_SRC(BPF_TO_LE), .dst_reg = DST, .src_reg = 0, .off = 0, .imm = LEN })
#define BPF_MOV64_REG(DST, SRC) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = 0, .imm = 0 })
#define BPF_MOV32_REG(DST, SRC) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_MOV | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = 0, .imm = 0 })
#define BPF_MOV64_IMM(DST, IMM) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = DST, .src_reg = 0, .off = 0, .imm = IMM })
#define BPF_MOV32_IMM(DST, IMM) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_MOV | BPF_K, .dst_reg = DST, .src_reg = 0, .off = 0, .imm = IMM })
#define BPF_MOVSX64_REG(DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_MOVSX32_REG(DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_ALU | BPF_MOV | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_LD_IMM64_RAW(DST, SRC, IMM) \
	((struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = DST, .src_reg = SRC, .off = 0, .imm = (__u32)(IMM) }), \
	((struct bpf_insn){ .code = 0, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = ((__u64)(IMM)) >> 32 })
#define BPF_LD_IMM64(DST, IMM) BPF_LD_IMM64_RAW(DST, 0, IMM)
#define BPF_LD_MAP_FD(DST, MAP_FD) BPF_LD_IMM64_RAW(DST, BPF_PSEUDO_MAP_FD, MAP_FD)
#define BPF_LD_IMM64_RAW_FULL(DST, SRC, OFF1, OFF2, IMM1, IMM2) \
	((struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = DST, .src_reg = SRC, .off = OFF1, .imm = IMM1 }), \
	((struct bpf_insn){ .code = 0, .dst_reg = 0, .src_reg = 0, .off = OFF2, .imm = IMM2 })
#define BPF_LD_MAP_VALUE(DST, MAP_FD, VALUE_OFF) \
	BPF_LD_IMM64_RAW_FULL(DST, BPF_PSEUDO_MAP_VALUE, 0, 0, MAP_FD, VALUE_OFF)
#define BPF_LD_ABS(SIZE, IMM) \
	((struct bpf_insn){ .code = BPF_LD | BPF_SIZE(SIZE) | BPF_ABS, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = IMM })
#define BPF_LD_IND(SIZE, SRC, IMM) \
	((struct bpf_insn){ .code = BPF_LD | BPF_SIZE(SIZE) | BPF_IND, .dst_reg = 0, .src_reg = SRC, .off = 0, .imm = IMM })
#define BPF_LDX_MEM(SIZE, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_LDX | BPF_SIZE(SIZE) | BPF_MEM, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_LDX_MEMSX(SIZE, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_LDX | BPF_SIZE(SIZE) | BPF_MEMSX, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_STX_MEM(SIZE, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_STX | BPF_SIZE(SIZE) | BPF_MEM, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_ATOMIC_OP(SIZE, OP, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_STX | BPF_SIZE(SIZE) | BPF_ATOMIC, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = OP })
#define BPF_ST_MEM(SIZE, DST, OFF, IMM) \
	((struct bpf_insn){ .code = BPF_ST | BPF_SIZE(SIZE) | BPF_MEM, .dst_reg = DST, .src_reg = 0, .off = OFF, .imm = IMM })
#define BPF_JMP_REG(OP, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_JMP | BPF_OP(OP) | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_JMP_IMM(OP, DST, IMM, OFF) \
	((struct bpf_insn){ .code = BPF_JMP | BPF_OP(OP) | BPF_K, .dst_reg = DST, .src_reg = 0, .off = OFF, .imm = IMM })
#define BPF_JMP32_REG(OP, DST, SRC, OFF) \
	((struct bpf_insn){ .code = BPF_JMP32 | BPF_OP(OP) | BPF_X, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = 0 })
#define BPF_JMP32_IMM(OP, DST, IMM, OFF) \
	((struct bpf_insn){ .code = BPF_JMP32 | BPF_OP(OP) | BPF_K, .dst_reg = DST, .src_reg = 0, .off = OFF, .imm = IMM })
#define BPF_JMP_A(OFF) \
	((struct bpf_insn){ .code = BPF_JMP | BPF_JA, .dst_reg = 0, .src_reg = 0, .off = OFF, .imm = 0 })
#define BPF_JMP32_A(IMM) \
	((struct bpf_insn){ .code = BPF_JMP32 | BPF_JA, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = IMM })
#define BPF_CALL_REL(IMM) \
	((struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .dst_reg = 0, .src_reg = BPF_PSEUDO_CALL, .off = 0, .imm = IMM })
#define BPF_EMIT_CALL(FUNC) \
	((struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = ((FUNC)) })
#define BPF_RAW_INSN(CODE, DST, SRC, OFF, IMM) \
	((struct bpf_insn){ .code = CODE, .dst_reg = DST, .src_reg = SRC, .off = OFF, .imm = IMM })
#define BPF_EXIT_INSN() \
	((struct bpf_insn){ .code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0 })

struct test {
	const char *name;
	struct bpf_insn insn[2];
	int n;
};

#define T1(NAME, I) { NAME, { I }, 1 }
#define T2(NAME, ...) { NAME, { __VA_ARGS__ }, 2 }

static const struct test tests[] = {
	T1("mov64_imm", BPF_MOV64_IMM(BPF_REG_0, 0)),
	T1("mov64_imm_neg", BPF_MOV64_IMM(BPF_REG_9, -2)),
	T1("mov64_reg", BPF_MOV64_REG(BPF_REG_6, BPF_REG_1)),
	T1("mov32_imm", BPF_MOV32_IMM(BPF_REG_1, 0x7fffffff)),
	T1("mov32_reg", BPF_MOV32_REG(BPF_REG_2, BPF_REG_10)),
	T1("alu64_imm_add", BPF_ALU64_IMM(BPF_ADD, BPF_REG_2, -8)),
	T1("alu64_imm_arsh", BPF_ALU64_IMM(BPF_ARSH, BPF_REG_3, 63)),
	T1("alu64_reg_xor", BPF_ALU64_REG(BPF_XOR, BPF_REG_4, BPF_REG_5)),
	T1("alu32_imm_lsh", BPF_ALU32_IMM(BPF_LSH, BPF_REG_7, 3)),
	T1("alu32_reg_mul", BPF_ALU32_REG(BPF_MUL, BPF_REG_8, BPF_REG_9)),
	T1("neg64", BPF_ALU64_IMM(BPF_NEG, BPF_REG_1, 0)),
	T1("neg32", BPF_ALU32_IMM(BPF_NEG, BPF_REG_2, 0)),
	T1("sdiv64_imm", BPF_ALU64_IMM_OFF(BPF_DIV, BPF_REG_1, 3, 1)),
	T1("sdiv64_reg", BPF_ALU64_REG_OFF(BPF_DIV, BPF_REG_1, BPF_REG_2, 1)),
	T1("smod64_imm", BPF_ALU64_IMM_OFF(BPF_MOD, BPF_REG_3, -7, 1)),
	T1("smod64_reg", BPF_ALU64_REG_OFF(BPF_MOD, BPF_REG_3, BPF_REG_4, 1)),
	T1("sdiv32_imm", BPF_ALU32_IMM_OFF(BPF_DIV, BPF_REG_5, 10, 1)),
	T1("sdiv32_reg", BPF_ALU32_REG_OFF(BPF_DIV, BPF_REG_5, BPF_REG_6, 1)),
	T1("smod32_imm", BPF_ALU32_IMM_OFF(BPF_MOD, BPF_REG_7, 2, 1)),
	T1("smod32_reg", BPF_ALU32_REG_OFF(BPF_MOD, BPF_REG_7, BPF_REG_8, 1)),
	T1("movsx64_8", BPF_MOVSX64_REG(BPF_REG_1, BPF_REG_2, 8)),
	T1("movsx64_16", BPF_MOVSX64_REG(BPF_REG_1, BPF_REG_2, 16)),
	T1("movsx64_32", BPF_MOVSX64_REG(BPF_REG_3, BPF_REG_4, 32)),
	T1("movsx32_8", BPF_MOVSX32_REG(BPF_REG_5, BPF_REG_6, 8)),
	T1("movsx32_16", BPF_MOVSX32_REG(BPF_REG_5, BPF_REG_6, 16)),
	T1("to_le16", BPF_ENDIAN(BPF_TO_LE, BPF_REG_1, 16)),
	T1("to_be32", BPF_ENDIAN(BPF_TO_BE, BPF_REG_2, 32)),
	T1("to_be64", BPF_ENDIAN(BPF_TO_BE, BPF_REG_3, 64)),
	T1("bswap16", BPF_BSWAP(BPF_REG_1, 16)),
	T1("bswap64", BPF_BSWAP(BPF_REG_9, 64)),
	T1("ldx_mem_b", BPF_LDX_MEM(BPF_B, BPF_REG_0, BPF_REG_1, 12)),
	T1("ldx_mem_dw", BPF_LDX_MEM(BPF_DW, BPF_REG_2, BPF_REG_10, -8)),
	T1("ldx_memsx_b", BPF_LDX_MEMSX(BPF_B, BPF_REG_0, BPF_REG_1, 0)),
	T1("ldx_memsx_w", BPF_LDX_MEMSX(BPF_W, BPF_REG_3, BPF_REG_4, -32768)),
	T1("stx_mem_dw", BPF_STX_MEM(BPF_DW, BPF_REG_10, BPF_REG_2, -8)),
	T1("stx_mem_h", BPF_STX_MEM(BPF_H, BPF_REG_1, BPF_REG_7, 32767)),
	T1("st_mem_w", BPF_ST_MEM(BPF_W, BPF_REG_10, -4, -1)),
	T1("st_mem_dw", BPF_ST_MEM(BPF_DW, BPF_REG_10, -16, 42)),
	T1("atomic_add_dw", BPF_ATOMIC_OP(BPF_DW, BPF_ADD, BPF_REG_10, BPF_REG_1, -8)),
	T1("atomic_fetch_and_w", BPF_ATOMIC_OP(BPF_W, BPF_AND | BPF_FETCH, BPF_REG_2, BPF_REG_3, 4)),
	T1("atomic_xchg", BPF_ATOMIC_OP(BPF_DW, BPF_XCHG, BPF_REG_10, BPF_REG_0, -8)),
	T1("atomic_cmpxchg", BPF_ATOMIC_OP(BPF_DW, BPF_CMPXCHG, BPF_REG_10, BPF_REG_1, -8)),
	T1("load_acquire_b", BPF_ATOMIC_OP(BPF_B, BPF_LOAD_ACQ, BPF_REG_0, BPF_REG_1, 3)),
	T1("store_release_dw", BPF_ATOMIC_OP(BPF_DW, BPF_STORE_REL, BPF_REG_10, BPF_REG_2, -8)),
	T1("addr_space_cast", BPF_RAW_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_2, BPF_ADDR_SPACE_CAST, 1)),
	T1("may_goto", BPF_RAW_INSN(BPF_JMP | BPF_JCOND, 0, BPF_MAY_GOTO, 2, 0)),
	T2("ld_imm64", BPF_LD_IMM64(BPF_REG_1, 0x123456789abcdef0ULL)),
	T2("ld_imm64_neg", BPF_LD_IMM64(BPF_REG_2, -1)),
	T2("ld_imm64_raw_btf", BPF_LD_IMM64_RAW(BPF_REG_3, BPF_PSEUDO_BTF_ID, 77)),
	T2("ld_map_fd", BPF_LD_MAP_FD(BPF_REG_1, 5)),
	T2("ld_map_value", BPF_LD_MAP_VALUE(BPF_REG_2, 6, 16)),
	T1("ld_abs_b", BPF_LD_ABS(BPF_B, 12)),
	T1("ld_abs_w", BPF_LD_ABS(BPF_W, -0x100000)),
	T1("ld_ind_h", BPF_LD_IND(BPF_H, BPF_REG_7, 14)),
	T1("jmp_imm_jeq", BPF_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2)),
	T1("jmp_imm_jsgt_back", BPF_JMP_IMM(BPF_JSGT, BPF_REG_1, -5, -3)),
	T1("jmp_reg_jlt", BPF_JMP_REG(BPF_JLT, BPF_REG_2, BPF_REG_3, 100)),
	T1("jmp32_imm_jset", BPF_JMP32_IMM(BPF_JSET, BPF_REG_4, 0x80, 1)),
	T1("jmp32_reg_jsle", BPF_JMP32_REG(BPF_JSLE, BPF_REG_5, BPF_REG_6, -32768)),
	T1("jmp_a", BPF_JMP_A(-1)),
	T1("jmp32_a", BPF_JMP32_A(100000)),
	T1("call_helper", BPF_EMIT_CALL(BPF_FUNC_map_lookup_elem)),
	T1("call_helper_ringbuf", BPF_EMIT_CALL(BPF_FUNC_user_ringbuf_drain)),
	T1("call_rel", BPF_CALL_REL(7)),
	T1("exit", BPF_EXIT_INSN()),
	T1("raw", BPF_RAW_INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, -2, 0x12345678)),
};

int main(void)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		unsigned char b[16];

		memcpy(b, tests[i].insn, sizeof(struct bpf_insn) * tests[i].n);
		printf("%s ", tests[i].name);
		for (int j = 0; j < 8 * tests[i].n; j++)
			printf("%02x", b[j]);
		printf("\n");
	}
	return 0;
}
