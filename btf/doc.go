// Package btf finds one type id by name in the kernel's BTF: a FUNC for
// an fentry or fexit program's target, the TYPEDEF btf_trace_<name> for
// a tp_btf program's tracepoint. It is a lookup, not a parser. It reads
// the header, honouring hdr_len, and finds the name's offsets in the
// string section. Then it walks the type section once, each type 12 bytes
// and a trailing part whose size its kind says. It walks a read-only
// mapping where the kernel allows one (6.16), else reads as it goes rather
// than holding the file. Every size and offset is checked against the
// file. A name that two types of the kind share is refused (ErrAmbiguous),
// since the kernel would attach to whichever the id names.
//
// Everything else in bpfkit is BTF-free: programs are built without BTF,
// and this lookup is the only use of the kernel's.
//
// The kernel's BTF is /sys/kernel/btf/vmlinux (5.4,
// CONFIG_DEBUG_INFO_BTF); without it, Vmlinux says so (ErrNoKernelBTF). A
// module's BTF (5.11, CONFIG_DEBUG_INFO_BTF_MODULES) is split BTF: its
// type ids and string offsets continue after vmlinux's, and its names may
// be vmlinux's strings. OpenModule finds the module's BTF object through
// bpf(2) (BPF_BTF_GET_NEXT_ID, BPF_BTF_GET_FD_BY_ID, bpf_btf_info), whose
// fd a program's load names as attach_btf_obj_fd.
package btf
