package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
	"github.com/bpfkit/bpfkit/tracefs"
	"github.com/bpfkit/bpfkit/usdt"
)

// journal is the journal a tool wrote, a line per call, in order.
type journal struct {
	t     *testing.T
	lines []string
}

// runJournaled runs the tool to its end with BPFKIT_JOURNAL naming a file
// and returns the file's lines and the tool's output.
func runJournaled(t *testing.T, name string, args ...string) (*journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolPath(t, name), args...)
	cmd.Env = append(os.Environ(), "BPFKIT_JOURNAL="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s%s", name, args, err, out, errOutput(err))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &journal{t, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}, string(out)
}

func errOutput(err error) []byte {
	if e, ok := err.(*exec.ExitError); ok {
		return e.Stderr
	}
	return nil
}

// find returns the index of the first line at or after from that matches
// re (anchored at the line's start, then " <duration>" follows), and its
// submatches; it fails the test if there is none.
func (j *journal) find(from int, re string) (int, []string) {
	j.t.Helper()
	r := regexp.MustCompile(`^` + re + ` <[0-9.]+[nµm]?s>$`)
	for i := from; i < len(j.lines); i++ {
		if m := r.FindStringSubmatch(j.lines[i]); m != nil {
			return i, m
		}
	}
	j.t.Fatalf("journal lacks, from line %d on, a line matching %s:\n%s", from+1, r, strings.Join(j.lines, "\n"))
	return 0, nil
}

// attach finds where program fd prog is attached to perf event fd ev:
// BPF_LINK_CREATE (5.15+), else PERF_EVENT_IOC_SET_BPF, then the event is
// enabled. It returns the enabling line's index.
func (j *journal) attach(from int, prog, ev string) int {
	j.t.Helper()
	re := regexp.MustCompile(`^(bpf\(BPF_LINK_CREATE, prog_fd=` + prog + ` target_fd=` + ev + ` attach_type=perf_event .*\) = \d+|` +
		`ioctl\(` + ev + `, PERF_EVENT_IOC_SET_BPF, ` + prog + `\) = 0) <`)
	for i := from; i < len(j.lines); i++ {
		if re.MatchString(j.lines[i]) {
			n, _ := j.find(i+1, `ioctl\(`+ev+`, PERF_EVENT_IOC_ENABLE, 0\) = 0`)
			return n
		}
	}
	j.t.Fatalf("journal lacks the attachment of program fd %s to perf event fd %s:\n%s", prog, ev, strings.Join(j.lines, "\n"))
	return 0
}

// progLoad matches the journal's line of a program of prog_type typ
// (as the journal names them: raw_tracepoint) named name, loaded; the
// submatch is its fd.
func progLoad(typ, name string) string {
	return `bpf\(BPF_PROG_LOAD, prog_type=` + typ + ` .* name="` + name + `" .*\) = (\d+)`
}

// mapRead matches a read of the map of fd: a walk, one key or a batch.
func mapRead(fd string) string {
	return `bpf\(BPF_MAP_(GET_NEXT_KEY|LOOKUP_BATCH|LOOKUP_AND_DELETE_BATCH), ` +
		`map_fd=` + fd + ` .*\) = .*`
}

// kfreeSkbConfig is the perf event config of tracepoint skb:kfree_skb, as
// the journal prints it.
func kfreeSkbConfig(t *testing.T) string {
	id, err := tracefs.TracepointID("skb", "kfree_skb")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%#x", id)
}

