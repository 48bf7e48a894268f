package prog

import (
	"bufio"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// firstAt reads /proc/kallsyms itself and returns the address of name, a
// text symbol, and the name listed first at that address.
func firstAt(t *testing.T, name string) (uint64, string) {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	first := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.Fields(sc.Text())
		if len(l) < 3 || !strings.Contains("tTwW", l[1]) {
			continue
		}
		if _, ok := first[l[0]]; !ok {
			first[l[0]] = l[2]
		}
		if l[2] == name {
			addr, _ := strconv.ParseUint(l[0], 16, 64)
			return addr, first[l[0]]
		}
	}
	t.Skipf("no %s in /proc/kallsyms", name)
	return 0, ""
}

// TestKallsyms symbolizes the address of a kernel function read from
// /proc/kallsyms, and looks the function up by name.
func TestKallsyms(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYSLOG) to read kernel addresses")
	}
	addr, first := firstAt(t, "__bpf_call_base")
	if addr == 0 {
		t.Skip("kernel addresses are hidden")
	}
	syms, err := Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	if got := syms.Name(addr); got != first+"+0x0" {
		t.Errorf("Name(%#x) = %q, want %s+0x0", addr, got, first)
	}
	if got := syms.Name(addr + 3); got != first+"+0x3" {
		t.Errorf("Name(%#x) = %q, want %s+0x3", addr+3, got, first)
	}
	if got, ok := syms.Address("__bpf_call_base"); !ok || got != addr {
		t.Errorf("Address(__bpf_call_base) = %#x, %v; want %#x", got, ok, addr)
	}
	if _, ok := syms.Address("bpfkit_no_such_symbol"); ok {
		t.Error("Address found a symbol that does not exist")
	}
	if got := syms.Name(1); got != "0x1" {
		t.Errorf("Name(1) = %q, want 0x1", got)
	}
}

// TestKallsymsHidden: a process without CAP_SYSLOG reads every address as
// zero; Kallsyms says so, and SyscallSymbol, which needs only the names,
// still works. The child runs as nobody.
func TestKallsymsHidden(t *testing.T) {
	if os.Getenv("BPFKIT_KALLSYMS_CHILD") != "" {
		if _, err := Kallsyms(); !errors.Is(err, ErrKallsymsHidden) {
			t.Fatalf("Kallsyms as nobody: %v, want ErrKallsymsHidden", err)
		}
		if sym, err := SyscallSymbol("getpid"); err != nil || !strings.HasSuffix(sym, "sys_getpid") {
			t.Fatalf("SyscallSymbol as nobody: %q, %v", sym, err)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as nobody")
	}
	dir, err := os.MkdirTemp("", "bpfkit-kallsyms-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "prog.test")
	b, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(exe, b, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestKallsymsHidden$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BPFKIT_KALLSYMS_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKallsymsHidden") {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
}

// TestSyscallPrefix: each architecture's prefix is tried first; else any
// __<arch>_sys_ that getpid has, but not the wrappers' insides; else sys_.
func TestSyscallPrefix(t *testing.T) {
	x86 := &Symbols{names: []string{"__do_sys_getpid", "__ia32_sys_getpid", "__x64_sys_getpid", "__se_sys_getpid"}}
	arm64 := &Symbols{names: []string{"__do_sys_getpid", "__arm64_compat_sys_getpid", "__arm64_sys_getpid"}}
	old := &Symbols{names: []string{"SyS_getpid", "sys_getpid"}}
	for _, c := range []struct {
		syms         *Symbols
		goarch, want string
	}{
		{x86, "amd64", "__x64_sys_"},
		{x86, "386", "__ia32_sys_"},
		{x86, "mips64", "__ia32_sys_"},
		{arm64, "arm64", "__arm64_sys_"},
		{arm64, "arm", "__arm64_sys_"},
		{old, "amd64", "sys_"},
		{old, "arm", "sys_"},
	} {
		if got := syscallPrefix(c.syms, c.goarch); got != c.want {
			t.Errorf("%s on %v: %q, want %q", c.goarch, c.syms.names, got, c.want)
		}
	}
}

// TestNameOf: on 32-bit, int(v) of a kernel value past 1<<31 was negative,
// passed the bound and indexed out of range (or printed negative).
func TestNameOf(t *testing.T) {
	for v, want := range map[uint32]string{0: "a", 1: "b", 2: "2", 1 << 31: "2147483648", math.MaxUint32: "4294967295"} {
		if got := nameOf([]string{"a", "b"}, v); got != want {
			t.Errorf("nameOf(%d) = %q, want %q", v, got, want)
		}
	}
}
