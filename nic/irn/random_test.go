package irn_test

import (
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestRandomLoss runs many WRITEs and SENDs of random sizes through
// random loss both ways (data and ACKs), at 0.1 % to 5 %: every byte
// arrives, every work request completes exactly once and in order, and
// the retransmissions stay close to the losses — selective repeat, not
// Go-Back-N (whose TestRandomLoss resends tens of packets per loss at
// 1 %).
func TestRandomLoss(t *testing.T) {
	for _, loss := range []float64{0.001, 0.01, 0.05} {
		for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
			t.Run(op.String()+"/"+fmtLoss(loss), func(t *testing.T) {
				randomLoss(t, irn.Config{}, op, loss, 400)
			})
		}
	}
}

func fmtLoss(l float64) string {
	switch l {
	case 0.001:
		return "0.1%"
	case 0.01:
		return "1%"
	}
	return "5%"
}

// randomLoss runs count messages of op through loss both ways under cfg,
// checks every byte and completion, and returns the retransmissions per
// lost data packet.
func randomLoss(t *testing.T, cfg irn.Config, op nic.Op, loss float64, count int) float64 {
	p, a, b := newPair(t, nictest.Options{MRSize: 8 << 20}, cfg)
	rng := rand.New(rand.NewPCG(uint64(loss*1e6), uint64(op)))
	d := newDrop()
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		d.filter(f, m)
		if data(m) && rng.Float64() < loss {
			return nictest.Drop
		}
		return nictest.Pass
	}
	lostNACKs := 0
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && rng.Float64() < loss {
			if nak(f, m) {
				lostNACKs++
			}
			return nictest.Drop
		}
		return nictest.Pass
	}
	// Messages of 1 B to 64 KiB, up to 16 outstanding, each at its own
	// place in the regions so that a late packet of one cannot land on
	// another's bytes.
	var sz, offs []int
	off, posted := 0, 0
	for posted < count {
		for posted < count && p.A.E.Outstanding() < 16 {
			n := 1 + rng.IntN(64<<10)
			if rng.IntN(4) == 0 {
				n = 1 + rng.IntN(1024)
			}
			if off+n > len(p.A.Buf) {
				off = 0
			}
			nictest.Fill(p.A.Buf[off:off+n], uint64(posted))
			if op == nic.OpSend {
				if err := p.B.Post(nic.OpRecv, 0, uint64(100+posted), off, 0, n); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.A.Post(op, 0, uint64(posted), off, off, n); err != nil {
				t.Fatal(err)
			}
			sz, offs = append(sz, n), append(offs, off)
			off += n
			posted++
		}
		// Check each message while its bytes are still in place.
		done := p.A.Done()
		if !p.Run(func() bool { return p.A.Done() > done }, 2e9) {
			t.Fatalf("stalled at %d of %d: A %+v B %+v", p.A.Done(), count, a.Stats(), b.Stats())
		}
		for i := done; i < p.A.Done(); i++ {
			if err := nictest.Check(p.B.Buf[offs[i]:offs[i]+sz[i]], uint64(i)); err != nil {
				t.Fatalf("%v %d (%d bytes): %v", op, i, sz[i], err)
			}
		}
	}
	run(t, p, count)
	for i := len(p.A.CQ) - 16; i < count; i++ {
		if i >= 0 {
			if err := nictest.Check(p.B.Buf[offs[i]:offs[i]+sz[i]], uint64(i)); err != nil {
				t.Fatalf("%v %d (%d bytes): %v", op, i, sz[i], err)
			}
		}
	}
	wantOK(t, p.A.CQ)
	for i, c := range p.A.CQ {
		if c.ID != uint64(i) || c.Len != sz[i] {
			t.Fatalf("completion %d: %+v, want ID %d of %d bytes", i, c, i, sz[i])
		}
	}
	p.Run(func() bool { return false }, 10*rtoHigh) // late duplicates must not complete anything twice
	if len(p.A.CQ) != count {
		t.Fatalf("%d completions for %d work requests", len(p.A.CQ), count)
	}
	if op == nic.OpSend {
		wantOK(t, p.B.CQ)
		if len(p.B.CQ) != count {
			t.Fatalf("B completed %d receives of %d", len(p.B.CQ), count)
		}
		for i, c := range p.B.CQ {
			if c.ID != uint64(100+i) || c.Len != sz[i] {
				t.Fatalf("receive completion %d: %+v, want %d bytes", i, c, sz[i])
			}
		}
	}
	st := p.A.E.LiveStats()
	as := a.Stats()
	_, extra := d.resent()
	lost := p.AB.Dropped
	ratio := float64(extra) / float64(max(lost, 1))
	t.Logf("%d packets, %d lost data, %d lost ACKs (%d NACKs): %d resent (%.2f per loss), timeouts low %d high %d, recoveries %d",
		st.Requests, lost, p.BA.Dropped, lostNACKs, extra, ratio, as.TimeoutsLow, as.TimeoutsHigh, as.Recoveries)
	// Each loss costs its own retransmission, and each lost NACK one
	// more (its PSN looks like a hole below a later SACK); a timeout,
	// after a lost retransmission or a lost tail ACK, one more. Go-Back-N
	// resends about a window per loss.
	if as.MaxInFlight > uint64(a.Window(1024)) {
		t.Errorf("%d in flight, window %d", as.MaxInFlight, a.Window(1024))
	}
	if cfg.GoBackN {
		return ratio
	}
	timeouts := int(as.TimeoutsLow + as.TimeoutsHigh)
	if extra < int(lost) || extra > int(lost)+lostNACKs+timeouts {
		t.Errorf("%d retransmissions for %d losses, %d lost NACKs and %d timeouts", extra, lost, lostNACKs, timeouts)
	}
	return ratio
}

