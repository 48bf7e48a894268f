package tests

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/btf"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// requireTracing skips unless the kernel loads and attaches tracing
// programs of attachType, with the reason the probe found (no BTF, a
// kernel that refuses trampolines, one that cannot attach them). In the
// VMs, Debian's kernels are known to have them on x86-64, and on arm64
// from 6.4 (ftrace direct calls): a no there is a broken probe. Debian's
// armhf kernels have no BTF, so none.
func requireTracing(t *testing.T, attachType uint32) {
	t.Helper()
	testutil.RequireRoot(t)
	ok, err := prog.HaveTracing(attachType)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := prog.KernelVersion()
	has := runtime.GOARCH != "arm" &&
		(runtime.GOARCH == "amd64" || v >= 6<<16|4<<8 || attachType == prog.BPF_TRACE_RAW_TP)
	if os.Getenv("BPFKIT_VM") != "" && ok != has {
		t.Fatalf("HaveTracing(%s) = %v on Debian's %s kernel %d.%d", sys.AttachTypeName(attachType),
			ok, runtime.GOARCH, v>>16, v>>8&0xff)
	}
	if !ok {
		f, _ := prog.Probed("tracing " + sys.AttachTypeName(attachType))
		t.Skipf("%s: %s (%v)", f.Name, f.Note, f.Errno)
	}
}

// tracingStore returns the instructions that store reg into slot of
// the array m, or jump to out.
func tracingStore(m *mapfd.Map, slot int32, reg Register) []Item {
	return []Item{StoreImm(BPF_W, R10, -4, slot), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, m),
		Call(BPF_FUNC_map_lookup_elem), JumpImm(BPF_JEQ, R0, 0, "out"), StoreMem(BPF_DW, R0, 0,
			reg)}
}

