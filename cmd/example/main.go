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
	"github.com/bpfkit/bpfkit/insn"
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
	fmt.Printf("\nbpf() calls made (the journal; BPFKIT_JOURNAL=1 prints it for any bpfkit "+
		"program):\n%s", journal.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run() error {
	// counts: IP protocol number -> packets seen.
	counts, err := mapfd.Create(mapfd.Spec{
		Type:       mapfd.Hash,
		KeySize:    4,
		ValueSize:  8,
		MaxEntries: 256,
		Name:       "proto_counts",
	})
	if err != nil {
		return err
	}
	defer counts.Close()

	p, err := prog.Load(prog.Spec{
		Type:    prog.SocketFilter,
		Name:    "classify",
		License: "GPL",
		Insns:   classifier(counts),
	})
	if err != nil {
		return err
	}
	defer p.Close()

	info, err := p.Info()
	if err != nil {
		return err
	}
	fmt.Printf("program %q id %d tag %s, as the verifier left it:\n%s",
		info.Name, info.ID, info.Tag, info.Listing())

	for _, pkt := range []struct {
		name       string
		proto, ttl byte
	}{{"tcp", 6, 64}, {"udp", 17, 128}, {"tcp", 6, 63}} {
		r, err := p.TestRun(prog.RunOptions{Data: packet(pkt.proto, pkt.ttl)})
		if err != nil {
			return err
		}
		fmt.Printf("test run on a %s packet with ttl %d: the program returned %d\n",
			pkt.name, pkt.ttl, r.Retval)
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

// classifier is a socket filter, which sees the packet from its IPv4 header
// on. It counts the packet in counts under its protocol and returns its TTL.
func classifier(counts *mapfd.Map) []insn.Item {
	return []insn.Item{
		insn.Mov64Reg(insn.R6, insn.R1), // r6 = skb, which LD_ABS needs
		insn.LoadAbs(insn.BPF_B, 9),     // r0 = ip->protocol
		insn.StoreMem(insn.BPF_W, insn.R10, -4, insn.R0),
		insn.Mov64Reg(insn.R2, insn.R10), // r2 = &key
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.LoadMapFD(insn.R1, counts),
		insn.Call(insn.BPF_FUNC_map_lookup_elem),
		insn.JumpImm(insn.BPF_JEQ, insn.R0, 0, "new"),
		insn.Mov64Imm(insn.R1, 1), // the protocol was seen before: add one
		insn.Atomic(insn.BPF_DW, insn.BPF_ADD.Atomic(), insn.R0, insn.R1, 0),
		insn.Ja("ttl"),
		insn.Label("new"), // first packet of this protocol: insert 1
		insn.StoreImm(insn.BPF_DW, insn.R10, -16, 1),
		insn.Mov64Reg(insn.R2, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R2, -4),
		insn.Mov64Reg(insn.R3, insn.R10),
		insn.ALU64Imm(insn.BPF_ADD, insn.R3, -16),
		insn.LoadMapFD(insn.R1, counts),
		insn.Mov64Imm(insn.R4, 0), // BPF_ANY
		insn.Call(insn.BPF_FUNC_map_update_elem),
		insn.Label("ttl"),
		insn.LoadAbs(insn.BPF_B, 8), // r0 = ip->ttl
		insn.Exit(),
	}
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
