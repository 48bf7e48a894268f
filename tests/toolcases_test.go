package tests

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// toolCase is a tool of cmd/ as the benchmarks run it, beside what does
// the same work in bpftrace (or, for the inspector, bpftool), and the
// workload it watches, of n events.
type toolCase struct {
	name     string
	tool     []string                     // the tool and its arguments; interval last
	ref      []string                     // the same work by bpftrace or bpftool; nil: none
	workload func(n int) func(testing.TB) // nil: none
	cost     bool                         // BenchmarkToolCost measures its programs per event
}

// toolCases are every tool of cmd/ with their workloads (a loop device, a
// running sdt for usdt, set up here for the benchmark), the periodic
// tools reporting every interval.
func toolCases(b *testing.B, interval string) []toolCase {
	loop, minor := testutil.LoopDevice(b)
	sdt := sdtBinary(b)
	sdtRunning := startSDTBinary(b, sdt)
	blockIO := func(n int) func(testing.TB) { // at most the 4096 blocks of the loop device
		return func(tb testing.TB) { testutil.DirectReads(tb, loop, min(n, 4096)) }
	}
	firings := func(n int) func(testing.TB) { return sdtFirings(sdtRunning, n) }
	// unbuffered: to a pipe bpftrace writes its lines only when its buffer
	// fills, and its first line would come at its exit
	bt := func(prog string) []string { return []string{"bpftrace", "-B", "none", "-e", prog} }
	dev := "7:" + strconv.Itoa(minor)
	return []toolCase{
		{"dropmon", []string{"dropmon", interval},
			bt(`tracepoint:skb:kfree_skb { @[args->location, args->reason] = count(); }`),
			udpDrops, true},
		{"dropmon-stacks", []string{"dropmon", "-stacks", interval},
			bt(`tracepoint:skb:kfree_skb { @[kstack, args->reason] = count(); }`),
			udpDrops, false},
		{"dropmon-events", []string{"dropmon", "-events", interval},
			bt(`tracepoint:skb:kfree_skb {
				printf("%d %s %d %s\n", pid, comm, args->protocol, ksym(args->location)); }`),
			udpDrops, false},
		{"tracex1", []string{"tracex1", interval},
			bt(`tracepoint:net:netif_receive_skb /str(args->name) == "lo"/ {
				printf("%s %d\n", str(args->name), args->len); }`),
			loPackets, true},
		{"tracex2", []string{"tracex2", interval},
			bt(`tracepoint:skb:kfree_skb { @freed[ksym(args->location)] = count(); }
			tracepoint:syscalls:sys_enter_write { @bytes = hist(args->count); }`),
			writes, true},
		{"tracex3", []string{"tracex3", "-dev", dev, interval},
			bt(`tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
			tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
				@us = hist((nsecs - @start[args->dev, args->sector]) / 1000);
				delete(@start[args->dev, args->sector]); }`),
			blockIO, true},
		{"tracex4", []string{"tracex4", interval},
			bt(`kprobe:vfs_write { @asked = hist(arg2); }
			kretprobe:vfs_write { @written = hist(retval); }`),
			writes, false},
		// this process's system calls, by number: tracex5 counts those it has
		// no handler for (getppid), where bpftrace's one-liner counts all
		{"tracex5", []string{"tracex5", "-p", strconv.Itoa(os.Getpid()), interval},
			bt(fmt.Sprintf(`tracepoint:raw_syscalls:sys_enter /pid == %d/ {
				@[args->id] = count(); }`, os.Getpid())),
			getppids, true},
		{"funccount", []string{"funccount", "syscalls:sys_enter_getppid", interval},
			bt(`tracepoint:syscalls:sys_enter_getppid { @[probe] = count(); }`),
			getppids, true},
		// arguments 1 and 5: a register, and memory at a register plus an
		// offset (2 and 3 are constants, which cost nothing to read;
		// bpftrace takes no argument past 5 on x86_64)
		{"usdt", []string{"usdt", sdt, "bpfkit:args", "-a", "1,5", "-count", interval},
			bt(fmt.Sprintf(`usdt:%s:bpfkit:args { @[arg1, arg5] = count(); }`, sdt)),
			firings, true},
		// bpfkit:str's two sites pass argument 1 in a register and as a
		// constant: it is read through the cookie's description
		{"usdt-sites", []string{"usdt", sdt, "bpfkit:str", "-a", "0,1", "-count", interval},
			bt(fmt.Sprintf(`usdt:%s:bpfkit:str { @[arg0, arg1] = count(); }`, sdt)),
			firings, true},
		{"bpfkit", []string{"bpfkit", "features"},
			[]string{"bpftool", "feature", "probe", "kernel"}, nil, false},
		{"example", []string{"example"}, nil, nil, false},
	}
}
