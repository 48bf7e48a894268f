// Package usdt finds the static tracepoints that programs built with
// sys/sdt.h carry (USDT probes: python:function__entry,
// libstdcxx:throw, ...) and attaches BPF programs to them.
//
// Open reads an ELF file's .note.stapsdt notes, 64- or 32-bit: each
// probe's call sites, their file offsets, semaphores and argument
// strings. ParseArgs reads an argument string, in x86 or arm64 assembler
// syntax, into Args: a register, memory at a register plus an offset, or
// a constant, with size and signedness.
//
// Attach puts a uprobe on every call site of a probe, each with the
// probe's semaphore as its ref_ctr_offset, so that the traced program,
// which often skips a probe while its semaphore is zero, sees it enabled
// for as long as the Attachment is open. In the program, Args.Load reads
// an argument for the call site being run. Where the kernel has
// bpf_cookie (5.15), one program serves every site: the cookie indexes an
// array map of argument descriptions, as libbpf's usdt.bpf.h does. On
// older kernels each site gets its own program, built with its arguments
// known; Attachment.Cookies says which.
package usdt
