package tests

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

func TestMain(m *testing.M) {
	if sizes := os.Getenv("BPFKIT_TEST_WRITER"); sizes != "" {
		os.Exit(writer(sizes))
	}
	os.Exit(testutil.LeakMain(m))
}

// writer is this binary run as a workload (BPFKIT_TEST_WRITER=100,5000,...):
// once a line arrives on stdin it calls getppid BPFKIT_TEST_GETPPID times,
// writes those many bytes to /dev/null, one write(2) each, and exits.
func writer(sizes string) int {
	bufio.NewReader(os.Stdin).ReadString('\n')
	n, _ := strconv.Atoi(os.Getenv("BPFKIT_TEST_GETPPID"))
	for range n {
		syscall.Getppid()
	}
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		return 1
	}
	buf := make([]byte, 1<<20)
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n > len(buf) {
			return 1
		}
		null.Write(buf[:n])
	}
	return 0
}
