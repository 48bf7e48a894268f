//go:build mips

package sys

import "unsafe"

// Pointer is a user-space address inside an attr: on 32-bit big-endian
// mips the last 4 bytes of the u64 (see pointer.go).
type Pointer struct {
	_   [4]byte
	ptr unsafe.Pointer
}
