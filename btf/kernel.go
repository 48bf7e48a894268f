package btf

import (
	"errors"
	"fmt"
	"os"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// VmlinuxPath is where the kernel shows its own BTF.
const VmlinuxPath = "/sys/kernel/btf/vmlinux"

// ErrNoKernelBTF is the error of a kernel without BTF; it wraps
// sys.ErrNotSupported.
var ErrNoKernelBTF error = noKernelBTF{}

// noKernelBTF is a value, not made at init: a program that never looks
// BTF up (a tracepoint tool) runs no code of this package.
type noKernelBTF struct{}

func (noKernelBTF) Error() string {
	return "btf: this kernel has no BTF (" + VmlinuxPath + " needs CONFIG_DEBUG_INFO_BTF, 5.4), " +
		"which fentry, fexit and tp_btf programs name their target in: " +
		sys.ErrNotSupported.Error()
}

func (noKernelBTF) Unwrap() error { return sys.ErrNotSupported }

// File is vmlinux's BTF: mapped (6.16), or read from the file as lookups
// need it.
type File struct {
	*Blob
	f   *os.File
	mem []byte
}

// Vmlinux opens the kernel's BTF; ErrNoKernelBTF if it has none. It maps
// the file, read-only, where the kernel lets it (6.16), which saves
// copying it a page per read(2) at each lookup; else lookups read it.
func Vmlinux() (*File, error) {
	f, err := os.Open(VmlinuxPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoKernelBTF
	}
	if err != nil {
		return nil, fmt.Errorf("btf: %w", err)
	}
	v := &File{f: f}
	fi, err := f.Stat()
	if err == nil {
		// Before 6.16 the kernel refuses to map it: it is read instead.
		v.mem, _ = sys.MmapReadOnly(int(f.Fd()), int(fi.Size()))
		if v.mem != nil {
			v.Blob, err = OpenBytes(v.mem, nil)
		} else {
			v.Blob, err = Open(f, fi.Size(), nil)
		}
	}
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("btf: %s: %w", VmlinuxPath, err)
	}
	return v, nil
}

// Close unmaps and closes the file.
func (f *File) Close() error {
	var err error
	if f.mem != nil {
		err = sys.Munmap(f.mem)
		f.mem, f.Blob = nil, nil
	}
	return errors.Join(err, f.f.Close())
}

// Object is a BTF object of the kernel: a module's, whose fd a tracing
// program's load names (attach_btf_obj_fd), and its raw BTF.
type Object struct {
	fd   sys.FD
	ID   uint32 // the kernel's id of the object, as bpftool btf list shows it
	Name string // the module's name
	raw  []byte
}

// FD is the object's fd; -1 once closed.
func (o *Object) FD() int { return o.fd.Int() }

// Close releases the fd.
func (o *Object) Close() error { return sys.Wrap("btf", o.fd.Close(), "close BTF of %s", o.Name) }

// Blob is the object's split BTF over base, vmlinux's.
func (o *Object) Blob(base *Blob) (*Blob, error) {
	b, err := OpenBytes(o.raw, base)
	return b, sys.Wrap("btf", err, "module %s", o.Name)
}

// OpenModule opens the BTF object of the loaded module name (Linux 5.11,
// CONFIG_DEBUG_INFO_BTF_MODULES); ErrNotFound if no module of that name
// has one. It needs CAP_SYS_ADMIN.
func OpenModule(name string) (*Object, error) {
	var found *Object
	err := modules(func(o *Object) bool {
		if o.Name == name {
			found = o
			return false
		}
		o.Close()
		return true
	})
	if err == nil && found == nil {
		err = fmt.Errorf("btf: no loaded module %q has BTF (see /sys/kernel/btf): %w", name,
			ErrNotFound)
	}
	return found, err
}

