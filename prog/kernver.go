package prog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

var kernVersion struct {
	once sync.Once
	v    uint32
	err  error
}

// KernelVersion is the running kernel's LINUX_VERSION_CODE, read once from
// the "Linux" note of the vDSO: the number kern_version is compared with,
// where uname's release is what distributions rewrite (Debian's "6.1.0-18"
// is 6.1.76).
func KernelVersion() (uint32, error) {
	kernVersion.once.Do(func() {
		v, err := vdsoVersion()
		kernVersion.v, kernVersion.err = v, wrap(err, "kernel version")
	})
	return kernVersion.v, kernVersion.err
}

func vdsoVersion() (uint32, error) {
	start, end, err := vdsoRange()
	if err != nil {
		return 0, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	image := make([]byte, end-start)
	if _, err := mem.ReadAt(image, int64(start)); err != nil {
		return 0, fmt.Errorf("read vDSO: %w", err)
	}
	f, err := readELF(bytes.NewReader(image))
	if err != nil {
		return 0, fmt.Errorf("vDSO: %w", err)
	}
	notes, err := f.notes()
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

// vdsoRange finds the [vdso] mapping in /proc/self/maps.
func vdsoRange() (uintptr, uintptr, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			return 0, 0, fmt.Errorf("bad [vdso] line %q", line)
		}
		return uintptr(a), uintptr(b), nil
	}
	return 0, 0, errors.New("no [vdso] in /proc/self/maps")
}
