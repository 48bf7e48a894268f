//go:build mips

package sys

import "unsafe"

// Pointer is a user-space address inside an attr (__aligned_u64 in the
// uapi): on 32-bit big-endian mips the pointer is the last 4 bytes of the
// u64, its low half (see pointer.go).
type Pointer struct {
	_   [4]byte
	ptr unsafe.Pointer
}
