package fasr_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/fasr"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

// TestRandomLoss runs WRITEs, SENDs and READs of random sizes on 16 QPs
// that share a small pool (6 units, 24 blocks per endpoint), losing
// requests, READ responses and ACKs at 0.1%, 1% and 5%, over buffer
// slots each QP reuses as soon as a message is verified — a packet
// placed after its message completed would show. Every byte is checked,
// and every completion comes once, in order, on both sides.
func TestRandomLoss(t *testing.T) {
	for _, loss := range []float64{0.001, 0.01, 0.05} {
		rng := rand.New(rand.NewPCG(uint64(loss*1e4), 3))
		lose := func(_ []byte, m *rocev2.Meta) nictest.Action {
			if m.Kind == rocev2.KindRoCE && rng.Float64() < loss {
				return nictest.Drop
			}
			return nictest.Pass
		}
		_, bs := randomTraffic(t, fmt.Sprintf("loss %.1f%%", loss*100), lose, lose)
		if bs.Recoveries == 0 || bs.FastOps == 0 {
			t.Errorf("loss %v: no selective recovery", loss)
		}
		if loss == 0.05 && (bs.GBNFallbacks == 0 || bs.SlowOps == 0 || bs.PeakUnits != 6) {
			t.Errorf("loss %v: the small pool never ran out (%d fallbacks, %d slow operations, %d units at once)",
				loss, bs.GBNFallbacks, bs.SlowOps, bs.PeakUnits)
		}
	}
}

// TestRandomReorder does the same through links that also delay (so
// reorder) and duplicate packets, which FaSR does not expect — a late
// original looks like a retransmission, a copy like a duplicate — and
// must survive with every byte and completion right.
func TestRandomReorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	mess := func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind != rocev2.KindRoCE {
			return nictest.Pass
		}
		switch x := rng.IntN(1000); {
		case x < 10:
			return nictest.Drop
		case x < 30:
			return nictest.Late
		case x < 40:
			return nictest.Duplicate
		case x < 50:
			return nictest.Hold
		}
		return nictest.Pass
	}
	randomTraffic(t, "reorder", mess, mess)
}

