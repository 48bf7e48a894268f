package prog

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// Feature is one probe's answer. Probes (after libbpf_probes.c) try once,
// with a tiny program, map or a bad fd, and cache the answer with its
// errno; none reads the kernel version.
type Feature struct {
	Name  string     // "perf_link", "prog_type xdp", "helper kprobe bpf_get_attach_cookie", ...
	OK    bool       // the kernel has it
	Errno unix.Errno // the kernel's answer to the probe: 0 when it simply accepted it
	Value int        // a measurement: the tail-call limit
	Err   error      // the probe could not tell (no privilege, an answer it did not expect)
	// Note says what the answer means where its errno alone does not. It
	// says why a no is a no (EPERM to root from a kernel that refuses
	// trampolines), or why a yes rests on an error the probe provoked
	// (perf_link's EBADF).
	Note string
}

var features struct {
	sync.Mutex
	m map[string]Feature
}

// retZero is "r0 = 0; exit", for feature probes.
var retZero = []insn.Item{insn.Mov64Imm(insn.R0, 0), insn.Exit()}

// probe runs try once for name, one probe at a time, and caches the answer.
func probe(name string, try func(f *Feature)) Feature {
	features.Lock()
	defer features.Unlock()
	f, ok := features.m[name]
	if !ok {
		if features.m == nil {
			features.m = map[string]Feature{}
		}
		f.Name = name
		try(&f)
		features.m[name] = f
	}
	return f
}

// answer sets f from the kernel's answer err: yes on success or errno yes
// (with a Note that says why an error is a yes), no on an errno of no,
// else f.Err.
func (f *Feature) answer(err error, yes unix.Errno, no ...unix.Errno) {
	f.Errno, _ = errors.AsType[unix.Errno](err)
	switch {
	case err == nil:
		f.OK = true
	case yes != 0 && f.Errno == yes:
		f.OK, f.Note = true, yesBecause(yes)
	case f.Errno == 0 || !slices.Contains(no, f.Errno):
		f.Err = wrap(err, "probe for %s", f.Name)
	}
}

// yesBecause says, for each errno a probe provokes on purpose, why that
// error is a yes: the kernel got past the feature to the probe's fault.
// A switch, not a map: a package's map is built at start-up in every
// program that links the package.
func yesBecause(errno unix.Errno) string {
	switch errno {
	case unix.EBADF:
		return "an answer to the probe's bad fd: the kernel got past the feature"
	case unix.ESRCH:
		return "an answer to the probe's function: the kernel got past the link type"
	case unix.EINVAL:
		return "the verifier refused the probe's target, BTF id 1: it knows the type"
	case sys.ENOTSUPP:
		return "an answer to the target or BTF type the probe left out: it knows the type"
	}
	return ""
}

func (f Feature) result() (bool, error) { return f.OK, f.Err }

// Probed returns the answer of the probe name ("tracing trace_fentry"),
// if it ran: its Note or Errno say why a no is a no, to tell a user.
func Probed(name string) (Feature, bool) {
	features.Lock()
	defer features.Unlock()
	f, ok := features.m[name]
	return f, ok
}

// Features runs the probes and returns every answer cached, by name. It
// runs the probes without arguments, and HaveProgType and HaveMapType for
// every type the journal names. It runs HaveHelper for
// bpf_get_attach_cookie in kprobe and raw tracepoint programs (bpf_cookie:
// 5.15 and 6.10), and HaveTracing, HaveTracingLink and HaveTracingCookie
// for fentry, fexit and tp_btf. For each type of helpersOf it runs
// HaveHelper with every helper insn names.
func Features(helpersOf ...Type) []Feature {
	HavePerfLink()
	HaveKprobeMulti()
	HaveUprobeMulti()
	HaveUprobeMultiPIDFilter()
	HaveAtomicFetch()
	HaveBTF()
	HavePMU(tracefs.Kprobe)
	HavePMU(tracefs.Uprobe)
	TailCallLimit()
	HaveHelper(Kprobe, insn.BPF_FUNC_get_attach_cookie)
	HaveHelper(RawTracepoint, insn.BPF_FUNC_get_attach_cookie)
	for _, at := range []uint32{BPF_TRACE_FENTRY, BPF_TRACE_FEXIT, BPF_TRACE_RAW_TP} {
		HaveTracing(at)
		HaveTracingLink(at)
		HaveTracingCookie(at)
	}
	for v := 2; v <= 4; v++ {
		HaveISA(v)
	}
	for t := uint32(1); sys.ProgTypeName(t) != strconv.Itoa(int(t)); t++ {
		HaveProgType(Type(t))
	}
	for t := uint32(1); sys.MapTypeName(t) != strconv.Itoa(int(t)); t++ {
		HaveMapType(t)
	}
	for _, t := range helpersOf {
		for h := insn.Helper(1); !strings.HasPrefix(h.String(), "unknown#"); h++ {
			HaveHelper(t, h)
		}
	}
	features.Lock()
	defer features.Unlock()
	byName := func(a, b Feature) int { return strings.Compare(a.Name, b.Name) }
	return slices.SortedFunc(maps.Values(features.m), byName)
}

