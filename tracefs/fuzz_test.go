package tracefs

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for the parsers of kernel text that are not exported.

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`/mnt/a\040b`, `\134`, `\0`, `\777`, `x\`, `\12x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := unescape(s)
		if len(u) > len(s) || !strings.Contains(s, `\`) && u != s {
			t.Fatalf("unescape(%q) = %q", s, u)
		}
	})
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/mnt/a\040b`: "/mnt/a b", `\134\011`: "\\\t", `\400`: `\400`, `\08`: `\08`, `ab\`: `ab\`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("1 (a b) c) S 0 1 1 0 -1 4194560 1 2 0 0 0 0 0 0 20 0 1 0 12345 1 2 3")
	f.Add(")")
	f.Fuzz(func(t *testing.T, s string) { parseStat([]byte(s)) })
}

func TestParseStat(t *testing.T) {
	start, err := parseStat([]byte("7 (a) b (c)) S 0 1 1 0 -1 4194560 1 2 0 0 0 0 0 0 20 0 1 0 12345 1 2 3"))
	if err != nil || start != 12345 {
		t.Fatalf("start %d, %v", start, err)
	}
	if _, err := parseStat([]byte("7 (a) S 0")); err == nil {
		t.Fatal("a short stat parsed")
	}
}

func FuzzParseGroup(f *testing.F) {
	f.Add("bpfkit_4026531836_1_123")
	f.Add("bpfkit_1_2")
	f.Fuzz(func(t *testing.T, g string) {
		if ns, pid, start, ok := parseGroup(g); ok && g != "bpfkit_"+itoa(ns)+"_"+itoa(pid)+"_"+itoa(start) {
			t.Fatalf("parseGroup(%q) = %d, %d, %d", g, ns, pid, start)
		}
	})
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func FuzzNewError(f *testing.F) {
	f.Add("", "[ 1.2] trace_uprobe: error: File not found\n  Command: x\n  ^\n")
	f.Fuzz(func(t *testing.T, before, after string) {
		if r := newError(before, after); r != "" && !strings.Contains(after, r) {
			t.Fatalf("newError quotes %q, which %q does not hold", r, after)
		}
	})
}

func TestNewError(t *testing.T) {
	old := "[  1.000001] trace_uprobe: error: Failed to find the given file\n  Command: p:g/e /x:0x0\n              ^\n"
	fresh := old + "[  2.000002] trace_kprobe: error: Function not found\n  Command: p:g/e nosuch\n              ^\n"
	for _, c := range []struct{ before, after, want string }{
		{"", old, "Failed to find the given file"},
		{old, old, ""},
		{old, fresh, "Function not found"},
		{fresh, fresh, ""},
		{"", "", ""},
	} {
		if got := newError(c.before, c.after); got != c.want {
			t.Errorf("newError(%q, %q) = %q, want %q", c.before, c.after, got, c.want)
		}
	}
}

// mountinfo is two lines of /proc/self/mountinfo: a tracefs mount whose
// path holds a space, after a line with optional fields.
const mountinfo = "22 1 0:21 / /proc rw,nosuid shared:12 master:1 - proc proc rw\n" +
	`30 22 0:12 / /mnt/my\040trace rw,relatime shared:9 - tracefs nodev rw` + "\n"

func TestFindMount(t *testing.T) {
	for text, want := range map[string]string{
		mountinfo:                             "/mnt/my trace",
		"":                                    "",
		"1 2 3 4 /a\u00a0b rw - tracefs t rw": "/a\u00a0b", // U+00A0, a space to strings.Fields
		"1 2 3 4 - tracefs\n":                 "",          // fewer than 6 fields before " - "
		"1 2 3 4 /x rw - tracefs":             "/x",        // no newline at the end
		"1 2 3 4 /x rw -\n":                   "",          // no type after " - "
		"1 2 3 4 /d rw - debugfs d rw\n":      "",          // a debugfs without tracing/events
	} {
		if got := findMount(text); got != want {
			t.Errorf("findMount(%q) = %q, want %q", text, got, want)
		}
	}
}

// FuzzFindMount: any mountinfo text gives "", or the unescaped mount point
// (field 5) of a line, with /tracing for a debugfs.
func FuzzFindMount(f *testing.F) {
	f.Add(mountinfo)
	f.Add("1 2 3 4 /sys/kernel/debug rw - debugfs debugfs rw\n- - - - - - - -")
	f.Fuzz(func(t *testing.T, text string) {
		got := findMount(text)
		if got == "" {
			return
		}
		for line := range strings.SplitSeq(text, "\n") {
			if fields := strings.Split(line, " "); slices.Index(fields, "-") >= 6 && (unescape(fields[4]) == got || unescape(fields[4])+"/tracing" == got) {
				return
			}
		}
		t.Fatalf("findMount(%q) = %q, the mount point of no line", text, got)
	})
}

// FuzzEventNames: each name comes from one line of the events file, after
// its first ':' and up to the first space; lines without ':' give none.
func FuzzEventNames(f *testing.F) {
	f.Add("p:bpfkit_1_2_3/e1 /usr/bin/true:0x1000\nr10:g/e2 vfs_write\n")
	f.Add("garbage\n\n:\n")
	f.Fuzz(func(t *testing.T, text string) {
		names := eventNames(text)
		want := 0
		for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
			if strings.Contains(line, ":") {
				want++
			}
		}
		if len(names) != want {
			t.Fatalf("%q: %d names, want %d", text, len(names), want)
		}
		for _, n := range names {
			if strings.Contains(n, " ") || strings.Contains(n, "\n") || !strings.Contains(text, n) {
				t.Fatalf("%q: name %q", text, n)
			}
		}
	})
}
