package main

import (
	"math"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/tracefs"
)

// dropKey is the key of the drops map: where and why a packet was
// dropped, and with -stacks the kernel stack it was dropped on.
type dropKey struct {
	Location uint64 // kfree_skb's caller: the tracepoint's location argument
	StackID  uint32 // -stacks: the stack's id in the stack map (noStack if none); else 0
	Reason   uint32 // enum skb_drop_reason (5.17+); 0 before
}

// noStack is the StackID of drops whose stack the stack map could not
// take (full, or another stack in its bucket): counted all the same.
const noStack = math.MaxUint32

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

// The stack frame of the programs: the key or record, and below the key
// MapIncrement's scratch slot.
var (
	keyAt   = -int16(unsafe.Sizeof(dropKey{}))
	countAt = keyAt - int16(unsafe.Sizeof(dropCount{}))
	eventAt = -int16(unsafe.Sizeof(dropEvent{}))
)

// at is the stack offset of a field off bytes into the struct at base.
func at(base int16, off uintptr) int16 { return base + int16(off) }

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
	if k.location, err = format.Field("location"); err != nil {
		return kfreeSkb{}, err
	}
	if k.protocol, err = format.Field("protocol"); err != nil {
		return kfreeSkb{}, err
	}
	if f, err := format.Field("reason"); err == nil {
		k.reason = &f
	}
	return k, nil
}

// filter is what a drop must match to be counted or sent.
type filter struct {
	pid     uint32   // -p: the process running when it is dropped; 0 for any
	reasons []uint32 // -reason: one of these; none for any
}

// add adds to p the jump to out of drops the filter leaves out,
// loadReason loading the drop's reason into r2. The context is in r6.
func (f filter) add(p *tool.Program, loadReason insn.Item, out string) {
	if f.pid != 0 {
		// the process is the upper half of bpf_get_current_pid_tgid: in
		// softirq it is whichever process the interrupt came in, often
		// the sender on loopback, else ksoftirqd
		p.Add(insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
			insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
			insn.JumpImm(insn.BPF_JNE, insn.R0, int32(f.pid), out))
	}
	if len(f.reasons) > 0 {
		// one of the reasons, else out
		p.Add(loadReason)
		for _, r := range f.reasons {
			p.Add(insn.JumpImm(insn.BPF_JEQ, insn.R2, int32(r), "reason_ok"))
		}
		p.Add(insn.Ja(out), insn.Label("reason_ok"))
	}
}

// countProgram is the raw tracepoint program that counts each drop in
// drops under its dropKey, with stacks (nil without -stacks) holding the
// kernel stacks. A raw tracepoint builds no perf record and its program's
// return value filters nothing: other tracers of kfree_skb see every
// drop.
func countProgram(drops, stacks insn.MapFD, hasReason bool, f filter) tool.Program {
	var p tool.Program
	// r6 = ctx, the arguments, kept across calls
	p.Add(insn.Mov64Reg(insn.R6, insn.R1))
	f.add(&p, insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, argReason), "out")

	// the key: the location, no stack yet, and the reason where there is one
	var k dropKey
	p.Add(insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, argLocation),
		insn.StoreMem(insn.BPF_DW, insn.R10, at(keyAt, unsafe.Offsetof(k.Location)), insn.R2),
		insn.StoreImm(insn.BPF_W, insn.R10, at(keyAt, unsafe.Offsetof(k.StackID)), 0),
		insn.StoreImm(insn.BPF_W, insn.R10, at(keyAt, unsafe.Offsetof(k.Reason)), 0))
	if hasReason {
		p.Add(insn.LoadMem(insn.BPF_DW, insn.R2, insn.R6, argReason),
			insn.StoreMem(insn.BPF_W, insn.R10, at(keyAt, unsafe.Offsetof(k.Reason)), insn.R2))
	}

	if stacks != nil {
		// the stack's id, bpf_get_stackid(ctx, stacks, 0), or noStack
		// when the map cannot take it (the drop still counts)
		p.Add(insn.Mov64Reg(insn.R1, insn.R6),
			insn.LoadMapFD(insn.R2, stacks),
			insn.Mov64Imm(insn.R3, 0),
			insn.Call(insn.BPF_FUNC_get_stackid),
			insn.JumpImm(insn.BPF_JSGE, insn.R0, 0, "have_stack"),
			insn.Mov64Imm(insn.R0, -1), // noStack, in the 32 bits stored
			insn.Label("have_stack"),
			insn.StoreMem(insn.BPF_W, insn.R10, at(keyAt, unsafe.Offsetof(k.StackID)), insn.R0))
	}

	// drops[key]++, atomically: drops on other CPUs count at once
	p.Add(insn.MapIncrement(drops, keyAt, countAt)...)
	p.Add(insn.Label("out"), insn.Mov64Imm(insn.R0, 0), insn.Exit())
	return p
}

