package main

import (
	"encoding/binary"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
)

// counter is where usdt -count's program counts the firings by key (the
// arguments chosen, as an argLayout lays them out), and where the tool
// reads the counts back.
type counter interface {
	// count returns the program's instructions that count one firing
	// with the key at r10+key.
	count(key int16) []insn.Item
	// read calls add with each key counted and its count since the
	// start; a key may come more than once, its counts to be added up.
	read(add func(key []byte, n uint64)) error
	Close() error
}

// newCounter makes the counts for keys of keySize bytes.
func newCounter(keySize int) (counter, error) {
	return newHashCounts(keySize)
}

// hashCounts is the counts in a hash map, by key.
type hashCounts struct {
	counts *mapfd.Map
}

// maxHashKeys is the most keys the hash map holds; a firing with another
// key is not counted.
const maxHashKeys = 10240

func newHashCounts(keySize int) (*hashCounts, error) {
	counts, err := mapfd.Create(mapfd.Spec{
		Type:       mapfd.Hash,
		KeySize:    uint32(keySize),
		ValueSize:  8,
		MaxEntries: maxHashKeys,
		Name:       "usdt_counts",
	})
	if err != nil {
		return nil, err
	}
	return &hashCounts{counts: counts}, nil
}

func (h *hashCounts) read(add func(key []byte, n uint64)) error {
	var err error
	for key, v := range h.counts.All(&err) {
		add(key, binary.LittleEndian.Uint64(v))
	}
	return err
}

func (h *hashCounts) Close() error { return h.counts.Close() }
