package main

// The programs funccount loads, and the maps they share with it.
//
// Every program adds one to counts[index], a per-CPU array: its key is the
// event's index in the list funccount printed (a uint32), its value that
// event's count on one CPU (a uint64). The programs differ in how they
// find the index:
//   - syscallProgram runs on raw_syscalls:sys_enter or sys_exit for every
//     system call and looks its number up in a syscall map (key: the
//     number, a uint32; value: a syscallSlot);
//   - counterProgram reads it from the attachment's bpf_cookie, or has it
//     built in where the kernel gives no cookie (one program per event).

import (
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// syscallSlot is the value of a syscall map, whose key is a system call's
// number: which event counts that call.
type syscallSlot struct {
	Event uint32 // the event's index in counts, plus one; 0: the call is not counted
}

// frame is the top of every program's stack: the key of the next map
// lookup, and a register read from a system call's pt_regs.
type frame struct {
	Key uint32
	_   uint32
	Reg uint64
}

// fp is where field (at offset off of frame) lies below the frame pointer.
func fp(off uintptr) int16 { return int16(off) - int16(unsafe.Sizeof(frame{})) }

var (
	keyAt = fp(unsafe.Offsetof(frame{}.Key))
	regAt = fp(unsafe.Offsetof(frame{}.Reg))
)

// The arguments a raw tracepoint program on raw_syscalls finds at its
// context, an array of u64: TP_PROTO(struct pt_regs *regs, long id) for
// sys_enter, (struct pt_regs *regs, long ret) for sys_exit.
const (
	regsArg = 0
	idArg   = 8
)

// syscallProgram counts the system calls that the syscall map slots
// names, on raw_syscalls:sys_exit if exit, else sys_enter.
func syscallProgram(counts, slots *mapfd.Map, exit bool, regs prog.PtRegs, pid uint32) (
	*prog.Program, error) {
	name := map[bool]string{false: "funccount_enter", true: "funccount_exit"}[exit]
	items := syscallInsns(counts, slots, exit, regs, pid)
	return prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: name, License: "GPL", Insns: items})
}

// syscallInsns is syscallProgram's program.
func syscallInsns(counts, slots insn.MapFD, exit bool, regs prog.PtRegs, pid uint32) []insn.Item {
	items := []insn.Item{insn.Mov64Reg(insn.R6, insn.R1)} // r6 = the context, for good
	items = append(items, processFilter(pid)...)
	items = append(items, syscallNumber(exit, regs.SyscallNr)...)
	// r7 = slots[number].Event: the event plus one, or 0 for a call that
	// no event counts, most of them when few are counted: done.
	items = append(items,
		insn.LoadMapFD(insn.R1, slots),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(keyAt)),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_W, insn.R7, insn.R0, int16(unsafe.Offsetof(syscallSlot{}.Event))),
		insn.JumpImm(insn.BPF_JEQ, insn.R7, 0, "out"),
	)
	items = append(items, skipCompat(regs.Compat)...)
	// The key of counts is the event's index: r7 less one.
	items = append(items,
		insn.ALU64Imm(insn.BPF_SUB, insn.R7, 1),
		insn.StoreMem(insn.BPF_W, insn.R10, keyAt, insn.R7),
	)
	items = append(items, increment(counts)...)
	return append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
}

// processFilter ends the program for an event of another process than
// pid (a tgid), if pid is not 0. It keeps r6.
func processFilter(pid uint32) []insn.Item {
	if pid == 0 {
		return nil
	}
	return []insn.Item{
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32), // the process is the upper half
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(pid), "out"),
	}
}

// syscallNumber puts the system call's number at the key: sys_enter's
// id, or for sys_exit the register that holds it in the pt_regs at regs,
// at offset nrAt, read with bpf_probe_read_kernel (a raw tracepoint may
// not dereference the pointer itself). Only its low 32 bits are kept,
// as the kernel keeps them: syscall_get_nr returns an int, and the
// syscalls:* tracepoints look the call up by that int.
func syscallNumber(exit bool, nrAt int16) []insn.Item {
	if !exit {
		return []insn.Item{
			insn.LoadMem(insn.BPF_DW, insn.R1, insn.R6, idArg),
			insn.StoreMem(insn.BPF_W, insn.R10, keyAt, insn.R1),
		}
	}
	return []insn.Item{
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(keyAt)),
		insn.Mov64Imm(insn.R2, 4), // the low half, first on every architecture bpfkit knows
		insn.LoadMem(insn.BPF_DW, insn.R3, insn.R6, regsArg),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, int32(nrAt)),
		insn.Call(insn.BPF_FUNC_probe_read_kernel),
		insn.JumpImm(insn.BPF_JNE, insn.R0, 0, "out"),
	}
}

