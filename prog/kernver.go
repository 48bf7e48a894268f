package prog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// KernelVersion is the running kernel's LINUX_VERSION_CODE, read once from
// the "Linux" note of the vDSO: the number kern_version is compared with,
// where uname's release is what distributions rewrite (Debian's "6.1.0-18"
// is 6.1.76).
func KernelVersion() (uint32, error) {
	kernVersion.once.Do(func() { kernVersion.v, kernVersion.err = vdsoVersion() })
	return kernVersion.v, wrap(kernVersion.err, "kernel version")
}

var kernVersion struct {
	once sync.Once
	v    uint32
	err  error
}

// atSysinfoEHDR is AT_SYSINFO_EHDR (linux/auxvec.h): the vDSO's address.
const atSysinfoEHDR = 33

func vdsoVersion() (uint32, error) {
	auxv, err := unix.Auxv()
	var base uintptr
	for _, kv := range auxv {
		if kv[0] == atSysinfoEHDR {
			base = kv[1]
		}
	}
	if base == 0 {
		return 0, fmt.Errorf("no vDSO in the auxiliary vector (%v)", err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	f, err := readELF(io.NewSectionReader(mem, int64(base), 1<<20), 1<<20)
	var notes [][]byte
	if err == nil {
		notes, err = f.notes()
	}
	if err != nil {
		return 0, fmt.Errorf("vDSO: %w", err)
	}
	for _, n := range notes {
		if v, ok := linuxNote(n); ok {
			return v, nil
		}
	}
	return 0, errors.New("vDSO has no Linux version note")
}

// linuxNote finds the note "Linux" of type 0, whose 4-byte descriptor is
// LINUX_VERSION_CODE. Notes are namesz, descsz, type, name and desc, the
// last two padded to 4 bytes.
func linuxNote(b []byte) (uint32, bool) {
	le := binary.LittleEndian
	for len(b) >= 12 {
		namesz, descsz, typ := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
		nameEnd := 12 + (uint64(namesz)+3)&^3
		descEnd := nameEnd + (uint64(descsz)+3)&^3
		if descEnd > uint64(len(b)) {
			return 0, false
		}
		if typ == 0 && namesz == 6 && string(b[12:17]) == "Linux" && descsz == 4 {
			return le.Uint32(b[nameEnd:]), true
		}
		b = b[descEnd:]
	}
	return 0, false
}
