//go:build arm || 386

package tests

import "golang.org/x/sys/unix"

// The numbers of getuid32 and getgid32: 32-bit arm's and i386's getuid and
// getgid are the 16-bit calls of old (sys_getuid16, whose tracepoint is
// syscalls:sys_enter_getuid16); sys_getuid and sys_getgid serve these.
const (
	sysGetuid = unix.SYS_GETUID32
	sysGetgid = unix.SYS_GETGID32
)
