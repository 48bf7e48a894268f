package main

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/bpfkit/bpfkit/insn"
	"github.com/bpfkit/bpfkit/mapfd"
	"github.com/bpfkit/bpfkit/prog"
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
	// missed is how many firings found no room to be counted.
	missed() (uint64, error)
	Close() error
}

// newCounter makes the table of counts for keys of keySize bytes, or,
// where the kernel has no compare-exchange (before 5.12), a hash map.
func newCounter(keySize int) (counter, error) {
	atomics, err := prog.HaveAtomicFetch()
	if err != nil {
		return nil, err
	}
	missed, err := mapfd.Create(mapfd.Spec{
		Type:       mapfd.Array,
		KeySize:    4,
		ValueSize:  8,
		MaxEntries: 1,
		Name:       "usdt_missed",
	})
	if err != nil {
		return nil, err
	}
	var c counter
	if atomics {
		c, err = newTable(keySize, missed)
	} else {
		c, err = newHashCounts(keySize, missed)
	}
	if err != nil {
		missed.Close()
		return nil, err
	}
	return c, nil
}

// readMissed reads the one count of a counter's missed firings.
func readMissed(missed *mapfd.Map) (uint64, error) {
	v := make([]byte, 8)
	err := missed.Lookup(make([]byte, 4), v)
	return binary.LittleEndian.Uint64(v), err
}

// countSlot is the start of each slot of the table of counts; the key
// follows it, keySize bytes.
type countSlot struct {
	// State is slotEmpty, slotBusy while a program writes the key into
	// the slot, then the key's hash with its lowest bit set (odd: never
	// slotBusy).
	State uint64
	Count uint64 // the firings counted with the key
}

// The table's states, size and hash.
const (
	slotEmpty  = 0
	slotBusy   = 2
	tableBits  = 14 // 16384 slots: 10240 keys keep the probes short
	tableSlots = 1 << tableBits
	maxProbes  = 16 // the slots a key tries before its firing is missed
)

// hashPrime is what keyHash multiplies by: 2^64 over the golden ratio,
// odd, whose product spreads every bit of a word into the top bits, the
// slot's index.
const hashPrime uint64 = 0x9e3779b97f4a7c15

// table is the table of counts: an array of tableSlots countSlots and
// their keys, which the program fills as a hash table (table.count), and
// the count of firings that found no slot.
type table struct {
	slots, missedCount *mapfd.Map
	keySize            int
}

// newTable makes the table for keys of keySize bytes.
func newTable(keySize int, missed *mapfd.Map) (*table, error) {
	slotSize := int(unsafe.Sizeof(countSlot{})) + keySize
	slots, err := mapfd.Create(mapfd.Spec{
		Type:       mapfd.Array,
		KeySize:    4,
		ValueSize:  uint32(slotSize),
		MaxEntries: tableSlots,
		Name:       "usdt_counts",
	})
	if err != nil {
		return nil, err
	}
	return &table{slots: slots, missedCount: missed, keySize: keySize}, nil
}

// keyHash is the hash the program computes of a key (table.count): for
// each 8-byte word, h = (h ^ word) * hashPrime.
func keyHash(key []byte) uint64 {
	h := uint64(0)
	for i := 0; i+8 <= len(key); i += 8 {
		h = (h ^ binary.LittleEndian.Uint64(key[i:])) * hashPrime
	}
	return h
}

// read reads every slot with one batch lookup, or a few. A slot's key is
// taken only if its state is the key's hash: the copy of a slot being
// claimed may hold the hash and an older key (the kernel's copy is in no
// particular order); its count is read at the next call.
func (t *table) read(add func(key []byte, n uint64)) error {
	var cursor mapfd.BatchCursor
	slotSize := int(t.slots.ValueSize())
	keys, values := make([]byte, 4*tableSlots), make([]byte, slotSize*tableSlots)
	for got := 0; got < tableSlots; {
		n, err := t.slots.LookupBatch(&cursor, keys[4*got:], values[slotSize*got:])
		got += n
		if errors.Is(err, mapfd.ErrBatchEnd) {
			break
		}
		if err != nil {
			return err
		}
	}
	header := int(unsafe.Sizeof(countSlot{}))
	for i := range tableSlots {
		v := values[i*slotSize : (i+1)*slotSize]
		state, count := binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])
		key := v[header:]
		if state != slotEmpty && state != slotBusy && state == keyHash(key)|1 {
			add(key, count)
		}
	}
	return nil
}

func (t *table) missed() (uint64, error) { return readMissed(t.missedCount) }

func (t *table) Close() error { return errors.Join(t.slots.Close(), t.missedCount.Close()) }

// hashCounts is the counts in a hash map, by key, for kernels without
// compare-exchange.
type hashCounts struct {
	counts, missedCount *mapfd.Map
}

// maxHashKeys is the most keys the hash map holds; a firing with another
// key is missed.
const maxHashKeys = 10240

func newHashCounts(keySize int, missed *mapfd.Map) (*hashCounts, error) {
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
	return &hashCounts{counts: counts, missedCount: missed}, nil
}

func (h *hashCounts) read(add func(key []byte, n uint64)) error {
	var err error
	for key, v := range h.counts.All(&err) {
		add(key, binary.LittleEndian.Uint64(v))
	}
	return err
}

func (h *hashCounts) missed() (uint64, error) { return readMissed(h.missedCount) }

func (h *hashCounts) Close() error { return errors.Join(h.counts.Close(), h.missedCount.Close()) }
