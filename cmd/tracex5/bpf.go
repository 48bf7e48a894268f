package main

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// event is what a handler sends through the perf ring for each call it
// reports, laid out as the program writes it at the bottom of its stack.
type event struct {
	Time    uint64         // bpf_ktime_get_ns at the call's entry: CLOCK_MONOTONIC
	PID     uint32         // the calling process (its thread group id)
	Handler handlerID      // which handler sent it
	Args    [6]uint64      // the call's arguments, as the kernel reads them
	Comm    [16]byte       // the calling thread's name, NUL-padded
	Data    [dataSize]byte // openat's path, or the first bytes written; else zeros
}

// dataSize is how much of a path or of a write's buffer an event holds.
const dataSize = 64

// eventSize is the event's size on the stack and in the perf ring.
const eventSize = int16(unsafe.Sizeof(event{}))

// at is where a field of the event, at offset off in it, lies on the
// handler's stack: the event takes the stack's last eventSize bytes.
func at(off uintptr) int16 { return -eventSize + int16(off) }

// handlerID tells the handlers apart in their events.
type handlerID uint32

// The handlers, by the id each puts in its events.
const (
	hWrite handlerID = iota + 1
	hRead
	hOpenat
	hMmap
	hWriteBytes // the write handler -swap puts in
)

// dataKind is what a handler reads from the caller's memory.
type dataKind int

const (
	noData      dataKind = iota
	pathData             // the string argument 1 points at (openat's path)
	writtenData          // the bytes argument 1 points at, as many as argument 2 says, up to dataSize
)

// calls are the calls tracex5 has a program for: the names the kernel's
// system call table may give the call (the first it has gives the number
// the prog array holds the program at), its id, name and data.
// hWriteBytes is not in the array at first: -swap puts it in write's
// place. The numbers are the kernel's, not this program's: a 386 tracex5
// on an x86-64 kernel traces its 64-bit calls.
var calls = []struct {
	names []string
	id    handlerID
	name  string
	data  dataKind
}{
	{[]string{"write"}, hWrite, "write", noData},
	{[]string{"read"}, hRead, "read", noData},
	{[]string{"openat"}, hOpenat, "openat", pathData},
	{[]string{"mmap", "mmap_pgoff"}, hMmap, "mmap", noData}, // i686's mmap2 is mmap_pgoff
	{[]string{"write"}, hWriteBytes, "write", writtenData},
}

// number is the number of the first of names the kernel's table has, if
// it is below slots.
func number(tab *prog.SyscallTable, names []string) (uint32, bool) {
	for _, name := range names {
		if nr, ok := tab.Number(name); ok && nr < slots {
			return uint32(nr), true
		}
	}
	return 0, false
}

// slots is the size of the prog array and of the other calls' counts:
// the system call numbers tracex5 tells apart (x86-64's and arm64's stay
// below 512; a larger one goes uncounted).
const slots = 512

// objects are tracex5's maps and programs.
type objects struct {
	progs    *mapfd.Map                   // prog array: a call's number to its handler
	events   *mapfd.Map                   // perf event array: the handlers' events
	other    *mapfd.Typed[uint32, uint64] // per-CPU array: calls by number that have no handler
	handlers map[handlerID]*prog.Program
	dispatch *prog.Program
	nrs      map[handlerID]uint32 // each handler's number: hWriteBytes's is write's
	made     []tool.Closer        // all of the above that load made, in order, for Close
}

// Close closes what load made, last first: the programs, then the maps.
func (o *objects) Close() error { return tool.CloseInReverse(o.made) }

// load creates the maps, loads the handlers of the calls the kernel's
// table numbers (putting all but hWriteBytes in the prog array) and the
// dispatcher, which skips tracex5 itself and, with pid set, every other
// process than pid.
func load(pid uint32, regs prog.PtRegs, tab *prog.SyscallTable) (o *objects, err error) {
	o = &objects{handlers: map[handlerID]*prog.Program{}, nrs: map[handlerID]uint32{}}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if err := o.createMaps(); err != nil {
		return nil, err
	}
	for _, c := range calls {
		nr, ok := number(tab, c.names)
		if !ok {
			continue // not a call of this architecture (32-bit arm's mmap)
		}
		items, err := handler(c.id, c.data, regs, o.events)
		if err != nil {
			return nil, err
		}
		name := "tracex5_" + c.name
		if c.id == hWriteBytes {
			name = "tracex5_write2"
		}
		p, err := loadProgram(name, items)
		if err != nil {
			return nil, err
		}
		o.made = append(o.made, p)
		o.handlers[c.id], o.nrs[c.id] = p, nr
		if c.id != hWriteBytes {
			if err := o.progs.SetFD(nr, p.FD()); err != nil {
				return nil, err
			}
		}
	}
	if o.dispatch, err = loadProgram("tracex5", dispatcher(pid, o)); err != nil {
		return nil, err
	}
	o.made = append(o.made, o.dispatch)
	return o, nil
}

