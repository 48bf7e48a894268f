package prog

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// KprobeOptions says where in the function and how to attach.
type KprobeOptions struct {
	AttachOptions
	Offset    uint64 // bytes into the function
	Return    bool   // a kretprobe: run when the function returns
	MaxActive int    // bounds the kretprobe instances in flight; needs a tracefs event
	Tracefs   bool   // create the event in kprobe_events even where the kprobe PMU (4.17) is
}

// AttachKprobe runs p, a Kprobe program, when the kernel enters symbol (or
// returns from it, with Return), through the kprobe PMU or kprobe_events.
// On a kernel without kprobes the error wraps sys.ErrNotSupported.
func AttachKprobe(p *Program, symbol string, o KprobeOptions) (*Link, error) {
	if err := usable(p, "a kprobe", Kprobe); err != nil {
		return nil, err
	}
	kind := tracefs.Kprobe
	if o.Return {
		kind = tracefs.Kretprobe
	}
	spec := tracefs.ProbeSpec{Kind: kind, Symbol: symbol, Offset: o.Offset, MaxActive: o.MaxActive}
	return attachProbe(p, spec, 0, o.Tracefs || o.MaxActive > 0, o.AttachOptions)
}

// explainProbe words the kernel's terse answer about a missing function.
func explainProbe(spec tracefs.ProbeSpec, err error) error {
	if spec.Kind.IsUprobe() || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)) ||
		errors.Is(err, tracefs.ErrInvalid) || errors.Is(err, sys.ErrNotSupported) {
		return err
	}
	return fmt.Errorf("kernel function %q not found or not probeable "+
		"(see /proc/kallsyms and available_filter_functions): %w", spec.Symbol, err)
}

// SyscallSymbol returns the kernel function that handles the system call
// name ("getpid") of this process: __x64_sys_getpid on x86-64 since 4.17,
// sys_getpid without syscall wrappers. The prefix is this architecture's
// (archSyscallPrefix) if /proc/kallsyms has it, else any __<arch>_sys_ that
// getpid has, else sys_.
func SyscallSymbol(name string) (string, error) {
	other := func(c rune) bool { return !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') }
	if name == "" || strings.IndexFunc(name, other) >= 0 {
		return "", fmt.Errorf("prog: syscall name %q: lower-case letters, digits and '_' only: %w",
			name, tracefs.ErrInvalid)
	}
	syms, err := loadKallsyms()
	if err != nil {
		return "", err
	}
	return syscallPrefix(syms, runtime.GOARCH) + name, nil
}

func syscallPrefix(syms *Symbols, goarch string) string {
	if p := archSyscallPrefix(goarch); p != "" && slices.Contains(syms.names, p+"getpid") {
		return p
	}
	for _, n := range syms.names {
		// not the wrappers' __do_sys_getpid and __se_sys_getpid, nor compat
		if p, ok := strings.CutSuffix(n, "_sys_getpid"); ok && strings.HasPrefix(p, "__") &&
			p != "__do" && p != "__se" && !strings.Contains(p, "compat") {
			return p + "_sys_"
		}
	}
	return "sys_"
}