// modules calls yield with each module's BTF object, open and read, until
// it returns false; yield owns each object it is given.
func modules(yield func(*Object) bool) error {
	for a := (sys.GetIDAttr{}); ; a.ID = a.NextID {
		if err := sys.BTFGetNextID(&a); errors.Is(err, unix.ENOENT) {
			return nil
		} else if err != nil {
			return sys.Wrap("btf", err, "BTF objects")
		}
		o, err := openObject(a.NextID)
		if errors.Is(err, unix.ENOENT) { // freed since
			continue
		}
		if err != nil {
			return err
		}
		if o == nil {
			continue
		}
		if !yield(o) {
			return nil
		}
	}
}

// openObject opens BTF object id and reads it if it is a module's; a
// program's BTF, or vmlinux's, is nil.
func openObject(id uint32) (*Object, error) {
	fd, err := sys.BTFGetFDByID(&sys.GetIDAttr{ID: id})
	if err != nil {
		return nil, sys.Wrap("btf", err, "BTF object %d", id)
	}
	o := &Object{ID: id}
	o.fd.Set(fd)
	name := make([]byte, 64) // MODULE_NAME_LEN is 56
	info := sys.BTFInfo{Name: sys.SlicePointer(name), NameLen: uint32(len(name))}
	err = sys.InfoByFD(fd, &info)
	if err == nil && (info.KernelBTF == 0 || unix.ByteSliceToString(name) == "vmlinux") {
		o.Close()
		return nil, nil
	}
	if err == nil {
		o.Name = unix.ByteSliceToString(name)
		o.raw = make([]byte, info.BTFSize)
		info = sys.BTFInfo{BTF: sys.SlicePointer(o.raw), BTFSize: uint32(len(o.raw))}
		err = sys.InfoByFD(fd, &info)
	}
	if err != nil {
		o.Close()
		return nil, sys.Wrap("btf", err, "BTF object %d", id)
	}
	return o, nil
}

// Lookup finds the kernel's type of kind named name: in module's BTF if
// module is not "", else in vmlinux's and, if not there, in every loaded
// module's. The Object is the module's whose type it is, for the program's
// load (attach_btf_obj_fd), or nil for vmlinux's; the caller closes it.
func Lookup(kind Kind, name, module string) (uint32, *Object, error) {
	if err := checkName(kind, name); err != nil {
		return 0, nil, err
	}
	vmlinux, err := Vmlinux()
	if err != nil {
		return 0, nil, err
	}
	defer vmlinux.Close()
	if module != "" {
		o, err := OpenModule(module)
		if err != nil {
			return 0, nil, err
		}
		id, err := findIn(o, vmlinux.Blob, kind, name)
		if err != nil {
			o.Close()
			return 0, nil, err
		}
		return id, o, nil
	}
	id, err := vmlinux.Find(kind, name)
	if !errors.Is(err, ErrNotFound) {
		return id, nil, err
	}
	var found *Object
	var ferr error
	err = modules(func(o *Object) bool {
		mid, merr := findIn(o, vmlinux.Blob, kind, name)
		switch {
		case merr == nil && found == nil:
			id, found = mid, o
			return true
		case merr == nil:
			ferr = fmt.Errorf("btf: %s %q is in modules %s and %s: name one (module:name): %w",
				kind, name, found.Name, o.Name, ErrAmbiguous)
		case !errors.Is(merr, ErrNotFound):
			ferr = merr
		}
		o.Close()
		return ferr == nil
	})
	if err == nil {
		err = ferr
	}
	if err == nil && found == nil {
		err = fmt.Errorf("btf: %s %q: not in vmlinux nor in a loaded module: %w", kind, name,
			ErrNotFound)
	}
	if err != nil {
		if found != nil {
			found.Close()
		}
		return 0, nil, err
	}
	return id, found, nil
}

// findIn finds kind name among module o's own types.
func findIn(o *Object, vmlinux *Blob, kind Kind, name string) (uint32, error) {
	b, err := o.Blob(vmlinux)
	if err != nil {
		return 0, err
	}
	id, err := b.Find(kind, name)
	return id, sys.Wrap("btf", err, "module %s", o.Name)
}
