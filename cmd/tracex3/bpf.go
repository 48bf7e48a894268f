package main

import (
	"fmt"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
)

// request is one slot of the table of requests in flight: a request
// block_rq_issue saw and block_rq_complete has not yet. The table is an
// array, whose lookups the verifier inlines and whose slots the programs
// take and free with atomic adds, where a hash map would take a bucket
// lock (with interrupts off) to insert at the issue and again to delete at
// the completion: those two were most of tracex3's cost per request.
type request struct {
	Claim  int32  // programs holding or trying to take the slot: 1 while a request has it
	Ready  int32  // 1 once Dev, Sector and Start are written, until the completion takes it
	Dev    uint32 // the request's device, as the tracepoints record it
	_      uint32
	Sector uint64 // its first sector
	Start  uint64 // bpf_ktime_get_ns at its issue
}

// A request's slot is found from its home, a hash of its device and
// sector, among the probes slots that follow; a request that finds them
// all taken goes untimed, and is counted as such.
const (
	tableBits = 14
	tableSize = 1 << tableBits // slots: 512 KiB
	probes    = 8
)

// histKey is a slot of the latency histograms: a device and a bucket.
type histKey struct {
	Dev    uint32
	Bucket uint32
}

// histValue is what a CPU counted in a slot of the histograms: how many
// requests, and their latencies' sum (Prometheus's _sum).
type histValue struct {
	Count uint64
	Sum   uint64 // nanoseconds
}

// The statistics the programs keep besides the latencies, by index in a
// per-CPU array.
const (
	statUntimed = iota // requests issued when their probes slots were all taken
	statCount
)

// objects are tracex3's maps and programs.
type objects struct {
	table    *mapfd.Typed[uint32, request]    // the requests in flight
	hist     *mapfd.Typed[histKey, histValue] // -listen's, per CPU: requests by device and bucket
	total    *mapfd.Typed[uint32, histValue]  // else, per CPU: requests by bucket
	stats    *mapfd.Typed[uint32, uint64]     // per CPU: statUntimed, ...
	issue    *prog.Program
	complete *prog.Program
	requeue  *prog.Program
	made     []tool.Closer // all of the above that load made, in order, for Close
}

// Close closes what load made, last first: the programs, then the maps.
func (o *objects) Close() error { return tool.CloseInReverse(o.made) }

// load creates the maps and loads the programs; with filter set, they
// skip every other device. byDevice counts the latencies by device, in a
// per-CPU hash (for -listen), else by bucket only, in a per-CPU array,
// whose lookup the verifier inlines (6.10), where the hash's costs a
// call and a hash of the key for every request.
func load(filter uint32, byDevice bool) (o *objects, err error) {
	o = &objects{}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	fields, err := recordFields()
	if err != nil {
		return nil, err
	}
	o.table, err = mapfd.CreateTyped[uint32, request](mapfd.Spec{
		Type:       mapfd.Array,
		MaxEntries: tableSize,
		Name:       "rq_in_flight",
	})
	if err != nil {
		return nil, err
	}
	o.made = append(o.made, o.table)
	if err = o.createHistograms(byDevice); err != nil {
		return nil, err
	}
	o.stats, err = mapfd.CreateTyped[uint32, uint64](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: statCount,
		Name:       "rq_stats",
	})
	if err != nil {
		return nil, err
	}
	o.made = append(o.made, o.stats)
	o.issue, err = loadProgram("tracex3_issue", o.issueProgram(fields[0], filter))
	if err != nil {
		return nil, err
	}
	o.made = append(o.made, o.issue)
	o.complete, err = loadProgram("tracex3_done", o.completeProgram(fields[1], filter))
	if err != nil {
		return nil, err
	}
	o.made = append(o.made, o.complete)
	o.requeue, err = loadProgram("tracex3_requeue", o.requeueProgram(fields[2], filter))
	if err != nil {
		return nil, err
	}
	o.made = append(o.made, o.requeue)
	return o, nil
}

