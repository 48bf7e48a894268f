// Command sizebase is dropmon without BPF, for make bench's size
// comparison: it uses the standard library as dropmon and its tool package
// do (flags, signals, contexts, fmt, time formatting, JSON, sorting, a TCP
// listener read through a pooled bufio reader with deadlines, errors, the
// build information that -version prints, control characters quoted), so
// that the difference in size between dropmon and it is what bpfkit costs.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
)

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

type row struct {
	Location string   `json:"location,omitempty"`
	Stack    []string `json:"stack,omitempty"`
	Drops    uint64   `json:"drops"`
}

func main() {
	fs := flag.NewFlagSet("sizebase", flag.ContinueOnError)
	top := fs.Int("top", 10, "rows")
	listen := fs.String("listen", "", "address")
	if err := fs.Parse(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	d, _ := time.ParseDuration(fs.Arg(0))
	f, _ := strconv.ParseFloat(fs.Arg(1), 64)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows := []row{{Location: strings.Repeat("x", *top), Drops: uint64(bits.Len64(uint64(f)))}}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Drops > rows[j].Drops })
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err == nil {
			go func() {
				c, err := ln.Accept()
				if err == nil {
					r := readers.Get().(*bufio.Reader)
					r.Reset(c)
					c.SetReadDeadline(time.Now().Add(time.Second))
					line, _ := r.ReadSlice('\n')
					h := strings.ToLower(string(line))
					c.SetWriteDeadline(time.Now().Add(time.Second))
					closing := strings.EqualFold(h, "close")
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n\r\n%s %v", line, closing)
					c.Close()
					readers.Put(r)
				}
			}()
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok && len(os.Args) > 5 { // -version
		for _, s := range info.Settings {
			fmt.Println(info.Main.Path, info.Main.Version, s.Key, s.Value, info.GoVersion)
		}
	}
	if strings.ContainsFunc(os.Args[0], unicode.IsControl) { // a usage error, quoted on one line
		fmt.Println(strconv.QuoteRune(rune(os.Args[0][0])))
	}
	var wg sync.WaitGroup
	wg.Go(func() { <-ctx.Done() })
	b, _ := json.Marshal(rows)
	fmt.Printf("%s %s %d %v\n", b, time.Now().Add(d).Format("15:04:05.000"), binary.LittleEndian.Uint64(make([]byte, 8)), time.Now().Format(time.RFC3339Nano))
	stop()
	wg.Wait()
}
