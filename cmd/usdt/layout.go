package main

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	"github.com/bpfkit/bpfkit/usdt"
	"golang.org/x/sys/unix"
)

// strSize is the bytes kept of each string argument, with its NUL.
const strSize = 128

// numSize is the bytes of a number argument, zero- or sign-extended.
const numSize = 8

// eventHeader is what each record of the events' perf ring starts with;
// the arguments chosen follow it, laid out by an argLayout.
type eventHeader struct {
	Time uint64   // bpf_ktime_get_ns() at the firing: CLOCK_MONOTONIC
	PID  uint32   // the process (its thread group id)
	_    uint32   // written as zero with PID, in one 8-byte store
	Comm [16]byte // the firing thread's name, NUL-padded
}

// field is one argument chosen: which, how it is read, and where the
// program puts it in an argLayout.
type field struct {
	N      int  // the argument's number, from 0
	Str    bool // the C string it points to (-s), strSize bytes; else the number (-a), numSize
	Signed bool // a number written signed at the call site ("-4@...")
	Off    int  // its offset in the layout
}

// size is the bytes the field takes in a layout.
func (f field) size() int {
	if f.Str {
		return strSize
	}
	return numSize
}

// argLayout is the arguments chosen, in the order of their numbers, as
// the program writes them: after an eventHeader in an event's record, and
// alone as the key of -count's counts. A number takes numSize bytes, a
// string strSize; newArgLayout computes the offsets, and only it.
type argLayout struct {
	fields []field
	size   int // the bytes of the arguments, a multiple of 8
}

// keySize is the bytes of -count's key: the arguments', or with none
// chosen numSize, a key of zero that counts every firing.
func (l argLayout) keySize() int { return max(l.size, numSize) }

// maxStack is what the program may keep on its stack of 512 bytes: the
// scratch bytes usdt.Args uses are below it.
const maxStack = 512 - usdt.Scratch

// headerSize is the bytes of an eventHeader.
const headerSize = int(unsafe.Sizeof(eventHeader{}))

// newArgLayout reads -a (nums) and -s (strs), lists of argument numbers,
// against the probe's arguments at its sites: each must be one the probe
// has, chosen once, and readable at every site.
func newArgLayout(nums, strs string, sites [][]usdt.Arg) (argLayout, error) {
	args := sites[0]
	var fields []field
	for _, list := range []struct {
		flag, numbers string
		str           bool
	}{{"a", nums, false}, {"s", strs, true}} {
		if list.numbers == "" {
			continue
		}
		for s := range strings.SplitSeq(list.numbers, ",") {
			n, err := strconv.Atoi(s)
			switch {
			case err != nil || n < 0 || n >= len(args):
				return argLayout{}, tool.Usagef("-%s %s: the probe has %d arguments, from 0",
					list.flag, list.numbers, len(args))
			case slices.ContainsFunc(fields, func(f field) bool { return f.N == n }):
				return argLayout{}, tool.Usagef("argument %d is chosen twice", n)
			}
			// Load would refuse it too, but after the maps are made, and
			// for a user without root only after NeedRoot.
			for _, site := range sites {
				if site[n].Err != nil {
					return argLayout{}, site[n].Err
				}
			}
			fields = append(fields, field{N: n, Str: list.str, Signed: args[n].Signed})
		}
	}
	slices.SortFunc(fields, func(a, b field) int { return a.N - b.N })
	l := argLayout{fields: fields}
	for i := range l.fields {
		l.fields[i].Off = l.size
		l.size += l.fields[i].size()
	}
	if headerSize+l.size > maxStack {
		return argLayout{}, tool.Usagef("the arguments chosen take %d bytes of stack with an "+
			"event's header: more than the %d there are (a string takes %d)",
			headerSize+l.size, maxStack, strSize)
	}
	return l, nil
}

// value is one argument's value as read back from a record or a key: a
// string, a signed or an unsigned number.
type value struct {
	str    string
	num    uint64
	isStr  bool
	signed bool
}

// values reads the arguments of a record or key laid out by l, b
// starting at the first argument.
func (l argLayout) values(b []byte) []value {
	out := make([]value, 0, len(l.fields))
	for _, f := range l.fields {
		at := b[f.Off : f.Off+f.size()]
		if f.Str {
			out = append(out, value{str: unix.ByteSliceToString(at), isStr: true})
			continue
		}
		out = append(out, value{num: binary.LittleEndian.Uint64(at), signed: f.Signed})
	}
	return out
}