// skipCompat ends the program for a system call of a compat (32-bit) task,
// which the syscalls:* tracepoints do not see (prog.CompatTest), reading
// the register that tells from the pt_regs. On architectures without a
// test it is empty. It keeps r6 and r7.
func skipCompat(c prog.CompatTest) []insn.Item {
	if c.Offset < 0 {
		return nil
	}
	sizes := map[insn.Size]int32{insn.BPF_B: 1, insn.BPF_H: 2, insn.BPF_W: 4, insn.BPF_DW: 8}
	return []insn.Item{
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(regAt)),
		insn.Mov64Imm(insn.R2, sizes[c.Size]),
		insn.LoadMem(insn.BPF_DW, insn.R3, insn.R6, regsArg),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, int32(c.Offset)),
		insn.Call(insn.BPF_FUNC_probe_read_kernel),
		insn.JumpImm(insn.BPF_JNE, insn.R0, 0, "out"), // cannot tell: not counted
		insn.LoadMem(c.Size, insn.R1, insn.R10, regAt),
		insn.ALU64Imm(insn.BPF_AND, insn.R1, c.Mask),
		insn.JumpImm(insn.BPF_JEQ, insn.R1, c.Value, "out"),
	}
}

// increment adds one to counts at the key. counts is per-CPU and a
// program does not run twice at once on one CPU: a plain add is exact.
func increment(counts insn.MapFD) []insn.Item {
	return []insn.Item{
		insn.LoadMapFD(insn.R1, counts),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, int32(keyAt)),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
	}
}

// counterKind is a kind of counterProgram: where it runs and what it
// returns.
type counterKind struct {
	name       string
	typ        prog.Type
	attachType uint32 // the Spec's ExpectedAttachType
	// ret is what the program returns. A perf tracepoint program that
	// returns 0 drops the event's record for every perf user of the
	// tracepoint (perf_trace_run_bpf_submit), not only for funccount's
	// own event: 1 keeps it. A kprobe's event is funccount's alone.
	ret int32
}

var (
	perfTracepoint = counterKind{name: "funccount_tp", typ: prog.Tracepoint, ret: 1}
	rawTracepoint  = counterKind{name: "funccount_raw", typ: prog.RawTracepoint}
	kprobe         = counterKind{name: "funccount_kp", typ: prog.Kprobe}
	kprobeMulti    = counterKind{name: "funccount_kmul", typ: prog.Kprobe,
		attachType: unix.BPF_TRACE_KPROBE_MULTI}
)

// byCookie is counterProgram's index for a program that reads the event's
// index from the attachment's bpf_cookie.
const byCookie = -1

// counterProgram counts at index, or with byCookie at the attachment's
// bpf_cookie, as a program of kind k.
func counterProgram(counts *mapfd.Map, k counterKind, index int, pid uint32) (
	*prog.Program, error) {
	return prog.Load(prog.Spec{Type: k.typ, Name: k.name, License: "GPL",
		Insns: counterInsns(counts, k, index, pid), ExpectedAttachType: k.attachType})
}

// counterInsns is counterProgram's program.
func counterInsns(counts insn.MapFD, k counterKind, index int, pid uint32) []insn.Item {
	items := []insn.Item{insn.Mov64Reg(insn.R6, insn.R1)} // r6 = the context
	items = append(items, processFilter(pid)...)
	if index == byCookie {
		items = append(items,
			insn.Mov64Reg(insn.R1, insn.R6),
			insn.Call(insn.BPF_FUNC_get_attach_cookie),
			insn.StoreMem(insn.BPF_W, insn.R10, keyAt, insn.R0),
		)
	} else {
		items = append(items, insn.StoreImm(insn.BPF_W, insn.R10, keyAt, int32(index)))
	}
	items = append(items, increment(counts)...)
	return append(items, insn.Label("out"), insn.Mov64Imm(insn.R0, k.ret), insn.Exit())
}
