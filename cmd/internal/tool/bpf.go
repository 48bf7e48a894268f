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
	var size insn.Size // a switch, not a map built at every call
	ok := true
	switch f.Size {
	case 1:
		size = insn.BPF_B
	case 2:
		size = insn.BPF_H
	case 4:
		size = insn.BPF_W
	case 8:
		size = insn.BPF_DW
	default:
		ok = false
	}
	if !ok || f.Offset > 1<<15-1 {
		return insn.Item{}, fmt.Errorf("field %s is %d bytes at offset %d: not a number to load", f.Name, f.Size, f.Offset)
	}
	return insn.LoadMem(size, dst, ctx, int16(f.Offset)), nil
}
