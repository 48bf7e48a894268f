package tracefs_test

import (
	"errors"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/tracefs"
	"golang.org/x/sys/unix"
)

// TestFunctionsList: available_filter_functions is read where the kernel
// shows it; where it does not (this host: EPERM without dynamic ftrace),
// the error keeps the errno.
func TestFunctionsList(t *testing.T) {
	testutil.RequireRoot(t)
	funcs, err := tracefs.Functions()
	if err != nil {
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOENT) {
			t.Fatalf("tracefs.Functions: %v, want a list or EPERM/ENOENT", err)
		}
		t.Skipf("no function list here: %v", err)
	}
	if len(funcs) < 1000 {
		t.Fatalf("only %d traceable functions", len(funcs))
	}
	for _, f := range funcs {
		if f == "" || len(f) > 511 {
			t.Fatalf("function name %q", f)
		}
	}
}