// createHistograms creates the histograms' map: o.hist by device, else
// o.total.
func (o *objects) createHistograms(byDevice bool) error {
	var err error
	if byDevice {
		o.hist, err = mapfd.CreateTyped[histKey, histValue](mapfd.Spec{
			Type:       mapfd.PerCPUHash,
			MaxEntries: maxDevices * buckets,
			Name:       "rq_latency",
		})
		if err == nil {
			o.made = append(o.made, o.hist)
		}
		return err
	}
	o.total, err = mapfd.CreateTyped[uint32, histValue](mapfd.Spec{
		Type:       mapfd.PerCPUArray,
		MaxEntries: buckets,
		Name:       "rq_latency",
	})
	if err == nil {
		o.made = append(o.made, o.total)
	}
	return err
}

// counts reads the histograms, each slot summed over the ncpu CPUs' values:
// by device and bucket, or by bucket only, under device 0.
func (o *objects) counts(ncpu int) (map[histKey]histValue, error) {
	out := map[histKey]histValue{}
	add := func(k histKey, perCPU []histValue) {
		v := out[k]
		for _, c := range perCPU {
			v.Count += c.Count
			v.Sum += c.Sum
		}
		out[k] = v
	}
	if o.hist != nil {
		var err error
		for k, perCPU := range o.hist.AllPerCPU(&err) {
			if k.Bucket < buckets {
				add(k, perCPU)
			}
		}
		return out, err
	}
	perCPU := make([]histValue, ncpu)
	for b := range uint32(buckets) {
		if err := o.total.LookupPerCPU(b, perCPU); err != nil {
			return nil, err
		}
		add(histKey{Bucket: b}, perCPU)
	}
	return out, nil
}

// maxDevices is how many devices the histograms hold (a per-CPU hash is
// allocated whole, for every CPU, when it is created).
const maxDevices = 128

// loadProgram loads a tracepoint program.
func loadProgram(name string, items []insn.Item) (*prog.Program, error) {
	return prog.Load(prog.Spec{Type: prog.Tracepoint, Name: name, License: "GPL", Insns: items})
}

// tracepoints are the tracepoints tracex3 attaches to, in the order of
// the programs' fields in objects. A request the driver cannot take now
// is requeued (block_rq_requeue), and issued again later.
var tracepoints = [3]string{"block_rq_issue", "block_rq_complete", "block_rq_requeue"}

// recordFields returns, for each tracepoint, the loads of its record's
// dev (into r7) and sector (into r8), from the record at r6. The programs
// need the device, which only the record holds (the raw tracepoints pass a
// struct request, whose layout bpfkit does not know without BTF): they are
// perf tracepoint programs, and return 1 so that perf users of the
// tracepoints still get every record.
func recordFields() ([3][2]insn.Item, error) {
	var loads [3][2]insn.Item
	for i, tp := range tracepoints {
		for j, f := range []struct {
			name string
			dst  insn.Register
		}{{"dev", insn.R7}, {"sector", insn.R8}} {
			field, err := tool.Field("block", tp, f.name)
			if err == nil {
				loads[i][j], err = tool.LoadField(f.dst, insn.R6, field)
			}
			if err != nil {
				return loads, err
			}
		}
	}
	return loads, nil
}

// keyItems reads the request's device (r7) and sector (r8) from the
// record at r1, skips other devices when filtering, and computes the
// request's home slot in r9 (slotItems keeps its low tableBits bits): its
// 4 KiB block, so that a stream of requests takes neighbouring slots,
// whose cache lines it shares (a slot far from the last one misses the
// cache, which was a third of the issue's cost); xor a hash of the
// device (Fibonacci hashing: the top bits of dev * 2^64/φ), so that two
// devices' streams over the same blocks are apart.
func keyItems(fields [2]insn.Item, filter uint32) []insn.Item {
	items := []insn.Item{insn.Mov64Reg(insn.R6, insn.R1), fields[0], fields[1]}
	if filter != 0 {
		items = append(items, insn.Jump32Imm(insn.BPF_JNE, insn.R7, int32(filter), "out"))
	}
	return append(items,
		insn.Mov64Reg(insn.R1, insn.R7),
		insn.LoadImm64(insn.R2, -0x61c8864680b583eb), // 2^64 / the golden ratio
		insn.ALU64Reg(insn.BPF_MUL, insn.R1, insn.R2),
		insn.ALU64Imm(insn.BPF_RSH, insn.R1, 64-tableBits),
		insn.Mov64Reg(insn.R9, insn.R8),
		insn.ALU64Imm(insn.BPF_RSH, insn.R9, 3),
		insn.ALU64Reg(insn.BPF_XOR, insn.R9, insn.R1),
	)
}

