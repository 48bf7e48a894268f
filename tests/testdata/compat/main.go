// Command compat is a workload built for 386 and run on a 64-bit kernel,
// whose system calls are then compat calls: once a line arrives on stdin
// it calls getppid as many times as its first argument says, writes one
// byte to /dev/null as many times as its second, and exits.
package main

import (
	"bufio"
	"os"
	"strconv"
	"syscall"
)

func main() {
	getppids, _ := strconv.Atoi(os.Args[1])
	writes, _ := strconv.Atoi(os.Args[2])
	null, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		os.Exit(1)
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	for range getppids {
		syscall.Getppid()
	}
	for range writes {
		null.Write([]byte{'x'})
	}
}
