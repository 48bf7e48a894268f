//go:build 386 || arm || mipsle

package sys

import "unsafe"

// Pointer is a user-space address inside an attr: on 32-bit little-endian
// ports the first 4 bytes of the u64 (see pointer.go).
type Pointer struct {
	ptr unsafe.Pointer
	_   [4]byte
}
