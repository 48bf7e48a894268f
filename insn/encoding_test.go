package insn

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type fakeMap int

func (m fakeMap) FD() int { return int(m) }

// jumpTo puts label "l" n slots after the jump, so the jump's offset is n.
func jumpTo(it Item, n int) []Item {
	items := []Item{it}
	for range n {
		items = append(items, Exit())
	}
	return append(items, Label("l"), Exit())
}

// backTo puts label "l" n slots before the slot after the jump (offset -n).
func backTo(it Item, n int) []Item {
	items := []Item{Label("l")}
	for range n - 1 {
		items = append(items, Exit())
	}
	return append(items, it)
}

// builderCases builds, with our builders, the instructions that
// testdata/macros.c builds with the kernel macros. Each case's first item
// that is not a label is compared with the golden line of that name.
var builderCases = []struct {
	golden string
	items  []Item
}{
	{"mov64_imm", []Item{Mov64Imm(R0, 0)}},
	{"mov64_imm_neg", []Item{Mov64Imm(R9, -2)}},
	{"mov64_reg", []Item{Mov64Reg(R6, R1)}},
	{"mov32_imm", []Item{Mov32Imm(R1, 0x7fffffff)}},
	{"mov32_reg", []Item{Mov32Reg(R2, RFP)}},
	{"alu64_imm_add", []Item{ALU64Imm(BPF_ADD, R2, -8)}},
	{"alu64_imm_arsh", []Item{ALU64Imm(BPF_ARSH, R3, 63)}},
	{"alu64_reg_xor", []Item{ALU64Reg(BPF_XOR, R4, R5)}},
	{"alu32_imm_lsh", []Item{ALU32Imm(BPF_LSH, R7, 3)}},
	{"alu32_reg_mul", []Item{ALU32Reg(BPF_MUL, R8, R9)}},
	{"neg64", []Item{Neg64(R1)}},
	{"neg64", []Item{ALU64Imm(BPF_NEG, R1, 0)}},
	{"neg32", []Item{Neg32(R2)}},
	{"sdiv64_imm", []Item{SDiv64Imm(R1, 3)}},
	{"sdiv64_imm", []Item{ALU64ImmOff(BPF_DIV, R1, 3, 1)}},
	{"sdiv64_reg", []Item{SDiv64Reg(R1, R2)}},
	{"sdiv64_reg", []Item{ALU64RegOff(BPF_DIV, R1, R2, 1)}},
	{"smod64_imm", []Item{SMod64Imm(R3, -7)}},
	{"smod64_reg", []Item{SMod64Reg(R3, R4)}},
	{"sdiv32_imm", []Item{SDiv32Imm(R5, 10)}},
	{"sdiv32_imm", []Item{ALU32ImmOff(BPF_DIV, R5, 10, 1)}},
	{"sdiv32_reg", []Item{SDiv32Reg(R5, R6)}},
	{"sdiv32_reg", []Item{ALU32RegOff(BPF_DIV, R5, R6, 1)}},
	{"smod32_imm", []Item{SMod32Imm(R7, 2)}},
	{"smod32_reg", []Item{SMod32Reg(R7, R8)}},
	{"movsx64_8", []Item{Movsx64Reg(R1, R2, 8)}},
	{"movsx64_16", []Item{Movsx64Reg(R1, R2, 16)}},
	{"movsx64_32", []Item{Movsx64Reg(R3, R4, 32)}},
	{"movsx32_8", []Item{Movsx32Reg(R5, R6, 8)}},
	{"movsx32_16", []Item{Movsx32Reg(R5, R6, 16)}},
	{"to_le16", []Item{ToLE(R1, 16)}},
	{"to_be32", []Item{ToBE(R2, 32)}},
	{"to_be64", []Item{ToBE(R3, 64)}},
	{"bswap16", []Item{Bswap(R1, 16)}},
	{"bswap64", []Item{Bswap(R9, 64)}},
	{"ldx_mem_b", []Item{LoadMem(BPF_B, R0, R1, 12)}},
	{"ldx_mem_dw", []Item{LoadMem(BPF_DW, R2, R10, -8)}},
	{"ldx_memsx_b", []Item{LoadMemSX(BPF_B, R0, R1, 0)}},
	{"ldx_memsx_w", []Item{LoadMemSX(BPF_W, R3, R4, -32768)}},
	{"stx_mem_dw", []Item{StoreMem(BPF_DW, R10, -8, R2)}},
	{"stx_mem_h", []Item{StoreMem(BPF_H, R1, 32767, R7)}},
	{"st_mem_w", []Item{StoreImm(BPF_W, R10, -4, -1)}},
	{"st_mem_dw", []Item{StoreImm(BPF_DW, R10, -16, 42)}},
	{"atomic_add_dw", []Item{Atomic(BPF_DW, BPF_ADD.Atomic(), R10, R1, -8)}},
	{"atomic_fetch_and_w", []Item{Atomic(BPF_W, BPF_AND.Atomic()|BPF_FETCH, R2, R3, 4)}},
	{"atomic_xchg", []Item{Atomic(BPF_DW, BPF_XCHG, R10, R0, -8)}},
	{"atomic_cmpxchg", []Item{Atomic(BPF_DW, BPF_CMPXCHG, R10, R1, -8)}},
	{"load_acquire_b", []Item{LoadAcquire(BPF_B, R0, R1, 3)}},
	{"load_acquire_b", []Item{Atomic(BPF_B, BPF_LOAD_ACQ, R0, R1, 3)}},
	{"store_release_dw", []Item{StoreRelease(BPF_DW, R10, -8, R2)}},
	{"store_release_dw", []Item{Atomic(BPF_DW, BPF_STORE_REL, R10, R2, -8)}},
	{"addr_space_cast", []Item{AddrSpaceCast(R1, R2, 0, 1)}},
	{"may_goto", jumpTo(MayGotoOff(2), 2)},
	{"may_goto", jumpTo(MayGoto("l"), 2)},
	{"ld_imm64", []Item{LoadImm64(R1, 0x123456789abcdef0)}},
	{"ld_imm64_neg", []Item{LoadImm64(R2, -1)}},
	{"ld_imm64_raw_btf", []Item{LoadImm64Raw(R3, BPF_PSEUDO_BTF_ID, 77)}},
	{"ld_map_fd", []Item{LoadMapFD(R1, fakeMap(5))}},
	{"ld_map_fd", []Item{LoadMapFDRaw(R1, 5)}},
	{"ld_map_value", []Item{LoadMapValue(R2, fakeMap(6), 16)}},
	{"ld_map_value", []Item{LoadMapValueRaw(R2, 6, 16)}},
	{"ld_abs_b", []Item{LoadAbs(BPF_B, 12)}},
	{"ld_abs_w", []Item{LoadAbs(BPF_W, -0x100000)}},
	{"ld_ind_h", []Item{LoadInd(BPF_H, R7, 14)}},
	{"jmp_imm_jeq", jumpTo(JumpImmOff(BPF_JEQ, R0, 0, 2), 2)},
	{"jmp_imm_jeq", jumpTo(JumpImm(BPF_JEQ, R0, 0, "l"), 2)},
	{"jmp_imm_jsgt_back", backTo(JumpImmOff(BPF_JSGT, R1, -5, -3), 3)},
	{"jmp_imm_jsgt_back", backTo(JumpImm(BPF_JSGT, R1, -5, "l"), 3)},
	{"jmp_reg_jlt", jumpTo(JumpRegOff(BPF_JLT, R2, R3, 100), 100)},
	{"jmp_reg_jlt", jumpTo(JumpReg(BPF_JLT, R2, R3, "l"), 100)},
	{"jmp32_imm_jset", jumpTo(Jump32ImmOff(BPF_JSET, R4, 0x80, 1), 1)},
	{"jmp32_imm_jset", jumpTo(Jump32Imm(BPF_JSET, R4, 0x80, "l"), 1)},
	{"jmp32_reg_jsle", backTo(Jump32RegOff(BPF_JSLE, R5, R6, -32768), 32768)},
	{"jmp32_reg_jsle", backTo(Jump32Reg(BPF_JSLE, R5, R6, "l"), 32768)},
	{"jmp_a", []Item{JaOff(-1)}},
	{"jmp_a", []Item{Label("l"), Ja("l")}},
	{"jmp32_a", jumpTo(Ja32Off(100000), 100000)},
	{"jmp32_a", jumpTo(Ja32("l"), 100000)},
	{"call_helper", []Item{Call(BPF_FUNC_map_lookup_elem)}},
	{"call_helper", []Item{CallName("map_lookup_elem")}},
	{"call_helper", []Item{CallName("bpf_map_lookup_elem")}},
	{"call_helper_ringbuf", []Item{Call(BPF_FUNC_user_ringbuf_drain)}},
	{"call_rel", jumpTo(CallRel(7), 7)},
	{"call_rel", jumpTo(CallFunc("l"), 7)},
	{"exit", []Item{Exit()}},
	{"raw", []Item{Raw(Instruction{Code: 0x85, Src: BPF_PSEUDO_KFUNC_CALL, Off: -2, Imm: 0x12345678})}},
}

