//go:build !arm && !386

package tests

import "golang.org/x/sys/unix"

// The numbers of getuid(2) and getgid(2), whose handlers are sys_getuid and
// sys_getgid (tracepoints syscalls:sys_enter_getuid and _getgid).
const (
	sysGetuid = unix.SYS_GETUID
	sysGetgid = unix.SYS_GETGID
)