// slotItems is r6 = &table[(r9 + i) % tableSize], the i-th slot from the
// home, through fp-4 (clobbers r0-r5).
func (o *objects) slotItems(i int) []insn.Item {
	return []insn.Item{
		insn.Mov64Reg(insn.R1, insn.R9),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, int32(i)),
		insn.ALU64Imm(insn.BPF_AND, insn.R1, tableSize-1),
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R1),
		insn.LoadMapFD(insn.R1, o.table),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"), // never: the index is in the array
		insn.Mov64Reg(insn.R6, insn.R0),
	}
}

// field is the offset of a request's field, for loads and stores at r6.
func field(off uintptr) int16 { return int16(off) }

var (
	offClaim  = field(unsafe.Offsetof(request{}.Claim))
	offReady  = field(unsafe.Offsetof(request{}.Ready))
	offDev    = field(unsafe.Offsetof(request{}.Dev))
	offSector = field(unsafe.Offsetof(request{}.Sector))
	offStart  = field(unsafe.Offsetof(request{}.Start))
)

// matchItems jumps to next unless the slot at r6 holds the request r7, r8
// (written in full: Ready).
func matchItems(next string) []insn.Item {
	return []insn.Item{
		insn.LoadMem(insn.BPF_W, insn.R1, insn.R6, offReady),
		insn.JumpImm(insn.BPF_JNE, insn.R1, 1, next),
		insn.LoadMem(insn.BPF_W, insn.R1, insn.R6, offDev),
		insn.JumpReg(insn.BPF_JNE, insn.R1, insn.R7, next),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R6, offSector),
		insn.JumpReg(insn.BPF_JNE, insn.R1, insn.R8, next),
	}
}

// takeItems tries to take a counter at r6+off that is 0 or 1 for one
// program only, adding delta (1 or -1) atomically and reading it back: the
// program that reads 1 (or 0) has it; one that reads more (or less) ran
// beside another, undoes its add and jumps to next. Two can both fail;
// two cannot both succeed. (There is no compare-and-exchange before 5.12.)
func takeItems(off int16, delta int32, next string) []insn.Item {
	return []insn.Item{
		insn.Mov64Imm(insn.R1, delta),
		insn.Atomic(insn.BPF_W, insn.BPF_ADD.Atomic(), insn.R6, insn.R1, off),
		insn.LoadMem(insn.BPF_W, insn.R1, insn.R6, off),
		insn.JumpImm(insn.BPF_JEQ, insn.R1, max(delta, 0), "took_"+next),
		insn.Mov64Imm(insn.R1, -delta),
		insn.Atomic(insn.BPF_W, insn.BPF_ADD.Atomic(), insn.R6, insn.R1, off),
		insn.Ja(next),
		insn.Label("took_" + next),
	}
}

// issueProgram notes when a request is issued, in a slot of the table.
func (o *objects) issueProgram(fields [2]insn.Item, filter uint32) []insn.Item {
	items := keyItems(fields, filter)
	// The first free slot from the home: skip those taken, try to take the
	// others. A request issued again after a requeue had its slot freed by
	// requeueProgram; two requests of one device and sector (flushes, at
	// sector 0) take a slot each.
	for i := range probes {
		next := fmt.Sprintf("free_%d", i)
		items = append(items, o.slotItems(i)...)
		items = append(items,
			insn.LoadMem(insn.BPF_W, insn.R1, insn.R6, offClaim),
			insn.JumpImm(insn.BPF_JNE, insn.R1, 0, next))
		items = append(items, takeItems(offClaim, 1, next)...)
		items = append(items, insn.Ja("claimed"), insn.Label(next))
	}
	// None free: the request goes untimed; count it.
	items = append(items, o.statItems(statUntimed)...)
	items = append(items, insn.Ja("out"))
	return append(items,
		// A slot of our own: the request, its time, then Ready.
		insn.Label("claimed"),
		insn.StoreMem(insn.BPF_W, insn.R6, offDev, insn.R7),
		insn.StoreMem(insn.BPF_DW, insn.R6, offSector, insn.R8),
		insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.StoreMem(insn.BPF_DW, insn.R6, offStart, insn.R0),
		insn.StoreImm(insn.BPF_W, insn.R6, offReady, 1),
		// Return 1: the kernel keeps the record for perf users of the
		// tracepoint (0 would hide it from all of them).
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1),
		insn.Exit(),
	)
}