// TestReceiverReference drives the receiver with random loss, late
// delivery and duplication, and checks every ACK and NACK it sends
// against a naive reference: a set of the PSNs that arrived, the
// expected PSN the smallest missing one. A packet ahead of the expected
// PSN — new or a copy — is answered by a NACK with (expected, its PSN);
// a packet behind it by an ACK; nothing else. The link back is clean so
// that the sequence can be compared one to one.
func TestReceiverReference(t *testing.T) {
	p, _, b := newPair(t, nictest.Options{}, irn.Config{Window: 64})
	rng := rand.New(rand.NewPCG(11, 12))
	type nackRec struct{ cum, sack psn.PSN }
	var want []nackRec // NACKs the reference expects, in order
	got := 0
	arrived := map[psn.PSN]bool{}
	var epsn psn.PSN
	late := map[psn.PSN]int{} // copies held back by the Link
	deliver := func(x psn.PSN) {
		if x.Less(epsn) {
			return // ACKed, coalesced: not compared
		}
		if x != epsn {
			want = append(want, nackRec{epsn, x})
			arrived[x] = true
			return
		}
		arrived[x] = true
		for arrived[epsn] {
			delete(arrived, epsn)
			epsn = epsn.Add(1)
		}
	}
	// The Link delivers in order of transmission except Late copies,
	// which arrive after everything sent within Late ns; the filter
	// replays that order for the reference as frames reach the port.
	p.AB.Late = 3_000
	type inflight struct {
		x  psn.PSN
		at int64
	}
	var q []inflight
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if !data(m) {
			return nictest.Pass
		}
		switch r := rng.IntN(100); {
		case r < 3:
			return nictest.Drop
		case r < 6:
			late[m.PSN]++
			q = append(q, inflight{m.PSN, p.Now + p.AB.Delay + p.AB.Late})
			return nictest.Late
		case r < 8:
			q = append(q, inflight{m.PSN, p.Now + p.AB.Delay}, inflight{m.PSN, p.Now + p.AB.Delay})
			return nictest.Duplicate
		}
		q = append(q, inflight{m.PSN, p.Now + p.AB.Delay})
		return nictest.Pass
	}
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		// B has processed every frame due by now; replay them, on-time
		// ones first as the Link does, then check B's NACK.
		for {
			k := -1
			for i, x := range q {
				if x.at <= p.Now && (k < 0 || x.at < q[k].at) {
					k = i
				}
			}
			if k < 0 {
				break
			}
			deliver(q[k].x)
			q = append(q[:k], q[k+1:]...)
		}
		if nak(f, m) {
			s := rocev2.SACKETH(f[m.ExtOff(rocev2.ExtSACK):])
			if got >= len(want) || want[got] != (nackRec{m.PSN, s.PSN()}) {
				t.Fatalf("NACK %d: (%d, %d), reference wants %v", got, m.PSN, s.PSN(), want[min(got, len(want)-1):])
			}
			got++
		}
		return nictest.Pass
	}
	sz := []int{300 << 10, 7, 200 << 10}
	offs := post(t, p, nic.OpWrite, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpWrite, sz, offs)
	t.Logf("%d NACKs matched; receiver %+v", got, b.Stats())
	if got < 50 {
		t.Errorf("only %d NACKs compared", got)
	}
}

