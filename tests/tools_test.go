package tests

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// The tools are tested as their users run them: the static binaries of
// cmd/, their output, their exit status and what they leave behind.

var toolsDir struct {
	once sync.Once
	dir  string
	err  error
}

// toolPath is the binary of cmd/name: from BPFKIT_TOOLS (the VMs' initramfs
// holds them prebuilt), else built once per run with go build.
func toolPath(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("BPFKIT_TOOLS"); d != "" {
		return filepath.Join(d, name)
	}
	toolsDir.once.Do(func() {
		toolsDir.dir, toolsDir.err = os.MkdirTemp("", "bpfkit-tools")
		if toolsDir.err != nil {
			return
		}
		os.Chmod(toolsDir.dir, 0o755) // TestToolsNeedRoot runs them as nobody
		// -buildvcs=auto records the checkout's revision for -version where
		// the go command can (not in a git worktree), whatever GOFLAGS says.
		cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", toolsDir.dir+"/", "../cmd/...")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
		if out, err := cmd.CombinedOutput(); err != nil {
			toolsDir.err = fmt.Errorf("go build ../cmd/...: %w\n%s", err, out)
		}
	})
	if toolsDir.err != nil {
		t.Fatalf("building the tools: %v", toolsDir.err)
	}
	return filepath.Join(toolsDir.dir, name)
}

// running is a tool started by startTool.
type running struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err lockedBuffer
	done     chan struct{}
	status   int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startTool runs the tool with args in the background.
func startTool(t *testing.T, name string, args ...string) *running {
	t.Helper()
	return startCmd(t, exec.Command(toolPath(t, name), args...))
}

// startCmd runs a tool's command in the background, its stdout and stderr
// kept in the running's buffers where cmd sends them nowhere else.
func startCmd(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	r := &running{t: t, cmd: cmd, done: make(chan struct{})}
	if r.cmd.Stdout == nil {
		r.cmd.Stdout = &r.out
	}
	r.cmd.Stderr = &r.err
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.cmd.Wait()
		r.status = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// waitFor waits until the tool's output, or with -json its stderr, holds s
// (it has attached, say),
// failing the test if it exits or takes longer than a minute.
func (r *running) waitFor(s string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	printed := func() bool {
		return strings.Contains(r.out.String(), s) || strings.Contains(r.err.String(), s)
	}
	for !printed() {
		select {
		case <-r.done:
			if printed() { // then exited, between the look and the wait
				return
			}
			r.t.Fatalf("%s exited %d before printing %q:\n%s%s", r.cmd.Path, r.status, s, r.out.String(), r.err.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s did not print %q in a minute:\n%s%s", r.cmd.Path, s, r.out.String(), r.err.String())
		}
	}
}

// stop sends SIGINT, as Ctrl-C does, and returns the output once the tool
// has exited 0.
func (r *running) stop() string {
	r.t.Helper()
	r.cmd.Process.Signal(syscall.SIGINT)
	return r.wait()
}

// wait returns the output once the tool has exited 0.
func (r *running) wait() string {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		r.t.Fatalf("%s did not exit within a minute:\n%s%s", r.cmd.Path, r.out.String(), r.err.String())
	}
	if r.status != 0 {
		r.t.Fatalf("%s exited %d:\n%s%s", r.cmd.Path, r.status, r.out.String(), r.err.String())
	}
	return r.out.String()
}

// runTool runs a tool to its end and returns its stdout, stderr and exit
// status.
func runTool(t *testing.T, name string, args ...string) (string, string, int) {
	t.Helper()
	return runCmd(t, exec.Command(toolPath(t, name), args...))
}

// runCmd is runTool with a command of one.
func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	r := startCmd(t, cmd)
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatalf("%q did not exit within a minute", cmd.Args)
	}
	return r.out.String(), r.err.String(), r.status
}

// jsonLines decodes each line of a tool's -json output into a T, failing
// the test on a line that is not a JSON object.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var vs []T
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil || !strings.HasPrefix(line, "{") {
			t.Fatalf("not a JSON object: %q (%v) in:\n%s", line, err, out)
		}
		vs = append(vs, v)
	}
	return vs
}

// histSlot is a slot of a log2 histogram in the tools' -json.
type histSlot struct{ From, To, Count uint64 }

// jsonSlots sums histograms of -json as histSlots reads those of text.
func jsonSlots(hists ...[]histSlot) string {
	got := map[string]int{}
	for _, h := range hists {
		for _, s := range h {
			got[fmt.Sprintf("%d -> %d", s.From, s.To)] += int(s.Count)
		}
	}
	return fmt.Sprint(got)
}

