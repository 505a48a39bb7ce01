package dcp_test

import (
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/dcp"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestRandom runs many WRITEs and SENDs of random sizes through a link
// that reorders, trims, duplicates and loses data packets, and loses
// returned header-only packets and ACKs, over buffer slots the test
// reuses as soon as a message completes — so a stale packet placed after
// its message completed would show. Every message must arrive intact,
// and every completion come in order.
func TestRandom(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		const msgs, slots, slot = 300, 32, 64 << 10
		// The fourth seed with a window of 16 packets: lost ACKs and
		// header-only packets must not hold it closed.
		p, a, b := newPair(t, nictest.Options{MRSize: slots * slot}, dcp.Config{Window: 16 * int(seed/4)})
		rng := rand.New(rand.NewPCG(seed, 99))
		p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if !data(m) {
				return nictest.Pass
			}
			// What the coarse timeout must recover — a silent loss, a
			// duplicate — costs the whole message a retry round, in
			// which anything may happen again: kept rare, as in a DCP
			// fabric.
			switch x := rng.IntN(1000); {
			case x < 100:
				return nictest.Late
			case x < 200:
				return nictest.Trim
			case x < 201:
				return nictest.Duplicate
			case x < 202:
				return nictest.Drop
			}
			return nictest.Pass
		}
		p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			switch {
			case returned(m) && rng.IntN(100) < 1, m.Tag == rocev2.DCPAck && rng.IntN(100) < 5:
				return nictest.Drop
			}
			return nictest.Pass
		}
		ops := make([]nic.Op, msgs)
		lens := make([]int, msgs)
		posted, doneA, doneB := 0, 0, 0
		sends := 0
		verified := make([]bool, msgs)
		check := func(i int) {
			off := i % slots * slot
			if err := nictest.Check(p.B.Buf[off:off+lens[i]], uint64(i)); err != nil {
				t.Fatalf("seed %d: message %d (%s, %d bytes): %v", seed, i, ops[i], lens[i], err)
			}
			verified[i] = true
		}
		var recvs []int // message of each posted receive, in order
		for doneA < msgs {
			// A slot is reused once its last message has been checked.
			for posted < msgs && posted-doneA < 12 && (posted < slots || verified[posted-slots]) {
				i := posted
				ops[i] = []nic.Op{nic.OpWrite, nic.OpSend}[rng.IntN(2)]
				lens[i] = rng.IntN(slot + 1)
				off := i % slots * slot
				nictest.Fill(p.A.Buf[off:off+lens[i]], uint64(i))
				if ops[i] == nic.OpSend {
					if err := p.B.Post(nic.OpRecv, 0, uint64(i), off, 0, lens[i]); err != nil {
						t.Fatal(err)
					}
					recvs = append(recvs, i)
					sends++
				}
				if err := p.A.Post(ops[i], 0, uint64(i), off, off, lens[i]); err != nil {
					t.Fatal(err)
				}
				posted++
			}
			before := doneA
			if !p.Run(func() bool { return p.A.Done() > before }, 1e9) {
				t.Fatalf("seed %d: stuck at %d of %d\nA %+v %+v\nB %+v %+v", seed, doneA, msgs,
					p.A.E.LiveStats(), a.Stats(), p.B.E.LiveStats(), b.Stats())
			}
			for ; doneA < p.A.Done(); doneA++ {
				c := p.A.CQ[doneA]
				if c.Status != nic.StatusOK || c.ID != uint64(doneA) || c.Len != lens[doneA] {
					t.Fatalf("seed %d: completion %d: %+v", seed, doneA, c)
				}
				if ops[doneA] == nic.OpWrite {
					check(doneA)
				}
			}
			for ; doneB < p.B.Done(); doneB++ {
				c := p.B.CQ[doneB]
				i := recvs[doneB]
				if c.Status != nic.StatusOK || c.ID != uint64(i) || c.Len != lens[i] {
					t.Fatalf("seed %d: receive %d: %+v, want message %d", seed, doneB, c, i)
				}
				check(i)
			}
		}
		p.Run(func() bool { return p.B.Done() == sends }, 1e8)
		for ; doneB < p.B.Done(); doneB++ {
			check(recvs[doneB])
		}
		if doneB != sends {
			t.Fatalf("seed %d: %d of %d receives completed", seed, doneB, sends)
		}
		as, bs, st := a.Stats(), b.Stats(), p.A.E.LiveStats()
		t.Logf("seed %d: %d requests, %d retransmitted, %d late, %d trimmed, %d duplicated, %d lost\n  A %+v\n  B %+v",
			seed, st.Requests, st.Retransmits, p.AB.Delayed, p.AB.Trimmed, p.AB.Duplicated, p.AB.Dropped, as, bs)
		if bs.HOBounced == 0 || as.HORetransmits == 0 || bs.Deferred == 0 || as.FallbackTimeouts == 0 || bs.Recounts == 0 {
			t.Errorf("seed %d: some mechanism never ran", seed)
		}
	}
}

