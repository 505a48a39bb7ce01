package psn

import (
	"math/rand"
	"testing"
)

func TestPSNWrap(t *testing.T) {
	cases := []struct {
		p, q PSN
		diff int
	}{
		{0, 0, 0},
		{1, 0, 1},
		{0, Mask, 1},
		{Mask, 0, -1},
		{5, Mask - 4, 10},
		{1 << 23, 0, -(1 << 23)}, // exactly half: treated as behind
		{1<<23 - 1, 0, 1<<23 - 1},
	}
	for _, c := range cases {
		if got := c.p.Diff(c.q); got != c.diff {
			t.Errorf("%d.Diff(%d) = %d, want %d", c.p, c.q, got, c.diff)
		}
		if got := c.p.Less(c.q); got != (c.diff < 0) {
			t.Errorf("%d.Less(%d) = %v", c.p, c.q, got)
		}
	}
	if got := PSN(Mask).Add(2); got != 1 {
		t.Errorf("Mask.Add(2) = %d, want 1", got)
	}
	if got := PSN(1).Add(-2); got != Mask {
		t.Errorf("1.Add(-2) = %d, want %d", got, Mask)
	}
	if !PSN(1).InWindow(Mask-1, 4) || PSN(2).InWindow(Mask-1, 4) || PSN(0).InWindow(0, 0) {
		t.Error("InWindow across wrap is wrong")
	}
}

// TestPSNReference compares Diff and InWindow with a slow reference that
// walks the sequence space, over random pairs around the wrap point.
func TestPSNReference(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		q := New(uint32(r.Int63()))
		n := r.Intn(1<<12) - 1<<11
		p := q.Add(n)
		if got := p.Diff(q); got != n {
			t.Fatalf("%d.Diff(%d) = %d, want %d", p, q, got, n)
		}
		w := r.Intn(1 << 12)
		want := n >= 0 && n < w
		if got := p.InWindow(q, w); got != want {
			t.Fatalf("%d.InWindow(%d, %d) = %v, want %v", p, q, w, got, want)
		}
	}
}

func TestLinkEra(t *testing.T) {
	last := LinkOf(0xffff, false)
	next := last.Add(1)
	if next.Seq() != 0 || !next.Era() {
		t.Fatalf("wrap of 0xffff: seq %d era %v, want 0 true", next.Seq(), next.Era())
	}
	if !last.Less(next) || next.Diff(last) != 1 {
		t.Fatal("sequence after the wrap must compare as later")
	}
	// Protego compares numbers of different eras up to N/2 apart; the
	// 17-bit space allows up to 2^16.
	a, b := LinkOf(0xc000, false), LinkOf(0x4000, true)
	if b.Diff(a) != 0x8000 {
		t.Fatalf("cross-era distance = %d, want %d", b.Diff(a), 0x8000)
	}
	if LinkOf(0, true).Add(-1) != LinkOf(0xffff, false) {
		t.Fatal("Add(-1) across the era boundary is wrong")
	}
	if LinkOf(0xffff, true).Add(1) != LinkOf(0, false) {
		t.Fatal("era must toggle back after two wraps")
	}
}
