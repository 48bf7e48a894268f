//go:build !(386 || arm || mips || mipsle)

package sys

import "unsafe"

// Pointer is a user-space address inside an attr (__aligned_u64), held as an
// unsafe.Pointer so that the garbage collector keeps the memory alive and
// moves the address with a moving stack. On 32-bit ports it is the low half
// of the u64 (pointer_32.go, pointer_mips.go), which the kernel reads whole
// in a compat process too (u64_to_user_ptr).
type Pointer struct{ ptr unsafe.Pointer }