// TestMoments checks the PSN sums the duplicate check compares against
// a plain loop, across the PSN wrap.
func TestMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for k := 0; k < 2000; k++ {
		first := psn.New(rng.Uint32())
		if k%4 == 0 {
			first = psn.New(psn.Mask - uint32(rng.IntN(300)))
		}
		n := uint32(1 + rng.IntN(1000))
		if k == 0 {
			n = 1 << 22
		}
		var s1, s2 uint32
		for i := uint32(0); i < n; i++ {
			x := uint32(first.Add(int(i)))
			s1 += x
			s2 += x * x
		}
		if g1, g2 := dcp.Moments(first, n); g1 != s1 || g2 != s2 {
			t.Fatalf("first %d, %d packets: sums %d %d, want %d %d", first, n, g1, g2, s1, s2)
		}
	}
}

// TestStateBytes reports the per-QP memory and checks it against the
// heap one connected QP costs.
func TestStateBytes(t *testing.T) {
	tr, _ := dcp.New(dcp.Config{})
	g, _ := gbn.New(gbn.Config{})
	p, _, _ := newPair(t, nictest.Options{}, dcp.Config{})
	ctx, queues := p.A.E.QPBytes()
	t.Logf("dcp per QP: %d bytes of transport state (%d of it the receiver's tracking of %d messages), "+
		"%d bytes of RetransQ; endpoint QP context %d bytes, queues %d bytes; gbn: %d bytes",
		tr.StateBytes(), tr.TrackingBytes(), tr.Config().Messages, tr.QueueBytes(), ctx, queues, g.StateBytes())
	if tr.StateBytes() > 400 || tr.QueueBytes() != 2048 || tr.TrackingBytes() != 8*24 {
		t.Errorf("state %d, queue %d, tracking %d bytes", tr.StateBytes(), tr.QueueBytes(), tr.TrackingBytes())
	}
	per := nictest.HeapPerQP(t, func() nic.Transport {
		tr, _ := dcp.New(dcp.Config{})
		return tr
	})
	t.Logf("measured: %.0f bytes per QP", per)
	if per > float64(ctx+queues)*1.25 {
		t.Errorf("measured %.0f bytes per QP, the type sizes say %d", per, ctx+queues)
	}
}

// newStream keeps WRITEs outstanding on A's QP 0, through a link that
// (lossy) does trim one data packet in 50 and delays one in 10.
func newStream(tb testing.TB, lossy bool, window int) *nictest.Stream {
	p, _, _ := newPair(tb, nictest.Options{}, dcp.Config{Window: window})
	if lossy {
		p.AB.Filter = nictest.EveryNth(data, 50, nictest.Trim, 10)
	}
	return nictest.NewStream(tb, p)
}

// TestAllocs asserts that a WRITE stream with trimming, header-only
// returns, retransmissions and reordering allocates nothing, with and
// without a window.
func TestAllocs(t *testing.T) {
	newStream(t, true, 0).NoAllocs(t, 100)
	newStream(t, true, 32).NoAllocs(t, 100) // with a window: credit ACKs
}

// BenchmarkWriteStream measures a WRITE stream between two DCP
// endpoints in memory, both run by this goroutine: ns/pkt is the cost of
// one 1 KiB data packet through requester and responder (build with the
// DCP header and a RETH, classify with ICRC check, place, count). The
// lossy case trims one packet in 50 (each returned and resent) and
// delays one in 10.
func BenchmarkWriteStream(b *testing.B) {
	for _, lossy := range []bool{false, true} {
		name := "lossless"
		if lossy {
			name = "trim2%-late10%"
		}
		b.Run(name, func(b *testing.B) {
			newStream(b, lossy, 0).Bench(b)
		})
	}
}
