package mapfd_test

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// The byte API takes keys and values as the kernel lays them out.
func Example() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1024, Name: "bytes_by_port"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	key := binary.NativeEndian.AppendUint32(nil, 443)
	if err := m.Update(key, binary.NativeEndian.AppendUint64(nil, 1500), mapfd.BPF_ANY); err != nil {
		fmt.Println(err)
		return
	}
	value := make([]byte, m.ValueSize())
	if err := m.Lookup(key, value); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Name(), m.Type(), binary.NativeEndian.Uint64(value))

	// As root, it prints:
	// bytes_by_port hash 1500
}

// A missing key is ErrKeyNotExist, which is also the kernel's ENOENT.
func ExampleMap_Lookup() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Name: "sparse"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	err = m.Lookup(make([]byte, 4), make([]byte, 8))
	fmt.Println(errors.Is(err, mapfd.ErrKeyNotExist), errors.Is(err, unix.ENOENT))
	fmt.Println(err)

	// As root, it prints:
	// true true
	// mapfd: key does not exist
}

// NextKey walks the keys: nil asks for the first, ErrKeyNotExist ends the
// walk. A hash map gives them in its own order.
func ExampleMap_NextKey() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 3, Name: "slots"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	var key []byte // nil: the first
	next := make([]byte, m.KeySize())
	for {
		if err := m.NextKey(key, next); errors.Is(err, mapfd.ErrKeyNotExist) {
			break
		} else if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(binary.NativeEndian.Uint32(next))
		key = append(key[:0], next...)
	}

	// As root, it prints:
	// 0
	// 1
	// 2
}

// All iterates over keys and values; the error that ends it, if any, is
// stored in err.
func ExampleMap_All() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16, Name: "by_pid"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for pid := uint32(1); pid <= 3; pid++ {
		m.Update(binary.NativeEndian.AppendUint32(nil, pid), binary.NativeEndian.AppendUint64(nil, uint64(pid)*100), mapfd.BPF_ANY)
	}
	var lines []string
	for k, v := range m.All(&err) {
		lines = append(lines, fmt.Sprintf("pid %d: %d", binary.NativeEndian.Uint32(k), binary.NativeEndian.Uint64(v)))
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(lines) // a hash map has no order
	fmt.Println(strings.Join(lines, "\n"))

	// As root, it prints:
	// pid 1: 100
	// pid 2: 200
	// pid 3: 300
}

// LookupBatch copies many elements per system call; ErrBatchEnd comes with
// the last of them.
func ExampleMap_LookupBatch() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 10, Name: "squares"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for i := uint32(0); i < 10; i++ {
		m.Update(binary.NativeEndian.AppendUint32(nil, i), binary.NativeEndian.AppendUint64(nil, uint64(i*i)), mapfd.BPF_ANY)
	}
	keys, values := make([]byte, 4*4), make([]byte, 4*8) // 4 elements a call
	var c mapfd.BatchCursor
	for {
		n, err := m.LookupBatch(&c, keys, values)
		var got []uint64
		for i := range n {
			got = append(got, binary.NativeEndian.Uint64(values[8*i:]))
		}
		fmt.Println(got)
		if errors.Is(err, mapfd.ErrBatchEnd) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}

	// As root, it prints:
	// [0 1 4 9]
	// [16 25 36 49]
	// [64 81]
}

