package tests

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The feature probes are checked against what each kernel the tests run on
// is known to have: the version each feature came in (kernel history) and
// the configuration options it needs, which differ between these kernels:
// Debian's config for each VM kernel (read from its package), the host's
// /proc/config.gz.

// since is a feature's first kernel, major<<8|minor, and the CONFIG_
// options it needs (space-separated) beyond CONFIG_BPF_SYSCALL, CONFIG_NET
// and the like, which every kernel here has.
type since struct {
	v      int
	config string
}

var progTypesSince = map[string]since{
	"socket_filter": {0x313, ""}, "kprobe": {0x401, ""}, "sched_cls": {0x401, ""}, "sched_act": {0x401, ""},
	"tracepoint": {0x407, ""}, "xdp": {0x408, ""}, "perf_event": {0x409, ""}, "cgroup_skb": {0x40a, ""},
	"cgroup_sock": {0x40a, ""}, "lwt_in": {0x40a, ""}, "lwt_out": {0x40a, ""}, "lwt_xmit": {0x40a, ""},
	"sock_ops": {0x40d, ""}, "sk_skb": {0x40e, ""}, "cgroup_device": {0x40f, ""}, "sk_msg": {0x411, ""},
	"raw_tracepoint": {0x411, ""}, "cgroup_sock_addr": {0x411, ""}, "lwt_seg6local": {0x412, ""},
	"lirc_mode2": {0x412, "BPF_LIRC_MODE2"}, "sk_reuseport": {0x413, ""}, "flow_dissector": {0x414, ""},
	"cgroup_sysctl": {0x502, ""}, "raw_tracepoint_writable": {0x502, ""}, "cgroup_sockopt": {0x503, ""},
	// tracing and lsm programs load only against the kernel's BTF, which
	// Debian's armhf kernels lack.
	"tracing": {0x505, "DEBUG_INFO_BTF"}, "lsm": {0x507, "BPF_LSM DEBUG_INFO_BTF"},
	"struct_ops": {0x506, ""}, "ext": {0x506, ""}, "sk_lookup": {0x509, ""}, "syscall": {0x50e, ""},
	"netfilter": {0x604, "NETFILTER_BPF_LINK"},
}

var mapTypesSince = map[string]since{
	"hash": {0x313, ""}, "array": {0x313, ""}, "prog_array": {0x402, ""}, "perf_event_array": {0x403, ""},
	"percpu_hash": {0x406, ""}, "percpu_array": {0x406, ""}, "stack_trace": {0x406, ""}, "cgroup_array": {0x408, ""},
	"lru_hash": {0x40a, ""}, "lru_percpu_hash": {0x40a, ""}, "lpm_trie": {0x40b, ""}, "array_of_maps": {0x40c, ""},
	"hash_of_maps": {0x40c, ""}, "devmap": {0x40e, ""}, "sockmap": {0x40e, ""}, "cpumap": {0x40f, ""},
	"xskmap": {0x412, "XDP_SOCKETS"}, "sockhash": {0x412, ""}, "cgroup_storage": {0x413, ""},
	"reuseport_sockarray": {0x413, ""}, "percpu_cgroup_storage": {0x414, ""}, "queue": {0x414, ""}, "stack": {0x414, ""},
	"sk_storage": {0x502, ""}, "devmap_hash": {0x504, ""}, "struct_ops": {0x506, ""}, "ringbuf": {0x508, ""},
	"inode_storage": {0x50a, "BPF_LSM"}, "task_storage": {0x50b, ""}, "bloom_filter": {0x510, ""},
	"user_ringbuf": {0x601, ""}, "cgrp_storage": {0x602, ""}, "arena": {0x609, "64BIT"}, // and MMU
}