// randomTraffic runs the random workload through the two filters and
// returns both transports' counters.
func randomTraffic(t *testing.T, label string, ab, ba func([]byte, *rocev2.Meta) nictest.Action) (fasr.Stats, fasr.Stats) {
	t.Helper()
	const qps, perQP, slots, slot = 16, 40, 4, 32 << 10
	p, a, b := newPair(t, nictest.Options{QPs: qps, MRSize: qps * slots * slot}, fasr.Config{Units: 6, Blocks: 24})
	rng := rand.New(rand.NewPCG(uint64(len(label)), 3))
	p.AB.Filter, p.BA.Filter = ab, ba
	type msg struct {
		op       nic.Op
		n        int
		verified bool
	}
	msgs := make([][]msg, qps)
	posted := make([]int, qps)  // per QP
	doneA := make([]int, qps)   // A's completions per QP
	recvs := make([][]int, qps) // per QP: message of each posted receive
	doneB := make([]int, qps)
	off := func(k, j int) int { return (k*slots + j%slots) * slot }
	check := func(k, j int) {
		m := &msgs[k][j]
		b := p.B.Buf[off(k, j) : off(k, j)+m.n]
		if m.op == nic.OpRead {
			b = p.A.Buf[off(k, j) : off(k, j)+m.n]
		}
		if err := nictest.Check(b, uint64(k<<16|j)); err != nil {
			t.Fatalf("%s: QP %d message %d (%s, %d bytes): %v", label, k, j, m.op, m.n, err)
		}
		m.verified = true
	}
	total, seenA, seenB := 0, 0, 0
	for total < qps*perQP {
		for k := 0; k < qps; k++ {
			for posted[k] < perQP && posted[k]-doneA[k] < 3 && (posted[k] < slots || msgs[k][posted[k]-slots].verified) {
				j := posted[k]
				m := msg{op: []nic.Op{nic.OpWrite, nic.OpSend, nic.OpWrite, nic.OpSend, nic.OpRead}[rng.IntN(5)], n: rng.IntN(slot + 1)}
				msgs[k] = append(msgs[k], m)
				if m.op == nic.OpRead {
					nictest.Fill(p.B.Buf[off(k, j):off(k, j)+m.n], uint64(k<<16|j))
				} else {
					nictest.Fill(p.A.Buf[off(k, j):off(k, j)+m.n], uint64(k<<16|j))
				}
				if m.op == nic.OpSend {
					if err := p.B.Post(nic.OpRecv, k, uint64(k<<16|j), off(k, j), 0, m.n); err != nil {
						t.Fatal(err)
					}
					recvs[k] = append(recvs[k], j)
				}
				if err := p.A.Post(m.op, k, uint64(k<<16|j), off(k, j), off(k, j), m.n); err != nil {
					t.Fatal(err)
				}
				posted[k]++
			}
		}
		before := p.A.Done()
		if !p.Run(func() bool { return p.A.Done() > before }, 1e9) {
			t.Fatalf("%s: stuck at %d of %d\nA %+v %+v\nB %+v %+v", label, total, qps*perQP,
				p.A.E.LiveStats(), a.Stats(), p.B.E.LiveStats(), b.Stats())
		}
		for ; seenA < p.A.Done(); seenA++ {
			c := p.A.CQ[seenA]
			k, j := int(c.ID>>16), int(c.ID&0xffff)
			if c.Status != nic.StatusOK || c.QP != p.A.QPs[k].QPN || j != doneA[k] || c.Len != msgs[k][j].n {
				t.Fatalf("%s: completion %+v, want QP %d message %d of %d bytes", label, c, k, doneA[k], msgs[k][doneA[k]].n)
			}
			doneA[k]++
			total++
			if msgs[k][j].op != nic.OpSend {
				check(k, j)
			}
		}
		for ; seenB < p.B.Done(); seenB++ {
			c := p.B.CQ[seenB]
			k, j := int(c.ID>>16), int(c.ID&0xffff)
			if c.Status != nic.StatusOK || c.QP != p.B.QPs[k].QPN || doneB[k] >= len(recvs[k]) || j != recvs[k][doneB[k]] || c.Len != msgs[k][j].n {
				t.Fatalf("%s: receive %+v on QP %d, want message %v", label, c, k, recvs[k][doneB[k]:])
			}
			doneB[k]++
			check(k, j)
		}
	}
	p.Run(func() bool { return p.B.Done() == seenB && p.AB.InFlight()+p.BA.InFlight() == 0 }, 1e7)
	for k := 0; k < qps; k++ {
		if doneB[k] != len(recvs[k]) {
			t.Errorf("%s: QP %d: %d of %d receives completed", label, k, doneB[k], len(recvs[k]))
		}
	}
	as, bs, st := a.Stats(), b.Stats(), p.A.E.LiveStats()
	t.Logf("%s: A→B %d dropped, %d late, %d duplicated; B→A %d dropped; %d requests, %d retransmitted, %d timeouts; "+
		"fast-path ratio %.2f\n  requester %+v\n  responder %+v",
		label, p.AB.Dropped, p.AB.Delayed, p.AB.Duplicated, p.BA.Dropped, st.Requests, st.Retransmits, st.Timeouts,
		bs.FastPathRatio(), as, bs)
	for i, tr := range []*fasr.Transport{a, b} {
		if u, bl := tr.InUse(); u != 0 || bl != 0 {
			t.Errorf("%s: %s holds %d units and %d blocks at the end", label, "AB"[i:i+1], u, bl)
		}
	}
	return as, bs
}

