// Package ksym names kernel addresses from /proc/kallsyms, for the tools.
package ksym

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Table is the kernel's text symbols, sorted by address.
type Table struct {
	addrs []uint64
	names []string
}

// Load reads the text symbols of /proc/kallsyms. Without CAP_SYSLOG (or
// with kernel.kptr_restrict=2) every address reads 0, and Load says so.
func Load() (*Table, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &Table{}
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	s := bufio.NewScanner(f)
	for s.Scan() {
		// "ffffffff81234560 T do_sys_openat2", maybe "[module]" after
		fields := strings.Fields(s.Text())
		if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T") {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		syms = append(syms, sym{addr, fields[2]})
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("/proc/kallsyms shows no addresses: needs CAP_SYSLOG and kernel.kptr_restrict below 2")
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	for _, x := range syms {
		t.addrs = append(t.addrs, x.addr)
		t.names = append(t.names, x.name)
	}
	return t, nil
}

// Name returns "function+0xoff" for addr, or its hex if no symbol precedes it.
func (t *Table) Name(addr uint64) string {
	i := sort.Search(len(t.addrs), func(i int) bool { return t.addrs[i] > addr }) - 1
	if i < 0 {
		return fmt.Sprintf("%#x", addr)
	}
	return fmt.Sprintf("%s+%#x", t.names[i], addr-t.addrs[i])
}