// takeRequest finds the request's slot, takes it from the table and
// jumps to "found" with its issue's time in r8; or, if no slot holds it
// (issued before tracex3 started, or untimed), to "out".
func (o *objects) takeRequest(fields [2]insn.Item, filter uint32) []insn.Item {
	items := keyItems(fields, filter)
	for i := range probes {
		next := fmt.Sprintf("match_%d", i)
		items = append(items, o.slotItems(i)...)
		items = append(items, matchItems(next)...)
		// Take the completion (Ready 1 to 0), as one program only.
		items = append(items, takeItems(offReady, -1, next)...)
		items = append(items, insn.Ja("found"), insn.Label(next))
	}
	return append(items,
		insn.Ja("out"),
		// r8 = the issue's time; free the slot.
		insn.Label("found"),
		insn.LoadMem(insn.BPF_DW, insn.R8, insn.R6, offStart),
		insn.Mov64Imm(insn.R1, -1),
		insn.Atomic(insn.BPF_W, insn.BPF_ADD.Atomic(), insn.R6, insn.R1, offClaim),
	)
}

// completeProgram takes the request from the table and counts its latency
// under its device and bucket.
func (o *objects) completeProgram(fields [2]insn.Item, filter uint32) []insn.Item {
	items := o.takeRequest(fields, filter)
	items = append(items,
		// r6 and r8 = the latency in nanoseconds.
		insn.Call(insn.BPF_FUNC_ktime_get_ns),
		insn.ALU64Reg(insn.BPF_SUB, insn.R0, insn.R8),
		insn.Mov64Reg(insn.R6, insn.R0),
		insn.Mov64Reg(insn.R8, insn.R0),
	)
	items = append(items, bucketItems()...)
	items = append(items, o.histItems()...)
	return append(items,
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1), // keep the record for perf users, as issueProgram does
		insn.Exit(),
	)
}

// histItems counts a request of latency r6 (ns) in bucket r9 of this
// CPU's values of the histograms, by device (r7) or not. No other program
// writes this CPU's values meanwhile (a tracing program never interrupts
// another on its CPU): no atomic adds.
func (o *objects) histItems() []insn.Item {
	if o.hist == nil {
		return append([]insn.Item{
			insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R9),
			insn.LoadMapFD(insn.R1, o.total),
			insn.Mov64Reg(insn.R2, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
			insn.Call(insn.BPF_FUNC_map_lookup_elem),
			insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		}, addValueItems()...)
	}
	return o.deviceHistItems()
}

// addValueItems adds one request, of latency r6, to the histValue at r0.
func addValueItems() []insn.Item {
	count, sum := field(unsafe.Offsetof(histValue{}.Count)), field(unsafe.Offsetof(histValue{}.Sum))
	return []insn.Item{
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, count),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, count, insn.R1),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, sum),
		insn.ALU64Reg(insn.BPF_ADD, insn.R1, insn.R6),
		insn.StoreMem(insn.BPF_DW, insn.R0, sum, insn.R1),
	}
}

