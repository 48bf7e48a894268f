package tests

import (
	"net"
	"os"
	"runtime"
	"testing"
	"unsafe"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestKprobeArguments: a kprobe on __sys_sendto, the kernel function that
// sendto(2) calls with its six arguments as the process gave them, reads
// each through prog.KernelPtRegs (the pt_regs offsets of this machine, in
// prog/arch.go: di si dx cx r8 r9 on x86-64, x0-x5 on arm64) into slots 0-5;
// a kretprobe reads the return value into slot 6. The test makes the call
// with values it chose (socket, buffer address, length, flags, address,
// address length) and finds each one, and the length sent, in its slot.
// 32-bit arm passes four arguments in registers (r0-r3, uregs[0-3]) and the
// others on the stack: those four are checked, and Arg must refuse the rest.
func TestKprobeArguments(t *testing.T) {
	requireKprobes(t)
	testutil.CheckNoLeaks(t)
	regs, err := prog.KernelPtRegs()
	if err != nil {
		t.Fatal(err)
	}
	m, tm := newArray(t, 7)
	// load stores what reads read into slots first, first+1, ...
	load := func(name string, first int32, reads ...Item) *prog.Program {
		items := []Item{
			Mov64Reg(R6, R1),
			Call(BPF_FUNC_get_current_pid_tgid),
			ALU64Imm(BPF_RSH, R0, 32),
			JumpImm(BPF_JNE, R0, int32(os.Getpid()), "out"),
		}
		for i, read := range reads {
			items = append(items, read, StoreImm(BPF_W, R10, -4, first+int32(i)), Mov64Reg(R2, R10),
				ALU64Imm(BPF_ADD, R2, -4), LoadMapFD(R1, m), Call(BPF_FUNC_map_lookup_elem),
				JumpImm(BPF_JEQ, R0, 0, "out"), StoreMem(BPF_DW, R0, 0, R7))
		}
		items = append(items, Label("out"), Mov64Imm(R0, 0), Exit())
		p, err := prog.Load(prog.Spec{Type: prog.Kprobe, Name: name, License: "GPL", Insns: items})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	var args []Item
	inRegs := min(6, len(regs.Args))
	for n := range 6 {
		a, err := regs.Arg(R7, R6, n)
		if n >= inRegs {
			if err == nil {
				t.Fatalf("%s: argument %d, not in a register, read from pt_regs", regs.Arch, n)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", regs.Arch, err)
		}
		args = append(args, a)
	}
	for ret, p := range []*prog.Program{load("sendto_args", 0, args...), load("sendto_ret", 6, regs.Return(R7, R6))} {
		l, err := prog.AttachKprobe(p, "__sys_sendto", prog.KprobeOptions{Return: ret == 1})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}

	for slot, w := range sendto(t, 1) {
		if slot >= inRegs && slot < 6 {
			continue
		}
		got, err := tm.Lookup(uint32(slot))
		if sendtoInt(slot) {
			got = uint64(uint32(got))
		}
		if err != nil || got != w {
			t.Errorf("%s: %s (slot %d) = %#x, %v; want %#x", regs.Arch, sendtoNames[slot], slot,
				got, err, w)
		}
	}
}

// sendtoNames are sendto(2)'s six arguments and its return value, in the
// order sendto returns them.
var sendtoNames = []string{"fd", "buff", "len", "flags", "addr", "addr_len", "return value"}

// sendtoInt says whether argument i is an int (fd, flags, addr_len): the
// calling convention leaves the upper half of its register undefined, so
// only 32 bits count.
func sendtoInt(i int) bool { return i == 0 || i == 3 || i == 5 }

// sendto sends n datagrams of 123 bytes to a local UDP socket, with
// sendto(2) made raw, and returns its six arguments and return value.
func sendto(t *testing.T, n int) []uint64 {
	t.Helper()
	rx, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	port := rx.LocalAddr().(*net.UDPAddr).Port
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 123)
	sa := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	pb := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order
	pb[0], pb[1] = byte(port>>8), byte(port)
	for range n {
		r, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])),
			uintptr(len(buf)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, uintptr(unsafe.Pointer(sa)),
			unix.SizeofSockaddrInet4)
		if errno != 0 || r != uintptr(len(buf)) {
			t.Fatalf("sendto: %d, %v", r, errno)
		}
	}
	want := []uint64{uint64(fd), uint64(uintptr(unsafe.Pointer(&buf[0]))), uint64(len(buf)),
		unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL, uint64(uintptr(unsafe.Pointer(sa))),
		unix.SizeofSockaddrInet4, uint64(len(buf))}
	runtime.KeepAlive(buf)
	runtime.KeepAlive(sa)
	return want
}
