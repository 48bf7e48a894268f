package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpfkit/bpfkit/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.LeakMain(m)) }

// lockedBuffer is dropmon's output, written by run and read by the test;
// started is closed at the first write, once the program is attached.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	started chan struct{}
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.once.Do(func() { close(b.started) })
	return b.buf.Write(p)
}

// TestDropsToClosedPort sends 100 UDP datagrams to a closed port on the
// loopback: the kernel drops each with reason NO_SOCKET (5.17+), and dropmon
// must count at least those 100 under that reason.
func TestDropsToClosedPort(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	// A port nothing listens on: bound a moment ago, closed now.
	probe, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := probe.LocalAddr()
	probe.Close()

	out := &lockedBuffer{started: make(chan struct{})}
	done := make(chan error)
	go func() {
		done <- run(context.Background(), options{interval: 300 * time.Millisecond, count: 4, top: 20}, out)
	}()
	select {
	case <-out.started:
	case err := <-done:
		t.Fatal(err)
	}
	sender, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	for range 100 {
		if _, err := sender.WriteTo([]byte("drop me"), closed); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	text := out.buf.String()
	out.mu.Unlock()
	noSocket := 0
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "NO_SOCKET" {
			n, _ := strconv.Atoi(f[0])
			noSocket += n
		}
	}
	if noSocket < 100 {
		t.Fatalf("counted %d NO_SOCKET drops, want at least 100:\n%s", noSocket, text)
	}
	t.Log("\n" + text)
}
