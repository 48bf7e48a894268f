package tests

import (
	"bufio"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if sizes := os.Getenv("BPFKIT_TEST_WRITER"); sizes != "" {
		os.Exit(writer(sizes))
	}
	if n := os.Getenv("BPFKIT_TEST_UDP_DROPS"); n != "" {
		os.Exit(udpDropper(n))
	}
	os.Exit(testutil.LeakMain(m))
}

// writer is this binary run as a workload (BPFKIT_TEST_WRITER=100,5000,...):
// it says "ready" on stdout if BPFKIT_TEST_SAY_READY is set (startWorkload),
// and once a line arrives on stdin it calls getppid BPFKIT_TEST_GETPPID times,
// opens /dev/null and /dev/zero, reads 123 bytes of zeros, maps 12289
// bytes (mmapArgs), writes those many bytes of 'x' to /dev/null, one
// write(2) each, BPFKIT_TEST_GAP apart, and exits. With
// BPFKIT_TEST_ACROSS_CPUS set, each write is made on the next CPU it may
// run on, round the CPUs.
func writer(sizes string) int {
	if os.Getenv("BPFKIT_TEST_SAY_READY") != "" {
		os.Stdout.WriteString("ready\n")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	n, _ := strconv.Atoi(os.Getenv("BPFKIT_TEST_GETPPID"))
	for range n {
		syscall.Getppid()
	}
	gap, _ := time.ParseDuration(os.Getenv("BPFKIT_TEST_GAP"))
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		return 1
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		return 1
	}
	buf := make([]byte, 1<<20)
	zero.Read(buf[:123])
	if _, err := syscall.Mmap(-1, 0, 12289, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS); err != nil {
		return 1
	}
	for i := range buf {
		buf[i] = 'x'
	}
	next := acrossCPUs(os.Getenv("BPFKIT_TEST_ACROSS_CPUS") != "")
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n > len(buf) {
			return 1
		}
		time.Sleep(gap)
		next()
		null.Write(buf[:n])
	}
	return 0
}

// acrossCPUs returns a function that moves the calling thread, locked to
// it, to the next CPU it may run on at each call; if not across, one that
// does nothing.
func acrossCPUs(across bool) func() {
	var allowed unix.CPUSet
	if !across || unix.SchedGetaffinity(0, &allowed) != nil {
		return func() {}
	}
	runtime.LockOSThread()
	var cpus []int
	for cpu := range 1024 {
		if allowed.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	i := 0
	return func() {
		var one unix.CPUSet
		one.Set(cpus[i%len(cpus)])
		unix.SchedSetaffinity(0, &one)
		i++
	}
}

// udpDropper is this binary run as another process that drops packets
// (BPFKIT_TEST_UDP_DROPS=n): it sends n datagrams to a closed UDP port of
// 127.0.0.1 and exits.
func udpDropper(n string) int {
	count, err := strconv.Atoi(n)
	if err != nil {
		return 1
	}
	closed, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	to := closed.LocalAddr()
	closed.Close()
	s, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	for range count {
		s.WriteTo([]byte("x"), to)
	}
	return 0
}