// A queue has no keys: Update pushes, LookupAndDelete pops the oldest.
func ExampleMap_LookupAndDelete() {
	q, err := mapfd.Create(mapfd.Spec{Type: mapfd.Queue, ValueSize: 4, MaxEntries: 8, Name: "jobs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer q.Close()
	for _, job := range []uint32{7, 8, 9} {
		q.Update(nil, binary.NativeEndian.AppendUint32(nil, job), mapfd.BPF_ANY)
	}
	v := make([]byte, 4)
	for q.LookupAndDelete(nil, v) == nil {
		fmt.Println(binary.NativeEndian.Uint32(v))
	}

	// As root, it prints:
	// 7
	// 8
	// 9
}

// A prog array holds programs for bpf_tail_call. Here a socket filter
// tail-calls slot 0, which SetFD fills with a program returning 7.
func ExampleMap_SetFD() {
	jumps, err := mapfd.Create(mapfd.Spec{Type: mapfd.ProgArray, MaxEntries: 4, Name: "jumps"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer jumps.Close()
	seven, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: []insn.Item{
		insn.Mov64Imm(insn.R0, 7),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer seven.Close()
	caller, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: []insn.Item{
		insn.LoadMapFD(insn.R2, jumps), // r1 is still the context
		insn.Mov64Imm(insn.R3, 0),
		insn.Call(insn.BPF_FUNC_tail_call),
		insn.Mov64Imm(insn.R0, 1), // slot 0 is empty
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer caller.Close()
	for _, set := range []bool{false, true} {
		if set {
			if err := jumps.SetFD(0, seven.FD()); err != nil {
				fmt.Println(err)
				return
			}
		}
		r, err := caller.TestRun(prog.RunOptions{Data: make([]byte, 64)})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("slot 0 set:", set, "returned", r.Retval)
	}

	// As root, it prints:
	// slot 0 set: false returned 1
	// slot 0 set: true returned 7
}

// A perf event array from a zero Spec has 4-byte keys and values and one
// entry per possible CPU: what perfring.NewPerfReader takes.
func ExampleCreate_perfEventArray() {
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "events"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer events.Close()
	n, _ := sys.PossibleCPUs()
	fmt.Println(events.Type(), events.KeySize(), events.ValueSize(), events.MaxEntries() == uint32(n))

	// As root, it prints:
	// perf_event_array 4 4 true
}

// A ring buffer's MaxEntries is its size in bytes, a power of 2 and a
// multiple of the page size; perfring.NewRingBufReader reads it.
func ExampleCreate_ringBuf() {
	ring, err := mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 256 << 10, Name: "ring"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ring.Close()
	fmt.Println(ring.Type(), ring.MaxEntries())
	_, err = mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: 1000, Name: "odd"})
	fmt.Println(errors.Is(err, unix.EINVAL))

	// As root, it prints:
	// ringbuf 262144
	// true
}

// A pin makes the map outlive the process, in a BPF file system; another
// process opens it by its path.
func ExampleMap_Pin() {
	const path = "/sys/fs/bpf/bpfkit_example_totals"
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Name: "totals"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	m.Update(make([]byte, 4), binary.NativeEndian.AppendUint64(nil, 42), mapfd.BPF_ANY)
	if err := m.Pin(path); err != nil {
		fmt.Println(err)
		return
	}
	defer mapfd.Unpin(path)

	opened, err := mapfd.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer opened.Close()
	v := make([]byte, 8)
	err = opened.Lookup(make([]byte, 4), v)
	fmt.Println(opened.Name(), binary.NativeEndian.Uint64(v), err)

	// As root, it prints:
	// totals 42 <nil>
}

// CreateTyped takes the key and value sizes from Go types: here a struct
// key, padded as the program lays it out.
func ExampleCreateTyped() {
	type flow struct {
		Port  uint16
		Proto uint8
		_     uint8
	}
	m, err := mapfd.CreateTyped[flow, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 1024, Name: "flows"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	m.Update(flow{Port: 53, Proto: unix.IPPROTO_UDP}, 10, mapfd.BPF_ANY)
	n, err := m.Lookup(flow{Port: 53, Proto: unix.IPPROTO_UDP})
	fmt.Println(m.Map().KeySize(), n, err)
	_, err = m.Lookup(flow{Port: 80, Proto: unix.IPPROTO_TCP})
	fmt.Println(err)

	// As root, it prints:
	// 4 10 <nil>
	// mapfd: key does not exist
}

// NewTyped checks that Go types fit a map made otherwise (opened from a
// pin, say).
func ExampleNewTyped() {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Name: "slots"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if _, err := mapfd.NewTyped[uint32, uint32](m); err != nil {
		fmt.Println(err)
	}
	slots, err := mapfd.NewTyped[uint32, uint64](m)
	if err != nil {
		fmt.Println(err)
		return
	}
	slots.Update(2, 99, mapfd.BPF_ANY)
	for k, v := range slots.All(&err) {
		fmt.Println(k, v)
	}
	if err != nil {
		fmt.Println(err)
	}

	// As root, it prints:
	// mapfd: map "slots": value type of 4 bytes, the map's values are 8
	// 0 0
	// 1 0
	// 2 99
	// 3 0
}

// A per-CPU map holds one value per possible CPU, so programs count
// without contending; user space sums them. Here a program counts its runs
// in a per-CPU array, test-run 100 times.
func ExampleTyped_LookupPerCPU() {
	runs, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: 1, Name: "runs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runs.Close()
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: []insn.Item{
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0), // key 0
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, runs),
		insn.Call(insn.BPF_FUNC_map_lookup_elem), // this CPU's value
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1), // no atomic needed: it is this CPU's own
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	if _, err := p.TestRun(prog.RunOptions{Data: make([]byte, 64), Repeat: 100}); err != nil {
		fmt.Println(err)
		return
	}
	n, _ := sys.PossibleCPUs()
	perCPU := make([]uint64, n)
	if err := runs.LookupPerCPU(0, perCPU); err != nil {
		fmt.Println(err)
		return
	}
	var total uint64
	for _, v := range perCPU {
		total += v
	}
	fmt.Println("runs:", total)

	// As root, it prints:
	// runs: 100
}

// An LRU hash evicts the least recently used keys to make room, where a
// hash refuses a key past MaxEntries (E2BIG): for state about more flows
// or processes than fit.
func ExampleCreate_lruHash() {
	for _, typ := range []mapfd.Type{mapfd.LRUHash, mapfd.Hash} {
		m, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: typ, MaxEntries: 100, Name: "recent"})
		if err != nil {
			fmt.Println(err)
			return
		}
		var failed error
		for k := uint32(0); k < 1000 && failed == nil; k++ {
			if err := m.Update(k, uint64(k), mapfd.BPF_ANY); err != nil {
				failed = fmt.Errorf("key %d: %w", k, err)
			}
		}
		kept := 0
		for range m.All(&err) {
			kept++
		}
		m.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: at most 100 kept: %v, error: %v\n", typ, kept <= 100, failed)
	}

	// As root, it prints:
	// lru_hash: at most 100 kept: true, error: <nil>
	// hash: at most 100 kept: true, error: key 100: mapfd: map "recent" update: BPF_MAP_UPDATE_ELEM: argument list too long (the map is full (max_entries elements are in it), or an array index is not below max_entries)
}

// A stack map has no keys: Update pushes, LookupAndDelete pops the newest.
func ExampleCreate_stack() {
	s, err := mapfd.Create(mapfd.Spec{Type: mapfd.Stack, ValueSize: 4, MaxEntries: 8, Name: "undo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, step := range []uint32{7, 8, 9} {
		s.Update(nil, binary.NativeEndian.AppendUint32(nil, step), mapfd.BPF_ANY)
	}
	v := make([]byte, 4)
	for s.LookupAndDelete(nil, v) == nil {
		fmt.Println(binary.NativeEndian.Uint32(v))
	}

	// As root, it prints:
	// 9
	// 8
	// 7
}

// A per-CPU hash holds, for each key, a value per possible CPU (an LRU
// per-CPU hash too); user space writes and reads them all at once, in the
// order of the CPUs.
func ExampleTyped_UpdatePerCPU() {
	n, err := sys.PossibleCPUs()
	if err != nil {
		fmt.Println(err)
		return
	}
	set := make([]uint64, n)
	for cpu := range set {
		set[cpu] = uint64(cpu) * 10
	}
	for _, typ := range []mapfd.Type{mapfd.PerCPUHash, mapfd.LRUPerCPUHash} {
		m, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: typ, MaxEntries: 16, Name: "per_cpu"})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer m.Close()
		if err := m.UpdatePerCPU(7, set, mapfd.BPF_ANY); err != nil {
			fmt.Println(err)
			return
		}
		got := make([]uint64, n)
		err = m.LookupPerCPU(7, got)
		fmt.Println(typ, slices.Equal(got, set), err)
		_, err = m.Lookup(7) // one value where there are many
		fmt.Println(err)
	}

	// As root, it prints:
	// percpu_hash true <nil>
	// mapfd: map "per_cpu": Lookup needs one value per CPU on a per-CPU map: use LookupPerCPU
	// lru_percpu_hash true <nil>
	// mapfd: map "per_cpu": Lookup needs one value per CPU on a per-CPU map: use LookupPerCPU
}