// TestToolJournals runs tools with BPFKIT_JOURNAL naming a file and checks
// the file holds each kernel action the tool takes, in the order that
// matters: a map and a program before the program is attached, a perf
// event opened before it is mapped, attached and enabled, every ring
// mapped is unmapped at exit. (Closing an fd is not journaled.)
func TestToolJournals(t *testing.T) {
	testutil.RequireRoot(t)
	cpus, err := sys.OnlineCPUs()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("dropmon -events", func(t *testing.T) {
		j, _ := runJournaled(t, "dropmon", "-events", "1", "1")
		i, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=perf_event_array .* name="drop_events"\) = (\d+)`)
		array := m[1]
		i, m = j.find(i, `bpf\(BPF_PROG_LOAD, prog_type=tracepoint .* name="dropmon_events" .*\) = (\d+)`)
		prog := m[1]
		_, m = j.find(0, `epoll_create1\(EPOLL_CLOEXEC\) = (\d+)`)
		epfd := m[1]
		type ring struct{ addr, size string }
		var rings []ring
		for _, cpu := range cpus {
			k, m := j.find(0, `perf_event_open\(type=software config=0xa sample_type=0x400 .*, pid=-1, cpu=`+strconv.Itoa(cpu)+`, group_fd=-1, flags=0x8\) = (\d+)`)
			fd := m[1]
			_, m = j.find(k, `mmap\(NULL, (\d+), PROT_READ\|PROT_WRITE, MAP_SHARED, `+fd+`, 0x0\) = (0x[0-9a-f]+)`)
			rings = append(rings, ring{m[2], m[1]})
			j.find(k, `bpf\(BPF_MAP_UPDATE_ELEM, map_fd=`+array+` flags=0x0\) = 0`)
			j.find(k, `epoll_ctl\(`+epfd+`, EPOLL_CTL_ADD, `+fd+`, \{events=0x1, data=`+strconv.Itoa(cpu)+`\}\) = 0`)
		}
		i, m = j.find(i, `perf_event_open\(type=tracepoint config=`+kfreeSkbConfig(t)+` .*\) = (\d+)`)
		enabled := j.attach(i, prog, m[1])
		j.find(enabled, `epoll_pwait\(`+epfd+`, \[.*\], \d+, -?\d+, NULL\) = \d+`)
		for _, r := range rings {
			j.find(enabled, `munmap\(`+r.addr+`, `+r.size+`\) = 0`)
		}
	})

	t.Run("dropmon", func(t *testing.T) {
		// Counting runs on the raw tracepoint: no perf event is opened,
		// so perf's other users of kfree_skb lose nothing.
		j, _ := runJournaled(t, "dropmon", "1", "1")
		i, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=hash .* name="drops"\) = (\d+)`)
		counts := m[1]
		i, m = j.find(i, progLoad("raw_tracepoint", "dropmon"))
		prog := m[1]
		i, _ = j.find(i, `bpf\(BPF_RAW_TRACEPOINT_OPEN, name="kfree_skb" prog_fd=`+prog+`\) = \d+`)
		j.find(i, mapRead(counts))
		for _, l := range j.lines {
			if strings.HasPrefix(l, "perf_event_open(") {
				t.Errorf("dropmon opened a perf event to count: %s", l)
			}
		}
	})

	t.Run("tracex2", func(t *testing.T) {
		// kfree_skb through its raw tracepoint; sys_enter_write through a
		// perf event that counts, not samples.
		j, _ := runJournaled(t, "tracex2", "1", "1")
		i, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=hash .* name="freed"\) = (\d+)`)
		freed := m[1]
		i, m = j.find(i, progLoad("raw_tracepoint", "tracex2_freed"))
		i, _ = j.find(i, `bpf\(BPF_RAW_TRACEPOINT_OPEN, name="kfree_skb" prog_fd=`+m[1]+`\) = \d+`)
		i, m = j.find(i, progLoad("tracepoint", "tracex2_write"))
		prog := m[1]
		id, err := tracefs.TracepointID("syscalls", "sys_enter_write")
		if err != nil {
			t.Fatal(err)
		}
		counting := `perf_event_open\(type=tracepoint config=%#x ` +
			`sample_type=0x0 wakeup=0 .*\) = (\d+)`
		i, m = j.find(i, fmt.Sprintf(counting, id))
		enabled := j.attach(i, prog, m[1])
		j.find(enabled, mapRead(freed))
	})

	t.Run("funccount", func(t *testing.T) {
		j, _ := runJournaled(t, "funccount", "syscalls:sys_enter_getppid",
			"sched:sched_process_exit", "1", "1")
		i, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=percpu_array key_size=4 value_size=8 `+
			`max_entries=2 .* name="funccount"\) = (\d+)`)
		counts := m[1]
		// getppid's number in the map of raw_syscalls:sys_enter's program
		i, m = j.find(i, `bpf\(BPF_MAP_CREATE, map_type=array key_size=4 value_size=4 `+
			`.* name="fc_sys_enter"\) = (\d+)`)
		i, _ = j.find(i, `bpf\(BPF_MAP_UPDATE_ELEM, map_fd=`+m[1]+` flags=0x0\) = 0`)
		i, m = j.find(i, `bpf\(BPF_PROG_LOAD, prog_type=raw_tracepoint .* `+
			`name="funccount_enter" .*\) = (\d+)`)
		i, _ = j.find(i, `bpf\(BPF_RAW_TRACEPOINT_OPEN, name="sys_enter" prog_fd=`+m[1]+`\) = \d+`)
		// the other tracepoint through a raw tracepoint of its name
		i, m = j.find(i, `bpf\(BPF_PROG_LOAD, prog_type=raw_tracepoint .* `+
			`name="funccount_raw" .*\) = (\d+)`)
		i, _ = j.find(i, `bpf\(BPF_RAW_TRACEPOINT_OPEN, name="sched_process_exit" `+
			`prog_fd=`+m[1]+`\) = \d+`)
		j.find(i, `bpf\(BPF_MAP_LOOKUP_ELEM, map_fd=`+counts+` flags=0x0\) = 0`)
		for _, l := range j.lines {
			if strings.HasPrefix(l, "perf_event_open(") {
				t.Fatalf("funccount opened a perf event: %s\n%s", l, strings.Join(j.lines, "\n"))
			}
		}
	})

	t.Run("example", func(t *testing.T) {
		j, out := runJournaled(t, "example")
		i, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=hash key_size=4 value_size=8 .* name="proto_counts"\) = (\d+)`)
		counts := m[1]
		i, m = j.find(i, `bpf\(BPF_PROG_LOAD, prog_type=socket_filter .* name="classify" .*\) = (\d+)`)
		prog := m[1]
		i, _ = j.find(i, `bpf\(BPF_OBJ_GET_INFO_BY_FD, bpf_fd=`+prog+` info_len=\d+\) = 0`)
		for range 3 {
			i, _ = j.find(i+1, `bpf\(BPF_PROG_TEST_RUN, prog_fd=`+prog+` data_size_in=\d+ ctx_size_in=0 repeat=0\) = 0`)
		}
		for range 2 {
			i, _ = j.find(i+1, `bpf\(BPF_MAP_GET_NEXT_KEY, map_fd=`+counts+` flags=0x0\) = 0`)
			i, _ = j.find(i+1, `bpf\(BPF_MAP_LOOKUP_ELEM, map_fd=`+counts+` flags=0x0\) = 0`)
		}
		i, _ = j.find(i+1, `bpf\(BPF_MAP_GET_NEXT_KEY, map_fd=`+counts+` flags=0x0\) = -1 ENOENT .*`)
		if i != len(j.lines)-1 {
			t.Errorf("calls after the end of the map walk:\n%s", strings.Join(j.lines[i+1:], "\n"))
		}
		// The journal the example prints, its own, is the same calls.
		_, printed, _ := strings.Cut(out, "BPFKIT_JOURNAL=1 prints it for any bpfkit program):\n")
		if printed != strings.Join(j.lines, "\n")+"\n" {
			t.Errorf("the example printed the journal\n%s\nBPFKIT_JOURNAL's file holds\n%s", printed, strings.Join(j.lines, "\n"))
		}
	})

	t.Run("usdt", func(t *testing.T) {
		path := sdtBinary(t)
		f, err := usdt.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var sites []usdt.Site
		for _, p := range f.Probes {
			if p.String() == "bpfkit:str" {
				sites = p.Sites
			}
		}
		if len(sites) < 2 {
			t.Fatalf("bpfkit:str has %d sites, want 2 or more", len(sites))
		}
		j, _ := runJournaled(t, "usdt", "-count", path, "bpfkit:str", "1", "1")
		// The table of counts, an array (a hash map before 5.12).
		_, m := j.find(0, `bpf\(BPF_MAP_CREATE, map_type=(array|hash) .* `+
			`name="usdt_counts"\) = (\d+)`)
		counts := m[2]
		last := usdtAttached(j, path, sites)
		j.find(last, `bpf\(BPF_MAP_(GET_NEXT_KEY|LOOKUP_BATCH|LOOKUP_AND_DELETE_BATCH), map_fd=`+counts+` .*\) = .*`)
	})
}

