package prog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// NextID is the smallest id above after of a program loaded in the kernel,
// or 0 after the last (BPF_PROG_GET_NEXT_ID; needs CAP_SYS_ADMIN).
func NextID(after uint32) (uint32, error) { return nextID(sys.ProgGetNextID, after, "program") }

// NextLinkID is NextID for BPF links (5.8).
func NextLinkID(after uint32) (uint32, error) { return nextID(sys.LinkGetNextID, after, "link") }

func nextID(get func(*sys.GetIDAttr) error, after uint32, what string) (uint32, error) {
	attr := sys.GetIDAttr{ID: after}
	err := get(&attr)
	// Ids are below INT_MAX; past it the kernel answers EINVAL.
	if errors.Is(err, unix.ENOENT) || after >= math.MaxInt32 {
		return 0, nil
	}
	return attr.NextID, wrap(err, "next %s id after %d", what, after)
}

// LinkInfo is what the kernel says of a BPF link.
type LinkInfo struct {
	ID     uint32 `json:"id"`      // the link's id
	ProgID uint32 `json:"prog_id"` // the id of the program it attaches
	// Type is the enum bpf_link_type, lower case without its prefix:
	// "perf_event".
	Type string `json:"type"`
	// AttachType is the enum bpf_attach_type, for the link types that say.
	AttachType string `json:"attach_type,omitempty"`
	// Target is what the program is attached to, as far as the kernel
	// tells.
	Target string `json:"target,omitempty"`
}

// linkTypeNames are enum bpf_link_type's names, lower case without their
// prefix.
var linkTypeNames = []string{
	"unspec", "raw_tracepoint", "tracing", "cgroup", "iter", "netns", "xdp", "perf_event",
	"kprobe_multi", "struct_ops", "netfilter", "tcx", "uprobe_multi", "netkit", "sockmap",
}

// LinkByID asks the kernel about the link id (needs CAP_SYS_ADMIN). Of
// the names behind pointers it fetches only a raw tracepoint's (by
// QueryFD) and a uprobe_multi link's binary and offsets (6.8).
func LinkByID(id uint32) (*LinkInfo, error) {
	fd, err := sys.LinkGetFDByID(&sys.GetIDAttr{ID: id})
	if err != nil {
		return nil, fmt.Errorf("prog: open link id %d: %w", id, err)
	}
	defer unix.Close(fd)
	var li sys.LinkInfo
	if err := sys.InfoByFD(fd, &li); err != nil {
		return nil, fmt.Errorf("prog: link id %d info: %w", id, err)
	}
	u := (*[12]uint32)(unsafePointer(&li.Union)) // the union by link type, as the kernel's u32s
	l := &LinkInfo{ID: li.ID, ProgID: li.ProgID, Type: nameOf(linkTypeNames, li.Type)}
	switch li.Type {
	case unix.BPF_LINK_TYPE_RAW_TRACEPOINT:
		if a, err := QueryFD(os.Getpid(), fd); err == nil {
			l.Target = a.Name
		}
	case unix.BPF_LINK_TYPE_TRACING:
		l.AttachType = sys.AttachTypeName(u[0])
		l.Target = fmt.Sprintf("btf object %d type %d", u[1], u[2])
	case unix.BPF_LINK_TYPE_CGROUP:
		l.AttachType, l.Target = sys.AttachTypeName(u[2]), fmt.Sprintf("cgroup %d", li.Union[0])
	case unix.BPF_LINK_TYPE_NETNS:
		l.AttachType, l.Target = sys.AttachTypeName(u[1]), fmt.Sprintf("netns inode %d", u[0])
	case unix.BPF_LINK_TYPE_XDP:
		l.Target = fmt.Sprintf("ifindex %d", u[0])
	case unix.BPF_LINK_TYPE_TCX, 13: // netkit
		l.AttachType, l.Target = sys.AttachTypeName(u[1]), fmt.Sprintf("ifindex %d", u[0])
	case unix.BPF_LINK_TYPE_STRUCT_OPS:
		l.Target = fmt.Sprintf("map %d", u[0])
	case unix.BPF_LINK_TYPE_NETFILTER:
		l.Target = fmt.Sprintf("pf %d hook %d priority %d", u[0], u[1], int32(u[2]))
	case unix.BPF_LINK_TYPE_KPROBE_MULTI:
		l.Target = fmt.Sprintf("%d kernel functions", u[2])
	case unix.BPF_LINK_TYPE_UPROBE_MULTI:
		l.Target = uprobeMultiTarget(fd, u[9], u[11])
	case unix.BPF_LINK_TYPE_PERF_EVENT: // 6.6 says which kind of event
		kinds := []string{
			"perf event", "uprobe", "uretprobe", "kprobe", "kretprobe", "tracepoint", "perf event",
		}
		l.Target = nameOf(kinds, u[0])
	case 14: // sockmap
		l.AttachType, l.Target = sys.AttachTypeName(u[1]), fmt.Sprintf("map %d", u[0])
	}
	return l, nil
}