// TestSelective streams WRITEs on 8 QPs with the default pool and loses
// data packets at random: selective retransmission resends about what
// was lost — where Go-Back-N, on the same loss, resends a window per
// loss — and the fast path handles most recoveries.
func TestSelective(t *testing.T) {
	const qps, perQP, size = 8, 24, 64 << 10
	for _, loss := range []float64{0.001, 0.01, 0.05} {
		res := map[string]nic.Stats{}
		var lost map[string]uint64 = map[string]uint64{}
		var fst fasr.Stats
		for _, name := range []string{"fasr", "gbn"} {
			o := nictest.Options{QPs: qps, MRSize: qps * perQP * size}
			o.Transport = func() nic.Transport {
				if name == "gbn" {
					g, _ := gbn.New(gbn.Config{RTO: rto})
					return g
				}
				f, _ := fasr.New(fasr.Config{RTO: rto})
				return f
			}
			var tr *fasr.Transport
			if name == "fasr" {
				inner := o.Transport
				o.Transport = func() nic.Transport {
					x := inner()
					if tr == nil {
						tr = x.(*fasr.Transport)
					}
					return x
				}
			}
			p := nictest.New(t, o)
			rng := rand.New(rand.NewPCG(uint64(loss*1e4), 11))
			p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
				if request(m) && rng.Float64() < loss {
					lost[name]++
					return nictest.Drop
				}
				return nictest.Pass
			}
			for k := 0; k < qps; k++ {
				for j := 0; j < perQP; j++ {
					off := (k*perQP + j) * size
					nictest.Fill(p.A.Buf[off:off+size], uint64(off))
					if err := p.A.Post(nic.OpWrite, k, uint64(off), off, off, size); err != nil {
						t.Fatal(err)
					}
				}
			}
			run(t, p, qps*perQP)
			wantOK(t, p.A.CQ)
			for i := 0; i < qps*perQP; i++ {
				if err := nictest.Check(p.B.Buf[i*size:(i+1)*size], uint64(i*size)); err != nil {
					t.Fatalf("%s: message %d: %v", name, i, err)
				}
			}
			res[name] = p.A.E.LiveStats()
			if tr != nil {
				fst = tr.Stats()
			}
		}
		f, g := res["fasr"], res["gbn"]
		t.Logf("loss %.1f%%: fasr lost %d, resent %d (%d timeouts); gbn lost %d, resent %d; requester %+v",
			loss*100, lost["fasr"], f.Retransmits, f.Timeouts, lost["gbn"], g.Retransmits, fst)
		if f.Retransmits > lost["fasr"]+lost["fasr"]/4+4 {
			t.Errorf("loss %v: FaSR resent %d for %d lost", loss, f.Retransmits, lost["fasr"])
		}
		if loss >= 0.01 && g.Retransmits < 3*f.Retransmits {
			t.Errorf("loss %v: Go-Back-N resent %d, FaSR %d: want GBN at least 3×", loss, g.Retransmits, f.Retransmits)
		}
	}
}

// TestStateBytes reports the per-QP context and the shared pool, and
// checks the per-QP part against the heap one connected QP costs.
func TestStateBytes(t *testing.T) {
	tr, _ := fasr.New(fasr.Config{})
	g, _ := gbn.New(gbn.Config{})
	p, _, _ := newPair(t, nictest.Options{}, fasr.Config{})
	ctx, queues := p.A.E.QPBytes()
	const n = 5000
	t.Logf("fasr: %d bytes per QP (gbn %d), %d in host memory, shared pool %d bytes (%d units, %d blocks); "+
		"endpoint QP context %d bytes, queues %d; %d QPs: %d bytes of FaSR context in all, %.1f per QP",
		tr.StateBytes(), g.StateBytes(), tr.QueueBytes(), tr.SharedBytes(), tr.Config().Units, tr.Config().Blocks, ctx, queues,
		n, n*tr.StateBytes()+tr.SharedBytes(), float64(n*tr.StateBytes()+tr.SharedBytes())/n)
	if tr.StateBytes() != 36 || tr.QueueBytes() != 256*12 || tr.SharedBytes() != 20*24+8+70*2*2+2*8 {
		t.Errorf("state %d bytes, shared %d", tr.StateBytes(), tr.SharedBytes())
	}
	per := nictest.HeapPerQP(t, func() nic.Transport {
		tr, _ := fasr.New(fasr.Config{})
		return tr
	})
	t.Logf("measured: %.0f bytes per QP", per)
	if per > float64(ctx+queues)*1.25 {
		t.Errorf("measured %.0f bytes per QP, the type sizes say %d", per, ctx+queues)
	}
}

// newStream keeps WRITEs outstanding on A's QP 0, through a link that
// (lossy) does drop one data packet in 50.
func newStream(tb testing.TB, lossy bool) *nictest.Stream {
	p, _, _ := newPair(tb, nictest.Options{}, fasr.Config{})
	if lossy {
		p.AB.Filter = nictest.EveryNth(request, 50, nictest.Drop, 0)
	}
	return nictest.NewStream(tb, p)
}

// TestAllocs asserts that a WRITE stream with losses, SACKs, both SR
// paths and retransmissions allocates nothing.
func TestAllocs(t *testing.T) {
	newStream(t, true).NoAllocs(t, 50)
}

// BenchmarkWriteStream measures a WRITE stream between two FaSR
// endpoints in memory, both run by this goroutine: ns/pkt is the cost of
// one 1 KiB data packet through requester and responder (build as a
// WRITE ONLY with its RETH, classify with ICRC check, place, acknowledge
// with a SACKETH). The lossy case loses one packet in 50, each recovered
// by a SACK.
func BenchmarkWriteStream(b *testing.B) {
	for _, lossy := range []bool{false, true} {
		name := "lossless"
		if lossy {
			name = "loss2%"
		}
		b.Run(name, func(b *testing.B) {
			newStream(b, lossy).Bench(b)
		})
	}
}
