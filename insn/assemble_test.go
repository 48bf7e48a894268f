package insn

import (
	"errors"
	"strings"
	"testing"
)

func mustAssemble(t *testing.T, items ...Item) []Instruction {
	t.Helper()
	insns, err := Assemble(items)
	if err != nil {
		t.Fatal(err)
	}
	return insns
}

func TestAssembleLabels(t *testing.T) {
	insns := mustAssemble(t,
		Label("top"),
		Mov64Imm(R0, 0),                   // 0
		JumpImm(BPF_JEQ, R1, 0, "out"),    // 1: -> 6, off 4
		LoadImm64(R2, 1<<40),              // 2, 3
		Jump32Reg(BPF_JGT, R2, R3, "top"), // 4: -> 0, off -5
		Ja("out"),                         // 5: -> 6, off 0
		Label("out"),
		JumpReg(BPF_JNE, R1, R2, "top"),  // 6: -> 0, off -7
		Jump32Imm(BPF_JLT, R1, 5, "end"), // 7: -> 10, off 2
		Ja32("top"),                      // 8: imm -9
		Exit(),                           // 9
		Label("end"),
		Exit(), // 10
	)
	if len(insns) != 11 {
		t.Fatalf("%d slots, want 11", len(insns))
	}
	want := map[int]int16{1: 4, 4: -5, 5: 0, 6: -7, 7: 2}
	for pc, off := range want {
		if insns[pc].Off != off {
			t.Errorf("insn %d: off %d, want %d", pc, insns[pc].Off, off)
		}
	}
	if insns[8].Imm != -9 || insns[8].Off != 0 {
		t.Errorf("gotol: off %d imm %d, want 0 -9", insns[8].Off, insns[8].Imm)
	}
	if insns[2].Imm != 0 || insns[3].Imm != 1<<8 || insns[3].Code != 0 {
		t.Errorf("ld_imm64 slots: %+v %+v", insns[2], insns[3])
	}
	// Several labels on one position.
	insns = mustAssemble(t, Ja("a"), Ja("b"), Label("a"), Label("b"), Ja("c"), Label("c"), Exit())
	if insns[0].Off != 1 || insns[1].Off != 0 || insns[2].Off != 0 {
		t.Errorf("stacked labels: %+v", insns)
	}
}

func TestAssembleCallFunc(t *testing.T) {
	insns := mustAssemble(t,
		CallFunc("sub"),  // 0 -> 4: imm 3
		Exit(),           // 1
		LoadImm64(R0, 0), // 2, 3
		Label("sub"),
		CallFunc("sub"), // 4 -> 4: imm -1
		Exit(),
	)
	if insns[0].Imm != 3 || insns[0].Src != BPF_PSEUDO_CALL || insns[0].Code != BPF_JMP|uint8(BPF_CALL) {
		t.Errorf("forward call: %+v", insns[0])
	}
	if insns[4].Imm != -1 {
		t.Errorf("recursive call: %+v", insns[4])
	}
	if got := insns[0].String(); got != "call pc+3" {
		t.Errorf("String = %q", got)
	}
}

func TestAssembleErrors(t *testing.T) {
	cases := []struct {
		name  string
		items []Item
		err   error
		text  string
	}{
		{"unknown label", []Item{Ja("nowhere"), Exit()}, ErrUnknownLabel, "nowhere"},
		{"unknown call label", []Item{CallFunc("f"), Exit()}, ErrUnknownLabel, `"f"`},
		{"duplicate label", []Item{Label("x"), Exit(), Label("x"), Exit()}, ErrDuplicateLabel, `"x"`},
		{"empty label", []Item{Label(""), Exit()}, ErrEmptyLabel, "item 0"},
		{"empty jump target", []Item{Exit(), JumpImm(BPF_JEQ, R0, 0, "")}, ErrEmptyLabel, "insn 1"},
		{"unknown helper", []Item{CallName("no_such_helper"), Exit()}, ErrUnknownHelper, "no_such_helper"},
		{"nil map", []Item{LoadMapFD(R1, nil), Exit()}, ErrNilMap, "item 0"},
		{"nil map value", []Item{Exit(), LoadMapValue(R1, nil, 0)}, ErrNilMap, "insn 1"},
		{"negative fd", []Item{LoadMapFD(R1, fakeMap(-1))}, ErrBadFD, "-1"},
	}
	for _, c := range cases {
		_, err := Assemble(c.items)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.err)
			continue
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.text)
		}
	}
}

