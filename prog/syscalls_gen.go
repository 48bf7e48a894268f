//go:build ignore

// syscalls_gen writes syscalls_table.go: the system call numbers of each
// architecture bpfkit knows, named as the kernel's syscalls:sys_enter_*
// tracepoints name them, to its standard output. `go generate ./prog` runs
// it.
//
// The numbers come from golang.org/x/sys/unix's zsysnum_linux_*.go, at the
// version go.mod requires; those files are generated from the kernel's
// uapi <asm/unistd.h>, so they name each number by its __NR_ name. A
// tracepoint is named after the function that SYSCALL_DEFINE made, the
// "entry point" column of the kernel's syscall tables, which differs for
// some numbers. entryPoints below lists those, per architecture,
// transcribed from arch/x86/entry/syscalls/syscall_64.tbl and
// syscall_32.tbl, arch/arm/tools/syscall.tbl and
// include/uapi/asm-generic/unistd.h (arm64, riscv64).
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/build"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// arches maps each kernel architecture, as uname names it, to the GOARCH
// whose x/sys file holds its numbers.
var arches = []struct{ machine, goarch string }{
	{"x86_64", "amd64"},
	{"aarch64", "arm64"},
	{"riscv64", "riscv64"},
	{"i686", "386"},
	{"armv7l", "arm"},
}

// generic is what asm-generic/unistd.h routes to another entry point
// (__SYSCALL(__NR3264_fstat, sys_newfstat) and the like).
var generic = map[string]string{
	"fstat":     "newfstat",
	"uname":     "newuname",
	"umount2":   "umount",
	"sendfile":  "sendfile64",
	"fadvise64": "fadvise64_64",
}

// thirtyTwo is what both 32-bit tables route alike: the 16-bit uid calls
// of old, the 32-bit time_t calls, and the 64-bit time_t calls (5.1) that
// took over the plain names.
var thirtyTwo = map[string]string{
	// the 16-bit uid calls of old
	"lchown":    "lchown16",
	"setuid":    "setuid16",
	"getuid":    "getuid16",
	"setgid":    "setgid16",
	"getgid":    "getgid16",
	"geteuid":   "geteuid16",
	"getegid":   "getegid16",
	"setreuid":  "setreuid16",
	"setregid":  "setregid16",
	"getgroups": "getgroups16",
	"setgroups": "setgroups16",
	"fchown":    "fchown16",
	"setfsuid":  "setfsuid16",
	"setfsgid":  "setfsgid16",
	"setresuid": "setresuid16",
	"getresuid": "getresuid16",
	"setresgid": "setresgid16",
	"getresgid": "getresgid16",
	"chown":     "chown16",
	// the 32-bit uid calls that took over the plain names
	"lchown32":    "lchown",
	"getuid32":    "getuid",
	"getgid32":    "getgid",
	"geteuid32":   "geteuid",
	"getegid32":   "getegid",
	"setreuid32":  "setreuid",
	"setregid32":  "setregid",
	"getgroups32": "getgroups",
	"setgroups32": "setgroups",
	"fchown32":    "fchown",
	"setresuid32": "setresuid",
	"getresuid32": "getresuid",
	"setresgid32": "setresgid",
	"getresgid32": "getresgid",
	"chown32":     "chown",
	"setuid32":    "setuid",
	"setgid32":    "setgid",
	"setfsuid32":  "setfsuid",
	"setfsgid32":  "setfsgid",
	// calls renamed or replaced
	"stat":       "newstat",
	"lstat":      "newlstat",
	"fstat":      "newfstat",
	"uname":      "newuname",
	"umount2":    "umount",
	"_llseek":    "llseek",
	"_newselect": "select",
	"_sysctl":    "sysctl",
	"ugetrlimit": "getrlimit",
	// the 32-bit time_t calls
	"adjtimex":              "adjtimex_time32",
	"sched_rr_get_interval": "sched_rr_get_interval_time32",
	"nanosleep":             "nanosleep_time32",
	"rt_sigtimedwait":       "rt_sigtimedwait_time32",
	"futex":                 "futex_time32",
	"io_getevents":          "io_getevents_time32",
	"timer_settime":         "timer_settime32",
	"timer_gettime":         "timer_gettime32",
	"clock_settime":         "clock_settime32",
	"clock_gettime":         "clock_gettime32",
	"clock_getres":          "clock_getres_time32",
	"clock_nanosleep":       "clock_nanosleep_time32",
	"utimes":                "utimes_time32",
	"futimesat":             "futimesat_time32",
	"mq_timedsend":          "mq_timedsend_time32",
	"mq_timedreceive":       "mq_timedreceive_time32",
	"pselect6":              "pselect6_time32",
	"ppoll":                 "ppoll_time32",
	"utimensat":             "utimensat_time32",
	"timerfd_settime":       "timerfd_settime32",
	"timerfd_gettime":       "timerfd_gettime32",
	"recvmmsg":              "recvmmsg_time32",
	"clock_adjtime":         "clock_adjtime32",
	"io_pgetevents":         "io_pgetevents_time32",
	// the 64-bit time_t calls (5.1) that took over the plain names
	"clock_gettime64":              "clock_gettime",
	"clock_settime64":              "clock_settime",
	"clock_adjtime64":              "clock_adjtime",
	"clock_getres_time64":          "clock_getres",
	"clock_nanosleep_time64":       "clock_nanosleep",
	"timer_gettime64":              "timer_gettime",
	"timer_settime64":              "timer_settime",
	"timerfd_gettime64":            "timerfd_gettime",
	"timerfd_settime64":            "timerfd_settime",
	"utimensat_time64":             "utimensat",
	"pselect6_time64":              "pselect6",
	"ppoll_time64":                 "ppoll",
	"io_pgetevents_time64":         "io_pgetevents",
	"recvmmsg_time64":              "recvmmsg",
	"mq_timedsend_time64":          "mq_timedsend",
	"mq_timedreceive_time64":       "mq_timedreceive",
	"semtimedop_time64":            "semtimedop",
	"rt_sigtimedwait_time64":       "rt_sigtimedwait",
	"futex_time64":                 "futex",
	"sched_rr_get_interval_time64": "sched_rr_get_interval",
}

