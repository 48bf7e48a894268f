package tests

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/internal/testutil"
	"github.com/bpfkit/bpfkit/prog"
	"golang.org/x/sys/unix"
)

// TestAssembleAgreesWithVerifier holds Assemble's instruction checks
// against the kernel's: each case is one instruction inside a program that
// initialises every register and the stack slot r10-8. What Assemble
// refuses, the kernel must refuse with EINVAL when the same slots are loaded
// without Assemble (a write to r10 with EACCES: "frame pointer is read
// only"); what it accepts, the kernel must load. Cases on both sides of
// each limit keep the checks from being stricter than the kernel.
func TestAssembleAgreesWithVerifier(t *testing.T) {
	errFramePointer := errors.New("r10 written") // Assemble's ErrRegister for a write to r10
	testutil.RequireRoot(t)
	testutil.CheckNoLeaks(t)
	v4 := haveV4(t)
	// Whether the kernel knows load-acquire (6.15, after ISA v4): one that
	// does not refuses the instruction itself, whatever its registers.
	acquire := func() bool {
		p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "acquire", License: "GPL",
			Insns: []Item{StoreImm(BPF_DW, R10, -8, 0), LoadAcquire(BPF_W, R1, R10, -8),
				Mov64Imm(R0, 0), Exit()}})
		if err == nil {
			p.Close()
		}
		return err == nil
	}()
	raw := func(code uint8, dst, src Register, off int16, imm int32) Item {
		return Raw(Instruction{Code: code, Dst: dst, Src: src, Off: off, Imm: imm})
	}
	cases := []struct {
		name string
		it   Item
		bad  error // nil: both accept
		// recent: kernels before ISA v4 (6.6) may refuse it: the v4
		// instructions, atomic fetch ops (5.12); load-acquire before 6.15.
		recent bool
	}{
		{"mov r11", Mov64Reg(11, R1), ErrRegister, false},
		{"mov from r11", Mov64Reg(R1, 11), ErrRegister, false},
		{"mov from r15", Mov64Reg(R1, 15), ErrRegister, false},
		{"add to r12", ALU64Imm(BPF_ADD, 12, 1), ErrRegister, false},
		{"load into r11", LoadMem(BPF_DW, 11, R10, -8), ErrRegister, false},
		{"ld_imm64 into r13", LoadImm64(13, 1), ErrRegister, false},
		{"ld_imm64 pseudo 7", LoadImm64Raw(R1, 7, 1), ErrRegister, false},
		{"ld_imm64 pseudo 15", LoadImm64Raw(R1, 15, 1), ErrRegister, false},
		{"call pseudo 3", raw(BPF_JMP|uint8(BPF_CALL), 0, 3, 0, 1), ErrRegister, false},
		{"movsx64 8", Movsx64Reg(R1, R2, 8), nil, true},
		{"movsx64 32", Movsx64Reg(R1, R2, 32), nil, true},
		{"movsx64 7", Movsx64Reg(R1, R2, 7), ErrInvalid, false},
		{"movsx64 64", Movsx64Reg(R1, R2, 64), ErrInvalid, false},
		{"movsx64 1 is a cast", Movsx64Reg(R1, R2, 1), ErrInvalid, false},
		{"movsx32 16", Movsx32Reg(R1, R2, 16), nil, true},
		{"movsx32 32", Movsx32Reg(R1, R2, 32), ErrInvalid, false},
		{"mov64 imm with off", ALU64ImmOff(BPF_MOV, R1, 1, 8), ErrInvalid, false},
		{"mov64 reg with imm", raw(BPF_ALU64|uint8(BPF_MOV)|BPF_X, R1, R2, 0, 1), ErrInvalid, false},
		{"mov64 imm with src", raw(BPF_ALU64|uint8(BPF_MOV)|BPF_K, R1, R2, 0, 1), ErrInvalid, false},
		{"bswap 64", Bswap(R1, 64), nil, true},
		{"bswap 8", Bswap(R1, 8), ErrInvalid, false},
		{"bswap 0", Bswap(R1, 0), ErrInvalid, false},
		{"bswap 128", Bswap(R1, 128), ErrInvalid, false},
		{"be64", ToBE(R1, 64), nil, false},
		{"be 24", ToBE(R1, 24), ErrInvalid, false},
		{"alu64 be", raw(BPF_ALU64|uint8(BPF_END)|BPF_TO_BE, R1, 0, 0, 16), ErrInvalid, false},
		{"sdiv64 imm", SDiv64Imm(R1, 3), nil, true},
		{"smod32 reg", SMod32Reg(R1, R2), nil, true},
		{"div by zero", ALU64Imm(BPF_DIV, R1, 0), ErrInvalid, false},
		{"signed mod by zero", SMod32Imm(R1, 0), ErrInvalid, false},
		{"div off 2", ALU64ImmOff(BPF_DIV, R1, 3, 2), ErrInvalid, false},
		{"div off -1", ALU64RegOff(BPF_DIV, R1, R2, -1), ErrInvalid, false},
		{"add off 1", ALU64ImmOff(BPF_ADD, R1, 3, 1), ErrInvalid, false},
		{"add reg with imm", raw(BPF_ALU64|uint8(BPF_ADD)|BPF_X, R1, R2, 0, 5), ErrInvalid, false},
		{"add imm with src", raw(BPF_ALU|uint8(BPF_ADD)|BPF_K, R1, R2, 0, 5), ErrInvalid, false},
		{"lsh64 63", ALU64Imm(BPF_LSH, R1, 63), nil, false},
		{"lsh64 64", ALU64Imm(BPF_LSH, R1, 64), ErrInvalid, false},
		{"rsh32 31", ALU32Imm(BPF_RSH, R1, 31), nil, false},
		{"rsh32 32", ALU32Imm(BPF_RSH, R1, 32), ErrInvalid, false},
		{"arsh -1", ALU64Imm(BPF_ARSH, R1, -1), ErrInvalid, false},
		{"neg64", Neg64(R1), nil, false},
		{"neg with imm", ALU64Imm(BPF_NEG, R1, 1), ErrInvalid, false},
		{"neg with src", ALU64Reg(BPF_NEG, R1, R2), ErrInvalid, false},
		{"alu op 0xe0", ALU64Imm(0xe0, R1, 1), ErrInvalid, false},
		{"alu op 0xf0", ALU32Reg(0xf0, R1, R2), ErrInvalid, false},
		{"ldx sx dw", LoadMemSX(BPF_DW, R1, R10, -8), ErrInvalid, false},
		{"ldx sx w", LoadMemSX(BPF_W, R1, R10, -8), nil, true},
		{"ldx with imm", raw(BPF_LDX|uint8(BPF_DW)|BPF_MEM, R1, R10, -8, 1), ErrInvalid, false},
		{"ldx abs mode", raw(BPF_LDX|uint8(BPF_W)|BPF_ABS, R1, R10, -8, 0), ErrInvalid, false},
		{"st with src", raw(BPF_ST|uint8(BPF_DW)|BPF_MEM, R10, R1, -8, 1), ErrInvalid, false},
		{"stx with imm", raw(BPF_STX|uint8(BPF_DW)|BPF_MEM, R10, R1, -8, 1), ErrInvalid, false},
		{"atomic add w", Atomic(BPF_W, BPF_ADD.Atomic(), R10, R1, -8), nil, false},
		{"atomic fetch xor dw", Atomic(BPF_DW, BPF_XOR.Atomic()|BPF_FETCH, R10, R1, -8), nil, true},
		{"atomic add b", Atomic(BPF_B, BPF_ADD.Atomic(), R10, R1, -8), ErrInvalid, false},
		{"atomic xchg h", Atomic(BPF_H, BPF_XCHG, R10, R1, -8), ErrInvalid, false},
		{"atomic sub", Atomic(BPF_DW, BPF_SUB.Atomic(), R10, R1, -8), ErrInvalid, false},
		{"atomic 0x1000", Atomic(BPF_DW, 0x1000, R10, R1, -8), ErrInvalid, false},
		{"atomic 0x1001", Atomic(BPF_DW, 0x1000|BPF_FETCH, R10, R1, -8), ErrInvalid, false},
		{"ld_abs b", LoadAbs(BPF_B, 0), nil, false},
		{"ld_abs dw", LoadAbs(BPF_DW, 0), ErrInvalid, false},
		{"ld_abs with src", raw(BPF_LD|uint8(BPF_B)|BPF_ABS, 0, R1, 0, 0), ErrInvalid, false},
		{"ld_ind with off", raw(BPF_LD|uint8(BPF_B)|BPF_IND, 0, R1, 1, 0), ErrInvalid, false},
		{"ld imm w", raw(BPF_LD|uint8(BPF_W)|BPF_IMM, R1, 0, 0, 0), ErrInvalid, false},
		{"jeq with src", raw(BPF_JMP|uint8(BPF_JEQ)|BPF_K, R1, R2, 0, 0), ErrInvalid, false},
		{"jeq reg with imm", raw(BPF_JMP32|uint8(BPF_JEQ)|BPF_X, R1, R2, 0, 1), ErrInvalid, false},
		{"jump op 0xf0", raw(BPF_JMP|0xf0, R1, 0, 0, 0), ErrInvalid, false},
		{"ja with imm", raw(BPF_JMP|uint8(BPF_JA), 0, 0, 0, 1), ErrInvalid, false},
		{"gotol with off", raw(BPF_JMP32|uint8(BPF_JA), 0, 0, 1, 0), ErrInvalid, false},
		{"ja with dst", raw(BPF_JMP|uint8(BPF_JA), R1, 0, 0, 0), ErrInvalid, false},
		{"exit with imm", raw(BPF_JMP|uint8(BPF_EXIT), 0, 0, 0, 1), ErrInvalid, false},
		{"exit32", raw(BPF_JMP32|uint8(BPF_EXIT), 0, 0, 0, 0), ErrInvalid, false},
		{"call32", raw(BPF_JMP32|uint8(BPF_CALL), 0, 0, 0, 5), ErrInvalid, false},
		{"call with dst", raw(BPF_JMP|uint8(BPF_CALL), R1, 0, 0, 5), ErrInvalid, false},
		{"call with off", raw(BPF_JMP|uint8(BPF_CALL), 0, 0, 1, int32(BPF_FUNC_ktime_get_ns)), ErrInvalid, false},
		{"call helper 0", Call(0), ErrInvalid, false},
		{"call helper 212", Call(212), ErrInvalid, false},
		{"call ktime", Call(BPF_FUNC_ktime_get_ns), nil, false},
		{"jump past the end", JaOff(2), ErrOffsetRange, false},
		{"jump before the start", JaOff(-100), ErrOffsetRange, false},
		{"jump to the exit", JumpImmOff(BPF_JEQ, R1, 0, 1), nil, false},
		{"call past the end", CallRel(5), ErrOffsetRange, false},
		{"mov to r10", Mov64Imm(R10, 1), errFramePointer, false},
		{"mov32 to r10", Mov32Reg(R10, R1), errFramePointer, false},
		{"add to r10", ALU64Imm(BPF_ADD, R10, 8), errFramePointer, false},
		{"neg r10", Neg64(R10), errFramePointer, false},
		{"bswap r10", ToLE(R10, 64), errFramePointer, false},
		{"load into r10", LoadMem(BPF_DW, R10, R10, -8), errFramePointer, false},
		{"ld_imm64 into r10", LoadImm64(R10, 1), errFramePointer, false},
		// 4 bytes: a 32-bit kernel refuses an 8-byte load-acquire before it
		// looks at the registers (EOPNOTSUPP, "only supported on 64-bit arches").
		{"load-acquire into r10", LoadAcquire(BPF_W, R10, R10, -8), errFramePointer, true},
		{"fetch or into r10", Atomic(BPF_DW, BPF_OR.Atomic()|BPF_FETCH, R10, R10, -8),
			errFramePointer, true},
		{"xchg into r10", Atomic(BPF_DW, BPF_XCHG, R10, R10, -8), errFramePointer, true},
		{"store r10", StoreMem(BPF_DW, R10, -8, R10), nil, false},
		{"store into r10", StoreImm(BPF_DW, R10, -8, 1), nil, false},
		{"atomic add of r1 into r10", Atomic(BPF_DW, BPF_ADD.Atomic(), R10, R1, -8), nil, false},
		{"mov from r10", Mov64Reg(R1, R10), nil, false},
		{"jump on r10", JumpImmOff(BPF_JEQ, R10, 0, 0), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []Item{Mov64Reg(R6, R1)}
			for r := R0; r <= R9; r++ {
				if r != R6 {
					body = append(body, Mov64Imm(r, 0))
				}
			}
			body = append(body, StoreImm(BPF_DW, R10, -8, 0), c.it, Mov64Imm(R0, 0), Exit())
			_, err := Assemble(body)
			want := c.bad
			if c.bad == errFramePointer {
				want = ErrRegister
			}
			readOnly := strings.Contains(fmt.Sprint(err), "the frame pointer is read-only")
			if c.bad == errFramePointer && !readOnly || !errors.Is(err, want) ||
				(err == nil) != (c.bad == nil) {
				t.Fatalf("Assemble: %v, want %v", err, c.bad)
			}
			var slots []Instruction
			for _, it := range body {
				slots = append(slots, it.Instruction())
				if it.Instruction().IsLoadImm64() {
					slots = append(slots, Instruction{Imm: 1})
				}
			}
			p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "check", License: "GPL", Instructions: slots})
			var ve *prog.VerifierError
			fpRefused := errors.As(err, &ve) && errors.Is(err, unix.EACCES) &&
				strings.Contains(ve.Log, "frame pointer is read only")
			switch {
			case c.bad != nil && err == nil:
				p.Close()
				t.Fatalf("the kernel loads what Assemble refuses")
			case c.bad == errFramePointer && c.recent && err != nil &&
				(!v4 || c.it.Instruction().Imm == int32(BPF_LOAD_ACQ) && !acquire):
				// An older kernel does not know the instruction at all.
			case c.bad == errFramePointer && !fpRefused:
				t.Fatalf("the kernel refuses with %v, not EACCES for the frame pointer", err)
			case c.bad != nil && c.bad != errFramePointer && !errors.Is(err, unix.EINVAL):
				t.Fatalf("the kernel refuses with %v, not EINVAL", err)
			case c.bad == nil && c.recent && !v4:
				if err == nil {
					p.Close()
				}
			case c.bad == nil && err != nil:
				t.Fatalf("the kernel refuses what Assemble accepts: %v", err)
			case c.bad == nil:
				p.Close()
			}
		})
	}
}
