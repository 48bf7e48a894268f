// Package usdt finds the static tracepoints that programs built with
// sys/sdt.h carry (USDT probes: python:function__entry,
// libstdcxx:throw, ...) and attaches BPF programs to them.
//
// Open reads an ELF file's .note.stapsdt notes: each probe's call sites,
// file offsets, semaphores and argument strings. ParseArgs reads an
// argument string (x86, arm64 or 32-bit arm syntax) into a register, memory
// at a register plus an offset, or a constant, with size and signedness.
// Probe.ParseArgs also reads x86-64's global variables
// ("-4@counter+8(%rip)") through the file's symbols, and gives an argument
// it cannot read an Err rather than failing the probe.
//
// Attach puts a uprobe on every call site of a probe, with the probe's
// semaphore as its ref_ctr_offset, so that the traced program, which often
// skips a probe while its semaphore is zero, sees it enabled. Args.Load
// reads an argument in the program. With bpf_cookie (5.15) one program
// serves every site: an argument the same at each is read as written
// there, one that differs through the cookie, which indexes an array map
// of argument descriptions as in libbpf's usdt.bpf.h. Where the kernel has
// uprobe_multi links (6.6), one link attaches that program to every site,
// with a cookie and a semaphore per site: one bpf(2) call to attach, one
// close to detach, and no perf event per site. Before 5.15, each site gets
// a program built for its arguments (Attachment.Cookies and
// Attachment.Multi say which).
//
// The arguments are read from the kernel's struct pt_regs, whose layout
// is the architecture's. A file's are read on the kernel its machine runs
// on: x86 files on x86_64, 32-bit arm files on a 32-bit arm kernel, whose
// registers are 4 bytes, an 8-byte argument in two. 32-bit arm's uprobes
// probe ARM code only: Attach refuses a probe whose sites are Thumb code,
// what Debian's armhf gcc emits unless told -marm.
package usdt
