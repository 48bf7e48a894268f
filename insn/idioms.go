package insn

// MapIncrement returns the instructions of
//
//	__u64 *v = bpf_map_lookup_elem(m, fp + key);
//	if (v) {
//		__sync_fetch_and_add(v, 1);
//	} else {
//		__u64 one = 1; // at fp + scratch
//		bpf_map_update_elem(m, fp + key, &one, BPF_NOEXIST);
//	}
//
// for a map of 8-byte values and a key stored at r10+key; scratch is
// another 8-byte aligned stack slot. If another CPU inserts the key
// between lookup and update, the update fails (EEXIST) and the sequence
// adds to that CPU's value: no count is lost. It jumps by offsets, without
// labels, so a program may use it many times. It clobbers r0 to r5.
func MapIncrement(m MapFD, key, scratch int16) []Item { return mapAdd(m, key, scratch, 0) }

// MapAdd is MapIncrement adding by, one of r6 to r9 (which calls keep),
// instead of 1.
func MapAdd(m MapFD, key, scratch int16, by Register) []Item {
	if by < R6 || by > R9 {
		return bad("MapAdd: %v is not one of r6 to r9", by)
	}
	return mapAdd(m, key, scratch, by)
}

func mapAdd(m MapFD, key, scratch int16, by Register) []Item {
	if key < -512 || key >= 0 || scratch < -512 || scratch > -8 || scratch%8 != 0 {
		return bad("map increment: key at r10%+d, value at r10%+d: "+
			"the stack is r10-512 to r10-1, the value 8-byte aligned", key, scratch)
	}
	found := []Item{Mov64Imm(R1, 1), Atomic(BPF_DW, BPF_ADD.Atomic(), R0, R1, 0)}
	store := StoreImm(BPF_DW, R10, scratch, 1)
	if by != 0 {
		found = []Item{Atomic(BPF_DW, BPF_ADD.Atomic(), R0, by, 0)}
		store = StoreMem(BPF_DW, R10, scratch, by)
	}
	lookup := []Item{
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, int32(key)),
		LoadMapFD(R1, m),
		Call(BPF_FUNC_map_lookup_elem),
	}
	n := int16(len(found))
	// lookup; if found: add, done. Else insert; if another CPU inserted
	// first: lookup again; if found: add. (Each run of instructions is a
	// slice of its own, appended whole: an Item appended alone is copied
	// with write barriers, which costs every tool using this some KB.)
	items := make([]Item, 0, 2*len(lookup)+2*len(found)+12)
	items = append(items, lookup...)
	items = append(items, JumpImmOff(BPF_JEQ, R0, 0, n+1))
	items = append(items, found...)
	items = append(items, []Item{
		JaOff(9 + 1 + 5 + 1 + n), // over the slots below
		store,
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, int32(key)),
		Mov64Reg(R3, R10),
		ALU64Imm(BPF_ADD, R3, int32(scratch)),
		Mov64Imm(R4, BPF_NOEXIST),
		LoadMapFD(R1, m),
		Call(BPF_FUNC_map_update_elem),
		JumpImmOff(BPF_JEQ, R0, 0, 5+1+n),
	}...)
	items = append(items, lookup...)
	items = append(items, JumpImmOff(BPF_JEQ, R0, 0, n))
	return append(items, found...)
}

// Log2 returns the instructions of dst = log2(src) for a 64-bit src, its
// highest set bit (0 for 0, as bcc's log2l): unrolled, by offsets,
//
//	dst = 0;
//	for (int s = 32; s > 0; s /= 2)
//		if ((tmp = src >> s) != 0) { src = tmp; dst += s; }
//
// clobbering src and tmp. The three registers must differ.
func Log2(dst, src, tmp Register) []Item {
	if dst == src || dst == tmp || src == tmp {
		return bad("Log2: dst %v, src %v and tmp %v must differ", dst, src, tmp)
	}
	items := []Item{Mov64Imm(dst, 0)}
	for s := int32(32); s > 0; s /= 2 {
		items = append(items,
			Mov64Reg(tmp, src),
			ALU64Imm(BPF_RSH, tmp, s),
			JumpImmOff(BPF_JEQ, tmp, 0, 2),
			Mov64Reg(src, tmp),
			ALU64Imm(BPF_ADD, dst, s))
	}
	return items
}

// MaxFuncArgs is MAX_BPF_FUNC_ARGS, the most arguments of a traced
// function the verifier takes from its BTF; the trampoline may pass fewer
// (arm64's 8), which the attach refuses.
const MaxFuncArgs = 12

// FuncArg is dst = ctx[i] in a tracing program (fentry, fexit, tp_btf):
// argument i of the traced function or tracepoint, *(u64 *)(ctx + 8*i),
// as libbpf's BPF_PROG reads it and bpf_get_func_arg(ctx, i, &v) returns
// it. It is a plain load, not that helper (5.17): it works wherever fentry
// does, and the verifier checks i against the function's prototype at
// load (a helper's out-of-range i is -EINVAL at run time). ctx is the
// program's r1 or a copy.
func FuncArg(dst, ctx Register, i int) Item {
	if i < 0 || i >= MaxFuncArgs {
		return bad("FuncArg: argument %d is not in 0 to %d", i, MaxFuncArgs-1)[0]
	}
	return LoadMem(BPF_DW, dst, ctx, int16(8*i))
}

// FuncRet is dst = the return value of the function an fexit program
// traces, which has nargs arguments: the slot after the last,
// *(u64 *)(ctx + 8*nargs), what bpf_get_func_ret returns.
func FuncRet(dst, ctx Register, nargs int) Item {
	if nargs < 0 || nargs > MaxFuncArgs {
		return bad("FuncRet: %d arguments is not in 0 to %d", nargs, MaxFuncArgs)[0]
	}
	return LoadMem(BPF_DW, dst, ctx, int16(8*nargs))
}
