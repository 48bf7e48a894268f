package perfring_test

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/perfring"
	"github.com/bpfkit/bpfkit/sys"
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

// drainTime is what a reader gets, once the producer is done, to read what
// the kernel woke it for, and again before the flush is retried.
const drainTime = 50 * time.Millisecond

type benchConfig struct {
	name      string
	ringbuf   bool
	ring      int
	watermark int
	records   int // the producer's getppid calls; 0: produced
}

var rounds = flag.Int("rounds", 7, "BenchmarkRead: runs of each reader per configuration, alternating")

// BenchmarkRead: a producer process makes 2,000,000 getppid calls; a program
// on sys_enter_getppid sends a 64-byte record for each; the reader counts
// samples and losses. Then one more record on each CPU, from this process,
// makes the kernel report losses not yet reported, and received + lost must
// equal what was sent. Each configuration runs with bpfkit's reader
// (ReadFunc; and, at a watermark and for the ring buffer, Read too, as
// bpfkit-read) and, when gcc and libbpf-dev are installed, with libbpf's
// (testdata/libbpf_reader.c), -rounds times each, alternating and changing
// which goes first, so that a noisy machine slows all alike. Reported per
// run: records received per second, lost, the consumer's CPU time per
// record (getrusage of the reading process; the producer is another), and,
// for bpfkit, allocations per record; then, as .../median, the medians and
// their ratio to libbpf's (x-libbpf; read- for Read's). The ratio is of the
// medians, not the median of each round's ratio: the kernel wakes the
// reader on the producer's CPU in some runs and not in others, which
// halves or doubles either reader's cost, and the runs of a round do not
// share that draw. The ring buffer has no loss records: there the program
// counts the outputs that failed.
func BenchmarkRead(b *testing.B) {
	testutil.RequireRoot(b)
	var configs []benchConfig
	for _, ring := range []int{256 << 10, 4 << 20} {
		size := fmt.Sprintf("%dKiB", ring>>10)
		configs = append(configs,
			benchConfig{"perf/" + size + "/every-record", false, ring, 0, 0},
			benchConfig{"perf/" + size + "/watermark-64KiB", false, ring, 64 << 10, 0},
			benchConfig{"ringbuf/" + size, true, ring, 0, 0})
	}
	withLibbpf := libbpfReader(b) != ""
	if !withLibbpf {
		b.Log("gcc or libbpf-dev is missing: no libbpf reader to compare with")
	}
	for _, c := range configs {
		impls := []string{"bpfkit"}
		if c.ringbuf || c.watermark > 0 {
			impls = append(impls, "bpfkit-read")
		}
		if withLibbpf {
			impls = append(impls, "libbpf")
		}
		cpu := map[string][]float64{}
		lost := map[string]float64{}
		for round := range *rounds {
			for k := range impls {
				impl := impls[(k+round)%len(impls)]
				b.Run(c.name+"/"+impl, func(b *testing.B) {
					for b.Loop() {
						r := runScenario(b, c, impl)
						cpu[impl] = append(cpu[impl], r.cpuPerRecord)
						lost[impl] = max(lost[impl], r.lost)
					}
				})
			}
		}
		// The medians, as a benchmark line of their own.
		b.Run(c.name+"/median", func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(0, "ns/op")
			for _, impl := range impls {
				prefix := strings.TrimPrefix(impl+"-", "bpfkit-") // "", "read-", "libbpf-"
				b.ReportMetric(median(cpu[impl]), prefix+"cpu-ns/record")
				b.ReportMetric(lost[impl], prefix+"max-lost")
				if withLibbpf && impl != "libbpf" {
					b.ReportMetric(median(cpu[impl])/median(cpu["libbpf"]), prefix+"x-libbpf")
				}
			}
		})
	}
}