// HavePerfLink reports whether the kernel has BPF perf links (5.15):
// BPF_LINK_CREATE of BPF_PERF_EVENT with a bad fd answers EBADF (it looked
// the perf event up) where they exist, EINVAL where the type is unknown.
func HavePerfLink() (bool, error) {
	return probe("perf_link", func(f *Feature) {
		p, err := Load(Spec{Type: Tracepoint, Name: "probe_link", License: "GPL", Insns: retZero})
		if err != nil {
			f.Err = wrap(err, "probe for %s", f.Name)
			return
		}
		defer p.Close()
		_, err = sys.LinkCreate(&sys.LinkCreateAttr{
			ProgFD:     uint32(p.fd.Int()),
			TargetFD:   ^uint32(0),
			AttachType: unix.BPF_PERF_EVENT,
		})
		f.answer(err, unix.EBADF, unix.EINVAL)
	}).result()
}

// HaveKprobeMulti reports whether the kernel has kprobe_multi links (5.18,
// and CONFIG_FPROBE: EOPNOTSUPP without), by linking one to vprintk; ESRCH
// (6.0+: no such function) is a yes: the kernel knew the link type.
func HaveKprobeMulti() (bool, error) {
	return probe("kprobe_multi", func(f *Feature) {
		p, err := Load(Spec{
			Type:               Kprobe,
			Name:               "probe_kmulti",
			License:            "GPL",
			Insns:              retZero,
			ExpectedAttachType: unix.BPF_TRACE_KPROBE_MULTI,
		})
		if err != nil {
			f.answer(err, 0, unix.EINVAL)
			return
		}
		defer p.Close()
		sym, _ := sys.StringPointer("vprintk")
		fd, err := sys.LinkCreateKprobeMulti(&sys.LinkCreateKprobeMultiAttr{
			ProgFD:     uint32(p.fd.Int()),
			AttachType: unix.BPF_TRACE_KPROBE_MULTI,
			Cnt:        1,
			Syms:       sys.NewPointer(unsafePointer(&sym)),
		})
		if err == nil {
			unix.Close(fd)
		}
		f.answer(err, unix.ESRCH, unix.EINVAL, unix.EOPNOTSUPP)
	}).result()
}

// HaveUprobeMulti reports whether the kernel has uprobe_multi links (6.6),
// by linking one to "/". EBADF (not a regular file) is the yes: the kernel
// read the attr as a uprobe_multi link's. EINVAL (an unknown attach type)
// or EOPNOTSUPP (a 32-bit kernel) is the no.
func HaveUprobeMulti() (bool, error) {
	return probe("uprobe_multi", func(f *Feature) {
		f.answer(uprobeMultiRoot(0)[0], unix.EBADF, unix.EINVAL, unix.EOPNOTSUPP)
	}).result()
}

// HaveUprobeMultiPIDFilter reports whether the kernel has uprobe_multi
// links that run a PID's program in all of its threads, as
// UprobeMultiOptions.PID means. The first kernels with them ran it in the
// process's main thread only, fixed in 6.10 and the stable series by "bpf:
// fix multi-uprobe PID filtering logic". The fix refuses pid -1 (EINVAL)
// before it looks at the path, which a kernel without it reaches (EBADF).
func HaveUprobeMultiPIDFilter() (bool, error) {
	return probe("uprobe_multi_pid_filter", func(f *Feature) {
		errs := uprobeMultiRoot(0, -1)
		if f.answer(errs[0], unix.EBADF, unix.EINVAL, unix.EOPNOTSUPP); f.OK {
			f.OK = false
			f.answer(errs[1], unix.EINVAL, unix.EBADF)
		}
	}).result()
}

