package tracefs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

// TestMain holds the tests' sweep lock (testutil.SweepLock) while the
// package's tests run: TestSweep, TestAdversarialSweep and ExampleSweep
// sweep, and TestSweep keeps a killed child's events for its own Sweep to
// find. The test binaries run again as children know it is held.
func TestMain(m *testing.M) {
	unlock, err := testutil.SweepLock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "the tests' sweep lock:", err)
		os.Exit(1)
	}
	code := testutil.LeakMain(m)
	unlock()
	os.Exit(code)
}