func readGolden(t *testing.T) (map[string]string, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "macros.golden"))
	if err != nil {
		t.Fatal(err)
	}
	golden := map[string]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, hexs, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad golden line %q", sc.Text())
		}
		golden[name] = hexs
		order = append(order, name)
	}
	return golden, order
}

func TestBuildersMatchKernelMacros(t *testing.T) {
	golden, order := readGolden(t)
	if len(golden) < 50 {
		t.Fatalf("only %d golden lines", len(golden))
	}
	used := map[string]bool{}
	for _, c := range builderCases {
		want, ok := golden[c.golden]
		if !ok {
			t.Errorf("no golden line %q", c.golden)
			continue
		}
		used[c.golden] = true
		insns, err := Assemble(c.items)
		if err != nil {
			t.Errorf("%s: %v", c.golden, err)
			continue
		}
		n := len(want) / 2 / InstructionSize
		// Cases jumping backwards start with the label and end with the
		// instruction under test; the others start with it.
		first := 0
		if c.items[0].kind == kindLabel {
			first = len(insns) - n
		}
		got := hex.EncodeToString(mustEncode(t, insns[first:first+n]))
		if got != want {
			t.Errorf("%s: got %s, kernel macro gives %s", c.golden, got, want)
		}
	}
	for _, name := range order {
		if !used[name] {
			t.Errorf("golden line %q not covered by any builder case", name)
		}
	}
}