// uprobeMultiTarget names the binary and first offset of uprobe_multi link
// fd of count offsets, as a uprobe's perf link is named, "/bin/sh+0x1c0",
// with the rest counted and the pid filter said. Kernels before 6.8 tell
// only the head: the count reads 0 there.
func uprobeMultiTarget(fd int, count, pid uint32) string {
	// Offsets are asked for up to most; a link with more is named by its
	// binary and count.
	const most = 64
	path := make([]byte, 4096) // PATH_MAX
	var offsets []uint64
	if count > 0 && count <= most {
		offsets = make([]uint64, count)
	}
	info := sys.UprobeMultiLinkInfo{Path: sys.SlicePointer(path), PathSize: uint32(len(path))}
	if len(offsets) > 0 {
		info.Offsets, info.Count = sys.NewPointer(unsafePointer(&offsets[0])), count
	}
	target := fmt.Sprintf("%d offsets", count)
	if err := sys.InfoByFD(fd, &info); err == nil && info.PathSize > 0 {
		target = unix.ByteSliceToString(path) + ", " + target
		if len(offsets) > 0 {
			target = fmt.Sprintf("%s+%#x", unix.ByteSliceToString(path), offsets[0])
			if count > 1 {
				target += fmt.Sprintf(" and %d more offsets", count-1)
			}
		}
	}
	if pid != 0 {
		target += fmt.Sprintf(", pid %d", pid)
	}
	return target
}

// FDAttachment is a program attached through a file of a process: a perf
// event (tracepoint, kprobe, uprobe) or a raw tracepoint link.
type FDAttachment struct {
	ProgID uint32 // the id of the program
	Kind   string // "raw_tracepoint", "tracepoint", "kprobe", "kretprobe", "uprobe" or "uretprobe"
	Name   string // the tracepoint, kernel function or binary; "" for a kprobe at an address
	Offset uint64 // of a kprobe or uprobe
	Addr   uint64 // of a kprobe at an address
}

// QueryFD asks which program runs through file fd of process pid
// (BPF_TASK_FD_QUERY, 4.18; needs CAP_SYS_ADMIN): other files answer
// sys.ENOTSUPP, a perf event without a program ENOENT.
func QueryFD(pid, fd int) (*FDAttachment, error) {
	// The kernel reads 32 bits: 1<<32 + pid is pid.
	if int(int32(pid)) != pid || int(int32(fd)) != fd {
		return nil, fmt.Errorf("prog: query fd %d of pid %d: %w", fd, pid, unix.EINVAL)
	}
	buf := make([]byte, 4096) // PATH_MAX
	attr := sys.TaskFDQueryAttr{
		PID:    uint32(pid),
		FD:     uint32(fd),
		Buf:    sys.SlicePointer(buf),
		BufLen: uint32(len(buf)),
	}
	if err := sys.TaskFDQuery(&attr); err != nil {
		return nil, fmt.Errorf("prog: query fd %d of pid %d: %w", fd, pid, err)
	}
	kinds := []string{"raw_tracepoint", "tracepoint", "kprobe", "kretprobe", "uprobe", "uretprobe"}
	return &FDAttachment{
		ProgID: attr.ProgID,
		Kind:   nameOf(kinds, attr.FDType),
		Name:   unix.ByteSliceToString(buf),
		Offset: attr.ProbeOffset,
		Addr:   attr.ProbeAddr,
	}, nil
}

func nameOf(names []string, v uint32) string {
	if v < uint32(len(names)) {
		return names[v]
	}
	return strconv.FormatUint(uint64(v), 10)
}
