package insn

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seedPrograms are the golden programs of the other tests, encoded.
func seedPrograms(f *testing.F) {
	for _, c := range builderCases {
		if insns, err := Assemble(c.items); err == nil && len(insns) <= 256 {
			f.Add(mustEncode(f, insns))
		}
	}
	var all []Instruction
	for _, c := range formatCases {
		all = append(all, c.in)
	}
	f.Add(mustEncode(f, all))
	f.Add([]byte{0x18, 0x01, 0, 0, 1, 0, 0, 0}) // ld_imm64 without second slot
	f.Add([]byte{1, 2, 3})
}

func FuzzDisassemble(f *testing.F) {
	seedPrograms(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:len(b)/InstructionSize*InstructionSize]
		insns, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out := Disassemble(insns)
		lines := 0
		for i := 0; i < len(insns); {
			text, n := Format(insns, i)
			if n < 1 || n > 2 || text == "" || strings.Contains(text, "\n") {
				t.Fatalf("Format(%+v, %d) = %q, %d", insns, i, text, n)
			}
			i += n
			lines++
		}
		if strings.Count(out, "\n") != lines {
			t.Fatalf("Disassemble: %d lines, want %d", strings.Count(out, "\n"), lines)
		}
		for _, in := range insns {
			_ = in.String()
		}
	})
}

func FuzzDecode(f *testing.F) {
	seedPrograms(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		insns, err := Decode(b)
		if (err != nil) != (len(b)%InstructionSize != 0) {
			t.Fatalf("Decode(%d bytes): err = %v", len(b), err)
		}
		if err != nil {
			return
		}
		if got, err := Encode(insns); err != nil || string(got) != string(b) {
			t.Fatalf("Encode(Decode(%x)) = %x", b, got)
		}
	})
}

// FuzzAssemble turns slots into items (a 64-bit load takes the next slot as
// its upper half; a jump's offset picks one of three labels, one of which
// marks every tenth slot and so is duplicate) and assembles them: Assemble
// must not panic, and what it accepts must encode and decode back.
func FuzzAssemble(f *testing.F) {
	seedPrograms(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		insns, _ := Decode(b[:len(b)/InstructionSize*InstructionSize])
		var items []Item
		for i := 0; i < len(insns); i++ {
			in := insns[i]
			switch {
			case in.IsLoadImm64() && i+1 < len(insns):
				i++
				items = append(items, LoadImm64Raw(in.Dst, in.Src, int64(insns[i].Imm)<<32|int64(uint32(in.Imm))))
			case in.Code == BPF_JMP|uint8(BPF_JA) && in.Dst != 0:
				items = append(items, Ja(strconv.Itoa(int(in.Off%3))))
			default:
				items = append(items, Raw(in))
			}
			if i%10 == 0 {
				items = append(items, Label(strconv.Itoa(int(in.Imm%3))))
			}
		}
		out, err := Assemble(items)
		if err != nil {
			return
		}
		code, err := Encode(out)
		if err != nil {
			t.Fatalf("Assemble accepted what Encode refuses: %v", err)
		}
		if back, err := Decode(code); err != nil || !slices.Equal(back, out) {
			t.Fatalf("Decode(Encode(Assemble)) = %v, %v", back, err)
		}
	})
}