// uprobeMultiRoot loads a program that does nothing for uprobe_multi
// links, and links it to offset 0 of "/" for each pid. No kernel accepts
// that, "/" being no regular file: what it refuses the attr for tells what
// it checked first. It returns the answers, or for each the load's error
// (EINVAL before 6.6, which knows no such attach type).
func uprobeMultiRoot(pids ...int32) []error {
	errs := make([]error, len(pids))
	p, err := Load(Spec{
		Type:               Kprobe,
		Name:               "probe_umulti",
		License:            "GPL",
		Insns:              retZero,
		ExpectedAttachType: unix.BPF_TRACE_UPROBE_MULTI,
	})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	defer p.Close()
	root, _ := sys.StringPointer("/")
	offset := uint64(0)
	for i, pid := range pids {
		fd, err := sys.LinkCreateUprobeMulti(&sys.LinkCreateUprobeMultiAttr{
			ProgFD:     uint32(p.fd.Int()),
			AttachType: unix.BPF_TRACE_UPROBE_MULTI,
			Path:       root,
			Offsets:    sys.NewPointer(unsafePointer(&offset)),
			Cnt:        1,
			PID:        uint32(pid),
		})
		if err == nil {
			unix.Close(fd)
		}
		errs[i] = err
	}
	return errs
}

// HaveISA reports whether the verifier accepts ISA version v, by loading
// one of its instructions: 2 (4.14) adds the jumps <, <=, s< and s<=; 3
// (5.1) 32-bit jumps; 4 (6.6) sign extension, signed division, bswap, gotol.
func HaveISA(v int) (bool, error) {
	probes := map[int]insn.Item{2: insn.JumpImmOff(unix.BPF_JLT, insn.R0, 1, 0),
		3: insn.Jump32ImmOff(unix.BPF_JLT, insn.R0, 1, 0), 4: insn.Movsx64Reg(insn.R0, insn.R0, 8)}
	if _, ok := probes[v]; !ok {
		return false, fmt.Errorf("prog: probe for ISA v%d: there are versions 2 to 4", v)
	}
	return probe("isa_v"+strconv.Itoa(v), func(f *Feature) {
		_, err := tryLoad(SocketFilter, insn.Mov64Imm(insn.R0, 0), probes[v], insn.Exit())
		f.answer(err, 0, unix.EINVAL)
	}).result()
}

// HaveISAv4 is HaveISA(4).
func HaveISAv4() (bool, error) { return HaveISA(4) }

// HaveAtomicFetch reports whether the verifier accepts the atomic
// operations that return the old value (5.12): BPF_XCHG, BPF_CMPXCHG and
// BPF_FETCH with an arithmetic operation, by loading a compare-exchange
// on the stack. Before, the only atomic was an add (BPF_XADD).
func HaveAtomicFetch() (bool, error) {
	return probe("atomic_fetch", func(f *Feature) {
		_, err := tryLoad(SocketFilter,
			insn.StoreImm(insn.BPF_DW, insn.R10, -8, 0),
			insn.Mov64Imm(insn.R0, 0),
			insn.Mov64Imm(insn.R1, 1),
			insn.Atomic(insn.BPF_DW, insn.BPF_CMPXCHG, insn.R10, insn.R1, -8),
			insn.Mov64Imm(insn.R0, 0),
			insn.Exit())
		f.answer(err, 0, unix.EINVAL)
	}).result()
}

// HaveBTF reports whether the kernel describes its types in BTF, at
// /sys/kernel/btf/vmlinux (5.4, CONFIG_DEBUG_INFO_BTF).
func HaveBTF() (bool, error) {
	return probe("btf_vmlinux", func(f *Feature) {
		_, err := os.Stat("/sys/kernel/btf/vmlinux")
		f.answer(err, 0, unix.ENOENT)
	}).result()
}

