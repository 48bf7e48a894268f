//go:build amd64 || arm64

package perfring

import "unsafe"

// prefetch asks the CPU to load the n bytes at p into its cache, a line at a
// time, without waiting for them (PREFETCHT0, PRFM PLDL1KEEP). It never
// faults.
//
//go:noescape
func prefetch(p unsafe.Pointer, n uintptr)