// A stack trace map keeps the stacks bpf_get_stackid walks, by the id it
// returns: here the kernel's stack under a raw tracepoint program at
// getppid, named with kallsyms. It starts with the program itself; on
// x86-64 the rest reads bpf_trace_run2, __bpf_trace_sys_enter,
// syscall_trace_enter, do_syscall_64, entry_SYSCALL_64_after_hwframe.
func ExampleCreate_stackTrace() {
	const depth = 32 // the deepest stack kept; PERF_MAX_STACK_DEPTH is 127
	stacks, err := mapfd.CreateTyped[uint32, [depth]uint64](mapfd.Spec{Type: mapfd.StackTrace, MaxEntries: 64, Name: "stacks"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stacks.Close()
	ids, err := mapfd.CreateTyped[uint32, int64](mapfd.Spec{Type: mapfd.Array, MaxEntries: 1, Name: "ids"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ids.Close()
	ids.Update(0, -1, mapfd.BPF_ANY)
	p, err := prog.Load(prog.Spec{Type: prog.RawTracepoint, Name: "stack", License: "GPL", Insns: []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1),
		insn.LoadMem(insn.BPF_DW, insn.R0, insn.R6, 8), // args[1], the system call number
		insn.JumpImm(insn.BPF_JNE, insn.R0, unix.SYS_GETPPID, "out"),
		insn.Call(insn.BPF_FUNC_get_current_pid_tgid),
		insn.ALU64Imm(insn.BPF_RSH, insn.R0, 32),
		insn.JumpImm(insn.BPF_JNE, insn.R0, int32(os.Getpid()), "out"),
		insn.Mov64Reg(insn.R1, insn.R6),
		insn.LoadMapFD(insn.R2, stacks),
		insn.Mov64Imm(insn.R3, 0), // the kernel's stack; BPF_F_USER_STACK for the process's
		insn.Call(insn.BPF_FUNC_get_stackid),
		insn.Mov64Reg(insn.R7, insn.R0), // the id, or a negative errno
		insn.StoreImm(insn.BPF_W, insn.R10, -4, 0),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, ids),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R7), // ids[0] = id
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 0),
		insn.Exit(),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	l, err := prog.AttachRawTracepoint(p, "sys_enter", prog.AttachOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	os.Getppid()
	id, err := ids.Lookup(0)
	if err != nil || id < 0 {
		fmt.Println("no stack:", id, err)
		return
	}
	stack, err := stacks.Lookup(uint32(id))
	if err != nil {
		fmt.Println(err)
		return
	}
	syms, err := prog.Kallsyms()
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, addr := range stack {
		if addr == 0 { // the end of a stack shorter than depth
			break
		}
		names = append(names, syms.Name(addr)) // function+0xoffset
	}
	fmt.Println("the program first:", len(names) > 0 && strings.HasPrefix(names[0], "bpf_prog_") && strings.Contains(names[0], "_stack+"))
	fmt.Println("the kernel's functions below it:", len(names) > 3 && !strings.HasPrefix(names[len(names)-1], "0x"))

	// As root, it prints:
	// the program first: true
	// the kernel's functions below it: true
}

func ExampleType_PerCPU() {
	for _, t := range []mapfd.Type{mapfd.Hash, mapfd.PerCPUHash, mapfd.LRUPerCPUHash} {
		fmt.Println(t, t.PerCPU())
	}
	// Output:
	// hash false
	// percpu_hash true
	// lru_percpu_hash true
}

// rootExamples are the examples that need root: TestExamples runs them.
func rootExamples(t *testing.T) []testutil.RootExample {
	noBPFFS := ""
	if _, err := sys.BPFFSPath("/sys/fs/bpf/x"); err != nil {
		noBPFFS = err.Error()
	}
	return []testutil.RootExample{
		{F: Example}, {F: ExampleMap_Lookup}, {F: ExampleMap_NextKey}, {F: ExampleMap_All},
		{F: ExampleMap_LookupBatch}, {F: ExampleMap_LookupAndDelete}, {F: ExampleMap_SetFD},
		{F: ExampleCreate_perfEventArray}, {F: ExampleCreate_ringBuf}, {F: ExampleMap_Pin, Skip: noBPFFS},
		{F: ExampleCreateTyped}, {F: ExampleNewTyped}, {F: ExampleTyped_LookupPerCPU},
		{F: ExampleCreate_lruHash}, {F: ExampleCreate_stack}, {F: ExampleTyped_UpdatePerCPU}, {F: ExampleCreate_stackTrace},
	}
}

// exampleSource is this file, embedded for the test binaries that run
// without their sources (in the VMs).
//
//go:embed example_test.go
var exampleSource []byte

// TestExamples runs the examples of rootExamples, as root, against their
// "it prints:" comments (testutil.RunExamples).
func TestExamples(t *testing.T) { testutil.RunExamples(t, exampleSource, rootExamples(t)) }
