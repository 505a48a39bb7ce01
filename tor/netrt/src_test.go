package netrt

import (
	"errors"
	"net/netip"
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
	st := s.Stats().Ports[1]
	if st.Pooled != 10 || st.Evicted != 6 || st.Bytes != 4*frame || st.Frames != 4 || st.MaxBytes != 4*frame || r.mem.InUse() != 4 {
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
	st := s.Stats().Ports[1]
	if st.Requests != 2 || st.Retrans != 5 || st.Unfulfill != 1 || st.Paced != 0 {
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
	if st := s.Stats().Ports[1]; st.Acked != 6 || r.mem.InUse() != 4 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	// A flow with another QP number at the other end: found by address.
	r.inject(1, ack(t, 99, 9))
	r.settle()
	if st := s.Stats().Ports[1]; st.Acked != 10 || r.mem.InUse() != 0 {
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
	if st := s.Stats().Ports[1]; st.Expired != 10 || r.mem.InUse() != 5 {
		t.Fatalf("stats %+v, %d frames in use", st, r.mem.InUse())
	}
	r.step(60_000)
	if st := s.Stats().Ports[1]; st.Expired != 15 || r.mem.InUse() != 0 {
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
	if st := s.Stats().Ports[1]; st.Evicted != 2 {
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
	if st := s.Stats().Ports[1]; st.Pooled != uint64(n) || st.Evicted == 0 {
		t.Fatalf("stats %+v after %d packets", st, n)
	}
	r.noLeak(s)
}

// contents returns the pool's duplicates as QP×100+PSN, flow by flow in
// flow-table order, oldest first within a flow.
func contents(s *SrcToR) []uint32 {
	var out []uint32
	for i := range s.flows[:s.fill] {
		f := &s.flows[i]
		for e := f.dups.head; e >= 0; e = s.dups[e].on[onFlow].next {
			out = append(out, f.key.QP*100+uint32(s.dups[e].psn))
		}
	}
	return out
}

// TestSrcEvictionOrder: a full pool gives up the oldest duplicate of the
// flow with the fewest requests; between flows asked for equally often,
// the one whose duplicate is oldest.
func TestSrcEvictionOrder(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{PoolBytes: 4 * frame})
	ask := func(qp uint32) { // asks for PSN 0 only, which none keeps for long
		r.inject(1, request(t, qp, 0, rocev2.Bitmap128{}.Set(0)))
		r.settle()
		r.take(1)
		r.take(0)
	}
	steps := []struct {
		what string
		do   func()
		want []uint32
	}{
		{"fill, interleaved", func() { r.send(7, 0, 1); r.send(8, 0, 1); r.send(7, 1, 2); r.send(8, 1, 2) },
			[]uint32{700, 701, 800, 801}},
		// C is new: the tie between A and B (no requests) goes to the
		// older duplicate, A0; then to B0, older than A1.
		{"tie by age", func() { r.send(9, 0, 1) }, []uint32{701, 800, 801, 900}},
		{"tie by age again", func() { r.send(9, 1, 2) }, []uint32{701, 801, 900, 901}},
		// A and C asked for once: B, with none, loses its oldest even
		// though A1 is older, twice.
		{"fewest requests", func() { ask(7); ask(9); r.send(8, 2, 3) }, []uint32{701, 802, 900, 901}},
		{"fewest requests again", func() { r.send(8, 3, 4) }, []uint32{701, 803, 900, 901}},
		// B asked for twice: A and C tie at one, A1 is older than C0.
		{"tie by age among the asked", func() { ask(8); ask(8); r.send(8, 4, 5) }, []uint32{803, 804, 900, 901}},
		{"then C's", func() { r.send(8, 5, 6) }, []uint32{803, 804, 805, 901}},
		// C asked for twice more: B is the least asked, its oldest goes.
		{"oldest within the flow", func() { ask(9); ask(9); r.send(8, 6, 7) }, []uint32{804, 805, 806, 901}},
	}
	for _, st := range steps {
		st.do()
		r.take(1)
		if got := contents(s); !equal(got, st.want) {
			t.Fatalf("%s: pool %v, want %v", st.what, got, st.want)
		}
	}
	r.noLeak(s)
}

// TestSrcAckWrap: an ACK retires the duplicates at or before its PSN,
// across the wrap from 2^24−1 to 0, and an old ACK retires nothing.
func TestSrcAckWrap(t *testing.T) {
	r, s := newSrc(t, Config{})
	const top = 1<<24 - 1
	for _, n := range []uint32{top - 2, top - 1, top, 0, 1, 2} {
		r.send(7, n, n+1)
	}
	r.take(1)
	steps := []struct {
		ack  uint32
		want []uint32 // pooled PSNs after the ACK
	}{
		{top - 3, []uint32{top - 2, top - 1, top, 0, 1, 2}}, // before all of them
		{top - 1, []uint32{top, 0, 1, 2}},
		{1, []uint32{2}},   // across the wrap
		{top, []uint32{2}}, // late, reordered ACK: nothing more
		{2, nil},
	}
	for _, st := range steps {
		r.inject(1, ack(t, 7, st.ack))
		r.settle()
		var got []uint32
		for _, id := range contents(s) {
			got = append(got, id-700)
		}
		if !equal(got, st.want) {
			t.Fatalf("after ACK %#x: pooled %x, want %x", st.ack, got, st.want)
		}
	}
	if st := s.Stats(); st.Ports[1].Acked != 6 || st.ACKs != 5 || st.Ports[1].Frames != 0 || st.Ports[1].Bytes != 0 {
		t.Fatalf("stats %+v", st.Ports[1])
	}
	r.noLeak(s)
}

// TestSrcRequestRepeated: the retransmission was lost too, the
// destination ToR asks again, and the pool, which still has the
// duplicate, sends it again.
func TestSrcRequestRepeated(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.send(7, 0, 10)
	r.take(1)
	for i := 1; i <= 3; i++ {
		r.inject(1, request(t, 7, 3, rocev2.Bitmap128{}.Set(0)))
		r.settle()
		got, notes := split(t, r.take(1)) // and lost
		if !equal(got, []uint32{703}) || len(notes) != 0 {
			t.Fatalf("request %d: sent %v and %d notices, want 703 alone", i, got, len(notes))
		}
	}
	if st := s.Stats().Ports[1]; st.Requests != 3 || st.Retrans != 3 || st.Unfulfill != 0 || st.Frames != 10 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

// TestSrcUnfulfilledFirstOnly: a request naming PSNs the pool has and
// PSNs beyond it gets the first answered and one notice, for the first
// missing PSN only.
func TestSrcUnfulfilledFirstOnly(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.send(7, 0, 10)
	r.take(1)
	// ePSN 8; 12 and 14 arrived: 8 and 9 are pooled, 10, 11 and 13 were
	// never sent.
	r.inject(1, request(t, 7, 8, rocev2.Bitmap128{}.Set(3).Set(5)))
	r.settle()
	got, notes := split(t, r.take(1))
	if !equal(got, []uint32{708, 709}) || len(notes) != 1 {
		t.Fatalf("sent %v and %d notices, want 708 709 and one notice", got, len(notes))
	}
	if _, n := message(t, notes[0]); n.Type() != rocev2.NetRTUnfulfilled || n.PSN() != 10 {
		t.Fatalf("notice type %d for %d, want unfulfilled 10", n.Type(), n.PSN())
	}
	// A flow the pool never saw: the notice names ePSN.
	r.inject(1, request(t, 99, 5, rocev2.Bitmap128{}.Set(1)))
	r.settle()
	got, notes = split(t, r.take(1))
	if len(got) != 0 || len(notes) != 1 {
		t.Fatalf("sent %v and %d notices for an unknown flow", got, len(notes))
	}
	if _, n := message(t, notes[0]); n.PSN() != 5 {
		t.Fatalf("notice for %d, want 5", n.PSN())
	}
	if st := s.Stats().Ports[1]; st.Requests != 2 || st.Retrans != 2 || st.Unfulfill != 2 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

// dataTo returns an RDMA Write Middle from srcIP to dst, QP qp.
func dataTo(t testing.TB, dst netip.Addr, qp uint32, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: srcIP, DstIP: dst,
		Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: rocev2PSN(n), Payload: make([]byte, 256)})
}

// TestSrcPrefixes: only flows toward a prefix that runs NetRT are
// pooled, and the choice is made once per flow.
func TestSrcPrefixes(t *testing.T) {
	far := netip.MustParseAddr("10.0.9.1") // outside the prefix
	r, s := newSrc(t, Config{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24")}})
	for n := uint32(0); n < 4; n++ {
		r.inject(0, data(t, 7, n))
		r.inject(0, dataTo(t, far, 8, n))
	}
	r.settle()
	if got := len(r.take(1)); got != 8 {
		t.Fatalf("%d frames reached the fabric, want all 8", got)
	}
	if got := contents(s); !equal(got, []uint32{700, 701, 702, 703}) {
		t.Fatalf("pooled %v, want flow 7 only", got)
	}
	// Forgetting the prefixes changes nothing for flows already made.
	s.cfg.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.9.0/24")}
	r.inject(0, data(t, 7, 4))
	r.inject(0, dataTo(t, far, 8, 4))
	r.settle()
	if st := s.Stats(); st.Local != 5 || st.Packets != 10 || st.Ports[1].Pooled != 5 {
		t.Fatalf("stats: local %d, packets %d, pooled %d", st.Local, st.Packets, st.Ports[1].Pooled)
	}
	r.take(1)
	// A request for the local flow finds nothing.
	r.inject(1, build(t, &rocev2.Spec{Src: peerMAC, Dst: hostMAC, SrcIP: far, DstIP: srcIP,
		Opcode: rocev2.NetRTOpcode, DestQP: 8, NetRTType: rocev2.NetRTRequest, NetRTPSN: rocev2PSN(2)}))
	r.settle()
	if got, notes := split(t, r.take(1)); len(got) != 0 || len(notes) != 1 {
		t.Fatalf("sent %v and %d notices for a local flow", got, len(notes))
	}
	r.noLeak(s)
}

// TestSrcHoldOnlyPeak: ACKs keep the pool at ten frames where the hold
// time alone would have needed twenty.
func TestSrcHoldOnlyPeak(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrc(t, Config{Hold: 100_000})
	r.send(7, 0, 10)
	r.inject(1, ack(t, 7, 9))
	r.settle()
	r.send(7, 10, 20)
	r.inject(1, ack(t, 7, 19))
	r.settle()
	st := s.Stats().Ports[1]
	if st.MaxBytes != 10*frame || st.HoldOnlyPeak != 20*frame || st.HoldOnlyLower || st.Acked != 20 {
		t.Fatalf("max %d, hold-only %d (lower %v) bytes, want %d and %d", st.MaxBytes, st.HoldOnlyPeak,
			st.HoldOnlyLower, 10*frame, 20*frame)
	}
	// Once the hold time has passed, the ACKed bytes are forgotten.
	r.step(200_000)
	r.send(7, 20, 35)
	if st := s.Stats().Ports[1]; st.MaxBytes != 15*frame || st.HoldOnlyPeak != 20*frame || len(s.shadow) != 0 {
		t.Fatalf("max %d, hold-only %d bytes, %d shadowed, want %d and %d", st.MaxBytes, st.HoldOnlyPeak,
			len(s.shadow), 15*frame, 20*frame)
	}
	r.noLeak(s)

	// The record holds PoolFrames retirements (one per expiry time, so
	// the packets go one loop apart): beyond, a lower bound.
	r, s = newSrc(t, Config{PoolFrames: 4})
	for i := uint32(0); i < 3; i++ {
		for n := 4 * i; n < 4*i+4; n++ {
			r.send(7, n, n+1)
		}
		r.inject(1, ack(t, 7, 4*i+3))
		r.settle()
	}
	if st := s.Stats().Ports[1]; st.HoldOnlyPeak != 8*frame || !st.HoldOnlyLower {
		t.Fatalf("hold-only %d bytes (lower %v), want %d, a lower bound", st.HoldOnlyPeak, st.HoldOnlyLower, 8*frame)
	}
	r.noLeak(s)
}

// TestSrcPortAttribution: duplicates count on the port their original
// left by, requests and notices on the port the request came in by.
func TestSrcPortAttribution(t *testing.T) {
	r, s := newSrcN(t, 3, Config{}) // QP 7 leaves by port 2, QP 8 by port 1
	r.send(7, 0, 4)
	r.send(8, 0, 6)
	r.take(1)
	r.take(2)
	// Both requests come in on port 1 (the fabric may route them so).
	r.inject(1, request(t, 7, 1, rocev2.Bitmap128{}.Set(0)))
	r.inject(1, request(t, 8, 5, rocev2.Bitmap128{}.Set(1))) // 5 and 6; 6 never sent
	r.settle()
	_, ids2, _ := sortOut(t, r.take(2))
	if !equal(ids2, []uint32{701}) {
		t.Fatalf("port 2 sent %v, want 701", ids2)
	}
	st := s.Stats()
	p0, p1, p2 := st.Ports[0], st.Ports[1], st.Ports[2]
	switch {
	case p1.Pooled != 6 || p1.Frames != 6 || p2.Pooled != 4 || p2.Frames != 4 || p0.Pooled != 0:
		t.Fatalf("pooled %d/%d on port 1, %d/%d on 2, %d on 0", p1.Pooled, p1.Frames, p2.Pooled, p2.Frames, p0.Pooled)
	case p1.Retrans != 1 || p2.Retrans != 1:
		t.Fatalf("retransmitted %d on port 1, %d on 2", p1.Retrans, p2.Retrans)
	case p1.Requests != 2 || p2.Requests != 0 || p1.Unfulfill != 1 || p2.Unfulfill != 0:
		t.Fatalf("requests %d/%d, notices %d/%d on ports 1/2", p1.Requests, p2.Requests, p1.Unfulfill, p2.Unfulfill)
	}
	if sum := st.Sum(); sum.Pooled != 10 || sum.Frames != 10 || sum.Retrans != 2 || sum.Requests != 2 {
		t.Fatalf("sum %+v", sum)
	}
	r.noLeak(s)
}

// TestSrcInOrderAllocs: the pooling path with ACKs retiring, the one
// every packet takes, does not allocate.
func TestSrcInOrderAllocs(t *testing.T) {
	r, s := newSrc(t, Config{})
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
	in := newInOrder(t)
	allocs := testing.AllocsPerRun(100, func() { in.batch(r) })
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
	if st := s.Stats().Ports[1]; st.Pooled != uint64(in.n) || st.Acked == 0 || st.HoldOnlyPeak <= st.MaxBytes {
		t.Fatalf("stats %+v after %d packets", st, in.n)
	}
	r.noLeak(s)
}

// inOrder feeds a SrcToR rig batches of 32 data packets of one flow and
// the ACK of the previous batch.
type inOrder struct {
	d, a   []byte
	dm, am rocev2.Meta
	n      uint32
}

func newInOrder(t testing.TB) *inOrder {
	in := &inOrder{d: data(t, 7, 0), a: ack(t, 7, 0)}
	in.dm, in.am = meta(t, in.d), meta(t, in.a)
	return in
}

func (in *inOrder) batch(r *rig) {
	if in.n > 0 {
		rocev2.BTH(in.a[in.am.BTHOff:]).SetPSN(rocev2PSN(in.n - 1))
		in.am.SetICRC(in.a)
		r.ports[1].Inject(in.a)
	}
	for i := 0; i < 32; i++ {
		rocev2.BTH(in.d[in.dm.BTHOff:]).SetPSN(rocev2PSN(in.n))
		in.dm.SetICRC(in.d)
		in.n++
		r.ports[0].Inject(in.d)
	}
	r.step(1000)
}

// BenchmarkSrcInOrder measures the pooling path with ACKs retiring, per
// data packet, through the whole worker; "cross" is the same rig without
// SrcToR, so the difference is the stage's cost; "shared" is SrcToR
// counting its pool in Budgets, as each of many workers does (one
// compare-and-swap per pooled packet, one atomic add per retired one),
// uncontended.
func BenchmarkSrcInOrder(b *testing.B) {
	for _, name := range []string{"netrt", "shared", "cross"} {
		b.Run(name, func(b *testing.B) {
			var r *rig
			switch name {
			case "netrt":
				r, _ = newSrc(b, Config{})
			case "shared":
				r, _ = newSrc(b, Config{Budgets: new(Budgets)})
			default:
				r = newRig(b)
			}
			r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
			in := newInOrder(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				in.batch(r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(in.n), "ns/pkt")
		})
	}
}

func TestSrcConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{KLow: 100 << 10, KHigh: 20 << 10},
		{KLow: 1 << 20}, // above the default KHigh
		{KLow: -1},
		{RateMax: 1e9, RateMin: 2e9},
		{Window: -1},
		{PausePriority: 8},
		{PausePriority: -2},
	} {
		c.Fabric = 2
		if _, err := NewSrcToR(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: error %v, want ErrConfig", c, err)
		}
	}
	c, err := Config{Fabric: 2, Hold: 50_000}.withDefaults()
	if err != nil || c.Window != 50_000 || c.KLow != 20<<10 || c.KHigh != 100<<10 || c.PausePriority != 3 || c.PauseQuanta != 0xffff {
		t.Fatalf("defaults %+v, %v", c, err)
	}
}

// The pool's byte-time integral is its mean occupancy times the time:
// ten frames pooled at once and kept for Hold give 10 × frame × Hold.
func TestSrcOccupancyIntegral(t *testing.T) {
	frame := len(data(t, 7, 0))
	const hold = 2_000_000
	r, s := newSrc(t, Config{Hold: hold})
	for n := uint32(0); n < 10; n++ {
		r.inject(0, data(t, 7, n))
	}
	r.step(1)
	for i := 0; i < 3000 && s.Stats().Ports[1].Frames > 0; i++ {
		r.step(1000)
	}
	st := s.Stats().Ports[1]
	want := float64(10*frame) * hold * 1e-9
	if st.Frames != 0 || st.Expired != 10 || st.ByteSeconds < want*0.99 || st.ByteSeconds > want*1.01 {
		t.Fatalf("frames %d, expired %d, byte-seconds %g; want 0, 10, %g", st.Frames, st.Expired, st.ByteSeconds, want)
	}
}

// TailProbe resends a flow's newest duplicate every TailProbe while
// nothing came after it, no ACK retired it and its Hold lasts; an ACK or
// a later packet stops it.
func TestSrcTailProbe(t *testing.T) {
	const probe = 500_000
	r, s := newSrc(t, Config{Hold: 5_000_000, TailProbe: probe})
	r.send(7, 0, 10)
	r.take(1)
	r.step(probe / 2)
	r.send(7, 10, 11) // PSN 10 is the tail now: 9 is not probed
	r.take(1)
	for i := 0; i < 10; i++ {
		r.step(probe / 4)
	}
	if got := psns(t, r.take(1)); !equal(got, []uint32{10, 10}) {
		t.Fatalf("probed %v, want the tail 10 twice (at 1 and 2 probe times)", got)
	}
	r.inject(1, ack(t, 7, 10)) // stops it
	r.settle()
	// Flow 8: its tail is ACKed before the probe time: nothing sent.
	r.send(8, 0, 3)
	r.take(1)
	r.inject(1, ack(t, 8, 2))
	r.settle()
	for i := 0; i < 10; i++ {
		r.step(probe / 4)
	}
	if got := r.take(1); len(got) != 0 {
		t.Fatalf("probed %v after the tail was ACKed", psns(t, got))
	}
	if n := s.Stats().Ports[1].TailProbes; n != 2 {
		t.Fatalf("%d tail probes, want 2", n)
	}
	// Flow 9: never ACKed, probed until its Hold runs out.
	r.send(9, 0, 1)
	r.take(1)
	for i := 0; i < 48; i++ { // 6 ms
		r.step(probe / 4)
	}
	if got := psns(t, r.take(1)); len(got) != 9 {
		t.Fatalf("probed %v, want PSN 0 nine times: every probe time within its hold", got)
	}
	r.noLeak(s)
}

// TestSrcTableFull: a new flow finding the table full looks at sweep
// entries for an idle one, not at the whole table, and passes unpooled,
// counted; once entries are idle, a new flow reclaims one.
func TestSrcTableFull(t *testing.T) {
	const flows = 100
	r, s := newSrc(t, Config{Flows: flows, Hold: 100_000, IdleTimeout: 1_000_000})
	for qp := uint32(1); qp <= flows; qp++ {
		r.inject(0, data(t, qp, 0))
	}
	r.settle()
	r.send(200, 0, 1)
	if st := s.Stats(); st.TableFull != 1 || st.Flows != flows || s.hand != sweep {
		t.Fatalf("table full %d, %d flows, hand at %d; want 1, %d, %d (one sweep)", st.TableFull, st.Flows, s.hand, flows, sweep)
	}
	if got := psns(t, r.take(1)); len(got) != flows+1 {
		t.Fatalf("forwarded %d packets, want every one (%d)", len(got), flows+1)
	}
	r.step(2_000_000) // every duplicate expired, every flow idle
	r.send(200, 1, 2)
	if st := s.Stats(); st.Reclaimed != 1 || st.Ports[1].Pooled != flows+1 {
		t.Fatalf("reclaimed %d, pooled %d; want 1, %d", st.Reclaimed, st.Ports[1].Pooled, flows+1)
	}
	r.noLeak(s)
}

// TestSrcEvictSample: eviction looks at the flows of the sweep oldest
// duplicates only. Forty flows hold one duplicate each; the 32 oldest
// were asked for once, the 8 youngest never: the oldest of the sample
// goes, where an exact LFU would take a young one. The cost is bounded,
// whatever the number of flows.
func TestSrcEvictSample(t *testing.T) {
	const flows = 40
	r, s := newSrc(t, Config{PoolFrames: flows})
	for qp := uint32(1); qp <= flows; qp++ {
		r.inject(0, data(t, qp, 0))
		r.settle()
	}
	for qp := uint32(1); qp <= sweep; qp++ {
		r.inject(1, request(t, qp, 0, rocev2.Bitmap128{}))
	}
	r.settle()
	r.take(1)
	r.send(flows+1, 0, 1)
	got := contents(s)
	if len(got) != flows || got[0] != 200 {
		t.Fatalf("pool %v: want QP 1's duplicate gone, the rest kept", got)
	}
	if st := s.Stats().Ports[1]; st.Evicted != 1 || st.Retrans != sweep {
		t.Fatalf("evicted %d, retransmitted %d", st.Evicted, st.Retrans)
	}
	r.noLeak(s)
}