// createMaps creates the prog array, the perf event array and the other
// calls' counts.
func (o *objects) createMaps() error {
	var err error
	o.progs, err = mapfd.Create(mapfd.Spec{Type: mapfd.ProgArray, MaxEntries: slots, Name: "syscalls"})
	if err != nil {
		return err
	}
	o.made = append(o.made, o.progs)
	o.events, err = mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "syscall_events"})
	if err != nil {
		return err
	}
	o.made = append(o.made, o.events)
	o.other, err = mapfd.CreateTyped[uint32, uint64](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: slots,
		Name:       "other_calls",
	})
	if err == nil {
		o.made = append(o.made, o.other)
	}
	return err
}

// handled names the calls that have a handler, for the start line.
func (o *objects) handled() string {
	var names []string
	for _, c := range calls {
		if _, ok := o.handlers[c.id]; ok && c.id != hWriteBytes {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, ", ")
}

// loadProgram loads a raw tracepoint program: the dispatcher and the
// programs it tail-calls must be of one type.
func loadProgram(name string, items []insn.Item) (*prog.Program, error) {
	return prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: name, License: "GPL", Insns: items})
}

// dispatcher is the program on the raw tracepoint sys_enter. Its context
// is the tracepoint's arguments as u64 args[2]: the task's pt_regs, then
// the call's number. A raw tracepoint builds no perf record, so nothing
// tracex5 does changes what perf users of raw_syscalls:sys_enter see.
func dispatcher(pid uint32, o *objects) []insn.Item {
	self := int32(unix.Getpid())
	items := []insn.Item{
		// Keep the context for the tail call.
		insn.Mov64Reg(insn.R6, insn.R1),
		// The handlers run on this program's stack: an interpreted
		// program (Debian's armhf kernels have no BPF JIT on by default)
		// gets the stack its own instructions reach, and a handler's event
		// past the dispatcher's few bytes corrupted the kernel's stack
		// (7.2 panicked in ___bpf_prog_run, 6.12 oopsed). Touching the
		// stack's last slot sizes it for every handler.
		insn.StoreImm(insn.BPF_DW, insn.R10, -512, 0),
		// Skip tracex5's own calls: its printing would feed its events.
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, self, "out"),
	}
	if pid != 0 {
		// With -p, skip every other process.
		items = append(items, insn.JumpImm(insn.BPF_JNE, insn.R0, int32(pid), "out"))
	}
	return append(items,
		// The call's number; -1 is none (a tracer made the task skip it).
		insn.LoadMem(insn.BPF_DW, insn.R7, insn.R6, 8),
		insn.JumpImm(insn.BPF_JSLT, insn.R7, 0, "out"),
		// Jump to the call's handler. With none at that index, or one past
		// the array, bpf_tail_call returns and the program goes on.
		insn.Mov64Reg(insn.R1, insn.R6),
		insn.LoadMapFD(insn.R2, o.progs),
		insn.Mov64Reg(insn.R3, insn.R7),
		insn.Call(insn.BPF_FUNC_tail_call),
		// Count the call under its number in this CPU's slot: a per-CPU
		// array needs no atomic add, and its lookup is inlined.
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R7),
		insn.LoadMapFD(insn.R1, o.other),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	)
}

