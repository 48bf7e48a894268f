package insn

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by Assemble, wrapped with the item index and names.
var (
	ErrUnknownLabel   = errors.New("unknown label")
	ErrDuplicateLabel = errors.New("duplicate label")
	ErrEmptyLabel     = errors.New("empty label name")
	ErrOffsetRange    = errors.New("jump offset out of range")
	ErrUnknownHelper  = errors.New("unknown helper")
	ErrNilMap         = errors.New("nil map")
	ErrBadFD          = errors.New("invalid map fd")
)

// Assemble lays items out into instruction slots. It resolves labels
// (offsets count slots from the next instruction, a 64-bit immediate load
// counting two), map references (calling FD now) and helper names.
func Assemble(items []Item) ([]Instruction, error) {
	labels := make(map[string]int)
	pc := 0
	for n := range items {
		it := &items[n] // an Item is ~56 bytes: do not copy it
		switch it.kind {
		case kindLabel:
			if it.name == "" {
				return nil, fmt.Errorf("insn: item %d: %w", n, ErrEmptyLabel)
			}
			if _, dup := labels[it.name]; dup {
				return nil, fmt.Errorf("insn: item %d: %w %q", n, ErrDuplicateLabel, it.name)
			}
			labels[it.name] = pc
		case kindWide:
			pc += 2
		default:
			pc++
		}
	}

	out := make([]Instruction, 0, pc)
	for n := range items {
		it := &items[n]
		if it.kind == kindLabel {
			continue
		}
		pc := len(out)
		ins := it.ins
		switch it.ref {
		case refOff, refImm:
			if it.name == "" {
				return nil, fmt.Errorf("insn: item %d (insn %d): jump: %w", n, pc, ErrEmptyLabel)
			}
			target, ok := labels[it.name]
			if !ok {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %q", n, pc, ErrUnknownLabel, it.name)
			}
			d := target - (pc + 1)
			if it.ref == refImm {
				if d < math.MinInt32 || d > math.MaxInt32 {
					return nil, fmt.Errorf("insn: item %d (insn %d): %w: %d to %q", n, pc, ErrOffsetRange, d, it.name)
				}
				ins.Imm = int32(d)
			} else {
				if d < math.MinInt16 || d > math.MaxInt16 {
					return nil, fmt.Errorf("insn: item %d (insn %d): %w: %d to %q does not fit 16 bits", n, pc, ErrOffsetRange, d, it.name)
				}
				ins.Off = int16(d)
			}
		case refMap:
			if it.m == nil {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w", n, pc, ErrNilMap)
			}
			fd := it.m.FD()
			if fd < 0 || fd > math.MaxInt32 {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %d", n, pc, ErrBadFD, fd)
			}
			ins.Imm = int32(fd)
		case refHelper:
			h, ok := HelperByName(it.name)
			if !ok {
				return nil, fmt.Errorf("insn: item %d (insn %d): %w %q", n, pc, ErrUnknownHelper, it.name)
			}
			ins.Imm = int32(h)
		}
		out = append(out, ins)
		if it.kind == kindWide {
			out = append(out, Instruction{Imm: it.hi})
		}
	}
	return out, nil
}