// helpersSince are pairs of program type and helper with the kernel that
// let the one call the other; 0xffff is never.
var helpersSince = []struct {
	typ    prog.Type
	helper insn.Helper
	since
}{
	{prog.SocketFilter, insn.BPF_FUNC_map_lookup_elem, since{0x313, ""}},
	{prog.Kprobe, insn.BPF_FUNC_ringbuf_output, since{0x508, ""}},
	{prog.Tracepoint, insn.BPF_FUNC_get_attach_cookie, since{0x50f, ""}},
	{prog.Kprobe, insn.BPF_FUNC_get_attach_cookie, since{0x50f, ""}},
	{prog.RawTracepoint, insn.BPF_FUNC_get_attach_cookie, since{0x60a, ""}}, // commit 68ca5d4eebb8
	{prog.Kprobe, insn.BPF_FUNC_get_func_ip, since{0x50f, ""}},
	{prog.Kprobe, insn.BPF_FUNC_loop, since{0x511, ""}},
	{prog.XDP, insn.BPF_FUNC_xdp_load_bytes, since{0x512, ""}},
	{prog.Kprobe, insn.BPF_FUNC_user_ringbuf_drain, since{0x601, ""}},
	{prog.SocketFilter, insn.BPF_FUNC_get_attach_cookie, since{0xffff, ""}}, // tracing only
	{prog.SocketFilter, insn.BPF_FUNC_probe_read, since{0xffff, ""}},
	{prog.Kprobe, insn.BPF_FUNC_skb_load_bytes, since{0xffff, ""}},
	{prog.Kprobe, 10000, since{0xffff, ""}}, // no such helper
}

// vmConfig is, for the options the table above names, what Debian's
// config of each VM kernel sets, by BPFKIT_VM and, where arm64's or armhf's
// differs, BPFKIT_VM/arm64 or /arm (GOARCH being the VM's architecture).
var vmConfig = map[string][]string{
	"5.10":       debian64,
	"6.1":        debian64,
	"6.12":       append(slices.Clip(debian64), "FPROBE", "NETFILTER_BPF_LINK"),
	"7.2":        append(slices.Clip(debian64), "FPROBE", "NETFILTER_BPF_LINK"),
	"6.12/arm64": append(slices.Clip(debian64), "NETFILTER_BPF_LINK"),
	"5.10/arm":   debianArmhf,
	"6.1/arm":    debianArmhf,
	"6.12/arm":   append(slices.Clip(debianArmhf), "NETFILTER_BPF_LINK"),
	"7.2/arm":    append(slices.Clip(debianArmhf), "NETFILTER_BPF_LINK"),
}

// debian64 is what the config of every x86-64 and arm64 VM kernel sets.
var debian64 = []string{"64BIT", "KPROBES", "UPROBES", "DEBUG_INFO_BTF", "BPF_LSM", "XDP_SOCKETS"}

// debianArmhf is what the config of every armhf VM kernel sets: they are
// 32-bit, without BTF.
var debianArmhf = []string{"KPROBES", "UPROBES", "BPF_LSM", "XDP_SOCKETS"}

// kernel is what the test knows of the running kernel: its version,
// major<<8|minor, and whether a config option is set; known is false when
// the configuration cannot be read (a host without /proc/config.gz).
type kernel struct {
	v      int
	config map[string]bool
	known  bool
}

func thisKernel(t *testing.T) kernel {
	t.Helper()
	code, err := prog.KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	k := kernel{v: int(code >> 8), config: map[string]bool{}}
	if vm := os.Getenv("BPFKIT_VM"); vm != "" {
		opts, ok := vmConfig[vm+"/"+runtime.GOARCH]
		if !ok {
			opts, ok = vmConfig[vm]
		}
		if !ok {
			t.Fatalf("BPFKIT_VM=%s: no configuration known for it", vm)
		}
		for _, o := range opts {
			k.config[o] = true
		}
		k.known = true
		return k
	}
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		t.Logf("no /proc/config.gz: the answers that depend on the configuration are not checked")
		return k
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for s := bufio.NewScanner(z); s.Scan(); {
		if o, ok := strings.CutPrefix(s.Text(), "CONFIG_"); ok && strings.HasSuffix(o, "=y") {
			k.config[strings.TrimSuffix(o, "=y")] = true
		}
	}
	k.known = true
	return k
}

