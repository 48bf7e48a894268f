// Command tracex4 is the kprobe variant of tracex2's write() histogram, as
// the kernel's samples/bpf/tracex4 used kprobes: a kprobe on vfs_write,
// the kernel's write handler, counts the sizes asked for in log2 slots,
// and a kretprobe on it counts the sizes written (errors apart). The
// function's arguments are read from the kernel's struct pt_regs, whose
// layout depends on the architecture (prog.PtRegs).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
)

func main() {
	t := tool.New("tracex4", "log2 histograms of the sizes vfs_write is asked for (kprobe) and writes (kretprobe)",
		"[-p PID] [-json] [interval [count]]",
		"tracex4                 # every second until Ctrl-C",
		"tracex4 -p 1234 5 3     # process 1234 only, every 5 s, three times",
	).Periodic(time.Second)
	pid := t.PIDFlag("p", "count the writes of process `PID` only")
	t.ParseOrExit()
	ctx, stop := tool.Context()
	defer stop()
	t.Exit(run(ctx, t, *pid))
}

const (
	slots = 65 // bcc's log2 slots of a u64: 1 to 64
	fn    = "vfs_write"
	arg   = 2 // vfs_write(file, buf, count, pos)
)

func run(ctx context.Context, t *tool.Tool, pid uint32) error {
	if err := t.NeedRoot(); err != nil {
		return err
	}
	if err := prog.ProbesSupported(tracefs.Kprobe); err != nil {
		return err
	}
	regs, err := prog.KernelPtRegs()
	if err != nil {
		return err
	}
	loadCount, err := regs.Arg(R6, R1, arg)
	if err != nil {
		return err
	}
	// hist[0] is asked, hist[1] written: slot i at key i, i+slots.
	hist, err := mapfd.CreateTyped[uint32, uint64](mapfd.Spec{Type: mapfd.PerCPUArray, MaxEntries: 2 * slots, Name: "write_sizes"})
	if err != nil {
		return err
	}
	defer hist.Close()
	program := func(load Item, base int32) []Item {
		items := []Item{load}
		if pid != 0 {
			items = append(items, Call(BPF_FUNC_get_current_pid_tgid), ALU64Imm(BPF_RSH, R0, 32),
				JumpImm(BPF_JNE, R0, int32(pid), "out"))
		}
		if base != 0 { // a return value: skip errors
			items = append(items, JumpImm(BPF_JSLT, R6, 0, "out"))
		}
		items = append(items, Log2(R7, R6, R8)...)
		return append(items, ALU64Imm(BPF_ADD, R7, 1+base), StoreMem(BPF_W, R10, -4, R7),
			LoadMapFD(R1, hist), Mov64Reg(R2, R10), ALU64Imm(BPF_ADD, R2, -4), Call(BPF_FUNC_map_lookup_elem),
			JumpImm(BPF_JEQ, R0, 0, "out"),
			LoadMem(BPF_DW, R1, R0, 0), ALU64Imm(BPF_ADD, R1, 1), StoreMem(BPF_DW, R0, 0, R1),
			Label("out"), Mov64Imm(R0, 0), Exit())
	}
	for _, ret := range []bool{false, true} {
		insns := program(loadCount, 0)
		if ret {
			insns = program(regs.Return(R6, R1), slots)
		}
		p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: "tracex4", License: "GPL", Insns: insns})
		if err != nil {
			return err
		}
		defer p.Close()
		l, err := prog.AttachKprobe(p, fn, prog.KprobeOptions{Return: ret})
		if err != nil {
			return err
		}
		defer l.Close()
	}

	t.Started("counting the sizes of %s, asked and written", fn)
	ncpu, err := sys.PossibleCPUs()
	if err != nil {
		return err
	}
	perCPU := make([]uint64, ncpu)
	seen := make([]uint64, 2*slots)
	return t.Every(ctx, func(final bool) error {
		now := make([]uint64, 2*slots)
		for i := range uint32(2 * slots) {
			if err := hist.LookupPerCPU(i, perCPU); err != nil {
				return err
			}
			sum := uint64(0)
			for _, v := range perCPU {
				sum += v
			}
			now[i], seen[i] = sum-seen[i], sum
		}
		asked, written := now[:slots], now[slots:]
		if t.JSON {
			return t.Emit(struct {
				Time    string          `json:"time"`
				Asked   []tool.HistSlot `json:"asked_bytes"`
				Written []tool.HistSlot `json:"written_bytes"`
			}{time.Now().Format(time.RFC3339Nano), tool.HistSlots(asked), tool.HistSlots(written)})
		}
		fmt.Fprintf(t.Stdout, "\n%s\n", time.Now().Format("15:04:05"))
		tool.Log2Hist(t.Stdout, "asked bytes", asked)
		tool.Log2Hist(t.Stdout, "written bytes", written)
		return nil
	})
}