// TestStateBytes reports the per-QP memory — 64 bytes of scalars, the
// bitmaps and two table descriptors, as the package doc says — and
// checks it against the heap one connected QP costs.
func TestStateBytes(t *testing.T) {
	tr, _ := irn.New(irn.Config{})
	p, _, _ := newPair(t, nictest.Options{}, irn.Config{})
	ctx, queues := p.A.E.QPBytes()
	t.Logf("irn per QP: %d bytes of transport state (%d of it the four %d-bit bitmaps), %d bytes of host-memory tables; "+
		"endpoint QP context %d bytes, queues %d bytes", tr.StateBytes(), tr.BitmapBytes(), tr.Window(1024),
		tr.QueueBytes(), ctx, queues)
	if tr.BitmapBytes() != 4*128/8 || tr.QueueBytes() != 2*256*4 || tr.StateBytes() != 64+4*128/8+48 {
		t.Errorf("state %d, bitmaps %d, queues %d bytes", tr.StateBytes(), tr.BitmapBytes(), tr.QueueBytes())
	}
	per := nictest.HeapPerQP(t, func() nic.Transport {
		tr, _ := irn.New(irn.Config{})
		return tr
	})
	t.Logf("measured: %.0f bytes per QP", per)
	// Below: a fresh QP's send queue holds 8 requests, not SQDepth,
	// until it is posted deeper (nic's sqFirst), 24 × 56 bytes less at
	// the default depth of 32.
	if per > float64(ctx+queues)*1.25 || per < float64(ctx+queues)*0.7 {
		t.Errorf("measured %.0f bytes per QP, the type sizes say %d", per, ctx+queues)
	}
}

// newStream keeps WRITEs outstanding on A's QP 0, through a link that
// (lossy) does drop one data packet in 50 and delays one in 10.
func newStream(tb testing.TB, lossy bool) *nictest.Stream {
	return newStreamWith(tb, lossy, irn.Config{})
}

func newStreamWith(tb testing.TB, lossy bool, cfg irn.Config) *nictest.Stream {
	p, _, _ := newPair(tb, nictest.Options{}, cfg)
	if lossy {
		p.AB.Filter = nictest.EveryNth(data, 50, nictest.Drop, 10)
	}
	return nictest.NewStream(tb, p)
}

// TestAllocs asserts that a WRITE stream with losses, NACKs, loss
// recovery, reordering and timeouts allocates nothing — also with
// either ablation (§4.3) on.
func TestAllocs(t *testing.T) {
	for name, cfg := range map[string]irn.Config{"irn": {}, "go-back-N": {GoBackN: true}, "no-BDP-FC": {NoBDPFC: 512}} {
		t.Run(name, func(t *testing.T) {
			newStreamWith(t, true, cfg).NoAllocs(t, 50)
		})
	}
}

// BenchmarkWriteStream measures a WRITE stream between two IRN endpoints
// in memory, both run by this goroutine: ns/pkt is the cost of one 1 KiB
// data packet through requester and responder (build with a RETH,
// classify with ICRC check, place, bitmap, ACK). The lossy case drops
// one packet in 50 (NACKs, recovery, retransmission) and delays one in
// 10.
func BenchmarkWriteStream(b *testing.B) {
	for _, lossy := range []bool{false, true} {
		name := "lossless"
		if lossy {
			name = "loss2%-late10%"
		}
		b.Run(name, func(b *testing.B) {
			newStream(b, lossy).Bench(b)
		})
	}
}