// has says whether the kernel has what s describes, and whether that can
// be known.
func (k kernel) has(s since) (has, known bool) {
	if k.v < s.v {
		return false, true
	}
	for _, o := range strings.Fields(s.config) {
		if !k.config[o] {
			return false, k.known
		}
	}
	return true, true
}

// expectedFeatures is, by feature name as prog.Features names it, whether
// this kernel has it and the errno the probe's answer rests on.
func expectedFeatures(t *testing.T) map[string]struct {
	ok    bool
	errno unix.Errno
} {
	k := thisKernel(t)
	want := map[string]struct {
		ok    bool
		errno unix.Errno
	}{}
	set := func(name string, s since, yes, no unix.Errno) {
		if has, known := k.has(s); known {
			want[name] = struct {
				ok    bool
				errno unix.Errno
			}{has, map[bool]unix.Errno{true: yes, false: no}[has]}
		}
	}
	set("perf_link", since{0x50f, ""}, unix.EBADF, unix.EINVAL)
	if k.v < 0x512 {
		set("kprobe_multi", since{0x512, ""}, 0, unix.EINVAL)
	} else {
		set("kprobe_multi", since{0x512, "FPROBE"}, 0, unix.EOPNOTSUPP)
	}
	// A 32-bit kernel has no uprobe_multi links: EOPNOTSUPP from 6.6 on
	// (bpf_uprobe_multi_link_attach: "no support for 32bit archs yet").
	multiNo := unix.EINVAL
	if k.v >= 0x606 && k.known && !k.config["64BIT"] {
		multiNo = unix.EOPNOTSUPP
	}
	set("uprobe_multi", since{0x606, "UPROBES 64BIT"}, unix.EBADF, multiNo)
	// 6.6 to 6.9 filtered a PID's threads wrong (EBADF), as the kernels
	// here do not.
	set("uprobe_multi_pid_filter", since{0x60a, "UPROBES 64BIT"}, unix.EINVAL, multiNo)
	set("kprobe_pmu", since{0x411, "KPROBES"}, 0, unix.ENOENT)
	set("uprobe_pmu", since{0x411, "UPROBES"}, 0, unix.ENOENT)
	set("btf_vmlinux", since{0x504, "DEBUG_INFO_BTF"}, 0, unix.ENOENT)
	set("atomic_fetch", since{0x50c, ""}, 0, unix.EINVAL)
	set("isa_v2", since{0x40e, ""}, 0, unix.EINVAL)
	set("isa_v3", since{0x501, ""}, 0, unix.EINVAL)
	set("isa_v4", since{0x606, ""}, 0, unix.EINVAL)
	for name, s := range progTypesSince {
		yes := map[string]unix.Errno{"tracing": unix.EINVAL, "lsm": unix.EINVAL, "ext": unix.EINVAL, "struct_ops": sys.ENOTSUPP}[name]
		set("prog_type "+name, s, yes, unix.EINVAL)
	}
	for name, s := range mapTypesSince {
		yes := map[string]unix.Errno{"sk_storage": unix.EBADF, "inode_storage": unix.EBADF, "task_storage": unix.EBADF,
			"cgrp_storage": unix.EBADF, "struct_ops": sys.ENOTSUPP}[name]
		set("map_type "+name, s, yes, unix.EINVAL)
	}
	for _, h := range helpersSince {
		set("helper "+h.typ.String()+" "+h.helper.String(), h.since, anyErrno, unix.EINVAL)
	}
	return want
}

// anyErrno stands for any errno: a helper the verifier knows fails on its
// arguments with EINVAL or EACCES, whichever it checks first.
const anyErrno = ^unix.Errno(0)

