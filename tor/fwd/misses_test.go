package fwd

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
)

// TestMissesConcurrent has four producers add distinct reports while one
// consumer takes them: every report that Add accepted comes out once,
// every refusal is counted as lost.
func TestMissesConcurrent(t *testing.T) {
	const producers, each = 4, 5000
	q := NewMisses(64)
	var wg sync.WaitGroup
	var accepted [producers]int
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var a [16]byte
				binary.BigEndian.PutUint32(a[12:], uint32(p<<16|i))
				if q.Add(uint16(p), &a) {
					accepted[p]++
				}
			}
		}()
	}
	seen := map[netip.Addr]bool{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	take := func() {
		for {
			port, a, ok := q.Take()
			if !ok {
				return
			}
			v := binary.BigEndian.Uint32(a.AsSlice()[12:])
			if seen[a] || int(v>>16) != int(port) {
				t.Errorf("report %v on port %d duplicated or torn", a, port)
			}
			seen[a] = true
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-q.Wait():
		}
		take()
	}
	take()
	total := 0
	for _, n := range accepted {
		total += n
	}
	if len(seen) != total || uint64(total)+q.Lost() != producers*each {
		t.Fatalf("took %d, accepted %d, lost %d of %d", len(seen), total, q.Lost(), producers*each)
	}
}

// TestMissesFull checks the ring refuses, and counts, reports beyond its
// size, and is usable again once drained.
func TestMissesFull(t *testing.T) {
	q := NewMisses(16)
	var a [16]byte
	for i := 0; i < 16; i++ {
		if !q.Add(1, &a) {
			t.Fatalf("report %d refused by a ring of 16", i)
		}
	}
	if q.Add(1, &a) || q.Lost() != 1 {
		t.Fatal("a full ring accepted a report or did not count the loss")
	}
	select {
	case <-q.Wait():
	default:
		t.Fatal("no wake-up after reports")
	}
	for i := 0; i < 16; i++ {
		if _, _, ok := q.Take(); !ok {
			t.Fatalf("report %d missing", i)
		}
	}
	if _, _, ok := q.Take(); ok {
		t.Fatal("empty ring returned a report")
	}
	if !q.Add(2, &a) {
		t.Fatal("drained ring refused a report")
	}
}
