package tool

import (
	"fmt"
	"strconv"
)

// PIDMaxLimit is the largest process id a Linux kernel hands out,
// PID_MAX_LIMIT of include/linux/threads.h on 64-bit kernels
// (kernel.pid_max can be raised up to it, no further).
const PIDMaxLimit = 4 * 1024 * 1024

// PIDFlag defines the flag -name taking a process id, 1 to PIDMaxLimit:
// anything else (0, -3, 4294967297, which a 32-bit conversion would make
// pid 1) is a usage error when the arguments are parsed. After Parse, the
// returned value holds the pid, or 0 when the flag was not given.
func (t *Tool) PIDFlag(name, usage string) *uint32 {
	pid := new(uint32)
	t.Flags.Var(pidValue{pid: pid}, name, usage)
	return pid
}

// PIDOrAllFlag is PIDFlag for a tool where -name 0 means every process,
// as leaving the flag out does.
func (t *Tool) PIDOrAllFlag(name, usage string) *uint32 {
	pid := new(uint32)
	t.Flags.Var(pidValue{pid: pid, zeroIsAll: true}, name, usage)
	return pid
}

// pidValue is the flag.Value of a PIDFlag.
type pidValue struct {
	pid       *uint32
	zeroIsAll bool
}

func (v pidValue) String() string {
	if v.pid == nil { // the zero value flag.PrintDefaults makes to compare with
		return "0"
	}
	return strconv.FormatUint(uint64(*v.pid), 10)
}

func (v pidValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	switch {
	case err == nil && n == 0 && v.zeroIsAll:
	case v.zeroIsAll && (err != nil || n > PIDMaxLimit):
		return fmt.Errorf("want a process id from 1 to %d, or 0 for every process", PIDMaxLimit)
	case err != nil || n < 1 || n > PIDMaxLimit:
		return fmt.Errorf("want a process id from 1 to %d", PIDMaxLimit)
	}
	*v.pid = uint32(n)
	return nil
}