func TestAssembleOffsetRange(t *testing.T) {
	build := func(fill int, jump Item) []Item {
		items := []Item{jump}
		for range fill {
			items = append(items, Mov64Imm(R0, 0))
		}
		return append(items, Label("far"), Exit())
	}
	// 32767 slots between: offset 32767 fits.
	if _, err := Assemble(build(32767, Ja("far"))); err != nil {
		t.Errorf("offset 32767: %v", err)
	}
	_, err := Assemble(build(32768, Ja("far")))
	if !errors.Is(err, ErrOffsetRange) || !strings.Contains(err.Error(), "far") {
		t.Errorf("offset 32768: err = %v", err)
	}
	// LD_IMM64 counts two slots: 16384 of them make 32768.
	items := []Item{JumpImm(BPF_JEQ, R1, 0, "far")}
	for range 16384 {
		items = append(items, LoadImm64(R0, 0))
	}
	items = append(items, Label("far"), Exit())
	if _, err := Assemble(items); !errors.Is(err, ErrOffsetRange) {
		t.Errorf("ld_imm64 fill: err = %v", err)
	}
	// Backwards: -32768 fits, -32769 does not.
	back := func(fill int) []Item {
		items := []Item{Label("far")}
		for range fill {
			items = append(items, Mov64Imm(R0, 0))
		}
		return append(items, Jump32Imm(BPF_JEQ, R0, 0, "far"))
	}
	if insns, err := Assemble(back(32767)); err != nil || insns[32767].Off != -32768 {
		t.Errorf("offset -32768: %v", err)
	}
	if _, err := Assemble(back(32768)); !errors.Is(err, ErrOffsetRange) {
		t.Errorf("offset -32769: err = %v", err)
	}
	// gotol has 32 bits.
	insns, err := Assemble(build(40000, Ja32("far")))
	if err != nil || insns[0].Imm != 40000 {
		t.Errorf("gotol 40000: %v", err)
	}
}

func TestAssembleMapsAndHelpers(t *testing.T) {
	insns := mustAssemble(t,
		LoadMapFD(R1, fakeMap(42)),
		LoadMapValue(R2, fakeMap(7), 0x10),
		CallName("bpf_ringbuf_output"),
		CallName("ktime_get_ns"),
	)
	want := []Instruction{
		{Code: 0x18, Dst: R1, Src: BPF_PSEUDO_MAP_FD, Imm: 42}, {},
		{Code: 0x18, Dst: R2, Src: BPF_PSEUDO_MAP_VALUE, Imm: 7}, {Imm: 0x10},
		{Code: 0x85, Imm: int32(BPF_FUNC_ringbuf_output)},
		{Code: 0x85, Imm: int32(BPF_FUNC_ktime_get_ns)},
	}
	if len(insns) != len(want) {
		t.Fatalf("got %d slots", len(insns))
	}
	for i := range want {
		if insns[i] != want[i] {
			t.Errorf("slot %d: %+v, want %+v", i, insns[i], want[i])
		}
	}
	// FD is called at Assemble, not when the item is built.
	m := &countingMap{fd: 3}
	item := LoadMapFD(R1, m)
	if m.calls != 0 {
		t.Errorf("FD called by the builder")
	}
	m.fd = 9
	if insns := mustAssemble(t, item); insns[0].Imm != 9 || m.calls != 1 {
		t.Errorf("imm %d after %d calls", insns[0].Imm, m.calls)
	}
}

type countingMap struct{ fd, calls int }

func (m *countingMap) FD() int { m.calls++; return m.fd }

func TestAssembleRawAndEmpty(t *testing.T) {
	if insns, err := Assemble(nil); err != nil || len(insns) != 0 {
		t.Errorf("Assemble(nil) = %v, %v", insns, err)
	}
	r := Instruction{Code: 0x85, Src: BPF_PSEUDO_KFUNC_CALL, Off: -1, Imm: -1}
	if insns := mustAssemble(t, Raw(r)); len(insns) != 1 || insns[0] != r {
		t.Errorf("Raw: %+v", insns)
	}
}

// TestAssembleAllocs: checking every slot must not cost an allocation per
// instruction; Assemble allocates its output.
func TestAssembleAllocs(t *testing.T) {
	var items []Item
	for range 1000 {
		items = append(items, ALU64Imm(BPF_ADD, R1, 5), Movsx64Reg(R1, R2, 8), JumpImmOff(BPF_JEQ, R1, 0, 0),
			Atomic(BPF_DW, BPF_ADD.Atomic(), R10, R1, -8), LoadImm64(R2, 1), Call(BPF_FUNC_ktime_get_ns))
	}
	items = append(items, Exit())
	if n := testing.AllocsPerRun(10, func() { _, _ = Assemble(items) }); n > 1 {
		t.Errorf("Assemble of %d items: %v allocations", len(items), n)
	}
}