// HavePMU reports whether the kernel opens kprobes (or uprobes, by k) as
// perf events of their own PMU (4.17), without tracefs.
func HavePMU(k tracefs.ProbeKind) (bool, error) {
	if k.PMU() == "" {
		return false, fmt.Errorf("prog: probe for a PMU: kind %d: %w", int(k), tracefs.ErrInvalid)
	}
	return probe(k.PMU()+"_pmu", func(f *Feature) {
		p, err := probePMU(k)
		f.OK, f.Err = p.typ != 0, wrap(err, "probe for %s", f.Name)
		if !f.OK {
			f.Errno = unix.ENOENT // no /sys/bus/event_source/devices/<pmu>
		}
	}).result()
}

// TailCallLimit measures how many tail calls in a row the kernel allows
// (33 since 5.17, commit ebf7f6f0a6cb, and on x86 before): a socket filter
// tail-calls itself, counting in the packet's cb[0].
func TailCallLimit() (int, error) {
	f := probe("tail_call_limit", func(f *Feature) {
		fd, err := sys.MapCreate(&sys.MapCreateAttr{
			MapType:    unix.BPF_MAP_TYPE_PROG_ARRAY,
			KeySize:    4,
			ValueSize:  4,
			MaxEntries: 1,
		})
		if err != nil {
			f.Err = wrap(err, "probe for %s", f.Name)
			return
		}
		defer unix.Close(fd) // empties it (prog_array_map_clear), freeing the program
		const cb0 = 48       // offsetof(struct __sk_buff, cb[0])
		// cb[0]++, then a tail call to itself; where the calls stop,
		// cb[0] is their count plus one.
		countAndCall := []insn.Item{
			insn.Mov64Reg(insn.R6, insn.R1),
			insn.LoadMem(insn.BPF_W, insn.R2, insn.R6, cb0),
			insn.ALU64Imm(insn.BPF_ADD, insn.R2, 1),
			insn.StoreMem(insn.BPF_W, insn.R6, cb0, insn.R2),
			insn.Mov64Reg(insn.R1, insn.R6),
			insn.LoadMapFDRaw(insn.R2, int32(fd)),
			insn.Mov64Imm(insn.R3, 0),
			insn.Call(insn.BPF_FUNC_tail_call),
			insn.LoadMem(insn.BPF_W, insn.R0, insn.R6, cb0),
			insn.Exit(),
		}
		p, err := Load(Spec{Type: SocketFilter, Name: "probe_tail", License: "GPL", Insns: countAndCall})
		if err == nil {
			defer p.Close()
			key, val := uint32(0), uint32(p.fd.Int())
			err = sys.MapUpdateElem(&sys.MapElemAttr{
				MapFD: uint32(fd),
				Key:   sys.NewPointer(unsafePointer(&key)),
				Value: sys.NewPointer(unsafePointer(&val)),
			})
		}
		var r RunResult
		if err == nil {
			r, err = p.TestRun(RunOptions{Data: make([]byte, 64)})
		}
		f.Value, f.OK, f.Err = int(r.Retval)-1, r.Retval > 1, wrap(err, "probe for %s", f.Name)
	})
	return f.Value, f.Err
}

// loadAttrs are the expected attach type and flags a program type's load
// needs; tracing, lsm and ext also get attach_btf_id 1, which names no
// function (nor tracepoint) in the kernel's BTF: the verifier saying so is
// the yes. Tracing is probed as tp_btf: a kernel may refuse fentry's
// trampolines to root with EPERM (HaveTracing) and still have the type.
var loadAttrs = map[Type][2]uint32{
	unix.BPF_PROG_TYPE_CGROUP_SOCK_ADDR: {unix.BPF_CGROUP_INET4_CONNECT},
	unix.BPF_PROG_TYPE_CGROUP_SOCKOPT:   {unix.BPF_CGROUP_GETSOCKOPT},
	unix.BPF_PROG_TYPE_SK_LOOKUP:        {unix.BPF_SK_LOOKUP},
	unix.BPF_PROG_TYPE_LIRC_MODE2:       {unix.BPF_LIRC_MODE2},
	unix.BPF_PROG_TYPE_NETFILTER:        {unix.BPF_NETFILTER},
	unix.BPF_PROG_TYPE_SYSCALL:          {0, unix.BPF_F_SLEEPABLE},
	unix.BPF_PROG_TYPE_TRACING:          {unix.BPF_TRACE_RAW_TP},
	unix.BPF_PROG_TYPE_LSM:              {unix.BPF_LSM_MAC},
	unix.BPF_PROG_TYPE_EXT:              {},
}

