package sys

import (
	"bytes"
	"fmt"
	"os"
	"sync"
)

// KernelLongSize is the size in bytes of the running kernel's long and
// pointers, 8 or 4, whatever this process's own: a 32-bit process on a
// 64-bit kernel sees 8. Memory the kernel shares laid out with longs has
// this width: a BPF ring buffer's consumer and producer positions. It is
// read once from /proc/kallsyms, which prints every address zero-padded to
// the kernel's width (%px), hidden ones as zeros, to anyone; uname's machine
// would not do, as a 32-bit personality (linux32) makes it name a 32-bit one.
func KernelLongSize() (int, error) {
	kernelLong.once.Do(func() { kernelLong.n, kernelLong.err = readKernelLongSize() })
	return kernelLong.n, kernelLong.err
}

// kernelLong is KernelLongSize's answer (a struct, as possible's is).
var kernelLong struct {
	once sync.Once
	n    int
	err  error
}

func readKernelLongSize() (int, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return 0, fmt.Errorf("sys: the kernel's word size: %w", err)
	}
	defer f.Close()
	line := make([]byte, 64)
	n, err := f.Read(line)
	if err != nil {
		return 0, fmt.Errorf("sys: the kernel's word size: read /proc/kallsyms: %w", err)
	}
	return parseKallsymsWidth(line[:n])
}

// parseKallsymsWidth reads the kernel's word size from the start of
// /proc/kallsyms: the first address's hex digits, 16 or 8.
func parseKallsymsWidth(b []byte) (int, error) {
	addr, _, found := bytes.Cut(b, []byte(" "))
	if !found {
		addr = nil
	}
	for _, c := range addr {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			addr = nil
			break
		}
	}
	if len(addr) != 16 && len(addr) != 8 {
		return 0, fmt.Errorf("sys: the kernel's word size: /proc/kallsyms starts with %q, "+
			"not a 16 or 8-digit address", b[:min(len(b), 24)])
	}
	return len(addr) / 2, nil
}
