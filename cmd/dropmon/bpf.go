package main

import (
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/tracefs"
)

// dropKey is the key of the drops map: where and why a packet was
// dropped, and with -stacks the kernel stack it was dropped on.
type dropKey struct {
	Location uint64 // kfree_skb's caller: the tracepoint's location argument
	StackID  uint32 // -stacks: the stack's id in the stack map, or an errno (negative); else 0
	Reason   uint32 // enum skb_drop_reason (5.17+); 0 before
}

// dropCount is the value of the drops map.
type dropCount struct {
	Drops uint64
}

// dropEvent is the record -events's program sends for each drop.
type dropEvent struct {
	Time     uint64 // bpf_ktime_get_ns: CLOCK_MONOTONIC, in nanoseconds
	Location uint64 // kfree_skb's caller
	PID      uint32 // the process running when the packet was dropped
	CPU      uint32
	Reason   uint32   // enum skb_drop_reason (5.17+); 0 before
	Protocol uint16   // skb->protocol, in host order (the tracepoint's ntohs)
	Pad      uint16   // zero
	Comm     [16]byte // the process's name, NUL-padded
}

// The stack frame of the programs: the key and below it MapIncrement's
// scratch slot, or the record; and the fields' places in them.
const (
	keyAt   = -int16(unsafe.Sizeof(dropKey{}))
	countAt = keyAt - int16(unsafe.Sizeof(dropCount{}))
	eventAt = -int16(unsafe.Sizeof(dropEvent{}))

	keyLocation   = keyAt + int16(unsafe.Offsetof(dropKey{}.Location))
	keyStackID    = keyAt + int16(unsafe.Offsetof(dropKey{}.StackID))
	keyReason     = keyAt + int16(unsafe.Offsetof(dropKey{}.Reason))
	eventTime     = eventAt + int16(unsafe.Offsetof(dropEvent{}.Time))
	eventLocation = eventAt + int16(unsafe.Offsetof(dropEvent{}.Location))
	eventPID      = eventAt + int16(unsafe.Offsetof(dropEvent{}.PID))
	eventCPU      = eventAt + int16(unsafe.Offsetof(dropEvent{}.CPU))
	eventReason   = eventAt + int16(unsafe.Offsetof(dropEvent{}.Reason))
	eventProtocol = eventAt + int16(unsafe.Offsetof(dropEvent{}.Protocol))
	eventPad      = eventAt + int16(unsafe.Offsetof(dropEvent{}.Pad))
	eventComm     = eventAt + int16(unsafe.Offsetof(dropEvent{}.Comm))
)

// kfree_skb's arguments as a raw tracepoint program sees them: u64
// args[], in the order of the tracepoint's TP_PROTO. Up to 5.16 that is
// (skb, location); 5.17 added the reason (c504e5c2f964, "net: skb:
// introduce kfree_skb_reason()"), 6.11 rx_sk after it (c53795d48ee8,
// "net: add rx_sk to trace_kfree_skb"). The tracepoint's format lists its
// record's fields in another order (skbaddr, location, rx_sk, protocol,
// reason on 6.11+): the format says whether there is a reason, never where.
const (
	argLocation = 1 * 8
	argReason   = 2 * 8
)

// kfreeSkb is skb:kfree_skb as this kernel's tracefs describes it.
type kfreeSkb struct {
	location, protocol tracefs.Field     // in the perf record, for -events
	reason             *tracefs.Field    // nil before 5.17
	reasons            map[uint64]string // the reasons' names, from its print format
}

// readKfreeSkb reads the tracepoint's format.
func readKfreeSkb() (kfreeSkb, error) {
	format, err := tracefs.TracepointFormat("skb", "kfree_skb")
	if err != nil {
		return kfreeSkb{}, err
	}
	k := kfreeSkb{reasons: format.Symbols["reason"]}
	if f, err := format.Field("reason"); err == nil {
		k.reason = &f
	}
	if k.location, err = format.Field("location"); err == nil {
		k.protocol, err = format.Field("protocol")
	}
	return k, err
}

// The parts of the programs that are the same on every kernel and with
// every flag are package variables, which the compiler lays out as data:
// an instruction built where the program is put together costs some 100
// bytes of code, and dropmon's size is kept small (tests/size_test.go).

// filter is what a drop must match to be counted or sent.
type filter struct {
	pid     uint32   // -p: the process running when it is dropped; 0 for any
	reasons []uint32 // -reason: one of these; none for any
}

// currentProcess is r0 = the process running, the upper half of
// bpf_get_current_pid_tgid: in softirq whichever process the interrupt
// came in, often the sender on loopback, else ksoftirqd.
var currentProcess = [...]insn.Item{
	insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
	insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
}

// add adds to p the jump to "out" of the drops the filter leaves out,
// loadReason loading the drop's reason into r2. The context is in r6.
func (f filter) add(p *tool.Program, loadReason insn.Item) {
	if f.pid != 0 {
		p.Add(currentProcess[:]...)
		p.Add(insn.JumpImm(insn.BPF_JNE, insn.R0, int32(f.pid), "out"))
	}
	if len(f.reasons) > 0 {
		// one of the reasons, else out
		p.Add(loadReason)
		for _, r := range f.reasons {
			p.Add(insn.JumpImm(insn.BPF_JEQ, insn.R2, int32(r), "reason_ok"))
		}
		p.Add(insn.Ja("out"), insn.Label("reason_ok"))
	}
}

// keepContext is r6 = ctx, the context kept across helper calls.
var keepContext = [...]insn.Item{insn.Mov64Reg(insn.R6, insn.R1)}

