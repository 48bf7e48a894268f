package prog

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// Symbols is the kernel's text symbols from /proc/kallsyms (functions of
// the kernel and its modules), sorted by address.
type Symbols struct {
	addrs  []uint64
	names  []string
	hidden bool // every address read as zero
}

// ErrKallsymsHidden is returned by Kallsyms and Symbolizer when /proc/kallsyms
// shows every address as zero (no CAP_SYSLOG, or kernel.kptr_restrict is 2).
var ErrKallsymsHidden = errors.New("prog: /proc/kallsyms hides the addresses " +
	"(needs CAP_SYSLOG and kernel.kptr_restrict below 2)")

// kallsymsPath is where the kernel lists its symbols.
const kallsymsPath = "/proc/kallsyms"

// Kallsyms returns the kernel's text symbols, read from /proc/kallsyms once
// (modules loaded later are missing), or ErrKallsymsHidden. The table holds
// every symbol (about 120,000 on a distribution kernel, some 20 MB once in
// Go); to name a few addresses, a Symbolizer keeps only their names.
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
	kallsyms.once.Do(func() {
		f, err := os.Open(kallsymsPath)
		if err != nil {
			kallsyms.err = wrap(err, "kernel symbols")
			return
		}
		defer f.Close()
		kallsyms.s, kallsyms.err = readKallsyms(f)
	})
	return kallsyms.s, kallsyms.err
}

var kallsyms struct {
	once sync.Once
	s    *Symbols
	err  error
}

// readKallsyms reads a whole table in the format of /proc/kallsyms.
func readKallsyms(r io.Reader) (*Symbols, error) {
	type sym struct {
		addr uint64
		name string
		seq  int
	}
	var syms []sym
	hidden := true
	err := eachKallsymsLine(r, func(addr uint64, name []byte) bool {
		syms = append(syms, sym{addr, string(name), len(syms)})
		hidden = hidden && addr == 0
		return true
	})
	if err != nil {
		return nil, err
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

// eachKallsymsLine calls text for each text symbol's line of r, in the
// file's order, with the name as a slice of the reader's buffer: valid
// only until text returns. It stops early when text returns false. Other
// lines are skipped, and so is the rest of a line longer than the buffer
// (the kernel's names are at most 512 bytes, KSYM_NAME_LEN). Reading
// allocates nothing per line.
func eachKallsymsLine(r io.Reader, text func(addr uint64, name []byte) (more bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for skipping := false; ; {
		line, err := br.ReadSlice('\n')
		if !skipping {
			if addr, name, ok := parseKallsymsLine(line); ok && !text(addr, name) {
				return nil
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			skipping = true // the rest of this line is no line of its own
		case err != nil:
			return wrap(err, "kernel symbols")
		default:
			skipping = false
		}
	}
}

// isSpace is the ASCII white space strings.Fields splits on.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// nextField returns line's first run of non-space bytes and what follows.
func nextField(line []byte) (field, rest []byte) {
	i := 0
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	j := i
	for j < len(line) && !isSpace(line[j]) {
		j++
	}
	return line[i:j], line[j:]
}

// parseKallsymsLine reads a text symbol's line of /proc/kallsyms,
// "ffffffff81234560 T do_sys_openat2" maybe with "\t[module]" after:
// the address in hex, a type of t, T, w or W, and the name, a slice of
// line. It reads what strconv.ParseUint and strings.Fields would, without
// allocating.
func parseKallsymsLine(line []byte) (addr uint64, name []byte, ok bool) {
	hex, rest := nextField(line)
	typ, rest := nextField(rest)
	name, _ = nextField(rest)
	if len(hex) == 0 || len(typ) != 1 || len(name) == 0 {
		return 0, nil, false
	}
	switch typ[0] {
	case 't', 'T', 'w', 'W':
	default:
		return 0, nil, false
	}
	for _, c := range hex {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, nil, false
		}
		if addr>>60 != 0 { // a 65th bit
			return 0, nil, false
		}
		addr = addr<<4 | uint64(d)
	}
	return addr, name, true
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
		return symbolName(name, off)
	}
	return unnamed(addr)
}

// symbolName is how an address off bytes into the function name reads.
func symbolName(name string, off uint64) string { return name + "+" + unnamed(off) }

// unnamed is how an address no symbol precedes reads: in hex, as %#x.
func unnamed(addr uint64) string { return "0x" + strconv.FormatUint(addr, 16) }

// Address returns the address of the text symbol name, if there is one.
func (s *Symbols) Address(name string) (uint64, bool) {
	if i := slices.Index(s.names, name); i >= 0 {
		return s.addrs[i], true
	}
	return 0, false
}
