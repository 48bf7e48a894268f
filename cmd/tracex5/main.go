// Command tracex5 is the kernel's samples/bpf/tracex5 dispatcher: one
// program on raw_syscalls:sys_enter tail-calls, through a prog array
// indexed by the system call number, a program per call it knows (write,
// read, openat, mmap), each of which reports the call's own arguments
// through a perf ring; calls without a program fall through the tail call
// to a counter. -swap replaces the write program with another, and back,
// at every interval while the tracing goes on: the kernel swaps a prog
// array's slot atomically, so no call is missed.
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

func main() {
	t := tool.New("tracex5", "system calls dispatched by a tail call to a program per call (write, read, openat, mmap) that reports its arguments",
		"[-p PID] [-swap] [-json] [interval [count]]",
		"tracex5 -p 1234          # the calls of process 1234, until Ctrl-C",
		"tracex5 -swap 2          # replace the write program every 2 s while tracing",
		"tracex5 -json 5 1        # five seconds of every process's calls, as JSON",
	).Periodic(time.Second)
	pid := t.PIDFlag("p", "trace process `PID` only (tracex5 never traces itself)")
	swap := t.Flags.Bool("swap", false, "replace the write program with one that also shows the bytes written, and back, every interval")
	t.ParseOrExit()
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid, *swap))
}

// The handlers, by the number each puts in its events.
const (
	hWrite = iota + 1
	hRead
	hOpenat
	hMmap
	hWriteBytes // the write program -swap puts in
)

var names = map[uint32]string{hWrite: "write", hRead: "read", hOpenat: "openat", hMmap: "mmap", hWriteBytes: "write"}

// The event every handler sends, 144 bytes: u32 pid, u32 handler, u64 the
// six arguments, char comm[16], 8 bytes of padding, char data[64]
// (openat's path, or the first bytes written).
const (
	eventSize = 144
	dataSize  = 64
	slots     = 512 // system call numbers the prog array holds
)

