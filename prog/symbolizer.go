package prog

import (
	"io"
	"os"
	"sort"
	"sync"
)

// Symbolizer names kernel addresses as Symbols.Name does ("func+0xoff",
// the symbol at or before the address, the first listed of one address,
// the kernel's and its modules' functions), without keeping the table.
// Each call to Names reads /proc/kallsyms once for the addresses it has
// not named before, keeps only their names, and answers the others from
// what it kept. A tool that names a few hundred drop sites or stack frames
// holds a few hundred strings, where Kallsyms holds 120,000, and reads
// nothing before it needs a name. It is safe for concurrent use.
//
// A name once found is kept: an address of a module unloaded since keeps
// its old name. Modules loaded later are found by later calls.
type Symbolizer struct {
	mu    sync.Mutex
	names map[uint64]string
	path  string // /proc/kallsyms, or a test's file
}

// NewSymbolizer returns a Symbolizer that has read nothing yet.
func NewSymbolizer() *Symbolizer { return &Symbolizer{path: kallsymsPath} }

// Names returns the name of each address, in the order given: reading
// /proc/kallsyms once if any of them was not named before. It returns
// ErrKallsymsHidden when the file shows no address (without CAP_SYSLOG,
// or with kernel.kptr_restrict at 2), and names nothing then.
func (s *Symbolizer) Names(addrs []uint64) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []uint64
	for _, a := range addrs {
		if _, ok := s.names[a]; !ok {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		f, err := os.Open(s.path)
		if err != nil {
			return nil, wrap(err, "kernel symbols")
		}
		found, err := nameAddrs(f, missing)
		f.Close()
		if err != nil {
			return nil, err
		}
		if s.names == nil {
			s.names = make(map[uint64]string, len(found))
		}
		for i, a := range missing {
			s.names[a] = found[i]
		}
	}
	names := make([]string, len(addrs))
	for i, a := range addrs {
		names[i] = s.names[a]
	}
	return names, nil
}

// Address returns the address of the text symbol name, the first listed
// of that name, reading /proc/kallsyms only up to its line; ok is false
// when no line names it. It returns ErrKallsymsHidden when the file shows
// the symbol at address zero (without CAP_SYSLOG, or with
// kernel.kptr_restrict at 2).
func (s *Symbolizer) Address(name string) (addr uint64, ok bool, err error) {
	f, err := os.Open(s.path)
	if err != nil {
		return 0, false, wrap(err, "kernel symbols")
	}
	defer f.Close()
	err = eachKallsymsLine(f, func(a uint64, n []byte) bool {
		if string(n) == name {
			addr, ok = a, true
		}
		return !ok
	})
	if err == nil && ok && addr == 0 {
		return 0, false, ErrKallsymsHidden
	}
	return addr, ok, err
}

// nearest is, for one address wanted, the best symbol found so far: the
// highest address at or below it, the first listed of that address.
type nearest struct {
	found bool
	addr  uint64
	name  []byte // reused as better ones come: no allocation per line
}

// nameAddrs names the addresses of want (in any order, repeats allowed)
// from a table in the format of /proc/kallsyms, read once, in the order
// of want.
//
// The table is not sorted (modules, BPF programs and trampolines follow
// the kernel's own text), so every line is looked at. Each line is
// offered only to the lowest wanted address at or above it, one binary
// search. At the end each address takes the better of its own and its
// lower neighbour's: a symbol at or below the neighbour is at or below it
// too, and any symbol offered to it alone is above the neighbour.
func nameAddrs(r io.Reader, want []uint64) ([]string, error) {
	// sort.Slice rather than the generic slices.Sort: its code is linked
	// already, and tools are measured by their size
	sorted := append([]uint64(nil), want...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	sorted = compact(sorted)
	best := make([]nearest, len(sorted))
	hidden := true
	err := eachKallsymsLine(r, func(addr uint64, name []byte) bool {
		hidden = hidden && addr == 0
		i := atOrAbove(sorted, addr)
		if i == len(sorted) {
			return true
		}
		if b := &best[i]; !b.found || addr > b.addr { // equal: the first listed stays
			b.found, b.addr, b.name = true, addr, append(b.name[:0], name...)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if hidden {
		return nil, ErrKallsymsHidden
	}
	for i := 1; i < len(best); i++ {
		if !best[i].found {
			best[i] = best[i-1]
		}
	}
	names := make([]string, len(want))
	for i, a := range want {
		if b := best[atOrAbove(sorted, a)]; b.found {
			names[i] = symbolName(string(b.name), a-b.addr)
		} else {
			names[i] = unnamed(a)
		}
	}
	return names, nil
}

// atOrAbove is the index of the first of sorted at or above addr, by
// binary search; len(sorted) if there is none.
func atOrAbove(sorted []uint64, addr uint64) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		mid := int(uint(lo+hi) / 2)
		if sorted[mid] < addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// compact drops the repeats of a sorted slice, in place.
func compact(s []uint64) []uint64 {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
