package prog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Symbols is the kernel's text symbols from /proc/kallsyms (functions of
// the kernel and its modules), sorted by address.
type Symbols struct {
	addrs  []uint64
	names  []string
	hidden bool // every address read as zero
}

// ErrKallsymsHidden is returned by Kallsyms when /proc/kallsyms shows every
// address as zero (no CAP_SYSLOG, or kernel.kptr_restrict is 2).
var ErrKallsymsHidden = errors.New("prog: /proc/kallsyms hides the addresses (needs CAP_SYSLOG and kernel.kptr_restrict below 2)")

// Kallsyms returns the kernel's text symbols, read from /proc/kallsyms once
// (modules loaded later are missing), or ErrKallsymsHidden.
func Kallsyms() (*Symbols, error) {
	s, err := loadKallsyms()
	if err == nil && s.hidden {
		return nil, ErrKallsymsHidden
	}
	return s, err
}

// loadKallsyms reads /proc/kallsyms once, even with the addresses hidden:
// SyscallSymbol needs only the names.
func loadKallsyms() (*Symbols, error) {
	kallsyms.once.Do(func() { kallsyms.s, kallsyms.err = readKallsyms() })
	return kallsyms.s, kallsyms.err
}

var kallsyms struct {
	once sync.Once
	s    *Symbols
	err  error
}

func readKallsyms() (*Symbols, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, wrap(err, "kernel symbols")
	}
	defer f.Close()
	type sym struct {
		addr uint64
		name string
		seq  int
	}
	var syms []sym
	hidden := true
	for r := bufio.NewReaderSize(f, 64<<10); err == nil; {
		var line string
		line, err = r.ReadString('\n')
		if addr, name, ok := parseKallsymsLine(line); ok {
			syms = append(syms, sym{addr, name, len(syms)})
			hidden = hidden && addr == 0
		}
	}
	if err != io.EOF {
		return nil, wrap(err, "kernel symbols")
	}
	sort.Slice(syms, func(i, j int) bool { // by address, then in the file's order
		a, b := syms[i], syms[j]
		return a.addr < b.addr || a.addr == b.addr && a.seq < b.seq
	})
	s := &Symbols{addrs: make([]uint64, len(syms)), names: make([]string, len(syms)), hidden: hidden}
	for i, x := range syms {
		s.addrs[i], s.names[i] = x.addr, x.name
	}
	return s, nil
}

// parseKallsymsLine reads a text symbol's line of /proc/kallsyms,
// "ffffffff81234560 T do_sys_openat2" maybe with "\t[module]" after.
func parseKallsymsLine(line string) (addr uint64, name string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 3 || len(fields[1]) != 1 || !strings.Contains("tTwW", fields[1]) {
		return 0, "", false
	}
	addr, err := strconv.ParseUint(fields[0], 16, 64)
	return addr, fields[2], err == nil
}

// lookup finds the symbol at or before addr, the first of one address.
func (s *Symbols) lookup(addr uint64) (name string, off uint64, ok bool) {
	i := sort.Search(len(s.addrs), func(i int) bool { return s.addrs[i] > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	for i > 0 && s.addrs[i-1] == s.addrs[i] {
		i--
	}
	return s.names[i], addr - s.addrs[i], true
}

// Name returns "function+0xoff" for a kernel address, or the address in hex
// when no symbol precedes it.
func (s *Symbols) Name(addr uint64) string {
	if name, off, ok := s.lookup(addr); ok {
		return fmt.Sprintf("%s+%#x", name, off)
	}
	return fmt.Sprintf("%#x", addr)
}

// Address returns the address of the text symbol name, if there is one.
func (s *Symbols) Address(name string) (uint64, bool) {
	if i := slices.Index(s.names, name); i >= 0 {
		return s.addrs[i], true
	}
	return 0, false
}