// BenchmarkTuning measures what the reader's one reach into the Go
// runtime buys over a plain epoll loop: runtime.goyield every 8 ms
// (yield.go), so that sysmon finds the reader passing through the
// scheduler and leaves its P alone. It runs the scenario of BenchmarkRead,
// read by ReadFunc, without yielding ("plain") and with ("yield"), -rounds
// times each, alternating; with GOMAXPROCS as it is and 1. Reported as
// .../median: each variant's median CPU time per record, and the median of
// yield's ratios to plain's in the same round (x-plain): other work on the
// machine comes and goes, and the runs of a round are close in time.
func BenchmarkTuning(b *testing.B) {
	testutil.RequireRoot(b)
	// Rings of 4 MiB, which lose few records: a reader that falls behind
	// and loses many spends a different CPU time per record, by chance.
	configs := []benchConfig{
		{"perf/every-record", false, 4 << 20, 0, 300_000},
		{"perf/watermark-64KiB", false, 4 << 20, 64 << 10, 2_000_000},
		{"ringbuf", true, 4 << 20, 0, 1_000_000},
	}
	variants := []string{"plain", "yield"}
	for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
		for _, c := range configs {
			prefix := fmt.Sprintf("procs-%d/%s/", procs, c.name)
			cpu := map[string][]float64{}
			for round := range *rounds {
				for k := range variants {
					v := variants[(k+round)%len(variants)]
					b.Run(prefix+v, func(b *testing.B) {
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
						defer perfring.SetYield(v == "yield")()
						for b.Loop() {
							r := runScenario(b, c, "bpfkit")
							cpu[v] = append(cpu[v], r.cpuPerRecord)
						}
					})
				}
			}
			b.Run(prefix+"median", func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(0, "ns/op")
				var ratios []float64 // of runs of the same round, close in time
				for i, plain := range cpu["plain"] {
					ratios = append(ratios, cpu["yield"][i]/plain)
				}
				b.ReportMetric(median(cpu["plain"]), "plain-cpu-ns/record")
				b.ReportMetric(median(cpu["yield"]), "yield-cpu-ns/record")
				b.ReportMetric(median(ratios), "yield-x-plain")
			})
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var libbpf struct {
	once sync.Once
	path string
	err  error
}

// libbpfReader builds testdata/libbpf_reader.c once.
func libbpfReader(b *testing.B) string {
	libbpf.once.Do(func() {
		dir, err := os.MkdirTemp("", "bpfkit-libbpf-")
		if err != nil {
			return
		}
		path := filepath.Join(dir, "libbpf_reader")
		out, err := exec.Command("gcc", "-O2", "-o", path, "testdata/libbpf_reader.c", "-lbpf").CombinedOutput()
		if err != nil {
			b.Logf("building the libbpf reader: %v\n%s", err, out)
			return
		}
		libbpf.path = path
	})
	return libbpf.path
}

// consumer is one reader under test: started before the producer, it reads
// until stopped and says what it got.
type consumer interface {
	// readWhile reads until done is closed, and then until the rings are
	// drained.
	readWhile(done <-chan struct{})
	// finish reads the flush records and reports everything.
	finish() (samples, lost uint64, cpu time.Duration, allocs uint64)
}

type result struct{ cpuPerRecord, lost float64 }

func runScenario(b *testing.B, c benchConfig, impl string) result {
	useLibbpf := impl == "libbpf"
	var out *mapfd.Map
	if c.ringbuf {
		out = ringbufMap(b, c.ring)
	} else {
		out = perfArray(b)
	}
	var cons consumer
	if useLibbpf {
		cons = startLibbpf(b, out, c)
	} else {
		cons = startBpfkit(b, out, c, impl == "bpfkit-read")
	}
	cmd := exec.Command(os.Args[0])
	sent := cmp.Or(c.records, produced)
	cmd.Env = append(os.Environ(), "BPFKIT_PRODUCER="+strconv.Itoa(sent))
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	e := emitter(b, out, cmd.Process.Pid, c.ringbuf)
	// The setup's garbage is not the reader's: collect it now, so that no
	// collection started by it runs during the reading.
	runtime.GC()
	done := make(chan struct{})
	var elapsed time.Duration // the producer's run: records/s is its rate
	start := time.Now()
	stdin.Write([]byte{1})
	go func() { cmd.Wait(); elapsed = time.Since(start); close(done) }()
	cons.readWhile(done)
	<-done

	// Flush: one record on each CPU from this process reports the losses
	// the kernel has not reported yet. A flush record that finds its ring
	// still full is lost itself and reports nothing: then give the reader
	// (libbpf's, which reads on meanwhile) time, and flush again.
	e.follow(os.Getpid())
	cpus, _ := sys.OnlineCPUs()
	var flushed, flushLost uint64
	for range 5 {
		before := e.failed()
		for _, cpu := range cpus {
			getppidOn(b, cpu, 1)
		}
		failed := e.failed() - before
		flushed, flushLost = flushed+uint64(len(cpus))-failed, flushLost+failed
		if failed == 0 {
			break
		}
		time.Sleep(drainTime)
	}
	samples, lost, cpu, allocs := cons.finish()
	if c.ringbuf {
		lost = e.failed()
	} else if lost != e.failed() {
		b.Fatalf("the kernel reported %d lost, the program saw %d outputs fail", lost, e.failed())
	}
	received, lost := samples-flushed, lost-flushLost
	if received+lost != uint64(sent) {
		b.Fatalf("received %d + lost %d != sent %d", received, lost, sent)
	}
	b.ReportMetric(float64(received)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(received, 1)), "cpu-ns/record")
	if !useLibbpf {
		b.ReportMetric(float64(allocs)/float64(max(received, 1)), "allocs/record")
	}
	return result{float64(cpu.Nanoseconds()) / float64(max(received, 1)), float64(lost)}
}

