package sys

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// journalWriter writes a line per call this package makes (see the package doc).
type journalWriter struct {
	mu         sync.Mutex
	w          io.Writer
	bestEffort bool           // a failed write is ignored
	env        *journalWriter // BPFKIT_JOURNAL's, written first, or nil
	broken     error          // BPFKIT_JOURNAL names no usable journal: every call fails with it
}

// journal is the journal in use; envJournal is BPFKIT_JOURNAL's, set by
// init, which SetJournal adds to but never replaces.
var (
	journal    atomic.Pointer[journalWriter]
	envJournal *journalWriter
)

// ErrJournal is wrapped by the error of a call that was not made, or whose
// result was discarded, because the journal could not record it.
var ErrJournal = errors.New("sys: journal")

// SetJournal records every call to w, serialized, or stops recording to
// the last w if w is nil. A journal BPFKIT_JOURNAL names records the calls
// either way: a program cannot hide them from it. A call whose line cannot
// be written fails with ErrJournal and the write's error, closing a new fd
// it made.
func SetJournal(w io.Writer) { setJournal(w, false) }

// SetJournalBestEffort is SetJournal where a line that cannot be written is
// lost and the call's result stands.
func SetJournalBestEffort(w io.Writer) { setJournal(w, true) }

func setJournal(w io.Writer, bestEffort bool) {
	switch {
	case envJournal != nil && (w == nil || envJournal.broken != nil):
		journal.Store(envJournal)
	case w == nil:
		journal.Store(nil)
	default:
		journal.Store(&journalWriter{w: w, bestEffort: bestEffort, env: envJournal})
	}
}

// init reads BPFKIT_JOURNAL (see the package doc); a bad value fails every
// call with the reason rather than let the program run unrecorded.
func init() {
	v := os.Getenv("BPFKIT_JOURNAL")
	switch {
	case v == "" || v == "0":
		return
	case v == "1" || v == "stderr":
		envJournal = &journalWriter{w: os.Stderr}
	case !filepath.IsAbs(v):
		err := fmt.Errorf("%w: BPFKIT_JOURNAL=%q: want 1 or stderr, 0, or an absolute path",
			ErrJournal, v)
		envJournal = &journalWriter{broken: err}
	default:
		f, err := os.OpenFile(v, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_CLOEXEC, 0o600)
		envJournal = &journalWriter{w: f}
		if err != nil {
			envJournal = &journalWriter{broken: fmt.Errorf("%w: BPFKIT_JOURNAL: %w", ErrJournal, err)}
		}
	}
	journal.Store(envJournal)
}

// record writes one line; an error means the call must fail.
func (j *journalWriter) record(op, args string, r int, errno unix.Errno, d time.Duration) error {
	res := fmt.Sprint(r)
	if op == "mmap" {
		res = fmt.Sprintf("%#x", uint(r))
	}
	if errno != 0 {
		res = "-1 " + errnoName(errno)
		if text := errnoText(errno); text != "" {
			res += " (" + text + ")"
		}
	}
	line := fmt.Sprintf("%s(%s) = %s <%v>\n", op, args, res, d.Round(time.Microsecond/10))
	if j.env != nil {
		if err := j.env.write(op, line); err != nil {
			return err
		}
	}
	return j.write(op, line)
}

func (j *journalWriter) write(op, line string) error {
	j.mu.Lock()
	_, err := io.WriteString(j.w, line)
	j.mu.Unlock()
	if err != nil && !j.bestEffort {
		return fmt.Errorf("%w: %s could not be recorded, so its result is discarded: %w",
			ErrJournal, op, err)
	}
	return nil
}

// traced makes a journaled call other than bpf(2): do makes it, args
// describes it. When the journal fails, r is do's result and err wraps
// ErrJournal: the caller closes a new fd.
func traced(op string, args func() string, do func() (int, error)) (r int, err error) {
	j := journal.Load()
	if j == nil {
		return do()
	}
	if j.broken != nil {
		return -1, j.broken
	}
	start := time.Now()
	r, err = do()
	if jerr := j.record(op, args(), r, errnoOf(err), time.Since(start)); jerr != nil {
		return r, jerr
	}
	return r, err
}

