package main

import "golang.org/x/sys/unix"

// sysMmap is mmap2's number: 32-bit arm has no mmap.
const sysMmap = unix.SYS_MMAP2
