package perfring_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"golang.org/x/sys/unix"
)

// produce is the producer process: it waits for a byte on stdin, then calls
// getppid n times, as fast as it can.
func produce(n string) {
	count, _ := strconv.Atoi(n)
	var b [1]byte
	os.Stdin.Read(b[:])
	for range count {
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	}
}

const produced = 2_000_000

// reader is what the benchmark reads with: a perf reader or a ring buffer
// reader.
type reader interface {
	ReadFunc(context.Context, func(perfring.Record) error) (int, error)
	SetDeadline(time.Time)
	Close() error
}

// BenchmarkRead: a producer process makes 2,000,000 getppid calls; a program
// on sys_enter_getppid sends a 64-byte record for each; the reader counts
// samples and losses. Then one more record on each CPU, from this process,
// makes the kernel report losses not yet reported, and received + lost must
// equal what was sent. Reported per configuration: records received per
// second, lost, the consumer's CPU time per record (getrusage of this
// process; the producer is another), and allocations per record.
func BenchmarkRead(b *testing.B) {
	testutil.RequireRoot(b)
	type config struct {
		name      string
		ringbuf   bool
		ring      int
		watermark int
	}
	var configs []config
	for _, ring := range []int{256 << 10, 4 << 20} {
		size := fmt.Sprintf("%dKiB", ring>>10)
		configs = append(configs,
			config{"perf/" + size + "/every-record", false, ring, 0},
			config{"perf/" + size + "/watermark-64KiB", false, ring, 64 << 10},
			config{"ringbuf/" + size, true, ring, 0})
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				runProducer(b, c.ringbuf, c.ring, c.watermark)
			}
		})
	}
}

func runProducer(b *testing.B, ringbuf bool, ring, watermark int) {
	var out *mapfd.Map
	var r reader
	var err error
	if ringbuf {
		out = ringbufMap(b, ring)
		r, err = perfring.NewRingBufReader(out)
	} else {
		out = perfArray(b)
		r, err = perfring.NewPerfReader(out, perfring.Options{RingBytes: ring, Watermark: watermark})
	}
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BPFKIT_PRODUCER="+strconv.Itoa(produced))
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	e := emitter(b, out, cmd.Process.Pid, ringbuf)

	var samples, lost uint64
	count := func(rec perfring.Record) error {
		if rec.Sample != nil {
			samples++
		} else {
			lost += rec.Lost
		}
		return nil
	}
	var ru0, ru1 unix.Rusage
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	start := time.Now()
	stdin.Write([]byte{1})
	// When the producer is done, give the reader 50 ms to drain, then stop it.
	go func() {
		cmd.Wait()
		r.SetDeadline(time.Now().Add(50 * time.Millisecond))
	}()
	ctx := context.Background()
	for {
		if _, err := r.ReadFunc(ctx, count); err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	runtime.ReadMemStats(&ms1)
	received := samples

	// Flush: one record on each CPU from this process reports the losses
	// the kernel has not reported yet.
	e.follow(os.Getpid())
	cpus, _ := mapfd.OnlineCPUs()
	for _, cpu := range cpus {
		getppidOn(b, cpu, 1)
	}
	r.SetDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		if _, err := r.ReadFunc(ctx, count); err != nil {
			break
		}
	}
	if ringbuf {
		lost = e.failed() // the ring buffer has no loss records: the program counts its failed outputs
	} else if lost != e.failed() {
		b.Fatalf("the kernel reported %d lost, the program saw %d outputs fail", lost, e.failed())
	}
	if flushed := samples - received; samples+lost != produced+flushed {
		b.Fatalf("received %d + lost %d != sent %d", samples-flushed, lost, produced)
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(received)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(received, 1)), "cpu-ns/record")
	sysTime := time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(sysTime.Nanoseconds())/float64(max(received, 1)), "sys-ns/record")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(max(received, 1)), "allocs/record")
}

func ringbufMap(b *testing.B, size int) *mapfd.Map {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: uint32(size), Name: "ring"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}