// TestGoldenIsCurrent recompiles testdata/macros.c and checks that
// macros.golden is its output.
func TestGoldenIsCurrent(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not on PATH; not regenerating testdata/macros.golden")
	}
	bin := filepath.Join(t.TempDir(), "macros")
	if out, err := exec.Command(gcc, "-Wall", "-o", bin, filepath.Join("testdata", "macros.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "macros.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("testdata/macros.golden is stale; macros.c prints:\n%s", out)
	}
}

func TestEncodeDecodeAllOpcodes(t *testing.T) {
	var insns []Instruction
	offs := []int16{0, 1, -1, 32767, -32768, 0x1234}
	imms := []int32{0, 1, -1, 2147483647, -2147483648, 0x5a5a1234}
	for code := range 256 {
		for k := range 16 {
			insns = append(insns, Instruction{
				Code: uint8(code),
				Dst:  Register(k),
				Src:  Register(15 - k),
				Off:  offs[(code+k)%len(offs)],
				Imm:  imms[(code*3+k)%len(imms)],
			})
		}
	}
	b := mustEncode(t, insns)
	if len(b) != len(insns)*InstructionSize {
		t.Fatalf("encoded %d bytes for %d insns", len(b), len(insns))
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range insns {
		if got[i] != insns[i] {
			t.Fatalf("insn %d: decode(encode(%+v)) = %+v", i, insns[i], got[i])
		}
	}
	// Byte layout: dst in the low nibble, src in the high one, little-endian.
	one := mustEncode(t, []Instruction{{Code: 0xbf, Dst: R1, Src: R10, Off: -2, Imm: 0x01020304}})
	if want := "bfa1feff04030201"; hex.EncodeToString(one) != want {
		t.Errorf("layout: got %x, want %s", one, want)
	}
}

func mustEncode(t testing.TB, insns []Instruction) []byte {
	t.Helper()
	b, err := Encode(insns)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendEncodeNoAlloc(t *testing.T) {
	insns := []Instruction{{Code: 0xb7, Imm: 1}, {Code: 0x95}}
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() { buf, _ = AppendEncode(buf[:0], insns) })
	if allocs != 0 {
		t.Errorf("AppendEncode allocated %v times", allocs)
	}
	if got, err := AppendEncode([]byte{0xaa}, insns[:1]); err != nil || !bytes.Equal(got, []byte{0xaa, 0xb7, 0, 0, 0, 1, 0, 0, 0}) {
		t.Errorf("AppendEncode = %x", got)
	}
}

func TestDecodeBadLength(t *testing.T) {
	for _, n := range []int{1, 7, 9, 15} {
		if _, err := Decode(make([]byte, n)); err == nil {
			t.Errorf("Decode of %d bytes: no error", n)
		}
	}
	if insns, err := Decode(nil); err != nil || len(insns) != 0 {
		t.Errorf("Decode(nil) = %v, %v", insns, err)
	}
}