// dropUDP sends n datagrams to a port of 127.0.0.1 nothing listens on:
// the kernel frees each in its UDP receive path (reason NO_SOCKET on 5.17+).
// It returns once they were received: a loaded (emulated) kernel leaves
// some of them to ksoftirqd, after the sends returned, so a last datagram
// to the sender itself, which waits in the same backlog, is read first.
func dropUDP(t *testing.T, n int) {
	t.Helper()
	probe, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := probe.LocalAddr()
	probe.Close()
	sender, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range n {
		if _, err := sender.WriteTo([]byte("drop me"), closed); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sender.WriteTo([]byte("last"), sender.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	sender.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := sender.ReadFrom(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
}

// udpDropSite finds, in lines of "count symbol+0xoff" (the count in
// column countCol), the UDP receive site and its count.
func udpDropSite(out string, countCol int) (site string, n int) {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) <= countCol || !strings.Contains(f[len(f)-1], "udp") || !strings.Contains(f[len(f)-1], "rcv") {
			continue
		}
		c, err := strconv.Atoi(f[countCol])
		if err == nil && c > n {
			site, n = f[len(f)-1], c
		}
	}
	return site, n
}

// writerProcess starts this test binary as a workload that, once write is
// called, makes one write(2) of each size to /dev/null and exits.
func writerProcess(t *testing.T, sizes ...int) (pid int, write func()) {
	return workload(t, 0, sizes...)
}

// workload is writerProcess calling getppid n times before it writes.
func workload(t *testing.T, getppid int, sizes ...int) (pid int, write func()) {
	return spacedWorkload(t, getppid, 0, sizes...)
}

// spacedWorkload is workload with gap between the writes.
func spacedWorkload(t *testing.T, getppid int, gap time.Duration, sizes ...int) (pid int, write func()) {
	t.Helper()
	return startWorkload(t, workloadCmd(getppid, gap, sizes...))
}

// startWorkload is startWaiting for a command of workloadCmd: it returns
// once the process has said it is ready, its runtime started. A tool
// started before that would see the runtime's own system calls in flight
// as it attaches: an mmap entered before the tool's program on
// raw_syscalls:sys_exit is attached, with the one on sys_enter already
// there, counts its entry and not its return.
func startWorkload(t *testing.T, w *exec.Cmd) (pid int, run func()) {
	t.Helper()
	w.Env = append(w.Env, "BPFKIT_TEST_SAY_READY=1")
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pid, run = startWaiting(t, w)
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("the workload said %q, not that it is ready", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("the workload did not say it is ready within a minute")
	}
	return pid, run
}

// workloadCmd is the command of workload's process, for a caller to add
// to its environment.
func workloadCmd(getppid int, gap time.Duration, sizes ...int) *exec.Cmd {
	var list []string
	for _, s := range sizes {
		list = append(list, strconv.Itoa(s))
	}
	w := exec.Command(os.Args[0])
	w.Env = append(os.Environ(), "BPFKIT_TEST_WRITER="+strings.Join(list, ","),
		"BPFKIT_TEST_GETPPID="+strconv.Itoa(getppid), "BPFKIT_TEST_GAP="+gap.String())
	return w
}

// startWaiting starts w, a workload that waits for a line on its stdin,
// and returns its pid and run, which sends the line and waits for w to
// exit 0.
func startWaiting(t *testing.T, w *exec.Cmd) (pid int, run func()) {
	t.Helper()
	stdin, err := w.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	return w.Process.Pid, func() {
		fmt.Fprintln(stdin)
		if err := w.Wait(); err != nil {
			t.Fatalf("%s: %v", w.Path, err)
		}
	}
}

// writerSlots is where the writes of writerProcess(1, 100, 100, 100,
// 5000, 5000, 70000) land in bcc's log2 slots, as histSlots prints them.
const writerSlots = "map[0 -> 1:1 4096 -> 8191:2 64 -> 127:3 65536 -> 131071:1]"

// histSlots reads the rows of one log2 histogram (from its header to the
// first line that is not a row) into "lo -> hi" and count, non-zero only.
func histSlots(text string) string {
	got := map[string]int{}
	for _, line := range strings.Split(text, "\n")[1:] {
		lo, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || !strings.Contains(lo, "->") || len(f) == 0 {
			break
		}
		if n, _ := strconv.Atoi(f[0]); n > 0 {
			got[strings.Join(strings.Fields(lo), " ")] = n
		}
	}
	return fmt.Sprint(got)
}

// waitOutput waits up to 10 s for the tool's output to satisfy ok (a
// perf ring is read when the kernel wakes the reader).
func waitOutput(r *running, ok func(string) bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !ok(r.out.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// perfCounter opens a counting perf event on tracepoint group:name, as a
// perf user such as `perf stat -e group:name` does, with an ftrace filter
// unless filter is "": for thread tid (0: the calling thread) on any CPU,
// or with tid -1 for every task, one event per online CPU. count returns
// what the events have counted since.
func perfCounter(t *testing.T, group, name, filter string, tid int) (count func() uint64) {
	t.Helper()
	id, err := tracefs.TracepointID(group, name)
	if err != nil {
		t.Fatal(err)
	}
	cpus := []int{-1}
	if tid == -1 {
		if cpus, err = sys.OnlineCPUs(); err != nil {
			t.Fatal(err)
		}
	}
	var fds []int
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_TRACEPOINT,
			Config: id,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Bits:   unix.PerfBitDisabled, // enabled once filtered: the ioctl's own call would count
		}

		fd, err := unix.PerfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			t.Fatalf("perf_event_open(%s:%s, cpu %d): %v", group, name, cpu, err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if filter != "" {
			b := append([]byte(filter), 0)
			if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_SET_FILTER,
				uintptr(unsafe.Pointer(&b[0]))); errno != 0 {
				t.Fatalf("PERF_EVENT_IOC_SET_FILTER %q: %v", filter, errno)
			}
		}
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			t.Fatalf("PERF_EVENT_IOC_ENABLE: %v", err)
		}
		fds = append(fds, fd)
	}
	return func() uint64 {
		n := uint64(0)
		for _, fd := range fds {
			var b [8]byte
			if k, err := unix.Read(fd, b[:]); err != nil || k != 8 {
				t.Fatalf("reading a perf counter: %d bytes, %v", k, err)
			}
			n += binary.NativeEndian.Uint64(b[:])
		}
		return n
	}
}
