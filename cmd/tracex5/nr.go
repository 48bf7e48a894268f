//go:build !arm

package main

import "golang.org/x/sys/unix"

// sysMmap is mmap's number; 32-bit arm has only mmap2.
const sysMmap = unix.SYS_MMAP
