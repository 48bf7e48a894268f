package tests

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// requireKprobeMulti skips where the kernel has no kprobe_multi links,
// after checking the probe's answer against what the VM's kernel is built
// with (CONFIG_FPROBE: x86-64 6.12 and 7.2, arm64 7.2).
func requireKprobeMulti(t *testing.T) {
	t.Helper()
	requireKprobes(t)
	have, err := prog.HaveKprobeMulti()
	if err != nil {
		t.Fatal(err)
	}
	if want, known := thisKernel(t).has(since{0x512, "FPROBE"}); known && want != have {
		t.Fatalf("HaveKprobeMulti says %v, but this kernel's configuration says %v", have, want)
	}
	if !have {
		t.Skip("this kernel has no kprobe_multi links (Linux 5.18 with CONFIG_FPROBE)")
	}
}

// multiCounter loads, for kprobe_multi links, a program that counts at
// counts[cookie] for this process only.
func multiCounter(t *testing.T, counts *mapfd.Map) *prog.Program {
	t.Helper()
	items := []Item{
		Mov64Reg(R6, R1),
		Call(BPF_FUNC_get_current_pid_tgid),
		ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
		Mov64Reg(R1, R6),
		Call(BPF_FUNC_get_attach_cookie),
		StoreMem(BPF_W, R10, -4, R0),
	}
	items = append(items, testutil.AddOne(counts, "out")...)
	items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{
		Type:               prog.Kprobe,
		Name:               "kmulti_counter",
		License:            "GPL",
		Insns:              items,
		ExpectedAttachType: unix.BPF_TRACE_KPROBE_MULTI,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// handlers are the kernel functions of threeSyscalls.
func handlers(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, sc := range threeSyscalls {
		sym, err := prog.SyscallSymbol(sc.name)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sym)
	}
	return names
}

// manyFunctions is n traceable kernel functions that are none of skip.
func manyFunctions(t testing.TB, n int, skip []string) []string {
	t.Helper()
	funcs, err := tracefs.Functions()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range skip {
		seen[s] = true
	}
	var out []string
	for _, f := range funcs {
		// vfs_ and security_ functions run all the time: what they count
		// at cookie 0 is not looked at, and they make the link a
		// realistic one
		if len(out) == n {
			break
		}
		if seen[f] || !strings.HasPrefix(f, "vfs_") && !strings.HasPrefix(f, "security_") {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// TestKprobeMulti: one kprobe_multi link on the getppid, getuid and getgid
// handlers, with cookies 1, 2 and 3, among a hundred other functions with
// cookie 0, in shuffled order (the kernel sorts the names and addresses
// with their cookies), counts exactly 11, 23 and 37 calls, entered and
// returned, by name and by address.
func TestKprobeMulti(t *testing.T) {
	requireKprobeMulti(t)
	testutil.CheckNoLeaks(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syms := handlers(t)
	others := manyFunctions(t, 100, syms)
	kallsyms, err := prog.Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"entry", "return", "addresses"} {
		t.Run(mode, func(t *testing.T) {
			counts, tm := newArray(t, 4)
			p := multiCounter(t, counts)
			o := prog.KprobeMultiOptions{Return: mode == "return"}
			names := append(append([]string{}, syms...), others...)
			cookies := make([]uint64, len(names))
			for i := range syms {
				cookies[i] = uint64(i + 1)
			}
			rand.Shuffle(len(names), func(i, j int) {
				names[i], names[j] = names[j], names[i]
				cookies[i], cookies[j] = cookies[j], cookies[i]
			})
			o.Symbols, o.Cookies = names, cookies
			if mode == "addresses" {
				o.Symbols = nil
				for _, n := range names {
					addr, ok := kallsyms.Address(n)
					if !ok {
						t.Fatalf("%s is not in /proc/kallsyms", n)
					}
					o.Addresses = append(o.Addresses, addr)
				}
			}
			l, err := prog.AttachKprobeMulti(p, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range threeSyscalls {
				raw(sc.nr, sc.n)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, sc := range threeSyscalls {
				raw(sc.nr, 3) // detached: not counted
			}
			expectCounts(t, tm, map[uint32]uint64{1: 11, 2: 23, 3: 37})
		})
	}
}

// TestKprobeMultiQuirks: what the kernel refuses, as the error says it:
// a name it does not have, and one kallsyms has but ftrace cannot trace
// (ESRCH since 6.0; named from available_filter_functions), and a name of
// 512 bytes (E2BIG, KSYM_NAME_LEN).
func TestKprobeMultiQuirks(t *testing.T) {
	requireKprobeMulti(t)
	testutil.CheckNoLeaks(t)
	counts, _ := newArray(t, 4)
	p := multiCounter(t, counts)
	notrace := untraceableSymbol(t)
	for _, c := range []struct {
		what  string
		names []string
		errno unix.Errno
		says  string
	}{
		{"no such function", []string{"vfs_read", "bpfkit_no_such_function"}, unix.ESRCH,
			`not traceable (not in available_filter_functions): "bpfkit_no_such_function"`},
		{"in kallsyms, not traceable", []string{notrace, "vfs_write"}, unix.ESRCH,
			`not traceable (not in available_filter_functions): "` + notrace + `"`},
		{"name too long", []string{strings.Repeat("x", 512)}, unix.E2BIG, "512 bytes or more"},
	} {
		l, err := prog.AttachKprobeMulti(p, prog.KprobeMultiOptions{Symbols: c.names})
		if err == nil {
			l.Close()
			t.Fatalf("%s: attached", c.what)
		}
		if !errors.Is(err, c.errno) || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s: %v; want %v saying %q", c.what, err, c.errno, c.says)
		}
		if errors.Is(err, sys.ErrNotSupported) {
			t.Fatalf("%s: %v is not a missing feature", c.what, err)
		}
	}
}

// untraceableSymbol is a function of /proc/kallsyms that
// available_filter_functions does not list (noinstr or notrace code).
func untraceableSymbol(t *testing.T) string {
	t.Helper()
	funcs, err := tracefs.Functions()
	if err != nil {
		t.Fatal(err)
	}
	traceable := map[string]bool{}
	for _, f := range funcs {
		traceable[f] = true
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 3 || fields[1] != "T" {
			continue
		}
		name := fields[2]
		if !traceable[name] && !strings.HasPrefix(name, "__pfx_") && !strings.ContainsAny(name, ".$") &&
			!strings.HasPrefix(name, "__cfi_") {
			return name
		}
	}
	t.Fatal("every function of /proc/kallsyms is traceable")
	return ""
}