// tracingProgram loads a Tracing program on target that,
// for this process only and where filter does not jump to "out", counts
// its runs in slot first, stores each of reads (into R7) in the slots
// after, and the attachment's cookie after those if withCookie. r6 holds
// the context.
func tracingProgram(t *testing.T, target prog.Target, m *mapfd.Map, first int32, withCookie bool,
	filter []Item, reads ...Item) *prog.Program {
	t.Helper()
	items := []Item{Mov64Reg(R6, R1), Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0,
		32),
		JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out")}
	items = append(append(items, filter...), StoreImm(BPF_W, R10, -4, first))
	items = append(items, testutil.AddOne(m, "out")...)
	for i, read := range reads {
		items = append(items, read)
		items = append(items, tracingStore(m, first+1+int32(i), R7)...)
	}
	if withCookie {
		items = append(items, Mov64Reg(R1, R6), Call(BPF_FUNC_get_attach_cookie), Mov64Reg(R7, R0))
		items = append(items, tracingStore(m, first+1+int32(len(reads)), R7)...)
	}
	items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
	p, err := prog.Load(prog.Spec{Type: prog.Tracing, Name: strings.Fields(target.String())[0],
		License: "GPL", AttachTo: target, Insns: items})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// tracingModes are the two ways AttachTracing links: BPF_LINK_CREATE where
// the kernel links tracing programs of the type (HaveTracingLink: 6.1
// does, 5.10 does not), and BPF_RAW_TRACEPOINT_OPEN (Legacy), which every
// kernel with them has.
func tracingModes(t *testing.T, attachType uint32) map[string]prog.AttachOptions {
	modes := map[string]prog.AttachOptions{"raw_tracepoint_open": {Legacy: true}}
	ok, err := prog.HaveTracingLink(attachType)
	if err != nil {
		t.Fatal(err)
	}
	checkSince(t, "HaveTracingLink("+sys.AttachTypeName(attachType)+")", ok, 6<<16|1<<8,
		5<<16|10<<8)
	if ok {
		modes["link_create"] = prog.AttachOptions{}
	} else {
		t.Logf("%s: no BPF_LINK_CREATE for such tracing programs here",
			sys.AttachTypeName(attachType))
	}
	return modes
}

// haveTracingCookie says whether attachType's programs read a cookie
// (5.19 for fentry and fexit, commit 2fcc82411e74; 6.10 for tp_btf,
// commit 68ca5d4eebb8).
func haveTracingCookie(t *testing.T, attachType uint32) bool {
	ok, err := prog.HaveTracingCookie(attachType)
	if err != nil {
		t.Fatal(err)
	}
	since := uint32(5<<16 | 19<<8)
	if attachType == prog.BPF_TRACE_RAW_TP {
		since = 6<<16 | 10<<8
	}
	checkSince(t, "HaveTracingCookie("+sys.AttachTypeName(attachType)+")", ok, since, since-1)
	if !ok {
		t.Logf("%s programs may not call bpf_get_attach_cookie here",
			sys.AttachTypeName(attachType))
	}
	return ok
}

// checkSince fails t where a probe's answer contradicts the kernel's
// version: yes from version has on, no up to version lacks.
func checkSince(t *testing.T, what string, ok bool, has, lacks uint32) {
	t.Helper()
	v, err := prog.KernelVersion()
	switch {
	case err != nil:
		t.Fatal(err)
	case !ok && v >= has, ok && v>>8 <= lacks>>8:
		t.Fatalf("%s = %v on %d.%d", what, ok, v>>16, v>>8&0xff)
	}
}

// TestFentryFexit: fentry and fexit programs on __sys_sendto, the kernel
// function sendto(2) calls with its six arguments as the process gave
// them. The test sends 5 datagrams with values it chose; fentry counts 5
// runs and reads the six arguments (FuncArg), fexit counts 5 and reads
// them and the return value (FuncRet), each in its slots, and the
// cookie each attachment carries, where links carry them; once through a
// link, once through BPF_RAW_TRACEPOINT_OPEN.
func TestFentryFexit(t *testing.T) {
	requireTracing(t, prog.BPF_TRACE_FENTRY)
	requireTracing(t, prog.BPF_TRACE_FEXIT)
	testutil.CheckNoLeaks(t)
	for mode, o := range tracingModes(t, prog.BPF_TRACE_FENTRY) {
		t.Run(mode, func(t *testing.T) {
			cookie := !o.Legacy && haveTracingCookie(t,
				prog.BPF_TRACE_FENTRY) && haveTracingCookie(t, prog.BPF_TRACE_FEXIT)
			m, tm := newArray(t, 17)
			var args []Item
			for i := range 6 {
				args = append(args, FuncArg(R7, R6, i))
			}
			entry := tracingProgram(t, prog.Fentry("__sys_sendto"), m, 0, cookie, nil, args...)
			exit := tracingProgram(t, prog.Fexit("__sys_sendto"), m, 8, cookie, nil, append(args,
				FuncRet(R7, R6, 6))...)
			for i, p := range []*prog.Program{entry, exit} {
				o := o
				if cookie {
					o.Cookie = 0xc0de0000 + uint64(i)
				}
				l, err := prog.AttachTracing(p, o)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if want := []string{"fentry __sys_sendto",
					"fexit __sys_sendto"}[i]; l.String() != want {
					t.Errorf("link %q, want %q", l, want)
				}
			}
			want := sendto(t, 5)
			check := func(slot uint32, name string, w uint64, int32Arg bool) {
				got, err := tm.Lookup(slot)
				if int32Arg {
					got = uint64(uint32(got))
				}
				if err != nil || got != w {
					t.Errorf("%s (slot %d) = %#x, %v; want %#x", name, slot, got, err, w)
				}
			}
			for _, first := range []uint32{0, 8} {
				what := map[uint32]string{0: "fentry", 8: "fexit"}[first]
				check(first, what+" runs", 5, false)
				for i, w := range want[:6] {
					check(first+1+uint32(i), what+" "+sendtoNames[i], w, sendtoInt(i))
				}
			}
			check(15, "fexit "+sendtoNames[6], want[6], false)
			if cookie {
				check(7, "fentry cookie", 0xc0de0000, false)
				check(16, "fexit cookie", 0xc0de0001, false)
			}
		})
	}
}

// TestTpBTF: a tp_btf program on sys_enter, whose arguments are the
// tracepoint's (struct pt_regs *regs, long id), counts this process's
// getppid calls, told by id (FuncArg 1): exactly the 7 made; and reads the
// cookie where tp_btf programs may (6.10); through a link and through
// BPF_RAW_TRACEPOINT_OPEN.
func TestTpBTF(t *testing.T) {
	requireTracing(t, prog.BPF_TRACE_RAW_TP)
	testutil.CheckNoLeaks(t)
	for mode, o := range tracingModes(t, prog.BPF_TRACE_RAW_TP) {
		t.Run(mode, func(t *testing.T) {
			cookie := haveTracingCookie(t, prog.BPF_TRACE_RAW_TP)
			m, tm := newArray(t, 3)
			getppid := []Item{FuncArg(R7, R6, 1), JumpImm(BPF_JNE, R7, unix.SYS_GETPPID, "out")}
			p := tracingProgram(t, prog.TpBTF("sys_enter"), m, 0, cookie, getppid, FuncArg(R7, R6,
				1))
			if cookie {
				o.Cookie = 0x7b7f
			}
			l, err := prog.AttachTracing(p, o)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.String() != "tp_btf sys_enter" {
				t.Errorf("link %q, want \"tp_btf sys_enter\"", l)
			}
			raw(unix.SYS_GETPPID, 7)
			want := map[uint32]uint64{0: 7, 1: unix.SYS_GETPPID}
			if cookie {
				want[2] = 0x7b7f
			}
			expectCounts(t, tm, want)
		})
	}
}

// TestTracingRefusalsSayWhy: where the kernel refuses fentry, the error
// says why in words: a kernel that refuses trampoline programs at load
// (EPERM with every capability), one that loads them but attaches no
// trampoline to a kernel function (ENOTSUPP: arm64 before 6.4), one
// without BTF to name the target in (Debian's armhf kernels).
func TestTracingRefusalsSayWhy(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	if ok, err := prog.HaveTracing(prog.BPF_TRACE_FENTRY); err != nil || ok {
		t.Skipf("fentry works here (%v)", err)
	}
	f, _ := prog.Probed("tracing trace_fentry")
	spec := prog.Spec{Type: prog.Tracing, Name: "refused", License: "GPL",
		AttachTo: prog.Fentry("__sys_sendto"),
		Insns:    []Item{Mov64Imm(R0, 0), Exit()}}
	p, err := prog.Load(spec)
	switch f.Errno {
	case 0: // no kernel BTF, before any bpf(2) call
		if err == nil {
			p.Close()
		}
		if f.Note != "no kernel BTF" || !errors.Is(err, btf.ErrNoKernelBTF) ||
			!errors.Is(err, sys.ErrNotSupported) ||
			!strings.Contains(err.Error(), "CONFIG_DEBUG_INFO_BTF") {
			t.Fatalf("fentry load: %v (probe: %q); want ErrNoKernelBTF and why", err, f.Note)
		}
	case unix.EPERM:
		if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(),
			"refuses programs that run through a BPF trampoline") {
			t.Fatalf("fentry load: %v; want EPERM and why", err)
		}
	case sys.ENOTSUPP:
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_, err = prog.AttachTracing(p, prog.AttachOptions{})
		if !errors.Is(err, sys.ErrNotSupported) || !errors.Is(err,
			sys.ENOTSUPP) || !strings.Contains(err.Error(), "ftrace direct calls") {
			t.Fatalf("fentry attach: %v; want ENOTSUPP and why", err)
		}
	default:
		t.Fatalf("fentry refused with %v (%s), which this test does not know", f.Errno, f.Note)
	}
	t.Log(err)
}

