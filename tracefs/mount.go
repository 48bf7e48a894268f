package tracefs

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bpfkit/bpfkit/sys"
)

// DefaultMount is where tracefs is mounted when no mount is found.
const DefaultMount = "/sys/kernel/tracing"

var root struct {
	sync.Mutex
	path string
}

// Path returns the directory of the tracing file system, cached once found:
// a tracefs mount, else a debugfs mount's tracing/ (before 4.1), else
// tracefs newly mounted at DefaultMount.
func Path() (string, error) {
	root.Lock()
	defer root.Unlock()
	if root.path != "" {
		return root.path, nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("tracefs: %w", err)
	}
	p := findMount(string(b))
	if p == "" {
		if err := sys.Mount("nodev", DefaultMount, "tracefs"); err != nil {
			return "", fmt.Errorf("tracefs: not mounted, and mounting it at %s failed (%w): "+
				"mount it with 'mount -t tracefs nodev %s' as root", DefaultMount, err, DefaultMount)
		}
		p = DefaultMount
	}
	root.path = p
	return p, nil
}

// findMount finds in mountinfo, /proc/self/mountinfo's text, a tracefs
// mount, else a debugfs mount's tracing/: field 5 is the mount point, the
// type follows " - " after six fields or more (proc_pid_mountinfo(5)).
func findMount(mountinfo string) string {
	debugfs := ""
	for line := range strings.SplitSeq(mountinfo, "\n") {
		fields := strings.Split(line, " ") // not Fields: U+00A0 in a path is no separator
		sep := slices.Index(fields, "-")
		if sep < 6 || sep+1 >= len(fields) {
			continue
		}
		switch fields[sep+1] {
		case "tracefs":
			return unescape(fields[4])
		case "debugfs":
			if _, err := os.Stat(unescape(fields[4]) + "/tracing/events"); err == nil && debugfs == "" {
				debugfs = unescape(fields[4]) + "/tracing"
			}
		}
	}
	return debugfs
}

// unescape undoes mountinfo's escapes (mangle_path): a space, tab, newline
// or backslash is \ and three octal digits (\040 for a space).
func unescape(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b, i = append(b, byte(n)), i+3
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// ErrNotExist is returned for a tracepoint or event that does not exist,
// with os.ErrNotExist.
var ErrNotExist = errors.New("tracefs: no such event")

// wrap is sys.Wrap for tracefs's errors.
func wrap(err error, format string, args ...any) error {
	return sys.Wrap("tracefs", err, format, args...)
}

func file(rel ...string) (string, error) {
	p, err := Path()
	if err != nil {
		return "", err
	}
	return p + "/" + strings.Join(rel, "/"), nil
}