// TestFeatures checks every probe's answer, and the errno it rests on,
// against what this kernel is known to have; then the tail-call limit.
func TestFeatures(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	want := expectedFeatures(t)
	var helpersOf []prog.Type
	for _, h := range helpersSince {
		name := "helper " + h.typ.String() + " " + h.helper.String()
		if ok, err := prog.HaveHelper(h.typ, h.helper); err != nil || ok != want[name].ok {
			t.Errorf("HaveHelper(%s, %s): %v, %v", h.typ, h.helper, ok, err)
		}
		helpersOf = append(helpersOf, h.typ)
	}
	seen := map[string]bool{}
	for _, f := range prog.Features(helpersOf...) {
		seen[f.Name] = true
		if !strings.Contains(f.Name, " ") {
			t.Logf("%-16s %-5v errno %-4d value %d %v", f.Name, f.OK, f.Errno, f.Value, f.Err)
		}
		w, ok := want[f.Name]
		switch {
		case f.Name == "tail_call_limit":
			// MAX_TAIL_CALL_CNT: 33 since 5.17 (commit ebf7f6f0a6cb); x86
			// and the interpreter allowed 33 before too, the old limit of
			// 32 counted from zero.
			if f.Err != nil || (runtime.GOARCH == "amd64" && f.Value != 33) {
				t.Errorf("tail-call limit %d (%v), want 33", f.Value, f.Err)
			}
		case !ok:
		case errors.Is(f.Err, unix.EPERM) && (f.Name == "prog_type tracing" || f.Name == "prog_type lsm" || f.Name == "prog_type ext"):
			// Some hosts refuse programs with an attach target to root (this
			// one does, before the verifier: lockdown or an LSM); the VMs
			// must load them.
			if os.Getenv("BPFKIT_VM") != "" {
				t.Errorf("%s: %v", f.Name, f.Err)
			}
			t.Logf("%s: refused here: %v", f.Name, f.Err)
		case f.Err != nil:
			t.Errorf("%s: %v", f.Name, f.Err)
		case f.OK != w.ok || w.errno != anyErrno && f.Errno != w.errno:
			t.Errorf("%s: supported %v (errno %d, %v), want %v (errno %d, %v)", f.Name, f.OK, f.Errno, f.Errno, w.ok, w.errno, w.errno)
		}
	}
	for name := range want {
		if !seen[name] && !strings.Contains(name, " unknown#") {
			t.Errorf("Features() has no %q", name)
		}
	}
	// The functions answer what Features lists.
	for _, c := range []struct {
		name string
		have func() (bool, error)
	}{
		{"perf_link", prog.HavePerfLink}, {"kprobe_multi", prog.HaveKprobeMulti},
		{"btf_vmlinux", prog.HaveBTF}, {"uprobe_multi", prog.HaveUprobeMulti},
		{"uprobe_multi_pid_filter", prog.HaveUprobeMultiPIDFilter},
		{"atomic_fetch", prog.HaveAtomicFetch},
		{"isa_v4", prog.HaveISAv4}, {"prog_type xdp", func() (bool, error) { return prog.HaveProgType(prog.XDP) }},
		{"map_type ringbuf", func() (bool, error) { return prog.HaveMapType(uint32(unix.BPF_MAP_TYPE_RINGBUF)) }},
	} {
		if ok, err := c.have(); err != nil || want[c.name].ok != ok {
			t.Errorf("%s: %v, %v; want %v", c.name, ok, err, want[c.name].ok)
		}
	}
	if n, err := prog.TailCallLimit(); err != nil || n < 32 {
		t.Errorf("TailCallLimit: %d, %v", n, err)
	}
	t.Logf("kernel %s: %d answers checked", fmt.Sprintf("%d.%d", thisKernel(t).v>>8, thisKernel(t).v&0xff), len(want))
}
