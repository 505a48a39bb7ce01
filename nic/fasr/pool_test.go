package fasr

import (
	"math/rand/v2"
	"testing"

	"rocetor/rocev2/psn"
)

// TestPoolAlloc takes and returns every unit and block, and checks the
// counts, the peaks and that a full pool refuses.
func TestPoolAlloc(t *testing.T) {
	p := newPool(70, 130)
	var us []uint16
	for {
		u := p.allocUnit()
		if u == none {
			break
		}
		us = append(us, u)
	}
	if len(us) != 70 || p.nUnits != 70 || p.peakUnits != 70 {
		t.Fatalf("took %d units, %d in use, peak %d", len(us), p.nUnits, p.peakUnits)
	}
	seen := map[uint16]bool{}
	for _, u := range us {
		if seen[u] || int(u) >= 70 {
			t.Fatalf("unit %d twice or out of range", u)
		}
		seen[u] = true
	}
	p.freeUnit(us[33])
	if u := p.allocUnit(); u != us[33] {
		t.Fatalf("took %d after freeing %d", u, us[33])
	}
	u := &p.units[us[0]]
	u.base = 100
	if !p.cover(u, psn.PSN(100+130*blockBits-1)) || p.nBlocks != 130 || p.cover(u, psn.PSN(100+130*blockBits)) {
		t.Fatalf("cover: %d blocks in use", p.nBlocks)
	}
	p.freeUnit(us[0])
	if p.nBlocks != 0 || p.nUnits != 69 {
		t.Fatalf("after free: %d blocks, %d units", p.nBlocks, p.nUnits)
	}
	if want := 70*24 + 2*8 + 130*4 + 3*8; p.bytes() != want {
		t.Errorf("pool bytes %d, want %d", p.bytes(), want)
	}
}

// TestBitmap drives one unit's bitmap the way a responder does —
// arrivals past sack-high at the tail, RCV-NXT moving from the head,
// fast-path runs compressed when the slow path starts — against a plain
// set of arrived PSNs, across the PSN wrap.
func TestBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 120; round++ {
		p := newPool(1, 64)
		u := &p.units[p.allocUnit()]
		nxt := psn.PSN(rng.Uint32() & psn.Mask)
		if round%3 == 0 {
			nxt = psn.PSN(psn.Mask - uint32(rng.IntN(200)))
		}
		// The fast path: RCV-NXT missing, a run after it arrived.
		run := rng.IntN(1200)
		u.sackHigh = nxt.Add(run)
		got := map[psn.PSN]bool{}
		for i := 1; i <= run; i++ {
			got[nxt.Add(i)] = true
		}
		if !p.startBitmap(u, nxt, true) {
			if run-compMax <= 64*blockBits {
				t.Fatalf("round %d: no bitmap for a run of %d", round, run)
			}
			continue
		}
		if want := min(run, compMax); run >= blockBits && int(u.comp) != want || run < blockBits && u.comp != 0 {
			t.Fatalf("round %d: run %d compressed to %d", round, run, u.comp)
		}
		check := func(what string) {
			t.Helper()
			for x := nxt.Add(-3); !u.sackHigh.Add(40).Less(x); x = x.Add(1) {
				if x.Less(nxt) {
					continue // before RCV-NXT: no longer asked
				}
				if p.has(u, x) != got[x] {
					t.Fatalf("round %d, %s: has(%d) = %v, want %v (RCV-NXT %d, base %d, comp %d, %d blocks)",
						round, what, x, p.has(u, x), got[x], nxt, u.base, u.comp, u.nblk)
				}
			}
			want := nxt.Add(1)
			for got[want] {
				want = want.Add(1)
			}
			if m := p.nextMissing(u, nxt.Add(1)); m != want {
				t.Fatalf("round %d, %s: next missing after %d is %d, want %d", round, what, nxt, m, want)
			}
		}
		check("start")
		for step := 0; step < 200; step++ {
			switch rng.IntN(4) {
			case 0, 1: // arrivals past sack-high, with a gap
				x := u.sackHigh.Add(1 + rng.IntN(3))
				if x == nxt {
					x = x.Add(1) // RCV-NXT itself is case 3
				}
				if !p.set(u, x) {
					if p.freeBlocks() > 3 {
						t.Fatalf("round %d: set %d refused with %d blocks free", round, x, p.freeBlocks())
					}
					continue
				}
				got[x] = true
				u.sackHigh = x
			case 2: // a SACK-loss range (the requester's view)
				from := u.sackHigh.Add(1)
				to := from.Add(rng.IntN(40))
				if from == nxt {
					continue // a SACK never covers the oldest missing PSN
				}
				if !p.setRange(u, from, to) {
					continue
				}
				for x := from; !to.Less(x); x = x.Add(1) {
					got[x] = true
				}
				u.sackHigh = to
			case 3: // RCV-NXT arrives
				got[nxt] = true
				nxt = p.nextMissing(u, nxt.Add(1))
				p.release(u, nxt)
				if u.sackHigh.Less(nxt) {
					// The recovery is over; start another on the slow
					// path, with nothing recorded yet.
					u.sackHigh = nxt.Add(-1)
					p.freeBitmap(u)
					if !p.startBitmap(u, nxt, false) {
						t.Fatal("startBitmap without a run failed")
					}
				}
			}
			check("step")
			if p.nBlocks != int(u.nblk) {
				t.Fatalf("round %d: pool has %d blocks in use, the list %d", round, p.nBlocks, u.nblk)
			}
		}
		p.freeBitmap(u)
		if p.nBlocks != 0 {
			t.Fatalf("round %d: %d blocks left", round, p.nBlocks)
		}
	}
}

// TestPoolFromBDP: the shared pool scales with Config.BDP from §III-D's
// 20 units and 70 blocks at 500 packets, rounding up; Units and Blocks
// given override it, and the SR state reports the pool and its BDP.
func TestPoolFromBDP(t *testing.T) {
	for _, c := range []struct {
		cfg           Config
		units, blocks int
		bdp           int
	}{
		{Config{}, 20, 70, 500},
		{Config{BDP: 500}, 20, 70, 500},
		{Config{BDP: 128}, 6, 18, 128},
		{Config{BDP: 1}, 1, 1, 1},
		{Config{BDP: 1000}, 40, 140, 1000},
		{Config{BDP: 128, Units: 20, Blocks: -1}, 20, 0, 128},
	} {
		tr, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, s := tr.Config(), tr.SRState()
		if cfg.Units != c.units || cfg.Blocks != c.blocks || s.BDP != c.bdp || s.Shared != tr.SharedBytes() || s.PerQP != 8 {
			t.Errorf("%+v: %d units, %d blocks, SR state %+v; want %d, %d, BDP %d", c.cfg, cfg.Units, cfg.Blocks, s, c.units, c.blocks, c.bdp)
		}
	}
	if _, err := New(Config{BDP: -1}); err == nil {
		t.Error("BDP -1 accepted")
	}
}