// eventProgram is -events's program: on the perf tracepoint, since
// skb->protocol is in the record the kernel builds for perf and nowhere a
// raw tracepoint program could read it without BTF. It sends a dropEvent
// through events and returns 1 on every path: 0 would drop the record
// for every perf user of kfree_skb, not only for this one.
func eventProgram(events insn.MapFD, k kfreeSkb, f filter) (tool.Program, error) {
	loads, err := k.loads()
	if err != nil {
		return nil, err
	}
	var p tool.Program
	// r6 = ctx, the tracepoint's record, kept across calls
	p.Add(insn.Mov64Reg(insn.R6, insn.R1))
	f.add(&p, loads.reason, "out")

	// the record's fields, from the helpers and the tracepoint's record
	var e dropEvent
	field := func(off uintptr) int16 { return at(eventAt, off) }
	p.Add(insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.StoreMem(insn.BPF_DW, insn.R10, field(unsafe.Offsetof(e.Time)), insn.R0),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.StoreMem(insn.BPF_W, insn.R10, field(unsafe.Offsetof(e.PID)), insn.R0),
		insn.Call(insn.BPF_FUNC_get_smp_processor_id),
		insn.StoreMem(insn.BPF_W, insn.R10, field(unsafe.Offsetof(e.CPU)), insn.R0))
	p.Add(loads.location,
		insn.StoreMem(insn.BPF_DW, insn.R10, field(unsafe.Offsetof(e.Location)), insn.R2),
		loads.reason,
		insn.StoreMem(insn.BPF_W, insn.R10, field(unsafe.Offsetof(e.Reason)), insn.R2),
		loads.protocol,
		insn.StoreMem(insn.BPF_H, insn.R10, field(unsafe.Offsetof(e.Protocol)), insn.R2),
		insn.StoreImm(insn.BPF_H, insn.R10, field(unsafe.Offsetof(e.Pad)), 0))
	p.Add(insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(field(unsafe.Offsetof(e.Comm)))),
		insn.Mov64Imm(insn.R2, int32(len(e.Comm))),
		insn.Call(insn.BPF_FUNC_get_current_comm))

	// bpf_perf_event_output(ctx, events, BPF_F_CURRENT_CPU, &e, sizeof(e))
	p.Add(insn.Mov64Reg(insn.R1, insn.R6),
		insn.LoadMapFD(insn.R2, events),
		insn.LoadImm64(insn.R3, insn.BPF_F_CURRENT_CPU),
		insn.Mov64Reg(insn.R4, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R4, int32(eventAt)),
		insn.Mov64Imm(insn.R5, int32(unsafe.Sizeof(e))),
		insn.Call(insn.BPF_FUNC_perf_event_output))

	// return 1: the record goes on to perf's other users
	p.Add(insn.Label("out"), insn.Mov64Imm(insn.R0, 1), insn.Exit())
	return p, nil
}

// recordLoads are the loads into r2 of the perf record's fields, from
// the record at r6.
type recordLoads struct {
	location, reason, protocol insn.Item
}

// loads reads the fields' places in the record from the format; a kernel
// without reasons gives reason 0.
func (k kfreeSkb) loads() (recordLoads, error) {
	var l recordLoads
	var err error
	if l.location, err = tool.LoadField(insn.R2, insn.R6, k.location); err != nil {
		return l, err
	}
	if l.protocol, err = tool.LoadField(insn.R2, insn.R6, k.protocol); err != nil {
		return l, err
	}
	l.reason = insn.Mov64Imm(insn.R2, 0)
	if k.reason != nil {
		l.reason, err = tool.LoadField(insn.R2, insn.R6, *k.reason)
	}
	return l, err
}
