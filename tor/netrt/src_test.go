package netrt

import (
	"testing"

	"rocetor/rocev2"
)

func newSrc(t testing.TB, c Config) (*rig, *SrcToR) {
	t.Helper()
	c.Fabric = 2 // p0 faces the host, p1 the fabric
	s, err := NewSrcToR(c)
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, s), s
}

// send injects data PSNs a..b-1 of flow qp from the host.
func (r *rig) send(qp, a, b uint32) {
	for n := a; n < b; n++ {
		r.inject(0, data(r.t, qp, n))
	}
	r.settle()
}

func TestSrcPoolBudget(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrc(t, Config{PoolBytes: 4*frame + 10})
	r.send(7, 0, 10)
	if got := psns(t, r.take(1)); !equal(got, seq(0, 10)) {
		t.Fatalf("fabric got %v", got)
	}
	st := s.Stats()
	if st.Pooled != 10 || st.Evicted != 6 || st.PoolBytes != 4*frame || st.MaxBytes != 4*frame || r.mem.InUse() != 4 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	// The oldest went: of 5–8, asked for, the pool has 6–8.
	r.inject(1, request(t, 7, 5, rocev2.Bitmap128{}.Set(3)))
	r.settle()
	got, notes := split(t, r.take(1))
	if !equal(got, []uint32{706, 707, 708}) || len(notes) != 1 || len(r.take(0)) != 0 {
		t.Fatalf("retransmitted %v and %d notices, want 706–708 and one notice", got, len(notes))
	}
	m, n := message(t, notes[0])
	e := rocev2.Ethernet(notes[0])
	if n.Type() != rocev2.NetRTUnfulfilled || n.PSN() != 5 || addrOf(m.Flow.Src) != srcIP ||
		addrOf(m.Flow.Dst) != dstIP || m.Flow.QP != 7 || e.Dst() != peerMAC || e.Src() != r.ports[1].MAC() {
		t.Fatalf("notice type %d psn %d %v→%v qp %d, MAC %v→%v", n.Type(), n.PSN(),
			addrOf(m.Flow.Src), addrOf(m.Flow.Dst), m.Flow.QP, e.Src(), e.Dst())
	}
	r.noLeak(s)
}

func TestSrcRetransmit(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.send(7, 0, 10)
	r.take(1)
	// ePSN 2; 4, 5 and 7 arrived: 2, 3 and 6 are missing.
	bm := rocev2.Bitmap128{}.Set(1).Set(2).Set(4)
	r.inject(1, request(t, 7, 2, bm))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{2, 3, 6}) {
		t.Fatalf("retransmitted %v, want 2 3 6", got)
	}
	if n := len(r.take(0)); n != 0 {
		t.Fatalf("%d frames reached the host: the request was not consumed", n)
	}
	// 10 and 11 were never sent: the notice names the first, 10.
	r.inject(1, request(t, 7, 8, rocev2.Bitmap128{}.Set(4)))
	r.settle()
	got, notes := split(t, r.take(1))
	if !equal(got, []uint32{708, 709}) {
		t.Fatalf("retransmitted %v, want 708 709", got)
	}
	if len(notes) != 1 {
		t.Fatalf("%d notices", len(notes))
	}
	if _, n := message(t, notes[0]); n.PSN() != 10 {
		t.Fatalf("notice for %d, want 10", n.PSN())
	}
	st := s.Stats()
	if st.Requests != 2 || st.Retrans != 5 || st.Unfulfill != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.step(int64(2e6))
	if d := r.w.Snapshot().Drops[ReasonConsumed]; d != 2 {
		t.Fatalf("consumed %d, want 2", d)
	}
	r.noLeak(s)
}

func TestSrcAckRetires(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.send(7, 0, 10)
	r.inject(1, ack(t, 7, 5))
	r.settle()
	if len(r.take(0)) != 1 {
		t.Fatal("the ACK did not reach the host")
	}
	if st := s.Stats(); st.Acked != 6 || r.mem.InUse() != 4 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	// A flow with another QP number at the other end: found by address.
	r.inject(1, ack(t, 99, 9))
	r.settle()
	if st := s.Stats(); st.Acked != 10 || r.mem.InUse() != 0 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	r.noLeak(s)
}

func TestSrcHoldExpires(t *testing.T) {
	r, s := newSrc(t, Config{Hold: 100_000})
	r.send(7, 0, 10)
	r.step(50_000)
	r.send(7, 10, 15)
	if r.mem.InUse() != 15 {
		t.Fatalf("%d pooled", r.mem.InUse())
	}
	r.step(50_000) // the first ten are over 100 µs old: the timer fires
	if st := s.Stats(); st.Expired != 10 || r.mem.InUse() != 5 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	r.step(60_000)
	if st := s.Stats(); st.Expired != 15 || r.mem.InUse() != 0 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	r.noLeak(s)
}

// TestSrcLFU: the flow that was asked for keeps its duplicates; the other
// loses its oldest even though the asked-for flow's are older.
func TestSrcLFU(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrc(t, Config{PoolBytes: 4 * frame})
	r.send(7, 0, 2) // A0 A1
	r.send(8, 0, 2) // B0 B1
	r.inject(1, request(t, 7, 0, rocev2.Bitmap128{}.Set(0)))
	r.settle()
	r.take(1)
	r.send(8, 2, 4) // evicts B0 and B1, not A0, A1
	r.take(1)
	r.inject(1, request(t, 7, 0, rocev2.Bitmap128{}))
	r.inject(1, request(t, 8, 0, rocev2.Bitmap128{}.Set(1)))
	r.settle()
	got, notes := split(t, r.take(1))
	if !equal(got, []uint32{700}) {
		t.Fatalf("retransmitted %v, want A0 only", got)
	}
	if len(notes) != 1 {
		t.Fatalf("%d notices, want 1 (B0)", len(notes))
	}
	if st := s.Stats(); st.Evicted != 2 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

func TestConfigErrors(t *testing.T) {
	if _, err := NewDstToR(Config{}); err == nil {
		t.Fatal("no fabric port accepted")
	}
	if _, err := NewSrcToR(Config{Fabric: 1, Flows: -1}); err == nil {
		t.Fatal("negative flows accepted")
	}
}

func TestSrcPoolAllocs(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
	f := data(t, 7, 0)
	m := meta(t, f)
	n := uint32(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			rocev2.BTH(f[m.BTHOff:]).SetPSN(rocev2PSN(n))
			m.SetICRC(f)
			n++
			r.ports[0].Inject(f)
		}
		r.step(1000)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch on the pooling path", allocs)
	}
	if st := s.Stats(); st.Pooled != uint64(n) || st.Evicted == 0 {
		t.Fatalf("stats %+v after %d packets", st, n)
	}
	r.noLeak(s)
}
