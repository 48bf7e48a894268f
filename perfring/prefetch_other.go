//go:build !amd64 && !arm64

package perfring

import "unsafe"

func prefetch(p unsafe.Pointer, n uintptr) {}
