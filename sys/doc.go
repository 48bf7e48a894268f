// Package sys is bpfkit's only door to the kernel: one Go function per bpf(2)
// command (MapCreate, ProgLoad, LinkCreate, ...), perf_event_open(2) and the
// perf ioctls that attach and enable programs. It also reads the CPU lists
// that per-CPU maps and perf rings are sized by (PossibleCPUs, OnlineCPUs).
// And it reads the width of the kernel's words, which a BPF ring buffer's
// positions have (KernelLongSize: 4 on a 32-bit kernel, 8 for a 32-bit
// process on a 64-bit one).
//
// Each command takes its member of union bpf_attr as a struct padded to
// AttrSize, more than any kernel's union. It passes the running kernel's
// sizeof(union bpf_attr), learned once by trying. So the kernel gets all
// of its union, which matters because it writes some answers past a short
// one (see AttrSize), and checks no tail for zeroes.
//
// A command is one block of its group's file, read or added in one place.
// The block holds the command's attr struct and function, the attr's
// describe method, which says what the journal prints of it, and the hint
// that says what an errno most likely means. The groups are map.go (maps
// and their elements), prog.go (load, test run, query, statistics),
// link.go (attaching and asking about attachments), id.go (walking and
// opening objects by id), info.go (BPF_OBJ_GET_INFO_BY_FD and its structs)
// and pin.go (pins). bpf.go is the door every command goes through;
// perf.go, poll.go, kernfs.go and fd.go hold the other system calls.
//
// The package owns hygiene and nothing else. File descriptors are
// close-on-exec and never 0, 1 or 2. Errors are *Error values that name
// the command, keep the errno for errors.Is, and say which capability is
// missing on EPERM. Every other error of a bpfkit package starts with the
// package's name ("sys: ", "mapfd: "), once: Wrap adds it. The Go
// runtime's own signals (SIGURG, SIGPROF) make the kernel abandon a
// verification (EAGAIN) or a repeated test run (EINTR), so ProgLoad
// retries with them blocked and ProgTestRun blocks them. The element
// commands' NoSleep forms (MapLookupElemNoSleep, ...) skip the runtime's
// system call bookkeeping, for the maps whose element operations never
// sleep. There is no other policy: no fallbacks, no feature probes.
//
// The journal records every call for security review, one line each in
// strace's shape: call(arguments) = result <duration>. The result is what
// the call returned (an fd, a count, a mapped address), or -1 with the
// errno's name and text. The kernel's own errnos (ENOTSUPP) are named too,
// and an errno no header names is given by its number. The duration is
// the call's wall-clock time.
//
// The journal covers every call the package makes but close:
//   - bpf(2), with the attr fields a reviewer needs, and the probes that
//     size union bpf_attr;
//   - perf_event_open, with the event and a probe's function or file and
//     offset, and the perf ioctls;
//   - mmap and munmap of rings and of the kernel's BTF;
//   - epoll and eventfd, mount, unlink of pins, setrlimit and fcntl;
//   - every write to a tracefs control file, with its path and text.
//
// These are the lines of one run of `BPFKIT_JOURNAL=1 dropmon -events 1 1`
// on Linux 6.18, in their order, the rest left out, each folded where it
// passes 100 columns:
//
//	bpf(0xbfbf (no command: sizing union bpf_attr), byte 168 set, 256)
//	    = -1 E2BIG (argument list too long) <1.4µs>
//	bpf(BPF_MAP_CREATE, map_type=perf_event_array key_size=4 value_size=4 max_entries=2
//	    map_flags=0x0 name="drop_events") = 8 <28µs>
//	bpf(BPF_PROG_LOAD, prog_type=tracepoint insn_cnt=35 license="GPL" name="dropmon_events"
//	    kern_version=0x0 prog_flags=0x0 log_level=0) = 9 <236.5µs>
//	epoll_create1(EPOLL_CLOEXEC) = 11 <5.9µs>
//	perf_event_open(type=software config=0xa sample_type=0x400 wakeup=1 bits=0x0, pid=-1,
//	    cpu=0, group_fd=-1, flags=0x8) = 13 <44.7µs>
//	mmap(NULL, 266240, PROT_READ|PROT_WRITE, MAP_SHARED, 13, 0x0) = 0x7f8cafffd000 <183.1µs>
//	bpf(BPF_MAP_UPDATE_ELEM, map_fd=8 flags=0x0) = 0 <10µs>
//	epoll_ctl(11, EPOLL_CTL_ADD, 13, {events=0x1, data=0}) = 0 <4.6µs>
//	perf_event_open(type=tracepoint config=0x906 sample_type=0x0 wakeup=1 bits=0x1, pid=-1,
//	    cpu=0, group_fd=-1, flags=0x8) = 15 <135.7µs>
//	bpf(BPF_LINK_CREATE, prog_fd=9 target_fd=15 attach_type=perf_event flags=0x0 cookie=0x0)
//	    = 16 <9.1µs>
//	ioctl(15, PERF_EVENT_IOC_ENABLE, 0) = 0 <44.2µs>
//	epoll_pwait(11, [{events=0x1, data=1}], 3, -1, NULL) = 1 <515.3554ms>
//	munmap(0x7f8cafffd000, 266240) = 0 <60.5µs>
//
// A program turns the journal on with SetJournal. BPFKIT_JOURNAL turns it
// on from outside: 1 (or stderr) writes to stderr, and an absolute path
// appends to that file, whatever journal the program sets. The journal
// fails closed. Any other value of BPFKIT_JOURNAL, a file that cannot be
// opened, or a line that cannot be written makes every call fail
// (ErrJournal), unless the program chose SetJournalBestEffort for its own
// journal. Off, it costs a call one atomic load.
package sys