// tryLoad loads code, not assembled (a helper insn does not know is no
// error), as a program of type t and returns the verifier's log.
func tryLoad(t Type, code ...insn.Item) (string, error) {
	var enc []byte
	for _, it := range code {
		enc, _ = insn.AppendEncode(enc, []insn.Instruction{it.Instruction()})
	}
	license, _ := sys.StringPointer("GPL")
	log := make([]byte, 4096)
	a := loadAttrs[t]
	attr := sys.ProgLoadAttr{
		ProgType:           uint32(t),
		InsnCnt:            uint32(len(code)),
		Insns:              sys.SlicePointer(enc),
		License:            license,
		LogLevel:           1,
		LogSize:            uint32(len(log)),
		LogBuf:             sys.SlicePointer(log),
		ExpectedAttachType: a[0],
		ProgFlags:          a[1],
	}
	switch t {
	case Kprobe:
		attr.KernVersion, _ = KernelVersion()
	case unix.BPF_PROG_TYPE_EXT: // the target: a program without BTF, which the verifier refuses
		target, err := Load(Spec{
			Type:    SocketFilter,
			Name:    "probe_target",
			License: "GPL",
			Insns:   retZero,
		})
		if err != nil {
			return "", err
		}
		defer target.Close()
		attr.AttachProgFD = uint32(target.fd.Int())
		fallthrough
	case unix.BPF_PROG_TYPE_TRACING, unix.BPF_PROG_TYPE_LSM:
		attr.AttachBTFID = 1
	}
	fd, err := sys.ProgLoad(&attr)
	if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
		fd, err = sys.ProgLoad(&attr)
	}
	if err == nil {
		unix.Close(fd)
	}
	return unix.ByteSliceToString(log), err
}

// HaveProgType reports whether the kernel loads programs of type t, by
// loading "r0 = 0; exit" as one (struct_ops, without its target, answers
// ENOTSUPP where it exists).
func HaveProgType(t Type) (bool, error) {
	return probe("prog_type "+t.String(), func(f *Feature) {
		log, err := tryLoad(t, retZero...)
		yes := map[Type]unix.Errno{
			unix.BPF_PROG_TYPE_TRACING:    unix.EINVAL,
			unix.BPF_PROG_TYPE_LSM:        unix.EINVAL,
			unix.BPF_PROG_TYPE_EXT:        unix.EINVAL,
			unix.BPF_PROG_TYPE_STRUCT_OPS: sys.ENOTSUPP,
		}[t]
		// What the verifier says of the target when it knows the type: ext's
		// has no BTF; tracing's (probed as tp_btf) and lsm's id 1 is no
		// function, nor tracepoint typedef, of the kernel's BTF. A kernel
		// without BTF (Debian's armhf 5.10) says ext's words of those: they
		// cannot load there.
		said := []string{
			"attach_btf_id 1 is not a function",
			"attach_btf_id 1 is not a typedef",
			"attach_btf_id 1 points to wrong type name",
		}
		if t == unix.BPF_PROG_TYPE_EXT {
			said = []string{"can only be attached to another program annotated with BTF"}
		}
		refusedTarget := false
		for _, s := range said {
			refusedTarget = refusedTarget || strings.Contains(log, s)
		}
		if yes == unix.EINVAL && !refusedTarget {
			yes = 0
		}
		f.answer(err, yes, unix.EINVAL, unix.EOPNOTSUPP, sys.ENOTSUPP)
	}).result()
}

// HaveHelper reports whether programs of type t may call helper h, by
// loading "call h; exit". If not, the verifier says "invalid func",
// "unknown func" or "program of this type cannot use helper"; any other
// answer (about the arguments, say) is a yes. Types that load only with a
// target (tracing, lsm, ext, struct_ops) cannot be probed so.
func HaveHelper(t Type, h insn.Helper) (bool, error) {
	return probe("helper "+t.String()+" "+h.String(), func(f *Feature) {
		switch t {
		case unix.BPF_PROG_TYPE_TRACING,
			unix.BPF_PROG_TYPE_LSM,
			unix.BPF_PROG_TYPE_EXT,
			unix.BPF_PROG_TYPE_STRUCT_OPS:
			f.Err = fmt.Errorf("prog: probe for %s: %s programs load only with a target", f.Name, t)
			return
		}
		log, err := tryLoad(t, insn.Call(h), insn.Exit())
		f.Errno, _ = errors.AsType[unix.Errno](err)
		switch {
		case err == nil:
			f.OK = true
		case f.Errno == 0 || f.Errno == unix.EPERM:
			f.Err = wrap(err, "probe for %s", f.Name)
		case log != "": // else the kernel refused the program type itself
			f.OK = !helperRefused(log)
		}
	}).result()
}

