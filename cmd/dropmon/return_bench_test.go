package main

import (
	"net"
	"runtime"
	"slices"
	"testing"

	"github.com/bpfkit/bpfkit/cmd/internal/perftest"
	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// BenchmarkEventsReturn measures what -events's program costs a drop by
// returning 1, which leaves kfree_skb's record to perf's other users,
// rather than 0, which would drop it for all of them: the CPU time of
// sending a datagram to a closed UDP port on loopback (the drop happens
// in this thread's softirq) with nothing attached, with the program
// returning 0, and returning 1, attached to the counting perf event
// prog.AttachTracepoint opens or to a sampling one (as before: a record
// passed on is then prepared as a sample for a ring the event does not
// have). Eleven alternating rounds, medians.
func BenchmarkEventsReturn(b *testing.B) {
	testutil.RequireRoot(b)
	k, err := readKfreeSkb()
	if err != nil {
		b.Fatal(err)
	}
	events, err := mapfd.Create(mapfd.Spec{Type: mapfd.PerfEventArray})
	if err != nil {
		b.Fatal(err)
	}
	defer events.Close()
	one, err := eventProgram(events, &k, filter{})
	if err != nil {
		b.Fatal(err)
	}
	zero := slices.Clone(one) // the same, ending in r0 = 0; exit
	zero[len(zero)-2] = insn.Mov64Imm(insn.R0, 0)
	load := func(items []insn.Item) *prog.Program {
		p, err := prog.Load(prog.Spec{Type: prog.Tracepoint, License: "GPL", Insns: items})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		return p
	}
	p0, p1 := load(zero), load(one)
	attach := func(p *prog.Program, sampling bool) func() (*prog.Link, error) {
		return func() (*prog.Link, error) {
			if sampling {
				return perftest.AttachSampling(p, "skb", "kfree_skb")
			}
			return prog.AttachTracepoint(p, "skb", "kfree_skb", prog.AttachOptions{})
		}
	}
	cases := []struct {
		name   string
		attach func() (*prog.Link, error)
	}{
		{"nothing", nil},
		{"return-0", attach(p0, false)},
		{"return-1", attach(p1, false)},
		{"return-0-sampling-event", attach(p0, true)},
		{"return-1-sampling-event", attach(p1, true)},
	}
	times := make([][]float64, len(cases))
	for range 11 {
		for i, c := range cases {
			times[i] = append(times[i], dropTime(b, c.attach))
		}
	}
	for i, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			slices.Sort(times[i])
			slices.Sort(times[0])
			b.ReportMetric(times[i][len(times[i])/2], "cpu-ns/drop")
			b.ReportMetric(times[i][len(times[i])/2]-times[0][len(times[0])/2], "added-ns/drop")
		})
	}
}

// drops is how many datagrams dropTime sends.
const drops = 50_000

// dropTime attaches (unless nil), sends drops datagrams to a closed UDP
// port of 127.0.0.1 from one thread and returns its CPU time per datagram.
func dropTime(b *testing.B, attach func() (*prog.Link, error)) float64 {
	if attach != nil {
		l, err := attach()
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	closed := c.LocalAddr().(*net.UDPAddr)
	c.Close()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrInet4{Port: closed.Port, Addr: [4]byte{127, 0, 0, 1}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	msg := []byte("x")
	var t0, t1 unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
	for range drops {
		unix.Sendto(fd, msg, 0, to)
	}
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
	return float64(t1.Nano()-t0.Nano()) / drops
}
