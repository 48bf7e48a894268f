package sys

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// PossibleCPUs is the number of CPUs the kernel could ever bring online, read
// once from /sys/devices/system/cpu/possible ("0-3", "0,2-5"). Per-CPU maps
// hold that many values: the highest CPU number plus one counts, not the
// number of CPUs listed.
func PossibleCPUs() (int, error) {
	possible.once.Do(func() {
		cpus, err := readCPUList("possible")
		if err == nil {
			possible.n = cpus[len(cpus)-1] + 1
		}
		possible.err = err
	})
	return possible.n, possible.err
}

// possible is PossibleCPUs' answer. Not a sync.OnceValues: a package
// variable made by a call is made at start-up, and links what it holds
// into every program.
var possible struct {
	once sync.Once
	n    int
	err  error
}

// OnlineCPUs lists the CPUs online now, from /sys/devices/system/cpu/online.
func OnlineCPUs() ([]int, error) { return readCPUList("online") }

func readCPUList(which string) ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/" + which)
	if err != nil {
		return nil, fmt.Errorf("sys: %s CPUs: %w", which, err)
	}
	return ParseCPUList(string(b))
}

// MaxCPUs bounds the CPU numbers ParseCPUList accepts: the largest
// CONFIG_NR_CPUS any architecture's Kconfig allows.
const MaxCPUs = 8192

// ParseCPUList expands a kernel CPU list such as "0-3,5" into the CPU
// numbers, in order; numbers must be below MaxCPUs. The list must be as the
// kernel writes it (bitmap_list_string): no signs, leading zeros or spaces,
// and runs apart, as "a-b" when of two CPUs or more.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), ",") {
		lo, top, isRange := strings.Cut(part, "-")
		if !isRange {
			top = lo
		}
		// In 64 bits: a 32-bit int cannot hold what a bad list may say.
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := strconv.ParseInt(top, 10, 64)
		canonical := err1 == nil && err2 == nil &&
			strconv.FormatInt(a, 10) == lo && strconv.FormatInt(b, 10) == top
		ascending := a <= b && (!isRange || a < b) &&
			(len(cpus) == 0 || a > int64(cpus[len(cpus)-1])+1)
		if !canonical || !ascending {
			return nil, fmt.Errorf("sys: bad CPU list %q", s)
		}
		if b >= MaxCPUs {
			return nil, fmt.Errorf("sys: CPU list %q: CPU %d is not below %d, the most a kernel can have",
				s, b, MaxCPUs)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, int(c))
		}
	}
	return cpus, nil
}
