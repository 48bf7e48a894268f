//go:build 386 || arm || mipsle

package sys

import "unsafe"

// Pointer is a user-space address inside an attr (__aligned_u64 in the
// uapi): on 32-bit little-endian ports the pointer is the first 4 bytes of
// the u64, its low half (see pointer.go).
type Pointer struct {
	ptr unsafe.Pointer
	_   [4]byte
}
