package prog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/sys"
	"golang.org/x/sys/unix"
)

// Feature probes: each tries the feature once, with a tiny program or a bad
// fd, and caches the answer. None reads the kernel version.

// HavePerfLink reports whether the kernel has BPF perf links (5.15), found
// once by trying: BPF_LINK_CREATE with attach type BPF_PERF_EVENT and a bad
// target fd answers EBADF where perf links exist (the kernel got as far as
// looking the perf event up) and EINVAL where the attach type is unknown.
func HavePerfLink() (bool, error) {
	perfLink.once.Do(func() {
		p, err := Load(Spec{Type: Tracepoint, Name: "probe_link", License: "GPL", Insns: retZero})
		if err != nil {
			perfLink.err = fmt.Errorf("probe for perf links: %w", err)
			return
		}
		defer p.Close()
		_, err = sys.LinkCreate(&sys.LinkCreateAttr{ProgFD: uint32(p.fd.Int()), TargetFD: ^uint32(0), AttachType: unix.BPF_PERF_EVENT})
		switch {
		case errors.Is(err, unix.EBADF):
			perfLink.ok = true
		case errors.Is(err, unix.EINVAL):
		default:
			perfLink.err = fmt.Errorf("probe for perf links: unexpected answer %v", err)
		}
	})
	return perfLink.ok, perfLink.err
}

var perfLink struct {
	once sync.Once
	ok   bool
	err  error
}

// HaveISAv4 reports whether the verifier accepts the instructions of ISA
// v4 (6.6): sign-extending loads and moves, signed division and modulo,
// bswap and gotol. It tries "r0 = (s8)r0", which older verifiers refuse
// ("BPF_ALU uses reserved fields").
func HaveISAv4() (bool, error) {
	isaV4.once.Do(func() {
		p, err := Load(Spec{Type: SocketFilter, Name: "probe_v4", License: "GPL", Insns: []insn.Item{
			insn.Mov64Imm(insn.R0, 0), insn.Movsx64Reg(insn.R0, insn.R0, 8), insn.Exit()}})
		switch {
		case err == nil:
			isaV4.ok = true
			p.Close()
		case errors.Is(err, unix.EINVAL):
		default:
			isaV4.err = fmt.Errorf("probe for ISA v4: %w", err)
		}
	})
	return isaV4.ok, isaV4.err
}

var isaV4 struct {
	once sync.Once
	ok   bool
	err  error
}