// helperRefused says whether the verifier's log refuses a helper call.
func helperRefused(log string) bool {
	return strings.Contains(log, "invalid func ") || strings.Contains(log, "unknown func ") ||
		strings.Contains(log, "program of this type cannot use helper ")
}

// HaveMapType reports whether the kernel creates maps of type t (a
// bpf_map_type such as mapfd.RingBuf), by creating a tiny one. Local
// storage maps get a bad BTF fd, looked at once the map is made (EBADF is
// the yes); struct_ops a bad BTF type (ENOTSUPP).
func HaveMapType[T ~uint32](t T) (bool, error) {
	return probe("map_type "+sys.MapTypeName(uint32(t)), func(f *Feature) {
		attr := sys.MapCreateAttr{MapType: uint32(t), KeySize: 4, ValueSize: 4, MaxEntries: 1}
		yes := unix.Errno(0)
		switch t {
		case unix.BPF_MAP_TYPE_STACK_TRACE:
			attr.ValueSize = 8
		case unix.BPF_MAP_TYPE_LPM_TRIE:
			attr.KeySize, attr.ValueSize, attr.MapFlags = 8, 8, unix.BPF_F_NO_PREALLOC
		case unix.BPF_MAP_TYPE_CGROUP_STORAGE, unix.BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE:
			attr.KeySize, attr.ValueSize, attr.MaxEntries = 16, 8, 0 // struct bpf_cgroup_storage_key
		case unix.BPF_MAP_TYPE_QUEUE, unix.BPF_MAP_TYPE_STACK, unix.BPF_MAP_TYPE_BLOOM_FILTER:
			attr.KeySize = 0
		case unix.BPF_MAP_TYPE_RINGBUF, unix.BPF_MAP_TYPE_USER_RINGBUF:
			attr.KeySize, attr.ValueSize, attr.MaxEntries = 0, 0, uint32(os.Getpagesize())
		case 33: // arena (6.9)
			attr.KeySize, attr.ValueSize, attr.MapFlags = 0, 0, unix.BPF_F_MMAPABLE
		case unix.BPF_MAP_TYPE_SK_STORAGE,
			unix.BPF_MAP_TYPE_INODE_STORAGE,
			unix.BPF_MAP_TYPE_TASK_STORAGE,
			unix.BPF_MAP_TYPE_CGRP_STORAGE:
			attr.ValueSize, attr.MaxEntries, attr.MapFlags = 8, 0, unix.BPF_F_NO_PREALLOC
			attr.BTFFD, attr.BTFKeyTypeID, attr.BTFValueTypeID, yes = ^uint32(0), 1, 1, unix.EBADF
		case unix.BPF_MAP_TYPE_STRUCT_OPS:
			attr.BTFVmlinuxValueTypeID, yes = 1, sys.ENOTSUPP
		case unix.BPF_MAP_TYPE_ARRAY_OF_MAPS, unix.BPF_MAP_TYPE_HASH_OF_MAPS:
			inner, err := sys.MapCreate(&sys.MapCreateAttr{
				MapType:    unix.BPF_MAP_TYPE_ARRAY,
				KeySize:    4,
				ValueSize:  4,
				MaxEntries: 1,
			})
			if err != nil {
				f.Err = wrap(err, "probe for %s: inner map", f.Name)
				return
			}
			defer unix.Close(inner)
			attr.InnerMapFD = uint32(inner)
		}
		fd, err := sys.MapCreate(&attr)
		if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
			fd, err = sys.MapCreate(&attr)
		}
		if err == nil {
			unix.Close(fd)
		}
		f.answer(err, yes, unix.EINVAL, unix.EOPNOTSUPP, sys.ENOTSUPP)
	}).result()
}
