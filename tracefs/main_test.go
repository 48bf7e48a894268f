package tracefs_test

import (
	"os"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }
