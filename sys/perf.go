package sys

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PerfEventOpen is perf_event_open(2); PERF_FLAG_FD_CLOEXEC is always added
// to flags. attr.Size is set to the size of unix.PerfEventAttr if zero.
func PerfEventOpen(attr *unix.PerfEventAttr, pid, cpu, groupFD, flags int) (int, error) {
	return perfEventOpen(attr, "", "", pid, cpu, groupFD, flags)
}

// PerfEventOpenProbe is PerfEventOpen for the kprobe and uprobe PMUs
// (4.17); pmu names which ("kprobe", "uprobe") for the journal and the
// hints. target, the kernel function or binary path, goes in config1 as a
// C string (a NUL in it is EINVAL); attr.Ext2 is the offset.
func PerfEventOpenProbe(
	attr *unix.PerfEventAttr, pmu, target string, pid, cpu, groupFD, flags int,
) (int, error) {
	if attr == nil {
		return perfEventOpen(nil, pmu, "", pid, cpu, groupFD, flags)
	}
	p, err := StringPointer(target)
	if err != nil {
		return -1, &Error{
			Op:    "perf_event_open",
			Errno: unix.EINVAL,
			Hint:  fmt.Sprintf("probe target %q holds a NUL, where the kernel would end it", target),
		}
	}
	attr.Ext1 = uint64(uintptr(p.ptr))
	fd, err := perfEventOpen(attr, pmu, target, pid, cpu, groupFD, flags)
	runtime.KeepAlive(p.ptr)
	attr.Ext1 = 0 // no address of ours stays behind in the caller's attr
	return fd, err
}

func perfEventOpen(
	attr *unix.PerfEventAttr, pmu, target string, pid, cpu, groupFD, flags int,
) (int, error) {
	if attr == nil {
		return -1, &Error{Op: "perf_event_open", Errno: unix.EFAULT, Hint: "nil attr"}
	}
	if attr.Size == 0 {
		attr.Size = uint32(unsafe.Sizeof(*attr))
	}
	flags |= unix.PERF_FLAG_FD_CLOEXEC
	fd, err := traced("perf_event_open", func() string {
		clock := ""
		if attr.Bits&unix.PerfBitUseClockID != 0 {
			clock = fmt.Sprintf(" clockid=%d", attr.Clockid)
		}
		return fmt.Sprintf(
			"%s sample_type=%#x wakeup=%d bits=%#x%s, pid=%d, cpu=%d, group_fd=%d, flags=%#x",
			describePerf(attr, pmu, target), attr.Sample_type, attr.Wakeup, attr.Bits, clock,
			pid, cpu, groupFD, flags)
	}, func() (int, error) {
		return unix.PerfEventOpen(attr, arg32(pid), arg32(cpu), arg32(groupFD), flags)
	})
	fd, err = newFD(fd, err, "perf_event_open")
	if e, ok := err.(*Error); ok {
		switch e.Errno {
		case unix.EPERM, unix.EACCES:
			e.Hint = perfPermHint(pmu)
		case unix.ENODEV, unix.EOPNOTSUPP:
			e.Hint = "this kernel has no such event or PMU"
		}
	}
	return fd, err
}

// describePerf names the event type and, for a kprobe or uprobe PMU event,
// what it probes: "type=kprobe config=0x0 kprobe_func="do_sys_openat2"
// probe_offset=0x0".
func describePerf(attr *unix.PerfEventAttr, pmu, target string) string {
	s := fmt.Sprintf("type=%s config=%#x", cmp.Or(pmu, perfTypeName(attr.Type)), attr.Config)
	switch {
	case target == "":
	case pmu == "uprobe":
		s += fmt.Sprintf(" uprobe_path=%q probe_offset=%#x", target, attr.Ext2)
	default:
		s += fmt.Sprintf(" kprobe_func=%q probe_offset=%#x", target, attr.Ext2)
	}
	return s
}

// perfTypeName names perf event type t as the uapi's PERF_TYPE_* do, or
// gives its number (a dynamic PMU's).
func perfTypeName(t uint32) string {
	fixed := [...]string{"hardware", "software", "tracepoint", "hw_cache", "raw", "breakpoint"}
	if t < uint32(len(fixed)) {
		return fixed[t]
	}
	return strconv.FormatUint(uint64(t), 10)
}

// PerfEventSetBPF is the PERF_EVENT_IOC_SET_BPF ioctl (4.1): it attaches the
// program to the perf event. The program stays attached until the event's
// fd is closed.
func PerfEventSetBPF(perfFD, progFD int) error {
	return perfIoctl(perfFD, unix.PERF_EVENT_IOC_SET_BPF, progFD, "PERF_EVENT_IOC_SET_BPF")
}

// PerfEventEnable is the PERF_EVENT_IOC_ENABLE ioctl.
func PerfEventEnable(perfFD int) error {
	return perfIoctl(perfFD, unix.PERF_EVENT_IOC_ENABLE, 0, "PERF_EVENT_IOC_ENABLE")
}

// PerfEventDisable is the PERF_EVENT_IOC_DISABLE ioctl.
func PerfEventDisable(perfFD int) error {
	return perfIoctl(perfFD, unix.PERF_EVENT_IOC_DISABLE, 0, "PERF_EVENT_IOC_DISABLE")
}

// perfPermHint explains a refused perf_event_open by what the event needs:
// the uprobe PMU asks for CAP_SYS_ADMIN (perf_uprobe_event_init), where
// other events take CAP_PERFMON; Debian's perf_event_paranoid level 3 asks
// for CAP_SYS_ADMIN for every event.
func perfPermHint(pmu string) string {
	paranoid := -1
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		paranoid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	switch {
	case pmu == "uprobe":
		return permHint(CAP_SYS_ADMIN) + " (the uprobe PMU needs it)"
	case paranoid >= 3:
		return permHint(CAP_SYS_ADMIN) + fmt.Sprintf(
			" (kernel.perf_event_paranoid is %d, Debian's level that needs it)", paranoid)
	}
	return permHint(CAP_PERFMON) + fmt.Sprintf("; see also kernel.perf_event_paranoid (%d)", paranoid)
}

func perfIoctl(fd int, req uint, arg int, op string) error {
	_, err := traced("ioctl", func() string { return fmt.Sprintf("%d, %s, %d", fd, op, arg) },
		func() (int, error) { return 0, unix.IoctlSetInt(arg32(fd), req, arg32(arg)) })
	return withHint(sysErr(op, err), CAP_PERFMON)
}

// PerfEventPauseOutput is the PERF_EVENT_IOC_PAUSE_OUTPUT ioctl (4.7): while
// paused, the kernel drops what would go to the ring, counted as lost.
func PerfEventPauseOutput(perfFD int, pause bool) error {
	arg := 0
	if pause {
		arg = 1
	}
	return perfIoctl(perfFD, unix.PERF_EVENT_IOC_PAUSE_OUTPUT, arg, "PERF_EVENT_IOC_PAUSE_OUTPUT")
}
