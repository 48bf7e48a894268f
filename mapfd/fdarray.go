package mapfd

import (
	"fmt"
	"unsafe"
)

// SetFD stores fd at index of a prog array (a program for bpf_tail_call), a
// perf event array (an event for bpf_perf_event_output) or another map whose
// values are fds. The kernel swaps the entry atomically: a program running a
// tail call sees the old program or the new one, never an empty slot.
func (m *Map) SetFD(index uint32, fd int) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	if m.keySize != 4 || m.valueSize != 4 {
		return fmt.Errorf("mapfd: map %q is not an fd array", m.name)
	}
	v := uint32(fd)
	return m.update(unsafe.Pointer(&index), unsafe.Pointer(&v), BPF_ANY)
}

// ClearFD empties index of an fd array; an empty prog array slot makes
// bpf_tail_call fall through to the caller's next instruction.
func (m *Map) ClearFD(index uint32) error {
	if m.fd.Int() < 0 {
		return ErrClosed
	}
	return m.delete(unsafe.Pointer(&index))
}
