package sys

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mmap maps length bytes of the perf event or BPF map fd at offset, shared,
// as perf and BPF ring buffers are read.
func Mmap(fd int, offset int64, length int, prot int) ([]byte, error) {
	return mmap(fd, offset, length, prot, unix.MAP_SHARED)
}

// MmapReadOnly maps length bytes of the file fd from its start, private
// and read-only. That is how the kernel lets /sys/kernel/btf/vmlinux be
// mapped: 6.16 refuses a shared or writable mapping with EACCES, and older
// kernels refuse any with EINVAL or ENODEV. Munmap unmaps it.
func MmapReadOnly(fd int, length int) ([]byte, error) {
	return mmap(fd, 0, length, unix.PROT_READ, unix.MAP_PRIVATE)
}

func mmap(fd int, offset int64, length, prot, flags int) ([]byte, error) {
	var mem []byte
	_, err := traced("mmap", func() string {
		share := "MAP_SHARED"
		if flags == unix.MAP_PRIVATE {
			share = "MAP_PRIVATE"
		}
		return fmt.Sprintf("NULL, %d, %s, %s, %d, %#x", length, protNames(prot), share, fd, offset)
	}, func() (int, error) {
		var err error
		mem, err = unix.Mmap(arg32(fd), offset, length, prot, flags)
		return int(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))), err // the address, for the journal
	})
	if err != nil {
		if mem != nil { // mapped, but the journal failed
			unix.Munmap(mem)
		}
		return nil, sysErr("mmap", err)
	}
	return mem, nil
}

// Munmap unmaps memory from Mmap.
func Munmap(mem []byte) error {
	args := func() string { return fmt.Sprintf("%p, %d", unsafe.SliceData(mem), len(mem)) }
	_, err := traced("munmap", args, func() (int, error) { return 0, unix.Munmap(mem) })
	return sysErr("munmap", err)
}

// protNames names prot's read and write bits (1 and 2 on every port).
func protNames(prot int) string {
	names := [...]string{"PROT_NONE", "PROT_READ", "PROT_WRITE", "PROT_READ|PROT_WRITE"}
	return names[prot&(unix.PROT_READ|unix.PROT_WRITE)]
}

// Mount is mount(2), for tracefs and bpffs.
func Mount(source, target, fstype string) error {
	args := func() string { return fmt.Sprintf("%q, %q, %q, 0, NULL", source, target, fstype) }
	_, err := traced("mount", args, func() (int, error) {
		return 0, unix.Mount(source, target, fstype, 0, "")
	})
	return withHint(sysErr("mount "+fstype+" at "+target, err), CAP_SYS_ADMIN)
}

// WriteControl appends text to a kernel control file such as kprobe_events
// in one write(2), which the kernel parses as a whole command (without
// O_APPEND, opening would clear the file).
func WriteControl(path, text string) error {
	args := func() string { return fmt.Sprintf("%q, %q", path, text) }
	_, err := traced("write", args, func() (int, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return -1, err
		}
		n, err := f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return n, err
	})
	return sysErr("write "+path, err)
}
