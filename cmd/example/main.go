// Command example shows bpfkit end to end without attaching to anything: it
// builds a packet classifier with the insn DSL, loads it, runs it on two
// hand-made packets with BPF_PROG_TEST_RUN, and prints the program as the
// kernel holds it, the results, the counts in its map and the journal of
// every bpf() call it made.
//
// Run it as root: go run ./cmd/example (or make example); -h says what it
// does and loads nothing.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/bpfkit/bpfkit/cmd/internal/tool"
	. "github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
	"github.com/bpfkit/bpfkit/sys"
)

func main() {
	tool.New("example", "build a packet classifier with the insn DSL, load it, test-run it "+
		"on hand-made packets, and print the program as the kernel holds it, the results, its "+
		"map and the journal of its bpf() calls; it attaches to nothing (needs root to load)",
		"",
		"example               # the whole run, as root",
		"go run ./cmd/example  # the same from a checkout (make example)",
	).Plain().ParseOrExit()
	var journal bytes.Buffer
	sys.SetJournal(&journal)
	err := run()
	sys.SetJournal(nil)
	fmt.Printf("\nbpf() calls made (the journal; BPFKIT_JOURNAL=1 prints it for any bpfkit program):\n%s", journal.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run() error {
	// counts: IP protocol number -> packets seen.
	counts, err := mapfd.Create(mapfd.Spec{Type: mapfd.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 256, Name: "proto_counts"})
	if err != nil {
		return err
	}
	defer counts.Close()

	// A socket filter sees the packet from its IPv4 header on. It counts
	// the packet under its protocol and returns its TTL.
	p, err := prog.Load(prog.Spec{Type: prog.SocketFilter, Name: "classify", License: "GPL", Insns: []Item{
		Mov64Reg(R6, R1),  // r6 = skb, which LD_ABS needs
		LoadAbs(BPF_B, 9), // r0 = ip->protocol
		StoreMem(BPF_W, R10, -4, R0),
		Mov64Reg(R2, R10), // r2 = &key
		ALU64Imm(BPF_ADD, R2, -4),
		LoadMapFD(R1, counts),
		Call(BPF_FUNC_map_lookup_elem),
		JumpImm(BPF_JEQ, R0, 0, "new"),
		Mov64Imm(R1, 1), // the protocol was seen before: add one
		Atomic(BPF_DW, BPF_ADD.Atomic(), R0, R1, 0),
		Ja("ttl"),
		Label("new"), // first packet of this protocol: insert 1
		StoreImm(BPF_DW, R10, -16, 1),
		Mov64Reg(R2, R10),
		ALU64Imm(BPF_ADD, R2, -4),
		Mov64Reg(R3, R10),
		ALU64Imm(BPF_ADD, R3, -16),
		LoadMapFD(R1, counts),
		Mov64Imm(R4, 0), // BPF_ANY
		Call(BPF_FUNC_map_update_elem),
		Label("ttl"),
		LoadAbs(BPF_B, 8), // r0 = ip->ttl
		Exit(),
	}})
	if err != nil {
		return err
	}
	defer p.Close()

	info, err := p.Info()
	if err != nil {
		return err
	}
	fmt.Printf("program %q id %d tag %s, as the verifier left it:\n%s", info.Name, info.ID, info.Tag, info.Listing())

	for _, pkt := range []struct {
		name       string
		proto, ttl byte
	}{{"tcp", 6, 64}, {"udp", 17, 128}, {"tcp", 6, 63}} {
		r, err := p.TestRun(prog.RunOptions{Data: packet(pkt.proto, pkt.ttl)})
		if err != nil {
			return err
		}
		fmt.Printf("test run on a %s packet with ttl %d: the program returned %d\n", pkt.name, pkt.ttl, r.Retval)
	}

	typed, err := mapfd.NewTyped[uint32, uint64](counts)
	if err != nil {
		return err
	}
	var iterErr error
	for proto, n := range typed.All(&iterErr) {
		fmt.Printf("map %s: protocol %d seen %d times\n", counts.Name(), proto, n)
	}
	return iterErr
}

// packet is an Ethernet frame holding an IPv4 header with the given
// protocol and TTL.
func packet(proto, ttl byte) []byte {
	b := make([]byte, 14+20)
	binary.BigEndian.PutUint16(b[12:], 0x0800) // EtherType IPv4
	ip := b[14:]
	ip[0], ip[8], ip[9] = 0x45, ttl, proto
	binary.BigEndian.PutUint16(ip[2:], 20)
	return b
}
