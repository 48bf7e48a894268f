package prog

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// UprobeMultiOptions are the places in one ELF file that one uprobe_multi
// link runs a program at, and how.
type UprobeMultiOptions struct {
	// Offsets are file offsets, each once, each in an executable segment
	// of the file: a USDT probe's call sites, say.
	Offsets []uint64
	// RefCtrOffsets, if set, holds one file offset per offset, in the
	// same order: a USDT semaphore the kernel counts up while the link is
	// attached (0 for none).
	RefCtrOffsets []uint64
	// Cookies, if set, holds one value per offset, in the same order:
	// what bpf_get_attach_cookie returns while the program runs there.
	Cookies []uint64
	// PID, if not 0, runs the program in that process only.
	PID int
	// Return runs the program when the function at each offset returns
	// (uretprobes) instead of when it is entered.
	Return bool
}

// MaxUprobeMulti is the most offsets one uprobe_multi link takes: the
// kernel's MAX_UPROBE_MULTI_CNT (E2BIG above it, since 6.7). Before 6.7
// the kernel tried to allocate a uprobe per offset whatever their number.
const MaxUprobeMulti = 1 << 20

// AttachUprobeMulti runs p at every offset of o in the ELF file at path
// through one uprobe_multi link (Linux 6.6; HaveUprobeMulti says): one
// bpf(2) call attaches them all, with no perf event and no uprobe_events
// entry, and the Link's Close detaches them all at once, where a uprobe
// per offset costs a perf event each. p is a Kprobe program loaded with
// ExpectedAttachType unix.BPF_TRACE_UPROBE_MULTI; it reads pt_regs as a
// uprobe's program does, and bpf_get_attach_cookie reads the offset's
// cookie.
//
// Where the kernel has no uprobe_multi links the error wraps
// sys.ErrNotSupported.
func AttachUprobeMulti(p *Program, path string, o UprobeMultiOptions) (*Link, error) {
	kind := "uprobe_multi"
	if o.Return {
		kind = "uretprobe_multi"
	}
	desc := fmt.Sprintf("%s of %d offsets in %s", kind, len(o.Offsets), path)
	if err := usable(p, "a "+kind+" link", Kprobe); err != nil {
		return nil, err
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	abs, err := o.check(path)
	if err != nil {
		return fail(err)
	}
	attr, err := o.attr(p, abs)
	if err != nil {
		return fail(err)
	}
	fd, err := sys.LinkCreateUprobeMulti(attr)
	if err != nil {
		return fail(explainUprobeMulti(err))
	}
	l := &Link{desc: desc}
	l.linkFD.Set(fd)
	return l, nil
}

// check refuses, before the kernel sees them, what it would refuse with a
// bare errno or accept and never fire: offsets outside the file's
// executable segments, an offset twice (the program would run twice
// there). It returns path made absolute.
func (o UprobeMultiOptions) check(path string) (string, error) {
	n := len(o.Offsets)
	switch {
	case path == "" || strings.IndexByte(path, 0) >= 0:
		return "", fmt.Errorf("%w: empty path, or a NUL in path %q", tracefs.ErrInvalid, path)
	case o.PID < 0 || o.PID > math.MaxInt32: // pid_t is 32 bits: 1<<32 + pid would trace pid
		return "", fmt.Errorf("%w: pid %d is no process id", tracefs.ErrInvalid, o.PID)
	case n == 0:
		return "", fmt.Errorf("%w: no offset", tracefs.ErrInvalid)
	case n > MaxUprobeMulti:
		return "", fmt.Errorf("%w: %d offsets, more than one link takes (%d)",
			tracefs.ErrInvalid, n, MaxUprobeMulti)
	case o.RefCtrOffsets != nil && len(o.RefCtrOffsets) != n:
		return "", fmt.Errorf("%w: %d semaphore offsets for %d offsets",
			tracefs.ErrInvalid, len(o.RefCtrOffsets), n)
	case o.Cookies != nil && len(o.Cookies) != n:
		return "", fmt.Errorf("%w: %d cookies for %d offsets",
			tracefs.ErrInvalid, len(o.Cookies), n)
	}
	sorted := slices.Clone(o.Offsets)
	slices.Sort(sorted)
	for i := 1; i < n; i++ {
		if sorted[i] == sorted[i-1] {
			return "", fmt.Errorf("%w: offset %#x is given twice", tracefs.ErrInvalid, sorted[i])
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return abs, withELF(abs, func(f *elfFile) error {
		for _, off := range o.Offsets {
			if _, ok := f.executable(off, false); !ok {
				return fmt.Errorf("%w: file offset %#x is in no executable segment of the file",
					tracefs.ErrInvalid, off)
			}
		}
		return nil
	})
}

// attr builds the link_create attr. The arrays are copies: the kernel
// reads them during the call, and the caller's stay theirs.
func (o UprobeMultiOptions) attr(p *Program, path string) (*sys.LinkCreateUprobeMultiAttr, error) {
	pathPtr, err := sys.StringPointer(path)
	if err != nil {
		return nil, err
	}
	attr := &sys.LinkCreateUprobeMultiAttr{
		ProgFD:     uint32(p.fd.Int()),
		AttachType: unix.BPF_TRACE_UPROBE_MULTI,
		Path:       pathPtr,
		Cnt:        uint32(len(o.Offsets)),
		PID:        uint32(o.PID),
	}
	if o.Return {
		attr.UprobeFlags = unix.BPF_F_UPROBE_MULTI_RETURN
	}
	// offsets, ref_ctr_offsets and cookies are arrays of u64 on every
	// port: a 64-bit kernel's unsigned long and loff_t (the kernel refuses
	// uprobe_multi links on 32-bit kernels).
	offsets := slices.Clone(o.Offsets)
	attr.Offsets = sys.NewPointer(unsafePointer(&offsets[0]))
	if refs := slices.Clone(o.RefCtrOffsets); len(refs) > 0 {
		attr.RefCtrOffsets = sys.NewPointer(unsafePointer(&refs[0]))
	}
	if cookies := slices.Clone(o.Cookies); len(cookies) > 0 {
		attr.Cookies = sys.NewPointer(unsafePointer(&cookies[0]))
	}
	return attr, nil
}

// explainUprobeMulti words the kernel's errno for a refused link.
//
//   - EINVAL: a kernel before 6.6 knows no such link (HaveUprobeMulti
//     tells it apart); a program not loaded with BPF_TRACE_UPROBE_MULTI;
//     a uprobe at one of the offsets that counts another semaphore
//     (another tracer's).
//   - EOPNOTSUPP: a 32-bit kernel, which refuses the link outright.
//   - EBADF: the path is no regular file; ESRCH: no process PID.
//   - E2BIG: more than MaxUprobeMulti offsets (6.7+).
func explainUprobeMulti(err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w (uprobe_multi links need a 64-bit kernel): %w",
			err, sys.ErrNotSupported)
	case errors.Is(err, unix.EINVAL):
		if have, probeErr := HaveUprobeMulti(); probeErr == nil && !have {
			return fmt.Errorf("%w (this kernel has no uprobe_multi links, which Linux 6.6 "+
				"brought): %w", err, sys.ErrNotSupported)
		}
		return fmt.Errorf("%w (the program needs ExpectedAttachType "+
			"unix.BPF_TRACE_UPROBE_MULTI; or another tracer's uprobe at one of the offsets "+
			"counts another semaphore)", err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w (no such process)", err)
	}
	return err
}
