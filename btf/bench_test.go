package btf

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkFind is one lookup as an fentry program's load makes it: open
// the kernel's BTF (mapped where the kernel allows), find vfs_read, close.
// B/op is the memory it allocates; cpu-ns/op the CPU time it takes, which
// on a shared machine says more than the wall time.
func BenchmarkFind(b *testing.B) {
	benchFind(b, func() (*Blob, func(), error) {
		v, err := Vmlinux()
		if err != nil {
			return nil, nil, err
		}
		return v.Blob, func() { v.Close() }, nil
	})
}

// BenchmarkFindRead is BenchmarkFind reading the file as it goes, as on
// kernels that do not let it be mapped (before 6.16).
func BenchmarkFindRead(b *testing.B) {
	benchFind(b, func() (*Blob, func(), error) {
		f, err := os.Open(VmlinuxPath)
		if err != nil {
			return nil, nil, err
		}
		fi, _ := f.Stat()
		blob, err := Open(f, fi.Size(), nil)
		return blob, func() { f.Close() }, err
	})
}

func benchFind(b *testing.B, open func() (*Blob, func(), error)) {
	if _, err := os.Stat(VmlinuxPath); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		blob, done, err := open()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := blob.Find(KindFunc, "vfs_read"); err != nil {
			b.Fatal(err)
		}
		done()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