// cString reads the NUL-terminated string at p, at most 256 bytes of it,
// one byte at a time up to the NUL. The kernel reads the same bytes
// (strncpy_from_user); reading 256 at once went past the end of the
// string's own memory, which a race or checkptr build refuses.
//
// It is not inlined, on purpose: its loop, inlined at each of describe's
// four calls, made every program larger (tests/size_test.go).
//
//go:noinline
func cString(p Pointer) string {
	if p.ptr == nil {
		return ""
	}
	const limit = 256
	var b []byte
	for i := range limit {
		c := *(*byte)(unsafe.Add(p.ptr, i))
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
	return string(b) + "..."
}

// MapTypeName names enum bpf_map_type value t as the journal does
// ("hash"), or gives its number.
func MapTypeName(t uint32) string { return lookupName(mapTypeNames, t) }

// ProgTypeName names enum bpf_prog_type value t as the journal does
// ("tracepoint"), or gives its number.
func ProgTypeName(t uint32) string { return lookupName(progTypeNames, t) }

// AttachTypeName names enum bpf_attach_type value t as the journal does
// ("trace_fentry"), or gives its number.
func AttachTypeName(t uint32) string { return lookupName(attachTypeNames, t) }

func lookupName(names []string, v uint32) string {
	if v < uint32(len(names)) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprint(v)
}

// Names as in enum bpf_map_type, bpf_prog_type and bpf_attach_type,
// without their prefixes, which the field name says.
var mapTypeNames = []string{
	"unspec", "hash", "array", "prog_array", "perf_event_array", "percpu_hash", "percpu_array",
	"stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash", "lpm_trie", "array_of_maps",
	"hash_of_maps", "devmap", "sockmap", "cpumap", "xskmap", "sockhash", "cgroup_storage",
	"reuseport_sockarray", "percpu_cgroup_storage", "queue", "stack", "sk_storage",
	"devmap_hash", "struct_ops", "ringbuf", "inode_storage", "task_storage", "bloom_filter",
	"user_ringbuf", "cgrp_storage", "arena",
}

var progTypeNames = []string{
	"unspec", "socket_filter", "kprobe", "sched_cls", "sched_act", "tracepoint", "xdp",
	"perf_event", "cgroup_skb", "cgroup_sock", "lwt_in", "lwt_out", "lwt_xmit", "sock_ops",
	"sk_skb", "cgroup_device", "sk_msg", "raw_tracepoint", "cgroup_sock_addr", "lwt_seg6local",
	"lirc_mode2", "sk_reuseport", "flow_dissector", "cgroup_sysctl", "raw_tracepoint_writable",
	"cgroup_sockopt", "tracing", "struct_ops", "ext", "lsm", "sk_lookup", "syscall",
	"netfilter",
}

var attachTypeNames = []string{
	"cgroup_inet_ingress", "cgroup_inet_egress", "cgroup_inet_sock_create", "cgroup_sock_ops",
	"sk_skb_stream_parser", "sk_skb_stream_verdict", "cgroup_device", "sk_msg_verdict",
	"cgroup_inet4_bind", "cgroup_inet6_bind", "cgroup_inet4_connect", "cgroup_inet6_connect",
	"cgroup_inet4_post_bind", "cgroup_inet6_post_bind", "cgroup_udp4_sendmsg",
	"cgroup_udp6_sendmsg", "lirc_mode2", "flow_dissector", "cgroup_sysctl",
	"cgroup_udp4_recvmsg", "cgroup_udp6_recvmsg", "cgroup_getsockopt", "cgroup_setsockopt",
	"trace_raw_tp", "trace_fentry", "trace_fexit", "modify_return", "lsm_mac", "trace_iter",
	"cgroup_inet4_getpeername", "cgroup_inet6_getpeername", "cgroup_inet4_getsockname",
	"cgroup_inet6_getsockname", "xdp_devmap", "cgroup_inet_sock_release", "xdp_cpumap",
	"sk_lookup", "xdp", "sk_skb_verdict", "sk_reuseport_select",
	"sk_reuseport_select_or_migrate", "perf_event", "trace_kprobe_multi", "lsm_cgroup",
	"struct_ops", "netfilter", "tcx_ingress", "tcx_egress", "trace_uprobe_multi",
}
