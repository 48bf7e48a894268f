// Package usdt finds the static tracepoints that programs built with
// sys/sdt.h carry (USDT probes: python:function__entry,
// libstdcxx:throw, ...) and attaches BPF programs to them.
//
// Open reads an ELF file's .note.stapsdt notes: each probe's call sites,
// file offsets, semaphores and argument strings, which ParseArgs reads (x86
// or arm64 syntax) into a register, memory at a register plus an offset, or
// a constant, with size and signedness.
//
// Attach puts a uprobe on every call site of a probe, with the probe's
// semaphore as its ref_ctr_offset, so that the traced program, which often
// skips a probe while its semaphore is zero, sees it enabled. Args.Load
// reads an argument in the program. With bpf_cookie (5.15) one program
// serves every site, the cookie indexing an array map of argument
// descriptions as in libbpf's usdt.bpf.h; before, each site gets a
// program built for its arguments (Attachment.Cookies says which).
package usdt
