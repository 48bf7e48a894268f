package tool

import (
	"fmt"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/tracefs"
)

// Field finds a tracepoint's field by name in its format.
func Field(group, name, field string) (tracefs.Field, error) {
	f, err := tracefs.TracepointFormat(group, name)
	if err != nil {
		return tracefs.Field{}, err
	}
	return f.Field(field)
}

// LoadField is dst = the field of the tracepoint record at ctx, read with
// the load its size needs (1, 2, 4 or 8 bytes, zero-extended).
func LoadField(dst, ctx insn.Register, f tracefs.Field) (insn.Item, error) {
	sizes := map[int]insn.Size{1: insn.BPF_B, 2: insn.BPF_H, 4: insn.BPF_W, 8: insn.BPF_DW}
	size, ok := sizes[f.Size]
	if !ok || f.Offset > 1<<15-1 {
		return insn.Item{}, fmt.Errorf("field %s is %d bytes at offset %d: not a number to load", f.Name, f.Size, f.Offset)
	}
	return insn.LoadMem(size, dst, ctx, int16(f.Offset)), nil
}
