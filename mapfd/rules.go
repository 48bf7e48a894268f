package mapfd

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// sizeRule is what the kernel requires of a map type's key size, value
// size and max_entries when it creates one (its map_alloc_check). The
// rules are the same from 5.10 to 7.2. BPF_MAP_CREATE answers EINVAL, and
// no more, to a map that breaks one, so each rule says in words what it
// requires.
type sizeRule struct {
	ok   func(s Spec) bool
	says string
}

// sizeRules are the rules of a map type bpfkit names; a type not here is
// left to the kernel. A switch, not a map: a map is built at start-up, in
// every program that creates a map.
func sizeRules(t Type) []sizeRule {
	switch t {
	case Hash, LRUHash, PerCPUHash, LRUPerCPUHash:
		return hashRules
	case Array, PerCPUArray:
		return arrayRules
	case ProgArray, PerfEventArray:
		return fdArrayRules
	case Queue, Stack:
		return queueRules
	case StackTrace:
		return stackTraceRules
	case RingBuf:
		return ringBufRules
	}
	return nil
}

var (
	someEntries = sizeRule{
		func(s Spec) bool { return s.MaxEntries > 0 },
		"it must have an entry or more",
	}
	hashRules = []sizeRule{
		{
			func(s Spec) bool { return s.KeySize > 0 && s.ValueSize > 0 },
			"its keys and values must not be empty",
		},
		someEntries,
	}
	arrayRules = []sizeRule{
		{func(s Spec) bool { return s.KeySize == 4 }, "its key must be 4 bytes, an index"},
		{func(s Spec) bool { return s.ValueSize > 0 }, "its values must not be empty"},
		someEntries,
	}
	fdArrayRules = []sizeRule{
		{
			func(s Spec) bool { return s.KeySize == 4 && s.ValueSize == 4 },
			"its keys must be 4-byte indexes and its values 4-byte fds",
		},
		someEntries,
	}
	queueRules = []sizeRule{
		{func(s Spec) bool { return s.KeySize == 0 }, "it has no keys: KeySize must be 0"},
		{func(s Spec) bool { return s.ValueSize > 0 }, "its values must not be empty"},
		someEntries,
	}
	stackTraceRules = []sizeRule{
		{func(s Spec) bool { return s.KeySize == 4 }, "its key must be 4 bytes, a stack id"},
		{
			func(s Spec) bool { return s.ValueSize >= 8 && s.ValueSize%8 == 0 },
			"its value must be a whole number of 8-byte addresses, at least one",
		},
		someEntries,
	}
	ringBufRules = []sizeRule{
		{
			func(s Spec) bool { return s.KeySize == 0 && s.ValueSize == 0 },
			"it has no keys or values: KeySize and ValueSize must be 0",
		},
		{
			func(s Spec) bool {
				page := uint32(unix.Getpagesize())
				return bits.OnesCount32(s.MaxEntries) == 1 && s.MaxEntries%page == 0
			},
			fmt.Sprintf("its size (MaxEntries, in bytes) must be a power of two and a multiple "+
				"of the page size, %d", unix.Getpagesize()),
		},
	}
)

// checkSizes checks spec against its type's rule before the kernel is
// asked: an error that says which rule the map breaks and wraps EINVAL,
// as the kernel's refusal would.
func checkSizes(spec Spec) error {
	for _, r := range sizeRules(spec.Type) {
		if !r.ok(spec) {
			return fmt.Errorf("%s: %s %s map: %s: %w",
				describe(spec), article(spec.Type.String()), spec.Type, r.says, unix.EINVAL)
		}
	}
	return nil
}

// refused says why the kernel refused a map, from its errno, where the
// errno alone would not. EINVAL is a size or a flag the kernel does not
// take for the type, the rules above having passed; E2BIG is a key or
// value too large for it.
func refused(spec Spec, err error) error {
	why := ""
	switch {
	case errors.Is(err, unix.EINVAL):
		why = fmt.Sprintf(": the kernel does not take these sizes or flags for %s %s map",
			article(spec.Type.String()), spec.Type)
	case errors.Is(err, unix.E2BIG):
		why = fmt.Sprintf(": a key or value too large for %s %s map on this kernel",
			article(spec.Type.String()), spec.Type)
	}
	return fmt.Errorf("%s%s: %w", describe(spec), why, err)
}

// describe names the map spec would make, for its errors.
func describe(spec Spec) string {
	return fmt.Sprintf("mapfd: map create %s (%s, key %d, value %d, %d entries, flags %#x)",
		sys.QuoteName(spec.Name), spec.Type, spec.KeySize, spec.ValueSize, spec.MaxEntries,
		spec.Flags)
}

// article is "an" before a word that begins with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