// countKey stores a drop's key: the location (args[1]), no stack, no
// reason yet.
var countKey = [...]insn.Item{
	insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, argLocation),
	insn.StoreMem(insn.BPF_DW, insn.R10, keyLocation, insn.R2),
	insn.StoreImm(insn.BPF_W, insn.R10, keyStackID, 0),
	insn.StoreImm(insn.BPF_W, insn.R10, keyReason, 0),
}

// countReason stores the reason (args[2], 5.17+) in the key.
var countReason = [...]insn.Item{
	insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, argReason),
	insn.StoreMem(insn.BPF_W, insn.R10, keyReason, insn.R2),
}

// stackID stores in the key what bpf_get_stackid returned: the stack's
// id, or a negative errno when the stack map could not take the stack
// (full, or another stack in its bucket), the drop counted all the same.
var stackID = [...]insn.Item{insn.StoreMem(insn.BPF_W, insn.R10, keyStackID, insn.R0)}

// returnZero ends the counting program; a raw tracepoint program's value
// is not looked at.
var returnZero = [...]insn.Item{insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit()}

// countProgram is the raw tracepoint program that counts each drop in
// drops under its dropKey, with stacks (nil without -stacks) holding the
// kernel stacks. A raw tracepoint builds no perf record and its program's
// return value filters nothing: other tracers of kfree_skb see every
// drop.
func countProgram(drops, stacks insn.MapFD, hasReason bool, f filter) tool.Program {
	var p tool.Program
	p.Add(keepContext[:]...)
	f.add(&p, countReason[0])
	p.Add(countKey[:]...)
	if hasReason {
		p.Add(countReason[:]...)
	}
	if stacks != nil {
		// bpf_get_stackid(ctx, stacks, 0): the kernel stack
		p.Add(insn.Mov64Reg(insn.R1, insn.R6),
			insn.LoadMapFD(insn.R2, stacks),
			insn.Mov64Imm(insn.R3, 0),
			insn.Call(insn.BPF_FUNC_get_stackid))
		p.Add(stackID[:]...)
	}
	// drops[key]++, atomically: drops on other CPUs count at once
	p.Add(insn.MapIncrement(drops, keyAt, countAt)...)
	p.Add(returnZero[:]...)
	return p
}

// eventFromHelpers stores the fields of the record helpers give: the
// time, the process, the CPU, and the process's name.
var eventFromHelpers = [...]insn.Item{
	insn.Call(insn.BPF_FUNC_ktime_get_ns),
	insn.StoreMem(insn.BPF_DW, insn.R10, eventTime, insn.R0),
	insn.Call(insn.BPF_FUNC_get_current_pid_tgid), // the process, as currentProcess
	insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
	insn.StoreMem(insn.BPF_W, insn.R10, eventPID, insn.R0),
	insn.Call(insn.BPF_FUNC_get_smp_processor_id),
	insn.StoreMem(insn.BPF_W, insn.R10, eventCPU, insn.R0),
	insn.Mov64Reg(insn.R1, insn.R10),
	insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(eventComm)),
	insn.Mov64Imm(insn.R2, int32(len(dropEvent{}.Comm))),
	insn.Call(insn.BPF_FUNC_get_current_comm),
	insn.StoreImm(insn.BPF_H, insn.R10, eventPad, 0),
}

// returnOne ends -events's program, on every path: 0 would drop the
// record for every perf user of kfree_skb, not only for this one.
var returnOne = [...]insn.Item{insn.Label("out"), insn.Mov64Imm(insn.R0, 1), insn.Exit()}

// eventProgram is -events's program: on the perf tracepoint, since
// skb->protocol is in the record the kernel builds for perf and nowhere a
// raw tracepoint program could read it without BTF. It sends a dropEvent
// through events and returns 1.
func eventProgram(events insn.MapFD, k *kfreeSkb, f filter) (tool.Program, error) {
	var p tool.Program
	p.Add(keepContext[:]...)
	loadReason, err := loadField(k.reason)
	if err != nil {
		return nil, err
	}
	f.add(&p, loadReason)
	p.Add(eventFromHelpers[:]...)
	// the fields of the tracepoint's record, where the format puts them,
	// through r2 (no reason before 5.17: 0)
	for _, r := range []struct {
		field *tracefs.Field
		size  insn.Size
		at    int16
	}{{&k.location, insn.BPF_DW, eventLocation}, {k.reason, insn.BPF_W, eventReason},
		{&k.protocol, insn.BPF_H, eventProtocol}} {
		load, err := loadField(r.field)
		if err != nil {
			return nil, err
		}
		p.Add(load, insn.StoreMem(r.size, insn.R10, r.at, insn.R2))
	}
	// bpf_perf_event_output(ctx, events, BPF_F_CURRENT_CPU, &e, sizeof(e))
	p.Add(insn.Mov64Reg(insn.R1, insn.R6), insn.LoadMapFD(insn.R2, events),
		insn.LoadImm64(insn.R3, insn.BPF_F_CURRENT_CPU))
	p.Add(eventOutput[:]...)
	p.Add(returnOne[:]...)
	return p, nil
}

// eventOutput is bpf_perf_event_output's call once r1 to r3 are set (a
// 64-bit load is built at run time: it is no package variable's).
var eventOutput = [...]insn.Item{
	insn.Mov64Reg(insn.R4, insn.R10),
	insn.ALU64Imm(insn.BPF_ADD, insn.R4, int32(eventAt)),
	insn.Mov64Imm(insn.R5, int32(unsafe.Sizeof(dropEvent{}))),
	insn.Call(insn.BPF_FUNC_perf_event_output),
}

// loadField is r2 = the field of the perf record at r6, where the format
// puts it; 0 for a nil field.
func loadField(field *tracefs.Field) (insn.Item, error) {
	if field == nil {
		return insn.Mov64Imm(insn.R2, 0), nil
	}
	return tool.LoadField(insn.R2, insn.R6, *field)
}