func run(ctx context.Context, t *tool.Tool, pid uint32, swap bool) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	idField, err := tool.Field("raw_syscalls", "sys_enter", "id")
	if err != nil {
		return err
	}
	argsField, err := tool.Field("raw_syscalls", "sys_enter", "args")
	if err != nil {
		return err
	}
	loadID, err := tool.LoadField(R2, R6, idField)
	if err != nil {
		return err
	}
	// args is unsigned long[6]: of 4-byte words on a 32-bit kernel, read
	// zero-extended into the event's u64s.
	argSize, ok := map[int]Size{6 * 8: BPF_DW, 6 * 4: BPF_W}[argsField.Size]
	if !ok {
		return fmt.Errorf("raw_syscalls:sys_enter args: %d bytes, not six longs", argsField.Size)
	}
	progs, err := mapfd.Create(mapfd.Spec{Type: mapfd.ProgArray, MaxEntries: slots, Name: "syscalls"})
	if err != nil {
		return err
	}
	defer progs.Close()
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray, Name: "syscall_events"})
	if err != nil {
		return err
	}
	defer events.Close()
	other, err := mapfd.CreateTyped[uint64, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: slots, Name: "other_calls"})
	if err != nil {
		return err
	}
	defer other.Close()

	// handler reports the call's arguments, and its data: nothing, the
	// string at argument 1 (openat's path), or the bytes at argument 1,
	// as many as argument 2 says (write's buffer).
	handler := func(id int32, data string) []Item {
		items := []Item{Mov64Reg(R6, R1),
			Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32), StoreMem(BPF_W, R10, -eventSize, R0),
			StoreImm(BPF_W, R10, -eventSize+4, id)}
		for i := range 6 {
			at := int16(argsField.Offset + argsField.Size/6*i)
			items = append(items, LoadMem(argSize, R1, R6, at),
				StoreMem(BPF_DW, R10, int16(-eventSize+8+8*i), R1))
		}
		items = append(items, StoreImm(BPF_DW, R10, -dataSize-8, 0), // padding
			StoreImm(BPF_DW, R10, -dataSize, 0), // an empty string when nothing is read
			Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, -eventSize+56), Mov64Imm(R2, 16), Call(BPF_FUNC_get_current_comm))
		switch data {
		case "string":
			items = append(items, Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, -dataSize), Mov64Imm(R2, dataSize),
				LoadMem(BPF_DW, R3, R10, -eventSize+16), Call(BPF_FUNC_probe_read_user_str))
		case "bytes":
			items = append(items, LoadMem(BPF_DW, R2, R10, -eventSize+24), // count, at most dataSize
				JumpImm(BPF_JLE, R2, dataSize, "read"), Mov64Imm(R2, dataSize), Label("read"),
				Mov64Reg(R1, R10), ALU64Imm(BPF_ADD, R1, -dataSize),
				LoadMem(BPF_DW, R3, R10, -eventSize+16), Call(BPF_FUNC_probe_read_user))
		}
		return append(items, Mov64Reg(R1, R6), LoadMapFD(R2, events), LoadImm64(R3, BPF_F_CURRENT_CPU),
			Mov64Reg(R4, R10), ALU64Imm(BPF_ADD, R4, -eventSize), Mov64Imm(R5, eventSize), Call(BPF_FUNC_perf_event_output),
			Mov64Imm(R0, 0), Exit())
	}
	load := func(name string, items []Item) (*prog.Program, error) {
		return prog.Load(prog.Spec{Type: prog.Tracepoint, Name: name, License: "GPL", Insns: items})
	}
	handlers := map[int]*prog.Program{}
	for nr, h := range map[int]struct {
		id   int32
		data string
	}{unix.SYS_WRITE: {hWrite, ""}, unix.SYS_READ: {hRead, ""}, unix.SYS_OPENAT: {hOpenat, "string"}, sysMmap: {hMmap, ""}} {
		p, err := load("tracex5_"+names[uint32(h.id)], handler(h.id, h.data))
		if err != nil {
			return err
		}
		defer p.Close()
		if err := progs.SetFD(uint32(nr), p.FD()); err != nil {
			return err
		}
		handlers[nr] = p
	}
	writeBytes, err := load("tracex5_write2", handler(hWriteBytes, "bytes"))
	if err != nil {
		return err
	}
	defer writeBytes.Close()

	// The dispatcher: skip tracex5 itself (its reading would feed its own
	// events) and other processes with -p, tail-call the call's program,
	// and count the calls that have none.
	self := uint32(unix.Getpid())
	items := []Item{Mov64Reg(R6, R1), Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32),
		JumpImm(BPF_JEQ, R0, int32(self), "out")}
	// The handlers run on the dispatcher's stack, which must hold their
	// event: Debian's armhf 6.12 and 7.2, whose BPF runs interpreted,
	// sized the interpreter's stack by the dispatcher's 16 bytes, and a
	// handler's 144 corrupted the kernel stack (7.2 panicked in
	// ___bpf_prog_run, 6.12 oopsed in trace_call_bpf).
	items = append(items, StoreImm(BPF_DW, R10, -eventSize, 0))
	if pid != 0 {
		items = append(items, JumpImm(BPF_JNE, R0, int32(pid), "out"))
	}
	items = append(items, loadID, Mov64Reg(R7, R2), JumpImm(BPF_JSLT, R7, 0, "out"),
		Mov64Reg(R1, R6), LoadMapFD(R2, progs), Mov64Reg(R3, R7), Call(BPF_FUNC_tail_call),
		StoreMem(BPF_DW, R10, -8, R7)) // no program for it: count
	items = append(items, MapIncrement(other, -8, -16)...)
	items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
	dispatch, err := load("tracex5", items)
	if err != nil {
		return err
	}
	defer dispatch.Close()
	r, err := perfring.NewPerfReader(events, perfring.Options{RingBytes: 1 << 20})
	if err != nil {
		return err
	}
	defer r.Close()
	l, err := prog.AttachTracepoint(dispatch, "raw_syscalls", "sys_enter", prog.AttachOptions{})
	if err != nil {
		return err
	}
	defer l.Close()

	t.Started("system calls through a tail call per call (write, read, openat, mmap)")
	if !t.JSON {
		fmt.Fprintf(t.Stdout, "%-12s %7s %-16s %s\n", "TIME", "PID", "COMM", "CALL")
	}
	seen := map[uint64]uint64{}
	useBytes := false
	show := func(rec perfring.Record) error { return printEvent(t, rec.Sample) }
	return t.Read(ctx, r, "events", show, func(final bool) error {
		type count struct {
			NR    uint64 `json:"nr"`
			Calls uint64 `json:"calls"`
		}
		var counts []count
		var err error
		for nr, total := range other.All(&err) {
			if d := total - seen[nr]; d > 0 {
				counts = append(counts, count{nr, d})
			}
			seen[nr] = total
		}
		if err != nil {
			return err
		}
		sort.Slice(counts, func(i, j int) bool { return counts[i].Calls > counts[j].Calls })
		if t.JSON {
			if err := t.Emit(struct {
				Time  string  `json:"time"`
				Other []count `json:"other_calls"`
			}{time.Now().Format(time.RFC3339Nano), append([]count{}, counts...)}); err != nil {
				return err
			}
		} else {
			var b strings.Builder
			for _, c := range counts[:min(len(counts), 8)] {
				fmt.Fprintf(&b, " %d:%d", c.NR, c.Calls)
			}
			fmt.Fprintf(t.Stdout, "%s other calls (number:count):%s\n", time.Now().Format("15:04:05"), b.String())
		}
		if swap && !final {
			useBytes = !useBytes
			p := handlers[unix.SYS_WRITE]
			if useBytes {
				p = writeBytes
			}
			if err := progs.SetFD(unix.SYS_WRITE, p.FD()); err != nil {
				return err
			}
			if !t.JSON {
				fmt.Fprintf(t.Stdout, "%s write program is now %s\n", time.Now().Format("15:04:05"), p.Name())
			}
		}
		return nil
	})
}

