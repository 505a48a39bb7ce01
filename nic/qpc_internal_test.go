package nic

import (
	"errors"
	"testing"
	"time"
)

// TestQPCache checks the QP-context cache's mechanism: its slots are the
// budget less the shared SR state over 256 B plus the per-QP SR state;
// contexts created while there is room are on chip; a lookup of one
// that is not fetches it, evicting the least recently used, and holds
// the pipeline a miss longer, misses in a row adding up.
func TestQPCache(t *testing.T) {
	sr := SRState{PerQP: 44, Shared: 100}
	c, err := newQPC(QPCache{Bytes: 100 + 3*300 + 299, Miss: time.Microsecond}, sr, 8)
	if err != nil || c.slots != 3 {
		t.Fatalf("slots %v, %v: want 3 contexts of 256 + 44 B beside 100 B shared", c, err)
	}
	for i := int32(0); i < 5; i++ {
		c.load(i) // 0, 1, 2 on chip; 3 and 4 not
	}
	hit := func(i int32, now int64, want bool) {
		t.Helper()
		if got := c.touch(i, now); got != want {
			t.Fatalf("QP %d at %d: hit %v, want %v", i, now, got, want)
		}
	}
	hit(0, 10, true) // LRU order now 0, 2, 1
	hit(2, 10, true) // 2, 0, 1
	if c.until != 0 {
		t.Fatalf("hits stalled the pipeline until %d", c.until)
	}
	hit(3, 100, false) // evicts 1: 3, 2, 0
	hit(1, 100, false) // evicts 0: 1, 3, 2
	if c.until != 100+2000 {
		t.Fatalf("two misses at 100 ns stall until %d, want 2100", c.until)
	}
	hit(2, 5000, true)
	hit(0, 5000, false) // evicts 3
	hit(3, 5000, false) // evicts 1
	hit(2, 5000, true)
	if c.until != 7000 {
		t.Fatalf("stalled until %d, want 7000", c.until)
	}
	if _, err := newQPC(QPCache{Bytes: 300, Miss: time.Microsecond}, sr, 8); !errors.Is(err, ErrConfig) {
		t.Errorf("a cache with no room for a context: %v, want ErrConfig", err)
	}
	if c, err := newQPC(QPCache{}, sr, 8); c != nil || err != nil {
		t.Errorf("no budget: %v, %v; want the cache off", c, err)
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := int32(0); i < 8; i++ {
			c.touch(i, 9000)
		}
	}); n != 0 {
		t.Errorf("%v allocations per round of lookups, want 0", n)
	}
}
