package sys

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPermHintSaysWhatIsSeen: with the capabilities present, an EPERM's
// hint named kernel lockdown and kernel.unprivileged_bpf_disabled as
// causes though neither was: the sysctl does not apply to a process with
// CAP_BPF or CAP_SYS_ADMIN, and lockdown is named only where securityfs
// says it is on. Without them, the sysctl is named where it is set.
func TestPermHintSaysWhatIsSeen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the hint of a process with the capabilities")
	}
	lockdown, _ := os.ReadFile("/sys/kernel/security/lockdown")
	lockedDown := strings.Contains(string(lockdown), "[integrity]") ||
		strings.Contains(string(lockdown), "[confidentiality]")
	hint := permHint(CAP_BPF)
	if strings.Contains(hint, "unprivileged_bpf_disabled") || strings.Contains(hint, "lockdown") != lockedDown {
		t.Errorf("with the capabilities and lockdown %q: %q", lockdown, hint)
	}
	sysctl, err := os.ReadFile("/proc/sys/kernel/unprivileged_bpf_disabled")
	if err != nil {
		t.Skipf("no kernel.unprivileged_bpf_disabled: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread dies with its capabilities dropped
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err = unix.Capget(&hdr, &data[0]); err != nil {
			return
		}
		data[0].Effective &^= 1 << CAP_SYS_ADMIN
		data[1].Effective &^= 1 << (CAP_BPF - 32)
		if err = unix.Capset(&hdr, &data[0]); err != nil {
			return
		}
		hint = permHint(CAP_BPF)
	}()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	value := strings.TrimSpace(string(sysctl))
	named := strings.Contains(hint, "kernel.unprivileged_bpf_disabled is "+value)
	if !strings.HasPrefix(hint, "missing CAP_BPF") || named != (value != "0") {
		t.Errorf("without CAP_BPF and CAP_SYS_ADMIN, the sysctl %s: %q", value, hint)
	}
}