// usdtAttached finds where usdt attached its program to the sites: one
// uprobe_multi link for all (6.6), else a uprobe each, with the program
// loaded before. It returns the index of the last line of the attaching.
func usdtAttached(j *journal, path string, sites []usdt.Site) int {
	j.t.Helper()
	load := regexp.MustCompile(`^bpf\(BPF_PROG_LOAD, prog_type=kprobe .* name="usdt" .*\) = (\d+) `)
	loaded := func(before int) string {
		for k := before - 1; k >= 0; k-- {
			if m := load.FindStringSubmatch(j.lines[k]); m != nil {
				return m[1]
			}
		}
		j.t.Fatalf("no program loaded before line %d:\n%s", before+1, strings.Join(j.lines, "\n"))
		return ""
	}
	if multi, err := prog.HaveUprobeMulti(); err != nil {
		j.t.Fatal(err)
	} else if multi {
		i, m := j.find(0, fmt.Sprintf(`bpf\(BPF_LINK_CREATE, prog_fd=(\d+) `+
			`attach_type=trace_uprobe_multi uprobe_multi.path=%q flags=0x0 cnt=%d pid=0\) = \d+`,
			path, len(sites)))
		if prog := loaded(i); m[1] != prog {
			j.t.Fatalf("the uprobe_multi link is of program %s, the one loaded %s", m[1], prog)
		}
		return i
	}
	last := 0
	for _, s := range sites {
		i, m := j.find(0, fmt.Sprintf(`perf_event_open\(type=uprobe config=0x[0-9a-f]+ `+
			`uprobe_path=%q probe_offset=%#x .*, pid=-1, cpu=0, .*\) = (\d+)`, path, s.Offset))
		// The program attached to it was loaded before: one for every
		// site (bpf_cookie tells them apart), or one per site.
		last = max(last, j.attach(i, loaded(i), m[1]))
	}
	return last
}