// deviceHistItems counts the request under {r7, r9}, its device and
// bucket: in place when the slot is there, else by inserting it, once per
// CPU, device and bucket.
func (o *objects) deviceHistItems() []insn.Item {
	const key, value = -16, -32 // a histKey, a histValue on the stack
	// The slot's values, one more request and its latency; or a jump to
	// missing if the slot is not there.
	addInPlace := func(missing string) []insn.Item {
		items := []insn.Item{
			insn.LoadMapFD(insn.R1, o.hist),
			insn.Mov64Reg(insn.R2, insn.R10),
			insn.ALU64Imm(insn.BPF_ADD, insn.R2, key),
			insn.Call(insn.BPF_FUNC_map_lookup_elem),
			insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, missing),
		}
		return append(append(items, addValueItems()...), insn.Ja("out"))
	}
	items := []insn.Item{
		insn.StoreMem(insn.BPF_W, insn.R10, key+field(unsafe.Offsetof(histKey{}.Dev)), insn.R7),
		insn.StoreMem(insn.BPF_W, insn.R10, key+field(unsafe.Offsetof(histKey{}.Bucket)), insn.R9),
	}
	items = append(items, addInPlace("insert")...)
	items = append(items,
		// The first of its slot on this CPU: {1, latency}.
		insn.Label("insert"),
		insn.StoreImm(insn.BPF_DW, insn.R10, value+field(unsafe.Offsetof(histValue{}.Count)), 1),
		insn.StoreMem(insn.BPF_DW, insn.R10, value+field(unsafe.Offsetof(histValue{}.Sum)), insn.R6),
		insn.LoadMapFD(insn.R1, o.hist),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, key),
		insn.Mov64Reg(insn.R3, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, value),
		insn.Mov64Imm(insn.R4, insn.BPF_NOEXIST),
		insn.Call(insn.BPF_FUNC_map_update_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
	)
	// Another CPU inserted the slot first (EEXIST): it is there now, with
	// zeros for this CPU. (Or the map is full: the lookup finds nothing.)
	return append(items, addInPlace("out")...)
}

// requeueProgram takes a requeued request from the table, uncounted: it
// will be issued again, and timed from then.
func (o *objects) requeueProgram(fields [2]insn.Item, filter uint32) []insn.Item {
	return append(o.takeRequest(fields, filter),
		insn.Label("out"),
		insn.Mov64Imm(insn.R0, 1), // keep the record for perf users, as issueProgram does
		insn.Exit(),
	)
}

// statItems adds 1 to this CPU's statistic i (clobbers r0-r5).
func (o *objects) statItems(i int32) []insn.Item {
	return []insn.Item{
		insn.StoreImm(insn.BPF_W, insn.R10, -8, i),
		insn.LoadMapFD(insn.R1, o.stats),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -8),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "out"),
		insn.LoadMem(insn.BPF_DW, insn.R1, insn.R0, 0),
		insn.ALU64Imm(insn.BPF_ADD, insn.R1, 1),
		insn.StoreMem(insn.BPF_DW, insn.R0, 0, insn.R1),
	}
}

// bucketItems is r9 = the bucket of the latency r8, in nanoseconds: 0
// below 1µs, then log2 buckets of each unit (µs, ms, s), so that every
// edge is a round figure (512µs, then 1ms): 1 + log2(µs) below 1ms, 11 +
// log2(ms) below 1s, 21 + log2(s), at most buckets-1. Clobbers r1, r2, r8.
func bucketItems() []insn.Item {
	items := []insn.Item{
		insn.Mov64Imm(insn.R9, 0),
		insn.JumpImm(insn.BPF_JLT, insn.R8, int32(units[0].ns), "bucket"),
	}
	for i, u := range units {
		bigger := ""
		if i+1 < len(units) {
			bigger = "unit_" + units[i+1].name
			items = append(items, insn.JumpImm(insn.BPF_JGE, insn.R8, int32(units[i+1].ns), bigger))
		}
		items = append(items,
			insn.ALU64Imm(insn.BPF_DIV, insn.R8, int32(u.ns)),
			insn.Mov64Imm(insn.R1, int32(u.base)),
			insn.Ja("log2"))
		if bigger != "" {
			items = append(items, insn.Label(bigger))
		}
	}
	items = append(items, insn.Label("log2"))
	items = append(items, insn.Log2(insn.R9, insn.R8, insn.R2)...)
	return append(items,
		insn.ALU64Reg(insn.BPF_ADD, insn.R9, insn.R1),
		insn.JumpImm(insn.BPF_JLT, insn.R9, buckets, "bucket"),
		insn.Mov64Imm(insn.R9, buckets-1),
		insn.Label("bucket"),
	)
}
