// Command tracex2 is the kernel's samples/bpf/tracex2 on tracepoints: a
// program on skb:kfree_skb counts the packets freed at each kernel
// location, and one on syscalls:sys_enter_write counts write() sizes in
// log2 slots. Every interval it prints the busiest locations, symbolized,
// and the size histogram in bcc's layout.
package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

func main() {
	t := tool.New("tracex2", "packets freed per kernel location (skb:kfree_skb) and a log2 histogram of write() sizes",
		"[-p PID] [-top N] [-json] [interval [count]]",
		"tracex2                 # every second until Ctrl-C",
		"tracex2 -p 1234 5 3     # write sizes of process 1234 only, every 5 s, three times",
		"tracex2 -json 10        # one JSON object every 10 s",
	).Periodic(time.Second)
	pid := t.PIDFlag("p", "count the writes of process `PID` only "+
		"(packets are freed in any context: all are counted)")
	top := t.Flags.Int("top", 10, "show the `N` busiest locations")
	t.ParseOrExit()
	switch {
	case *top < 1:
		t.Exit(tool.Usagef("-top %d: want 1 or more", *top))
	}
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid, *top))
}

const slots = 65 // bcc's log2 slots of a u64: 1 to 64

func run(ctx context.Context, t *tool.Tool, pid uint32, top int) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	loc, err := tool.Field("skb", "kfree_skb", "location")
	if err != nil {
		return err
	}
	count, err := tool.Field("syscalls", "sys_enter_write", "count")
	if err != nil {
		return err
	}
	loadLoc, err := tool.LoadField(R2, R1, loc)
	if err != nil {
		return err
	}
	loadCount, err := tool.LoadField(R6, R1, count)
	if err != nil {
		return err
	}
	syms, err := prog.Kallsyms()
	if err != nil {
		return err
	}
	freed, err := mapfd.CreateTyped[uint64, uint64](mapfd.Spec{Type: mapfd.Hash, MaxEntries: 10240, Name: "freed"})
	if err != nil {
		return err
	}
	defer freed.Close()
	sizes, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: slots, Name: "write_sizes"})
	if err != nil {
		return err
	}
	defer sizes.Close()

	// freed[location]++
	kfree := append([]Item{loadLoc, StoreMem(BPF_DW, R10, -8, R2)}, MapIncrement(freed, -8, -16)...)
	kfree = append(kfree, Mov64Imm(R0, 0), Exit())
	// sizes[log2(count)+1]++ on this CPU, for pid only if it is set
	write := []Item{loadCount}
	if pid != 0 {
		write = append(write, Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32),
			JumpImm(BPF_JNE, R0, int32(pid), "out"))
	}
	write = append(write, Log2(R7, R6, R8)...)
	write = append(write, ALU64Imm(BPF_ADD, R7, 1), StoreMem(BPF_W, R10, -4, R7),
		LoadMapFD(R1, sizes), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4), Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "out"),
		LoadMem(BPF_DW, R1, R0, 0), ALU64Imm(BPF_ADD, R1, 1), StoreMem(BPF_DW, R0, 0, R1),
		Label("out"), Mov64Imm(R0, 0), Exit())
	for _, p := range []struct {
		group, name string
		insns       []Item
	}{{"skb", "kfree_skb", kfree}, {"syscalls", "sys_enter_write", write}} {
		pr, err := prog.Load(prog.Spec{Type: prog.Tracepoint, Name: "tracex2", License: "GPL", Insns: p.insns})
		if err != nil {
			return err
		}
		defer pr.Close()
		l, err := prog.AttachTracepoint(pr, p.group, p.name, prog.AttachOptions{})
		if err != nil {
			return err
		}
		defer l.Close()
	}

	t.Started("counting freed packets (skb:kfree_skb) and write() sizes")
	seenFreed := map[uint64]uint64{}
	var seenSizes [slots]uint64
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return err
	}
	perCPU := make([]uint64, ncpu)
	return t.Every(ctx, func(final bool) error {
		type location struct {
			Location string `json:"location"`
			Freed    uint64 `json:"freed"`
		}
		var rows []location
		var iterErr error
		for addr, total := range freed.All(&iterErr) {
			if d := total - seenFreed[addr]; d > 0 {
				rows = append(rows, location{syms.Name(addr), d})
			}
			seenFreed[addr] = total
		}
		if iterErr != nil {
			return iterErr
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Freed > rows[j].Freed })
		rows = rows[:min(len(rows), top)]
		var hist [slots]uint64
		for i := range uint32(slots) {
			if err := sizes.LookupPerCPU(i, perCPU); err != nil {
				return err
			}
			sum := uint64(0)
			for _, v := range perCPU {
				sum += v
			}
			hist[i], seenSizes[i] = sum-seenSizes[i], sum
		}
		if t.JSON {
			return t.Emit(struct {
				Time       string          `json:"time"`
				Freed      []location      `json:"freed"`
				WriteBytes []tool.HistSlot `json:"write_bytes"`
			}{time.Now().Format(time.RFC3339Nano), append([]location{}, rows...), tool.HistSlots(hist[:])})
		}
		fmt.Fprintf(t.Stdout, "\n%s\n%8s  %s\n", time.Now().Format("15:04:05"), "freed", "location")
		for _, r := range rows {
			fmt.Fprintf(t.Stdout, "%8d  %s\n", r.Freed, r.Location)
		}
		fmt.Fprintln(t.Stdout)
		tool.Log2Hist(t.Stdout, "write bytes", hist[:])
		return nil
	})
}