// handler is the program for one call: it fills an event on its stack and
// sends it through out, the perf event array. The dispatcher has done the
// filtering.
func handler(id handlerID, data dataKind, regs prog.PtRegs, out *mapfd.Map) ([]insn.Item, error) {
	args, err := argItems(regs)
	if err != nil {
		return nil, err
	}
	items := []insn.Item{
		// Keep the context: the registers' pointer, and the context
		// bpf_perf_event_output wants.
		insn.Mov64Reg(insn.R6, insn.R1),
		// The process and the handler.
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.StoreMem(insn.BPF_W, insn.R10, at(unsafe.Offsetof(event{}.PID)), insn.R0),
		insn.StoreImm(insn.BPF_W, insn.R10, at(unsafe.Offsetof(event{}.Handler)), int32(id)),
		// When the call was made.
		insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.StoreMem(insn.BPF_DW, insn.R10, at(unsafe.Offsetof(event{}.Time)), insn.R0),
	}
	items = append(items, args...)
	items = append(items,
		// The thread's name.
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(at(unsafe.Offsetof(event{}.Comm)))),
		insn.Mov64Imm(insn.R2, int32(len(event{}.Comm))),
		insn.Call(insn.BPF_FUNC_get_current_comm),
	)
	items = append(items, dataItems(data)...)
	return append(items,
		// Send the event through this CPU's ring.
		insn.Mov64Reg(insn.R1, insn.R6),
		insn.LoadMapFD(insn.R2, out),
		insn.LoadImm64(insn.R3, insn.BPF_F_CURRENT_CPU),
		insn.Mov64Reg(insn.R4, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R4, int32(-eventSize)),
		insn.Mov64Imm(insn.R5, int32(eventSize)),
		insn.Call(insn.BPF_FUNC_perf_event_output),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	), nil
}

// argItems copies the call's six arguments into the event's Args. The
// tracepoint passes a pointer to the task's pt_regs, which a raw
// tracepoint program cannot dereference: one bpf_probe_read_kernel copies
// the span of it that holds the six registers to the stack below the
// event, and each is moved from there to its place, widened to 64 bits on
// a 32-bit kernel. A failed read leaves zeros.
func argItems(regs prog.PtRegs) ([]insn.Item, error) {
	width := int16(8)
	if regs.Size == insn.BPF_W {
		width = 4
	}
	lo, hi := regs.Syscall[0], regs.Syscall[0]+width
	for _, off := range regs.Syscall {
		lo, hi = min(lo, off), max(hi, off+width)
	}
	span := (hi - lo + 7) &^ 7
	scratch := -eventSize - span // where the span lies on the stack
	if scratch < -512 {
		return nil, fmt.Errorf("%s: the system call registers span %d bytes of pt_regs, "+
			"more than the stack holds beside an event", regs.Arch, span)
	}
	items := []insn.Item{
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(scratch)),
		insn.Mov64Imm(insn.R2, int32(span)),
		insn.LoadMem(insn.BPF_DW, insn.R3, insn.R6, 0), // args[0]: the pt_regs pointer
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, int32(lo)),
		insn.Call(insn.BPF_FUNC_probe_read_kernel),
	}
	for i, off := range regs.Syscall {
		field := at(unsafe.Offsetof(event{}.Args)) + int16(8*i)
		items = append(items,
			insn.LoadMem(regs.Size, insn.R1, insn.R10, scratch+off-lo),
			insn.StoreMem(insn.BPF_DW, insn.R10, field, insn.R1))
	}
	return items, nil
}

// dataItems fills the event's Data: zeros, then what the handler reads
// from the caller's memory (a failed read leaves zeros: the kernel clears
// what it could not copy).
func dataItems(data dataKind) []insn.Item {
	base := at(unsafe.Offsetof(event{}.Data))
	arg := func(n int) int16 { return at(unsafe.Offsetof(event{}.Args)) + int16(8*n) }
	var items []insn.Item
	for off := int16(0); off < dataSize; off += 8 {
		items = append(items, insn.StoreImm(insn.BPF_DW, insn.R10, base+off, 0))
	}
	dst := []insn.Item{
		insn.Mov64Reg(insn.R1, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(base)),
	}
	switch data {
	case pathData:
		// The path argument 1 points at, with its NUL, cut at dataSize.
		items = append(items, dst...)
		items = append(items,
			insn.Mov64Imm(insn.R2, dataSize),
			insn.LoadMem(insn.BPF_DW, insn.R3, insn.R10, arg(1)),
			insn.Call(insn.BPF_FUNC_probe_read_user_str))
	case writtenData:
		// The first min(count, dataSize) bytes of the buffer.
		items = append(items, dst...)
		items = append(items,
			insn.LoadMem(insn.BPF_DW, insn.R2, insn.R10, arg(2)),
			insn.JumpImm(insn.BPF_JLE, insn.R2, dataSize, "read"),
			insn.Mov64Imm(insn.R2, dataSize),
			insn.Label("read"),
			insn.LoadMem(insn.BPF_DW, insn.R3, insn.R10, arg(1)),
			insn.Call(insn.BPF_FUNC_probe_read_user))
	}
	return items
}
