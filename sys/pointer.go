//go:build !(386 || arm || mips || mipsle)

package sys

import "unsafe"

// Pointer is a user-space address inside an attr (__aligned_u64 in the uapi).
// It holds an unsafe.Pointer rather than a uint64 so that the garbage collector
// sees it: the memory stays alive and, if it lives on a goroutine stack that
// moves before the syscall, the address moves with it. It is 8 bytes on
// every port: on 32-bit ones the pointer fills the low half of the u64 (the
// first 4 bytes on little-endian ports, pointer_32.go, the last on big-endian
// ones, pointer_mips.go), and the kernel, which reads a u64 in a compat process
// too (u64_to_user_ptr), sees the address with zero high bits.
type Pointer struct{ ptr unsafe.Pointer }
