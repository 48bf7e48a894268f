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

// UprobeMultiOptions are the places of one binary that one uprobe_multi
// link runs a program at, and how.
type UprobeMultiOptions struct {
	// Symbols are ELF function symbols of the binary. Set Symbols or
	// Offsets, not both.
	Symbols []string
	// Offsets are file offsets in the binary, as SymbolOffset or a USDT
	// site gives them.
	Offsets []uint64
	// RefCtrOffsets, if set, holds the file offset of a USDT semaphore
	// for each place (0: none): the kernel counts the link in each.
	RefCtrOffsets []uint64
	// Cookies, if set, holds one value per place, in the order given:
	// what bpf_get_attach_cookie returns while the program runs there.
	Cookies []uint64
	// PID, if not 0, runs the program in that process only.
	PID int
	// Return runs the program when the functions return (uretprobes).
	Return bool
}

// MaxUprobeMulti is the most places one uprobe_multi link takes, the
// kernel's MAX_UPROBE_MULTI_CNT (E2BIG above it).
const MaxUprobeMulti = 1 << 20

// AttachUprobeMulti runs p at every place o gives of the ELF binary at
// path, through one uprobe_multi link (Linux 6.6; HaveUprobeMulti says).
// One bpf(2) call attaches them all, and the Link's Close detaches them
// all, where a uprobe per place costs a perf event each. p is a Kprobe
// program loaded with ExpectedAttachType unix.BPF_TRACE_UPROBE_MULTI.
// Where the kernel has no uprobe_multi links the error wraps
// sys.ErrNotSupported.
func AttachUprobeMulti(p *Program, path string, o UprobeMultiOptions) (*Link, error) {
	kind := map[bool]string{false: "uprobe_multi", true: "uretprobe_multi"}[o.Return]
	desc := fmt.Sprintf("%s of %d places in %s", kind, max(len(o.Symbols), len(o.Offsets)), path)
	if err := usable(p, "a "+kind+" link", Kprobe); err != nil {
		return nil, err
	}
	fail := func(err error) (*Link, error) {
		return nil, fmt.Errorf("prog: attach %q to %s: %w", p.name, desc, err)
	}
	if p.attachType != unix.BPF_TRACE_UPROBE_MULTI && p.attachType != attachUnknown {
		return fail(fmt.Errorf("%w: the program was not loaded for one: its Spec needs "+
			"ExpectedAttachType unix.BPF_TRACE_UPROBE_MULTI", ErrWrongType))
	}
	if err := o.check(path); err != nil {
		return fail(err)
	}
	attr, err := o.attr(p, path)
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

// check refuses what the kernel would refuse with a bare errno, or take
// and never fire.
func (o UprobeMultiOptions) check(path string) error {
	n := max(len(o.Symbols), len(o.Offsets))
	switch {
	case path == "" || strings.IndexByte(path, 0) >= 0:
		return fmt.Errorf("%w: path %q", tracefs.ErrInvalid, path)
	case len(o.Symbols) > 0 && len(o.Offsets) > 0:
		return fmt.Errorf("%w: both Symbols and Offsets are set", tracefs.ErrInvalid)
	case n == 0:
		return fmt.Errorf("%w: no place", tracefs.ErrInvalid)
	case n > MaxUprobeMulti:
		return fmt.Errorf("%w: %d places, more than one link takes (%d)",
			tracefs.ErrInvalid, n, MaxUprobeMulti)
	case o.Cookies != nil && len(o.Cookies) != n:
		return fmt.Errorf("%w: %d cookies for %d places", tracefs.ErrInvalid, len(o.Cookies), n)
	case o.RefCtrOffsets != nil && len(o.RefCtrOffsets) != n:
		return fmt.Errorf("%w: %d semaphores for %d places", tracefs.ErrInvalid, len(o.RefCtrOffsets), n)
	case o.PID < 0 || o.PID > math.MaxInt32: // pid_t: 1<<32 + pid would be pid
		return fmt.Errorf("%w: pid %d is no process id", tracefs.ErrInvalid, o.PID)
	}
	return nil
}

// attr builds the link_create attr, the symbols resolved to file offsets
// each checked to lie in an executable segment (fileOffset), where the
// kernel would take any offset in the file and the probe never fire.
func (o UprobeMultiOptions) attr(p *Program, path string) (*sys.LinkCreateUprobeMultiAttr, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	n := max(len(o.Symbols), len(o.Offsets))
	symbols, offs := o.Symbols, o.Offsets
	if symbols == nil {
		symbols = make([]string, n)
	}
	if offs == nil {
		offs = make([]uint64, n)
	}
	offsets, err := fileOffsets(abs, symbols, offs)
	if err != nil {
		return nil, err
	}
	// A place given twice (or a symbol and its offset) would run the
	// program twice there each time it is hit: the kernel takes it.
	sorted := slices.Sorted(slices.Values(offsets))
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return nil, fmt.Errorf("%w: file offset %#x is given twice",
				tracefs.ErrInvalid, sorted[i])
		}
	}
	name, err := sys.StringPointer(abs)
	if err != nil {
		return nil, err
	}
	attr := &sys.LinkCreateUprobeMultiAttr{
		ProgFD:     uint32(p.fd.Int()),
		AttachType: unix.BPF_TRACE_UPROBE_MULTI,
		Path:       name,
		Offsets:    sys.NewPointer(unsafePointer(&offsets[0])),
		Cnt:        uint32(len(offsets)),
		PID:        uint32(o.PID),
	}
	if o.Return {
		attr.UprobeFlags = unix.BPF_F_UPROBE_MULTI_RETURN
	}
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
//   - EINVAL: before 6.6 the unknown attach type; also unknown flags, a
//     program not loaded with BPF_TRACE_UPROBE_MULTI, an offset past the
//     file's end, a semaphore that disagrees with another uprobe's at the
//     same place. HaveUprobeMulti tells a kernel without them apart.
//   - EOPNOTSUPP: a 32-bit kernel, which has none.
//   - ESRCH: no process PID.
//   - EBADF: the path is not a regular file.
//   - E2BIG: more than MaxUprobeMulti places.
func explainUprobeMulti(err error) error {
	if errors.Is(err, unix.EINVAL) {
		if ok, _ := HaveUprobeMulti(); !ok {
			return fmt.Errorf("%w (this kernel has no uprobe_multi links: Linux 6.6): %w",
				err, sys.ErrNotSupported)
		}
	}
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w (no uprobe_multi links in a 32-bit kernel): %w", err, sys.ErrNotSupported)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w (no such process)", err)
	}
	return err
}
