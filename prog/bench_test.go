package prog_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/benchutil"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// bareLoad is union bpf_attr's BPF_PROG_LOAD member up to prog_name, what a
// program with no library at all would hand the kernel.
type bareLoad struct {
	progType, insnCnt     uint32
	insns, license        uintptr
	logLevel, logSize     uint32
	logBuf                uintptr
	kernVersion, progFlag uint32
	name                  [16]byte
}

// program returns n instructions of straight-line arithmetic.
func program(n int) []insn.Item {
	items := []insn.Item{insn.Mov64Imm(insn.R0, 0)}
	for i := 0; len(items) < n-1; i++ {
		items = append(items, insn.ALU64Imm(insn.BPF_ADD, insn.R0, int32(i)))
	}
	return append(items, insn.Exit())
}

// BenchmarkLoad loads 10- and 1000-instruction programs through prog.Load
// (assembly and encoding included) and, interleaved, through a bare
// BPF_PROG_LOAD of the same bytes.
func BenchmarkLoad(b *testing.B) {
	testutil.RequireRoot(b)
	for _, n := range []int{10, 1000} {
		items := program(n)
		ins, _ := insn.Assemble(items)
		code, err := insn.Encode(ins)
		if err != nil {
			b.Fatal(err)
		}
		license := []byte("GPL\x00")
		b.Run(fmt.Sprintf("%d-insns", n), func(b *testing.B) {
			benchutil.Compare(b, 10, func(int) {
				a := bareLoad{progType: unix.BPF_PROG_TYPE_SOCKET_FILTER, insnCnt: uint32(len(ins)),
					insns: uintptr(unsafe.Pointer(&code[0])), license: uintptr(unsafe.Pointer(&license[0]))}
				fd, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a))
				for e == unix.EAGAIN { // a signal interrupted the verifier: what anyone must do
					fd, _, e = unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a))
				}
				if e != 0 {
					b.Fatal(e)
				}
				unix.Close(int(fd))
			}, func(int) {
				p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Insns: items})
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
			})
		})
		b.Run(fmt.Sprintf("%d-insns-preassembled", n), func(b *testing.B) {
			benchutil.Compare(b, 10, func(int) {
				a := bareLoad{progType: unix.BPF_PROG_TYPE_SOCKET_FILTER, insnCnt: uint32(len(ins)),
					insns: uintptr(unsafe.Pointer(&code[0])), license: uintptr(unsafe.Pointer(&license[0]))}
				fd, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a))
				for e == unix.EAGAIN {
					fd, _, e = unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a))
				}
				if e != 0 {
					b.Fatal(e)
				}
				unix.Close(int(fd))
			}, func(int) {
				p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, License: "GPL", Instructions: ins})
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
			})
		})
	}
}
