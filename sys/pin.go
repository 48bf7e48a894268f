package sys

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds BPF_OBJ_PIN and BPF_OBJ_GET, and the checks every pin
// path passes before the kernel sees it.

// ObjAttr is union bpf_attr for BPF_OBJ_PIN and BPF_OBJ_GET, fields as the uapi names them.
type ObjAttr struct {
	Pathname  Pointer
	BPFFD     uint32
	FileFlags uint32
	PathFD    int32 // 6.5, with BPF_F_PATH_FD
	_         [AttrSize - 20]byte
}

// ObjPin is BPF_OBJ_PIN: it pins BPFFD at Pathname in a BPF file system.
func ObjPin(a *ObjAttr) error {
	return do(unix.BPF_OBJ_PIN, unsafe.Pointer(a), a.describe, pinHint)
}

// ObjGet is BPF_OBJ_GET: it opens the object pinned at Pathname.
func ObjGet(a *ObjAttr) (int, error) {
	return callFD(unix.BPF_OBJ_GET, unsafe.Pointer(a), a.describe, pinHint)
}

func (a *ObjAttr) describe() string {
	return fmt.Sprintf("pathname=%q bpf_fd=%d file_flags=%#x",
		cString(a.Pathname), a.BPFFD, a.FileFlags)
}

func pinHint(_ int, errno unix.Errno) string {
	if errno == unix.EPERM {
		return "the path's permissions in the BPF file system refuse it"
	}
	return ""
}

// BPF_FS_MAGIC is a BPF file system's statfs(2) type (linux/magic.h).
const BPF_FS_MAGIC = 0xcafe4a11

// BPFFSPath checks that path names an entry in a directory of a BPF file
// system and returns it as the kernel should get it: the directory with
// links and ".." resolved, then the entry's name. Pins go through it, so
// that "/sys/fs/bpf/../../tmp/x" reaches, or deletes, no file elsewhere.
func BPFFSPath(path string) (string, error) {
	if _, err := StringPointer(path); err != nil {
		return "", err
	}
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("sys: pin path %q: names no entry of a directory: %w", path, unix.EINVAL)
	}
	real, err := filepath.EvalSymlinks(cmp.Or(dir, "."))
	if err != nil {
		return "", fmt.Errorf("sys: pin path %q: %w", path, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(real, &st); err != nil {
		return "", fmt.Errorf("sys: pin path %q: statfs %s: %w", path, real, err)
	}
	if uint32(st.Type) != BPF_FS_MAGIC {
		return "", fmt.Errorf("sys: pin path %q: %s is not on a BPF file system "+
			"(mount one: mount -t bpf bpf /sys/fs/bpf): %w", path, real, unix.EINVAL)
	}
	return filepath.Join(real, name), nil
}

// objPath is the attr for BPF_OBJ_PIN (of fd) or BPF_OBJ_GET at path,
// checked and resolved by BPFFSPath.
func objPath(path string, fd int) (*ObjAttr, error) {
	real, err := BPFFSPath(path)
	if err != nil {
		return nil, err
	}
	p, _ := StringPointer(real)
	return &ObjAttr{Pathname: p, BPFFD: uint32(arg32(fd))}, nil
}

// Pin is BPF_OBJ_PIN of fd at path, checked by BPFFSPath.
func Pin(fd int, path string) error {
	attr, err := objPath(path, fd)
	if err != nil {
		return err
	}
	return ObjPin(attr)
}

// ObjKind is the kind of a BPF object, as the name of its file's
// anonymous inode says it ("anon_inode:bpf-map").
type ObjKind string

// The kinds of object that can be pinned and opened again.
const (
	ObjMap  ObjKind = "map"  // a map: mapfd.Open
	ObjProg ObjKind = "prog" // a program: prog.Open
	ObjLink ObjKind = "link" // a link, which keeps its program attached
)

// OpenPinned is BPF_OBJ_GET of the pin at path, checked by BPFFSPath, for
// an object of kind want. An object of another kind is refused (EINVAL):
// its info, read as want's, would be garbage.
func OpenPinned(path string, want ObjKind) (int, error) {
	attr, err := objPath(path, 0)
	if err != nil {
		return -1, err
	}
	fd, err := ObjGet(attr)
	if err != nil {
		return -1, err
	}
	if k, err := KindOf(fd); k != want {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("sys: a BPF %s is pinned there, not a %s: %w", k, want, unix.EINVAL)
		}
		return -1, err
	}
	return fd, nil
}

// Unpin removes the pin at path, checked by BPFFSPath, with unlink(2): a
// directory is refused (EISDIR), never removed.
func Unpin(path string) error {
	real, err := BPFFSPath(path)
	if err != nil {
		return err
	}
	args := func() string { return fmt.Sprintf("%q", real) }
	_, err = traced("unlink", args, func() (int, error) { return 0, unix.Unlink(real) })
	return sysErr("unlink "+real, err)
}

// KindOf is the kind of the BPF object fd refers to, from the name of its
// anonymous inode ("anon_inode:bpf-map") in /proc/self/fd.
func KindOf(fd int) (ObjKind, error) {
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", fmt.Errorf("sys: kind of fd %d: %w", fd, err)
	}
	kind, ok := strings.CutPrefix(target, "anon_inode:bpf")
	if !ok || len(kind) < 2 {
		return "", fmt.Errorf("sys: fd %d is %s, not a BPF object: %w", fd, target, unix.EINVAL)
	}
	return ObjKind(kind[1:]), nil
}