// printEvent prints one handler's event.
func printEvent(t *tool.Tool, s []byte) error {
	if len(s) < eventSize {
		return fmt.Errorf("short event of %d bytes", len(s))
	}
	le := binary.LittleEndian
	var a [6]uint64
	for i := range a {
		a[i] = le.Uint64(s[8+8*i:])
	}
	h := le.Uint32(s[4:])
	comm, data := unix.ByteSliceToString(s[56:72]), s[eventSize-dataSize:]
	var call string
	switch h {
	case hWrite:
		call = fmt.Sprintf("write(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2])
	case hWriteBytes:
		call = fmt.Sprintf("write(fd=%d, %s, count=%d)", int32(a[0]), strconv.Quote(string(data[:min(a[2], dataSize)])), a[2])
	case hRead:
		call = fmt.Sprintf("read(fd=%d, buf=%#x, count=%d)", int32(a[0]), a[1], a[2])
	case hOpenat:
		call = fmt.Sprintf("openat(dfd=%d, %s, flags=%#o, mode=%#o)", int32(a[0]), strconv.Quote(unix.ByteSliceToString(data)), a[2], a[3])
	case hMmap:
		call = fmt.Sprintf("mmap(addr=%#x, len=%d, prot=%#x, flags=%#x, fd=%d, off=%d)", a[0], a[1], a[2], a[3], int32(a[4]), a[5])
	default:
		return fmt.Errorf("event of handler %d", h)
	}
	if t.JSON {
		return t.Emit(struct {
			Time string    `json:"time"`
			PID  uint32    `json:"pid"`
			Comm string    `json:"comm"`
			Call string    `json:"call"`
			Name string    `json:"name"`
			Args [6]uint64 `json:"args"`
		}{time.Now().Format(time.RFC3339Nano), le.Uint32(s), comm, call, names[h], a})
	}
	_, err := fmt.Fprintf(t.Stdout, "%-12s %7d %-16s %s\n", time.Now().Format("15:04:05.000"), le.Uint32(s), comm, call)
	return err
}
