package testutil

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LoopDevice attaches a 16 MiB file to a free loop device and returns its
// path and minor number; it is detached when the test ends.
func LoopDevice(t testing.TB) (string, int) {
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

// DirectReads reads n blocks of 4 KiB from path with O_DIRECT, each at its
// own offset: n requests the block layer issues and completes.
func DirectReads(t testing.TB, path string, n int) {
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
