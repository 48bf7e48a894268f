package prog

import (
	"errors"
	"fmt"
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

// Feature probes try the feature once, with a tiny program, a tiny map or a
// bad fd, and cache the answer with the errno it rests on. None reads the
// kernel version.

// Feature is one probe's answer.
type Feature struct {
	Name  string     // "perf_link", "prog_type xdp", "helper kprobe bpf_get_attach_cookie", ...
	OK    bool       // the kernel has it
	Errno unix.Errno // the kernel's answer to the probe: 0 when it simply accepted it
	Value int        // a measurement: the tail-call limit
	Err   error      // the probe could not tell (no privilege, an answer it did not expect)
}

var features struct {
	sync.Mutex
	m map[string]*featureOnce
}

type featureOnce struct {
	once sync.Once
	f    Feature
}

// probe runs try once for name and caches its answer.
func probe(name string, try func(f *Feature)) Feature {
	features.Lock()
	e := features.m[name]
	if e == nil {
		if features.m == nil {
			features.m = map[string]*featureOnce{}
		}
		e = &featureOnce{}
		features.m[name] = e
	}
	features.Unlock()
	e.once.Do(func() { e.f.Name = name; try(&e.f) })
	return e.f
}

// answer sets f from err, the kernel's answer: yes on success or on errno
// yes, no on an errno of no, else f.Err.
func (f *Feature) answer(err error, yes unix.Errno, no ...unix.Errno) {
	var errno unix.Errno
	errors.As(err, &errno)
	f.Errno = errno
	switch {
	case err == nil || yes != 0 && errno == yes:
		f.OK = true
	case errno == 0 || !slices.Contains(no, errno):
		f.Err = fmt.Errorf("probe for %s: %w", f.Name, err)
	}
}

func (f Feature) result() (bool, error) { return f.OK, f.Err }

// HavePerfLink reports whether the kernel has BPF perf links (5.15):
// BPF_LINK_CREATE with attach type BPF_PERF_EVENT and a bad target fd
// answers EBADF where perf links exist (the kernel got as far as looking
// the perf event up) and EINVAL where the attach type is unknown.
func HavePerfLink() (bool, error) { return perfLinkFeature().result() }

func perfLinkFeature() Feature {
	return probe("perf_link", func(f *Feature) {
		p, err := Load(Spec{Type: Tracepoint, Name: "probe_link", License: "GPL", Insns: retZero})
		if err != nil {
			f.Err = fmt.Errorf("probe for perf links: %w", err)
			return
		}
		defer p.Close()
		_, err = sys.LinkCreate(&sys.LinkCreateAttr{ProgFD: uint32(p.fd.Int()), TargetFD: ^uint32(0), AttachType: unix.BPF_PERF_EVENT})
		f.answer(err, unix.EBADF, unix.EINVAL)
	})
}

// HaveKprobeMulti reports whether the kernel attaches a program to many
// kernel functions with one kprobe_multi link (5.18, and CONFIG_FPROBE:
// EOPNOTSUPP without), by linking one to vprintk. ESRCH (6.0+: no such
// function) is a yes too: the kernel knew the link type.
func HaveKprobeMulti() (bool, error) { return kprobeMultiFeature().result() }

func kprobeMultiFeature() Feature {
	return probe("kprobe_multi", func(f *Feature) {
		p, err := Load(Spec{Type: Kprobe, Name: "probe_kmulti", License: "GPL", Insns: retZero, ExpectedAttachType: unix.BPF_TRACE_KPROBE_MULTI})
		if err != nil {
			f.answer(err, 0, unix.EINVAL)
			return
		}
		defer p.Close()
		sym, _ := sys.StringPointer("vprintk")
		syms := []sys.Pointer{sym}
		fd, err := sys.LinkCreateKprobeMulti(&sys.LinkCreateKprobeMultiAttr{ProgFD: uint32(p.fd.Int()),
			AttachType: unix.BPF_TRACE_KPROBE_MULTI, Cnt: 1, Syms: sys.NewPointer(unsafePointer(&syms[0]))})
		if err == nil {
			unix.Close(fd)
		}
		f.answer(err, unix.ESRCH, unix.EINVAL, unix.EOPNOTSUPP)
	})
}

// HaveISA reports whether the verifier accepts the instructions of ISA
// version v: 2 (4.14) adds the jumps <, <=, s< and s<=; 3 (5.1) 32-bit
// jumps; 4 (6.6) sign-extending loads and moves, signed division, bswap,
// gotol. Older verifiers refuse an unknown opcode with EINVAL.
func HaveISA(v int) (bool, error) { return isaFeature(v).result() }

// HaveISAv4 is HaveISA(4).
func HaveISAv4() (bool, error) { return HaveISA(4) }

func isaFeature(v int) Feature {
	probes := map[int]insn.Item{
		2: insn.JumpImmOff(unix.BPF_JLT, insn.R0, 1, 0),
		3: insn.Jump32ImmOff(unix.BPF_JLT, insn.R0, 1, 0),
		4: insn.Movsx64Reg(insn.R0, insn.R0, 8),
	}
	return probe("isa_v"+strconv.Itoa(v), func(f *Feature) {
		if probes[v].Instruction() == (insn.Instruction{}) {
			f.Err = fmt.Errorf("probe for ISA v%d: there are versions 2 to 4", v)
			return
		}
		_, err := tryLoad(SocketFilter, insn.Mov64Imm(insn.R0, 0), probes[v], insn.Exit())
		f.answer(err, 0, unix.EINVAL)
	})
}

// HaveBTF reports whether the kernel describes its types in BTF, at
// /sys/kernel/btf/vmlinux (5.4, CONFIG_DEBUG_INFO_BTF).
func HaveBTF() (bool, error) { return btfFeature().result() }

func btfFeature() Feature {
	return probe("btf_vmlinux", func(f *Feature) {
		_, err := os.Stat("/sys/kernel/btf/vmlinux")
		f.answer(err, 0, unix.ENOENT)
	})
}

// HavePMU reports whether the kernel opens kprobes (or uprobes, by k's
// kind) as perf events of their own PMU (4.17), without tracefs.
func HavePMU(k tracefs.ProbeKind) (bool, error) { return pmuFeature(k).result() }

func pmuFeature(k tracefs.ProbeKind) Feature {
	return probe(k.PMU()+"_pmu", func(f *Feature) {
		p, err := probePMU(k)
		f.OK, f.Err = p.typ != 0, err
		if !f.OK {
			f.Errno = unix.ENOENT // no /sys/bus/event_source/devices/<pmu>
		}
	})
}

// TailCallLimit measures how many tail calls in a row the kernel allows
// (33 since 5.17, commit ebf7f6f0a6cb; x86 allowed 33 before too): a socket
// filter tail-calls itself, counting its runs in the packet's cb[0].
func TailCallLimit() (int, error) {
	f := tailCallFeature()
	return f.Value, f.Err
}

func tailCallFeature() Feature {
	return probe("tail_call_limit", func(f *Feature) {
		fd, err := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_PROG_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
		if err != nil {
			f.Err = fmt.Errorf("probe for the tail-call limit: %w", err)
			return
		}
		defer unix.Close(fd)
		const cb0 = 48 // offsetof(struct __sk_buff, cb[0])
		p, err := Load(Spec{Type: SocketFilter, Name: "probe_tail", License: "GPL", Insns: []insn.Item{
			insn.Mov64Reg(insn.R6, insn.R1), insn.LoadMem(insn.BPF_W, insn.R2, insn.R6, cb0),
			insn.ALU64Imm(insn.BPF_ADD, insn.R2, 1), insn.StoreMem(insn.BPF_W, insn.R6, cb0, insn.R2),
			insn.Mov64Reg(insn.R1, insn.R6), insn.LoadMapFDRaw(insn.R2, int32(fd)), insn.Mov64Imm(insn.R3, 0),
			insn.Call(insn.BPF_FUNC_tail_call), insn.LoadMem(insn.BPF_W, insn.R0, insn.R6, cb0), insn.Exit()}})
		if err != nil {
			f.Err = fmt.Errorf("probe for the tail-call limit: %w", err)
			return
		}
		defer p.Close()
		key, val := uint32(0), uint32(p.fd.Int())
		elem := sys.MapElemAttr{MapFD: uint32(fd), Key: sys.NewPointer(unsafePointer(&key)), Value: sys.NewPointer(unsafePointer(&val))}
		if err := sys.MapUpdateElem(&elem); err != nil {
			f.Err = fmt.Errorf("probe for the tail-call limit: %w", err)
			return
		}
		defer sys.MapDeleteElem(&elem) // the program and its array hold each other
		r, err := p.TestRun(RunOptions{Data: make([]byte, 64)})
		f.Value, f.OK, f.Err = int(r.Retval)-1, r.Retval > 1, err
	})
}

// tryLoad loads code as a program of type t, with what such a load needs
// (libbpf's libbpf_probes.c is the model), and returns the verifier's log.
func tryLoad(t Type, code ...insn.Item) (string, error) {
	insns := make([]insn.Instruction, len(code)) // not assembled: a helper insn does not know is no error here
	for i, it := range code {
		insns[i] = it.Instruction()
	}
	enc, err := insn.AppendEncode(nil, insns)
	if err != nil {
		return "", err
	}
	license, _ := sys.StringPointer("GPL")
	log := make([]byte, 4096)
	attr := sys.ProgLoadAttr{ProgType: uint32(t), InsnCnt: uint32(len(insns)), Insns: sys.SlicePointer(enc), License: license,
		LogLevel: 1, LogSize: uint32(len(log)), LogBuf: sys.SlicePointer(log)}
	switch t {
	case Kprobe:
		attr.KernVersion, _ = KernelVersion()
	case unix.BPF_PROG_TYPE_CGROUP_SOCK_ADDR:
		attr.ExpectedAttachType = unix.BPF_CGROUP_INET4_CONNECT
	case unix.BPF_PROG_TYPE_CGROUP_SOCKOPT:
		attr.ExpectedAttachType = unix.BPF_CGROUP_GETSOCKOPT
	case unix.BPF_PROG_TYPE_SK_LOOKUP:
		attr.ExpectedAttachType = unix.BPF_SK_LOOKUP
	case unix.BPF_PROG_TYPE_LIRC_MODE2:
		attr.ExpectedAttachType = unix.BPF_LIRC_MODE2
	case unix.BPF_PROG_TYPE_NETFILTER:
		attr.ExpectedAttachType = unix.BPF_NETFILTER
	case unix.BPF_PROG_TYPE_SYSCALL:
		attr.ProgFlags = unix.BPF_F_SLEEPABLE
	case unix.BPF_PROG_TYPE_TRACING, unix.BPF_PROG_TYPE_LSM, unix.BPF_PROG_TYPE_EXT:
		// Type 1 of the kernel's BTF is no function: the verifier says so,
		// and that it got that far is the yes.
		attr.AttachBTFID = 1
		attr.ExpectedAttachType = map[Type]uint32{unix.BPF_PROG_TYPE_TRACING: unix.BPF_TRACE_FENTRY, unix.BPF_PROG_TYPE_LSM: unix.BPF_LSM_MAC}[t]
		if t == unix.BPF_PROG_TYPE_EXT {
			target, err := Load(Spec{Type: SocketFilter, Name: "probe_target", License: "GPL", Insns: retZero})
			if err != nil {
				return "", err
			}
			defer target.Close()
			attr.AttachProgFD = uint32(target.fd.Int())
		}
	}
	fd, err := sys.ProgLoad(&attr)
	if errors.Is(err, unix.EPERM) && sys.RaiseMemlock() {
		fd, err = sys.ProgLoad(&attr)
	}
	if err == nil {
		unix.Close(fd)
	}
	return cString(log), err
}

// HaveProgType reports whether the kernel loads programs of type t, by
// loading "r0 = 0; exit" as one. The types that need an attach target
// (tracing, lsm, ext) are given a bad one: the verifier's complaint about
// it is the yes; struct_ops answers ENOTSUPP for its missing target.
func HaveProgType(t Type) (bool, error) { return progTypeFeature(t).result() }

func progTypeFeature(t Type) Feature {
	return probe("prog_type "+t.String(), func(f *Feature) {
		log, err := tryLoad(t, retZero...)
		yes, want := unix.Errno(0), ""
		switch t {
		case unix.BPF_PROG_TYPE_TRACING, unix.BPF_PROG_TYPE_LSM:
			yes, want = unix.EINVAL, "attach_btf_id 1 is not a function"
		case unix.BPF_PROG_TYPE_EXT:
			yes, want = unix.EINVAL, "can only be attached to another program annotated with BTF"
		case unix.BPF_PROG_TYPE_STRUCT_OPS:
			yes = sys.ENOTSUPP
		}
		if want != "" && !strings.Contains(log, want) {
			yes = 0
		}
		f.answer(err, yes, unix.EINVAL, unix.EOPNOTSUPP, sys.ENOTSUPP)
	})
}

// HaveHelper reports whether programs of type t may call helper h, by
// loading "call h; exit": the verifier names a helper it does not know
// ("invalid func"), or that this type may not call ("unknown func",
// "program of this type cannot use helper"); any other answer, such as a
// complaint about the arguments, is a yes.
func HaveHelper(t Type, h insn.Helper) (bool, error) { return helperFeature(t, h).result() }

func helperFeature(t Type, h insn.Helper) Feature {
	return probe("helper "+t.String()+" "+h.String(), func(f *Feature) {
		switch t {
		case unix.BPF_PROG_TYPE_TRACING, unix.BPF_PROG_TYPE_LSM, unix.BPF_PROG_TYPE_EXT, unix.BPF_PROG_TYPE_STRUCT_OPS:
			f.Err = fmt.Errorf("probe for %s: %s programs load only with a target, which the probe has not", f.Name, t)
			return
		}
		log, err := tryLoad(t, insn.Call(h), insn.Exit())
		errors.As(err, &f.Errno)
		switch {
		case err == nil:
			f.OK = true
		case f.Errno == 0 || f.Errno == unix.EPERM:
			f.Err = fmt.Errorf("probe for %s: %w", f.Name, err)
		case log != "": // else the kernel refused the program type itself
			f.OK = !strings.Contains(log, "invalid func ") && !strings.Contains(log, "unknown func ") &&
				!strings.Contains(log, "program of this type cannot use helper ")
		}
	})
}

// HaveMapType reports whether the kernel creates maps of type t, an enum
// bpf_map_type value such as mapfd.RingBuf, by creating a tiny one. The
// local storage maps are given a bad BTF fd, which the kernel looks at only
// after it made the map (EBADF is the yes); struct_ops a bad BTF type
// (ENOTSUPP).
func HaveMapType[T ~uint32](t T) (bool, error) { return mapTypeFeature(uint32(t)).result() }

func mapTypeFeature(t uint32) Feature {
	return probe("map_type "+sys.MapTypeName(t), func(f *Feature) {
		attr := sys.MapCreateAttr{MapType: t, KeySize: 4, ValueSize: 4, MaxEntries: 1}
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
		case bpfMapTypeArena:
			attr.KeySize, attr.ValueSize, attr.MapFlags = 0, 0, unix.BPF_F_MMAPABLE
		case unix.BPF_MAP_TYPE_SK_STORAGE, unix.BPF_MAP_TYPE_INODE_STORAGE, unix.BPF_MAP_TYPE_TASK_STORAGE, unix.BPF_MAP_TYPE_CGRP_STORAGE:
			attr.ValueSize, attr.MaxEntries, attr.MapFlags = 8, 0, unix.BPF_F_NO_PREALLOC
			attr.BTFFD, attr.BTFKeyTypeID, attr.BTFValueTypeID, yes = ^uint32(0), 1, 1, unix.EBADF
		case unix.BPF_MAP_TYPE_STRUCT_OPS:
			attr.BTFVmlinuxValueTypeID, yes = 1, sys.ENOTSUPP
		case unix.BPF_MAP_TYPE_ARRAY_OF_MAPS, unix.BPF_MAP_TYPE_HASH_OF_MAPS:
			inner, err := sys.MapCreate(&sys.MapCreateAttr{MapType: unix.BPF_MAP_TYPE_ARRAY, KeySize: 4, ValueSize: 4, MaxEntries: 1})
			if err != nil {
				f.Err = fmt.Errorf("probe for %s: inner map: %w", f.Name, err)
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
	})
}

const bpfMapTypeArena = 33 // 6.9; not in x/sys/unix yet

// Features runs every probe: those above (bpf_cookie is the helper
// bpf_get_attach_cookie in tracepoint programs, 5.15), the program and map
// types the journal names (the ring buffer is map_type ringbuf), and every
// helper insn names for each type in helpersOf.
func Features(helpersOf ...Type) []Feature {
	fs := []Feature{perfLinkFeature(), helperFeature(Tracepoint, insn.BPF_FUNC_get_attach_cookie), kprobeMultiFeature(),
		pmuFeature(tracefs.Kprobe), pmuFeature(tracefs.Uprobe), btfFeature(), isaFeature(2), isaFeature(3), isaFeature(4),
		tailCallFeature()}
	fs[1].Name = "bpf_cookie"
	for t := uint32(1); sys.ProgTypeName(t) != strconv.Itoa(int(t)); t++ {
		fs = append(fs, progTypeFeature(Type(t)))
	}
	for t := uint32(1); sys.MapTypeName(t) != strconv.Itoa(int(t)); t++ {
		fs = append(fs, mapTypeFeature(t))
	}
	for _, t := range helpersOf {
		for h := insn.Helper(1); !strings.HasPrefix(h.String(), "unknown#"); h++ {
			fs = append(fs, helperFeature(t, h))
		}
	}
	return fs
}