// TestFentryModule: fentry and fexit on tun_chr_open, a function of the
// tun module (tests/vm/run.sh loads it in the VMs), named "tun:tun_chr_open"
// for fentry and plainly for fexit (found among the modules' BTF): the
// load names the module's BTF object (attach_btf_obj_fd) and an id of its
// split BTF. Each counts exactly the 3 opens of /dev/net/tun made; fexit
// sees the file fentry saw (argument 1) and 0 returned.
func TestFentryModule(t *testing.T) {
	requireTracing(t, prog.BPF_TRACE_FENTRY)
	requireTracing(t, prog.BPF_TRACE_FEXIT)
	testutil.CheckNoLeaks(t)
	if _, err := os.Stat("/sys/kernel/btf/tun"); err != nil {
		v, _ := prog.KernelVersion()
		if _, inVM := os.Stat("/modules/tun.ko"); inVM == nil && v>>8 >= 5<<8|11 {
			t.Fatalf("tun.ko was loaded in the VM, whose kernel gives modules BTF (5.11): %v", err)
		}
		t.Skipf("no tun module with BTF here (%v): tests/vm/run.sh loads it in the VMs, "+
			"whose kernels give modules BTF from 5.11", err)
	}
	m, tm := newArray(t, 6)
	var journal strings.Builder
	sys.SetJournal(&journal)
	entry := tracingProgram(t, prog.Fentry("tun:tun_chr_open"), m, 0, false, nil, FuncArg(R7, R6,
		1))
	sys.SetJournal(nil)
	exit := tracingProgram(t, prog.Fexit("tun_chr_open"), m, 3, false, nil,
		FuncArg(R7, R6, 1), FuncRet(R7, R6, 2))
	if j := journal.String(); !strings.Contains(j, " attach_btf_obj_fd=") ||
		strings.Contains(j, " attach_btf_obj_fd=0)") {
		t.Errorf("the load named no module BTF object:\n%s", j)
	}
	for _, p := range []*prog.Program{entry, exit} {
		l, err := prog.AttachTracing(p, prog.AttachOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	if err := tm.Update(5, 0xdead,
		mapfd.BPF_ANY); err != nil { // fexit's return value, 0 once it ran
		t.Fatal(err)
	}
	for range 3 {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	}
	file, _ := tm.Lookup(1)
	if file == 0 {
		t.Error("fentry read no file")
	}
	expectCounts(t, tm, map[uint32]uint64{0: 3, 3: 3, 4: file, 5: 0})
}
