package netrt

import (
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestSrcRequestBound holds SrcToR to the per-message amplification
// bound: whatever a request names, it makes the switch send at most
// MaxRequestFrames frames (retransmissions and the unfulfilled notice),
// each PSN at most once however often the pool holds it. Requests are
// random (ePSN around and inside the pooled run, random bitmaps) against
// a pool holding PSNs 0–299, 0–49 twice (a go-back-N resend pools them
// again). Congestion avoidance and the rate bound are set out of the
// way: this is the bound of one message.
func TestSrcRequestBound(t *testing.T) {
	r, s := newSrcN(t, 2, Config{PoolBytes: 4 << 20, Hold: 1e12, PausePriority: -1,
		KLow: 1 << 30, KHigh: 1 << 31, RetxRate: 1e15, RetxBurst: 1 << 40})
	r.send(1, 0, 300)
	r.send(1, 0, 50)
	r.take(1)
	rng := rand.New(rand.NewPCG(1, 2))
	most := 0
	for i := 0; i < 400; i++ {
		epsn := uint32(rng.IntN(400)) - 50
		bm := rocev2.Bitmap128{Lo: rng.Uint64() & rng.Uint64(), Hi: rng.Uint64() & rng.Uint64()}
		switch i {
		case 0:
			epsn, bm = 0, rocev2.Bitmap128{Hi: 1 << 63} // all of 0–127: every one pooled
		case 1:
			epsn, bm = 250, rocev2.Bitmap128{Hi: 1 << 63} // 250–377: 50 pooled, then a notice
		}
		r.inject(1, request(t, 1, epsn, bm))
		r.settle()
		fs := r.take(1)
		var retx, notices int
		seen := map[uint32]bool{}
		for _, f := range fs {
			m := meta(t, f.b)
			switch {
			case isData(&m):
				retx++
				if seen[uint32(m.PSN)] {
					t.Fatalf("request %d: PSN %d sent twice", i, m.PSN)
				}
				seen[uint32(m.PSN)] = true
			case m.Opcode == rocev2.NetRTOpcode:
				notices++
			default:
				t.Fatalf("request %d: sent opcode %v", i, m.Opcode)
			}
		}
		if n := retx + notices; n > MaxRequestFrames || notices > 1 {
			t.Fatalf("request %d (ePSN %d): %d retransmissions and %d notices, bound %d frames", i, psn.PSN(epsn), retx, notices, MaxRequestFrames)
		}
		switch {
		case i == 0 && (retx != 128 || notices != 0):
			t.Fatalf("the request for 0–127: %d retransmissions, %d notices; want 128 and 0", retx, notices)
		case i == 1 && (retx != 50 || notices != 1):
			t.Fatalf("the request for 250–377: %d retransmissions, %d notices; want 50 and 1", retx, notices)
		}
		most = max(most, retx+notices)
	}
	t.Logf("most frames one request drew: %d (bound %d)", most, MaxRequestFrames)
	r.noLeak(s)
}

// TestSrcRequestRate floods SrcToR with the same request, as a forger
// or a DstToR whose answers are all lost would, and checks the rate
// bound: the retransmitted bytes stay within RetxBurst + RetxRate·T
// (defaults: the port's pool, and RateMax, 5 Gbit/s unshaped), while
// without the bound the same stream draws every duplicate again per
// request once congestion avoidance's window has passed.
func TestSrcRequestRate(t *testing.T) {
	const (
		period = 5_000     // ns between requests
		span   = 1_000_000 // ns of flood
	)
	flood := func(c Config) (bytes int, limited uint64) {
		r, s := newSrcN(t, 2, c)
		r.send(1, 0, 300)
		r.take(1)
		start := r.now
		for r.now-start < span {
			r.inject(1, request(t, 1, 0, rocev2.Bitmap128{Hi: 1 << 63}))
			r.step(period)
			for _, f := range r.take(1) {
				if m := meta(t, f.b); isData(&m) {
					bytes += len(f.b)
				}
			}
		}
		limited = s.Stats().Sum().Limited
		r.noLeak(s)
		return bytes, limited
	}
	c := Config{Hold: 1e12, Window: DefaultHold} // duplicates stay; N counts over the default window
	got, limited := flood(c)
	bound := DefaultPoolBytes + int(DefaultRateMax/8*span/1e9) + MaxFrame
	t.Logf("%d requests drew %d bytes of retransmission in %d µs (bound %d), %d duplicates limited", span/period, got, span/1000, bound, limited)
	if got > bound {
		t.Fatalf("retransmitted %d bytes, bound %d", got, bound)
	}
	if limited == 0 {
		t.Fatal("nothing was limited: the flood did not reach the bound")
	}
	c.RetxRate, c.RetxBurst = 1e15, 1<<40
	unbounded, _ := flood(c)
	t.Logf("without the bound: %d bytes", unbounded)
	if unbounded < 3*bound {
		t.Fatalf("without the bound the flood drew %d bytes, not much beyond the bound's %d: the test floods too little", unbounded, bound)
	}
}