// bpfkitConsumer reads in this process.
type bpfkitConsumer struct {
	r interface {
		ReadFunc(context.Context, func(perfring.Record) error) (int, error)
		Read(context.Context) (perfring.Record, error)
	}
	viaRead        bool // Read, one record per call, rather than ReadFunc
	setDeadline    func(time.Time)
	samples, lost  uint64
	count          func(perfring.Record) error
	ru0, ru1       unix.Rusage
	mallocs0, used uint64
}

func startBpfkit(b *testing.B, out *mapfd.Map, c benchConfig, viaRead bool) *bpfkitConsumer {
	bc := &bpfkitConsumer{viaRead: viaRead}
	if c.ringbuf {
		r, err := perfring.NewRingBufReader(out)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		bc.r, bc.setDeadline = r, r.SetDeadline
	} else {
		r, err := perfring.NewPerfReader(out, perfring.Options{RingBytes: c.ring, Watermark: c.watermark})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		bc.r, bc.setDeadline = r, r.SetDeadline
	}
	bc.count = func(rec perfring.Record) error {
		if rec.Sample != nil {
			bc.samples++
		} else {
			bc.lost += rec.Lost
		}
		return nil
	}
	return bc
}

// readWhile measures from its start, as libbpf_reader does: the producer's
// start and the program's load are not the reader's cost.
func (bc *bpfkitConsumer) readWhile(done <-chan struct{}) {
	// When the producer is done, give the reader drainTime, then stop it.
	go func() {
		<-done
		bc.setDeadline(time.Now().Add(drainTime))
	}()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	bc.mallocs0 = ms.Mallocs
	unix.Getrusage(unix.RUSAGE_SELF, &bc.ru0)
	bc.readAll()
	unix.Getrusage(unix.RUSAGE_SELF, &bc.ru1)
	runtime.ReadMemStats(&ms)
	bc.used = ms.Mallocs - bc.mallocs0
}

// readAll reads until the deadline.
func (bc *bpfkitConsumer) readAll() {
	for {
		if bc.viaRead {
			rec, err := bc.r.Read(context.Background())
			if err != nil {
				return
			}
			bc.count(rec)
		} else if _, err := bc.r.ReadFunc(context.Background(), bc.count); err != nil {
			return
		}
	}
}

func (bc *bpfkitConsumer) finish() (uint64, uint64, time.Duration, uint64) {
	bc.setDeadline(time.Now().Add(drainTime))
	bc.readAll()
	cpu := time.Duration(bc.ru1.Utime.Nano() + bc.ru1.Stime.Nano() - bc.ru0.Utime.Nano() - bc.ru0.Stime.Nano())
	return bc.samples, bc.lost, cpu, bc.used
}

// libbpfConsumer is testdata/libbpf_reader reading the same map, pinned.
type libbpfConsumer struct {
	b    *testing.B
	cmd  *exec.Cmd
	out  *bufio.Reader
	path string
}

func startLibbpf(b *testing.B, m *mapfd.Map, c benchConfig) *libbpfConsumer {
	path := filepath.Join(testutil.BPFFS(b), "events")
	if err := m.Pin(path); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mapfd.Unpin(path) })
	args := []string{"ringbuf", path}
	if !c.ringbuf {
		args = []string{"perf", path, strconv.Itoa(c.ring), strconv.Itoa(c.watermark)}
	}
	cmd := exec.Command(libbpf.path, args...)
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lc := &libbpfConsumer{b: b, cmd: cmd, out: bufio.NewReader(stdout), path: path}
	if line, err := lc.out.ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("libbpf reader: %q %v", line, err)
	}
	return lc
}

// readWhile gives the reader, after the producer is done, the drainTime that
// bpfkit's gets to drain what the kernel woke it for: a flush record
// written to a ring that is still full is lost itself, and the losses
// before it then go unreported.
func (lc *libbpfConsumer) readWhile(done <-chan struct{}) {
	<-done
	time.Sleep(drainTime)
}

func (lc *libbpfConsumer) finish() (uint64, uint64, time.Duration, uint64) {
	time.Sleep(150 * time.Millisecond) // it polls every 100 ms: let it take the flush records
	lc.cmd.Process.Signal(syscall.SIGUSR1)
	line, _ := lc.out.ReadString('\n')
	lc.cmd.Wait()
	var samples, lost uint64
	var cpu int64
	if _, err := fmt.Sscanf(line, "%d received %d lost %d cpu-ns", &samples, &lost, &cpu); err != nil {
		lc.b.Fatalf("libbpf reader said %q: %v", line, err)
	}
	return samples, lost, time.Duration(cpu), 0
}

func ringbufMap(b *testing.B, size int) *mapfd.Map {
	m, err := mapfd.Create(mapfd.Spec{Type: mapfd.RingBuf, MaxEntries: uint32(size), Name: "ring"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}
