package llr

import (
	"bytes"
	"testing"
)

// TestArenaRewind: once every record is freed the next frame goes at the
// ring's start, where the last ones were (cache-warm), and the span is
// back to 0; records kept across the rewind read back intact.
func TestArenaRewind(t *testing.T) {
	for _, size := range []int{4096, 3000} { // by mask, by division
		testArenaRewind(t, newArena(size, 16))
	}
}

func testArenaRewind(t *testing.T, a *arena) {
	f := bytes.Repeat([]byte{7}, 1000)
	for round := range 5 {
		h1, ok1 := a.put(f)
		h2, ok2 := a.put(f)
		if !ok1 || !ok2 {
			t.Fatalf("round %d: put refused", round)
		}
		if pos := a.rec[h1&uint32(len(a.rec)-1)].off % uint64(len(a.buf)); pos != 0 {
			t.Fatalf("round %d: first frame at %d, want 0 (the ring rewinds when empty)", round, pos)
		}
		if !bytes.Equal(a.get(h2), f) || a.span() != 2000 {
			t.Fatalf("round %d: record or span (%d) wrong", round, a.span())
		}
		a.free(h1)
		if a.span() != 1000 {
			t.Fatalf("round %d: span %d after one free, want 1000", round, a.span())
		}
		a.free(h2)
		if a.span() != 0 || a.records() != 0 {
			t.Fatalf("round %d: span %d, %d records once empty", round, a.span(), a.records())
		}
	}
}