// entryPoints is, by architecture, each __NR_ name whose entry point has
// another name. "" marks a number whose entry point is assembly or a
// wrapper, which no tracepoint describes: the kernel matches a
// tracepoint's metadata to the table by the symbol's name.
var entryPoints = map[string]map[string]string{
	"x86_64": {
		"stat":     "newstat",
		"fstat":    "newfstat",
		"lstat":    "newlstat",
		"uname":    "newuname",
		"umount2":  "umount",
		"sendfile": "sendfile64",
		"_sysctl":  "",
	},
	"aarch64": merge(generic, map[string]string{"personality": "arm64_personality"}),
	"riscv64": generic,
	"i686": merge(thirtyTwo, map[string]string{
		"time":        "time32",
		"stime":       "stime32",
		"utime":       "utime32",
		"oldstat":     "stat",
		"oldfstat":    "fstat",
		"oldlstat":    "lstat",
		"umount":      "oldumount",
		"oldolduname": "olduname",
		"olduname":    "uname",
		"getrlimit":   "old_getrlimit",
		"select":      "old_select",
		"readdir":     "old_readdir",
		"mmap":        "old_mmap",
		"mmap2":       "mmap_pgoff",
	}),
	"armv7l": merge(thirtyTwo, map[string]string{
		"semctl":              "old_semctl",
		"msgctl":              "old_msgctl",
		"shmctl":              "old_shmctl",
		"semtimedop":          "semtimedop_time32",
		"arm_sync_file_range": "sync_file_range2",
		"sigreturn":           "",
		"rt_sigreturn":        "",
		// Assembly or wrappers, which arm's kernel still matches to the
		// tracepoints of the calls they make (arch_syscall_match_sym_name
		// in arch/arm/include/asm/ftrace.h): armhf 7.2 has their events.
		"statfs64":         "statfs64",
		"fstatfs64":        "fstatfs64",
		"mmap2":            "mmap_pgoff",
		"arm_fadvise64_64": "fadvise64_64",
	}),
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// notSyscalls are constants of the x/sys files that number no call.
var notSyscalls = map[string]bool{"syscall_mask": true}

var sysLine = regexp.MustCompile(`^\s*SYS_([A-Z0-9_]+)\s*=\s*([0-9]+)\s*$`)

func main() {
	// The module cache holds x/sys at the version go.mod requires, in a
	// directory named after it: .../golang.org/x/sys@v0.49.0/unix.
	pkg, err := build.Import("golang.org/x/sys/unix", ".", build.FindOnly)
	if err != nil {
		log.Fatalf("finding golang.org/x/sys/unix: %v", err)
	}
	_, version, _ := strings.Cut(filepath.Dir(pkg.Dir), "@")
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by syscalls_gen.go from golang.org/x/sys %s; "+
		"DO NOT EDIT.\n\n", version)
	fmt.Fprintf(&b, "package prog\n\n")
	fmt.Fprintf(&b, "// syscallNames is, by uname machine, the tracepoint names of the "+
		"system calls by number.\n")
	fmt.Fprintf(&b, "var syscallNames = map[string][]string{\n")
	for _, a := range arches {
		file := filepath.Join(pkg.Dir, "zsysnum_linux_"+a.goarch+".go")
		names, err := table(file, entryPoints[a.machine])
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(&b, "%q: {\n", a.machine)
		for nr, name := range names {
			if name != "" {
				fmt.Fprintf(&b, "%d: %q,\n", nr, name)
			}
		}
		fmt.Fprintf(&b, "},\n")
	}
	fmt.Fprintf(&b, "}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := os.Stdout.Write(src); err != nil {
		log.Fatal(err)
	}
}

// table reads one x/sys file into tracepoint names by number. Where two
// numbers share an entry point, only the highest keeps the name: the
// kernel's init_ftrace_syscalls records one number per entry point, the
// last, and its tracepoints fire for that number alone.
func table(path string, aliases map[string]string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byName := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		m := sysLine.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		name := strings.ToLower(m[1])
		nr, _ := strconv.Atoi(m[2])
		if notSyscalls[name] {
			continue
		}
		if alias, ok := aliases[name]; ok {
			name = alias
		}
		if name != "" && nr >= byName[name] {
			byName[name] = nr
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	top := 0
	for _, nr := range byName {
		top = max(top, nr)
	}
	names := make([]string, top+1)
	keys := make([]string, 0, len(byName))
	for name := range byName {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	for _, name := range keys {
		names[byName[name]] = name
	}
	return names, nil
}
