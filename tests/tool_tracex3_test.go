package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// loopDevice attaches a 16 MiB file to a free loop device and returns its
// path and minor number; it is detached when the test ends.
func loopDevice(t testing.TB) (string, int) {
	t.Helper()
	backing, err := os.CreateTemp(t.TempDir(), "loop")
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close()
	if err := backing.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no loop devices: %v", err)
	}
	defer ctl.Close()
	n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/dev/loop%d", n)
	if _, err := os.Stat(path); err != nil { // no devtmpfs node yet
		if err := unix.Mknod(path, unix.S_IFBLK|0o600, int(unix.Mkdev(7, uint32(n)))); err != nil {
			t.Fatal(err)
		}
	}
	dev, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			unix.IoctlSetInt(int(d.Fd()), unix.LOOP_CLR_FD, 0)
			d.Close()
		}
	})
	return path, n
}

// directReads reads n blocks of 4 KiB from path with O_DIRECT, each at its
// own offset: n requests the block layer issues and completes.
func directReads(t testing.TB, path string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := make([]byte, 8192)
	off := 4096 - int(uintptr(unsafe.Pointer(&mem[0]))%4096) // O_DIRECT wants an aligned buffer
	buf := mem[off%4096 : off%4096+4096]
	for i := range n {
		if _, err := f.ReadAt(buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTracex3 makes 50 O_DIRECT reads on a loop device while tracex3
// watches it: the histogram at exit must count exactly 50 requests, each
// issue matched with its completion; with -json, so must the intervals'
// objects together, and the run's object (total) that comes last.
func TestTracex3(t *testing.T) {
	testutil.RequireRoot(t)
	path, minor := loopDevice(t)
	r := startTool(t, "tracex3", "-dev", "7:"+strconv.Itoa(minor), "0.2")
	r.waitFor("Ctrl-C to stop")
	directReads(t, path, 50)
	out := r.stop()
	hist := out[strings.LastIndex(out, "usecs"):]
	total := 0
	for _, line := range strings.Split(hist, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 {
			n, _ := strconv.Atoi(f[4])
			total += n
		}
	}
	if total != 50 {
		t.Fatalf("tracex3 counted %d requests on %s, want 50:\n%s", total, path, hist)
	}
	t.Log("\n" + hist)

	r = startTool(t, "tracex3", "-json", "-dev", "7:"+strconv.Itoa(minor), "0.2")
	r.waitFor("Ctrl-C to stop")
	directReads(t, path, 50)
	out = r.stop()
	type column struct {
		Requests  int
		LatencyUs []histSlot `json:"latency_us"`
		Total     bool
	}
	lines := jsonLines[column](t, out)
	var sum column
	for _, c := range lines[:len(lines)-1] {
		sum.Requests += c.Requests
		sum.LatencyUs = append(sum.LatencyUs, c.LatencyUs...)
		if c.Total {
			t.Fatalf("an interval's object says total:\n%s", out)
		}
	}
	last := lines[len(lines)-1]
	if !last.Total || last.Requests != 50 || sum.Requests != 50 || jsonSlots(last.LatencyUs) != jsonSlots(sum.LatencyUs) {
		t.Fatalf("tracex3 -json: %d requests in the intervals (slots %s), the run's object %+v; want 50 in both, the same slots:\n%s",
			sum.Requests, jsonSlots(sum.LatencyUs), last, out)
	}
}

// TestToolsRejectBadArguments: every tool refuses bad arguments with one
// line and status 2, before loading anything: run as nobody (when the
// test may), before it checks for root too.
func TestToolsRejectBadArguments(t *testing.T) {
	for _, c := range []struct {
		tool string
		args []string
		msg  string
	}{
		{"tracex3", []string{"0"}, "interval \"0\": must be more than zero"},
		{"tracex3", []string{"-1"}, `unknown flag "-1"`},
		{"tracex3", []string{"1", "-2"}, `unknown flag "-2"`},
		{"tracex3", []string{"1", "--", "-2"}, "count \"-2\""},
		{"tracex3", []string{"1", "-dev"}, "flag -dev needs a value"},
		{"tracex3", []string{"1", "2", "3"}, "unexpected argument \"3\""},
		{"tracex3", []string{"-dev", "sda"}, "-dev \"sda\": want MAJOR:MINOR"},
		{"dropmon", []string{"-top", "-1"}, "-top -1: want 1 or more"},
		{"dropmon", []string{"-stacks", "-events"}, "choose one"},
		{"dropmon", []string{"-i", "5"}, `unknown flag "-i"`},
		{"dropmon", []string{"5", "-i\n"}, `unknown flag "-i\n"`},
		{"dropmon", []string{"5", "-top", "0"}, "-top 0: want 1 or more"},
		{"dropmon", []string{"5x"}, "want seconds (1, 0.5) or a duration with its unit"},
		{"dropmon", []string{"86401"}, "interval \"86401\": at most 24h"},
		{"dropmon", []string{"1000000h", "1"}, "interval \"1000000h\": at most 24h"},
		{"dropmon", []string{"-listen", "127.0.0.1"}, "-listen \"127.0.0.1\": want HOST:PORT"},
		{"dropmon", []string{"-listen", ":99999"}, "-listen \":99999\": want HOST:PORT"},
		{"dropmon", []string{"-listen", "localhost:http"}, "the port a number"},
		{"dropmon", []string{"5", "-listen", "a\nb:80"}, `"a\nb:80": the host is neither a name`},
		{"tracex2", []string{"-p", "-3"}, `-p "-3": want a process id from 1 to 4194304`},
		{"tracex2", []string{"-p", "4294967297"}, `-p "4294967297": want a process id`},
		{"tracex4", []string{"-p", "4294967296"}, `-p "4294967296": want a process id`},
		{"tracex5", []string{"5", "-p", "4194305"}, `-p "4194305": want a process id`},
		{"funccount", []string{"vfs_read", "-p", "0"}, `-p "0": want a process id`},
		{"usdt", []string{"/bin/true", "a:b", "-p", "4294967297"}, `"4294967297": want a process`},
		{"tracex4", []string{"1", "0"}, "count \"0\""},
		{"funccount", nil, "no pattern"},
		{"funccount", []string{"vfs_[", "1"}, "syntax error in pattern"},
		{"funccount", []string{"-max", "0", "vfs_read"}, "-max 0: want 1 or more"},
		{"funccount", []string{"1", "2", "3"}, "pattern \"1\" is a number: the interval and count come last"},
		{"funccount", []string{"vfs_read", "1", "2", "3"}, "pattern \"1\" is a number"},
		{"funccount", []string{"0.5s", "vfs_read"}, "pattern \"0.5s\" is a number"},
	} {
		cmd := exec.Command(toolPath(t, c.tool), c.args...)
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, errOut, status := runCmd(t, cmd)
		if status != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%s %q: status %d, stdout %q, stderr %q; want 2 and one line with %q", c.tool, c.args, status, out, errOut, c.msg)
		}
	}
}

// TestDropmonListenBusy: -listen on a port in use is refused (status 1:
// the system's, not a usage error) before anything is loaded, as the
// journal of its bpf(2) calls shows.
func TestDropmonListenBusy(t *testing.T) {
	testutil.RequireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	journal := t.TempDir() + "/journal"
	cmd := exec.Command(toolPath(t, "dropmon"), "-listen", ln.Addr().String(), "1", "1")
	cmd.Env = append(os.Environ(), "BPFKIT_JOURNAL="+journal)
	out, errOut, status := runCmd(t, cmd)
	if status != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("status %d, stdout %q, stderr %q; want 1 and one line saying the address is in use", status, out, errOut)
	}
	b, _ := os.ReadFile(journal)
	if loads := regexp.MustCompile(`(?m)^bpf\((BPF_MAP_CREATE|BPF_PROG_LOAD)`).FindAllString(string(b), -1); len(loads) > 0 {
		t.Fatalf("dropmon loaded %q before finding the port in use:\n%s", loads, b)
	}
}
