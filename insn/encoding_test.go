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
	{"mov64_imm", Program(Mov64Imm(R0, 0))},
	{"mov64_imm_neg", Program(Mov64Imm(R9, -2))},
	{"mov64_reg", Program(Mov64Reg(R6, R1))},
	{"mov32_imm", Program(Mov32Imm(R1, 0x7fffffff))},
	{"mov32_reg", Program(Mov32Reg(R2, RFP))},
	{"alu64_imm_add", Program(ALU64Imm(BPF_ADD, R2, -8))},
	{"alu64_imm_arsh", Program(ALU64Imm(BPF_ARSH, R3, 63))},
	{"alu64_reg_xor", Program(ALU64Reg(BPF_XOR, R4, R5))},
	{"alu32_imm_lsh", Program(ALU32Imm(BPF_LSH, R7, 3))},
	{"alu32_reg_mul", Program(ALU32Reg(BPF_MUL, R8, R9))},
	{"neg64", Program(Neg64(R1))},
	{"neg64", Program(ALU64Imm(BPF_NEG, R1, 0))},
	{"neg32", Program(Neg32(R2))},
	{"sdiv64_imm", Program(SDiv64Imm(R1, 3))},
	{"sdiv64_imm", Program(ALU64ImmOff(BPF_DIV, R1, 3, 1))},
	{"sdiv64_reg", Program(SDiv64Reg(R1, R2))},
	{"sdiv64_reg", Program(ALU64RegOff(BPF_DIV, R1, R2, 1))},
	{"smod64_imm", Program(SMod64Imm(R3, -7))},
	{"smod64_reg", Program(SMod64Reg(R3, R4))},
	{"sdiv32_imm", Program(SDiv32Imm(R5, 10))},
	{"sdiv32_imm", Program(ALU32ImmOff(BPF_DIV, R5, 10, 1))},
	{"sdiv32_reg", Program(SDiv32Reg(R5, R6))},
	{"sdiv32_reg", Program(ALU32RegOff(BPF_DIV, R5, R6, 1))},
	{"smod32_imm", Program(SMod32Imm(R7, 2))},
	{"smod32_reg", Program(SMod32Reg(R7, R8))},
	{"movsx64_8", Program(Movsx64Reg(R1, R2, 8))},
	{"movsx64_16", Program(Movsx64Reg(R1, R2, 16))},
	{"movsx64_32", Program(Movsx64Reg(R3, R4, 32))},
	{"movsx32_8", Program(Movsx32Reg(R5, R6, 8))},
	{"movsx32_16", Program(Movsx32Reg(R5, R6, 16))},
	{"to_le16", Program(ToLE(R1, 16))},
	{"to_be32", Program(ToBE(R2, 32))},
	{"to_be64", Program(ToBE(R3, 64))},
	{"bswap16", Program(Bswap(R1, 16))},
	{"bswap64", Program(Bswap(R9, 64))},
	{"ldx_mem_b", Program(LoadMem(BPF_B, R0, R1, 12))},
	{"ldx_mem_dw", Program(LoadMem(BPF_DW, R2, R10, -8))},
	{"ldx_memsx_b", Program(LoadMemSX(BPF_B, R0, R1, 0))},
	{"ldx_memsx_w", Program(LoadMemSX(BPF_W, R3, R4, -32768))},
	{"stx_mem_dw", Program(StoreMem(BPF_DW, R10, -8, R2))},
	{"stx_mem_h", Program(StoreMem(BPF_H, R1, 32767, R7))},
	{"st_mem_w", Program(StoreImm(BPF_W, R10, -4, -1))},
	{"st_mem_dw", Program(StoreImm(BPF_DW, R10, -16, 42))},
	{"atomic_add_dw", Program(AtomicOp(BPF_DW, BPF_ADD, R10, R1, -8))},
	{"atomic_fetch_and_w", Program(AtomicOp(BPF_W, BPF_AND|BPF_FETCH, R2, R3, 4))},
	{"atomic_xchg", Program(AtomicOp(BPF_DW, BPF_XCHG, R10, R0, -8))},
	{"atomic_cmpxchg", Program(AtomicOp(BPF_DW, BPF_CMPXCHG, R10, R1, -8))},
	{"ld_imm64", Program(LoadImm64(R1, 0x123456789abcdef0))},
	{"ld_imm64_neg", Program(LoadImm64(R2, -1))},
	{"ld_imm64_raw_btf", Program(LoadImm64Raw(R3, BPF_PSEUDO_BTF_ID, 77))},
	{"ld_map_fd", Program(LoadMapFD(R1, fakeMap(5)))},
	{"ld_map_fd", Program(LoadMapFDRaw(R1, 5))},
	{"ld_map_value", Program(LoadMapValue(R2, fakeMap(6), 16))},
	{"ld_map_value", Program(LoadMapValueRaw(R2, 6, 16))},
	{"ld_abs_b", Program(LoadAbs(BPF_B, 12))},
	{"ld_abs_w", Program(LoadAbs(BPF_W, -0x100000))},
	{"ld_ind_h", Program(LoadInd(BPF_H, R7, 14))},
	{"jmp_imm_jeq", Program(JumpImmOff(BPF_JEQ, R0, 0, 2))},
	{"jmp_imm_jeq", jumpTo(JumpImm(BPF_JEQ, R0, 0, "l"), 2)},
	{"jmp_imm_jsgt_back", Program(JumpImmOff(BPF_JSGT, R1, -5, -3))},
	{"jmp_imm_jsgt_back", backTo(JumpImm(BPF_JSGT, R1, -5, "l"), 3)},
	{"jmp_reg_jlt", Program(JumpRegOff(BPF_JLT, R2, R3, 100))},
	{"jmp_reg_jlt", jumpTo(JumpReg(BPF_JLT, R2, R3, "l"), 100)},
	{"jmp32_imm_jset", Program(Jump32ImmOff(BPF_JSET, R4, 0x80, 1))},
	{"jmp32_imm_jset", jumpTo(Jump32Imm(BPF_JSET, R4, 0x80, "l"), 1)},
	{"jmp32_reg_jsle", Program(Jump32RegOff(BPF_JSLE, R5, R6, -32768))},
	{"jmp32_reg_jsle", backTo(Jump32Reg(BPF_JSLE, R5, R6, "l"), 32768)},
	{"jmp_a", Program(JaOff(-1))},
	{"jmp_a", Program(Label("l"), Ja("l"))},
	{"jmp32_a", Program(Ja32Off(100000))},
	{"jmp32_a", jumpTo(Ja32("l"), 100000)},
	{"call_helper", Program(Call(BPF_FUNC_map_lookup_elem))},
	{"call_helper", Program(CallName("map_lookup_elem"))},
	{"call_helper", Program(CallName("bpf_map_lookup_elem"))},
	{"call_helper_ringbuf", Program(Call(BPF_FUNC_user_ringbuf_drain))},
	{"call_rel", Program(CallRel(7))},
	{"call_rel", jumpTo(CallFunc("l"), 7)},
	{"exit", Program(Exit())},
	{"raw", Program(Raw(Instruction{Code: 0xff, Dst: R10, Src: R1, Off: -2, Imm: 0x12345678}))},
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
		got := hex.EncodeToString(Encode(insns[first : first+n]))
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
	b := Encode(insns)
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
	one := Encode([]Instruction{{Code: 0xbf, Dst: R1, Src: R10, Off: -2, Imm: 0x01020304}})
	if want := "bfa1feff04030201"; hex.EncodeToString(one) != want {
		t.Errorf("layout: got %x, want %s", one, want)
	}
}

func TestAppendEncodeNoAlloc(t *testing.T) {
	insns := []Instruction{{Code: 0xb7, Imm: 1}, {Code: 0x95}}
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() { buf = AppendEncode(buf[:0], insns) })
	if allocs != 0 {
		t.Errorf("AppendEncode allocated %v times", allocs)
	}
	if got := AppendEncode([]byte{0xaa}, insns[:1]); !bytes.Equal(got, []byte{0xaa, 0xb7, 0, 0, 0, 1, 0, 0, 0}) {
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
