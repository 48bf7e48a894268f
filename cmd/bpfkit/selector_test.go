package main

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEachSkipsGone: an object that goes away between its selector
// finding it and each reaching it (its ENOENT) is skipped, in a walk and
// among the ids a selector found; any other error stops each.
func TestEachSkipsGone(t *testing.T) {
	next := func(id uint32) (uint32, error) {
		if id < 3 {
			return id + 1, nil
		}
		return 0, nil
	}
	var shown []uint32
	show := func(id uint32) error {
		if id == 2 {
			return fmt.Errorf("open map id 2: %w", unix.ENOENT)
		}
		shown = append(shown, id)
		return nil
	}
	for _, ids := range [][]uint32{nil, {1, 2, 3}} {
		shown = nil
		if err := each(next, ids, show); err != nil || !slices.Equal(shown, []uint32{1, 3}) {
			t.Errorf("each over %v: showed %v, %v; want 1 and 3, 2 being gone", ids, shown, err)
		}
	}
	failing := func(id uint32) error { return unix.EPERM }
	if err := each(next, []uint32{1}, failing); !errors.Is(err, unix.EPERM) {
		t.Errorf("each with an EPERM: %v", err)
	}
}
