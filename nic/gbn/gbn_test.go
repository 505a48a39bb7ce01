package gbn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

const rto = 100_000 // 100 µs: a few dozen link round trips of the harness

func newPair(t testing.TB, o nictest.Options, g gbn.Config) *nictest.Pair {
	t.Helper()
	if g.RTO == 0 {
		g.RTO = rto
	}
	if _, err := gbn.New(g); err != nil {
		t.Fatal(err)
	}
	o.Transport = func() nic.Transport {
		tr, _ := gbn.New(g)
		return tr
	}
	return nictest.New(t, o)
}

// run runs p until A has want completions, or fails.
func run(t testing.TB, p *nictest.Pair, want int) {
	t.Helper()
	if !p.Run(func() bool { return p.A.Done() >= want }, 1e9) {
		t.Fatalf("A completed %d of %d work requests in 1 s of simulated time\nA: %+v\nB: %+v",
			p.A.Done(), want, p.A.E.LiveStats(), p.B.E.LiveStats())
	}
}

func wantOK(t testing.TB, cq []nic.Completion) {
	t.Helper()
	for i, c := range cq {
		if c.Status != nic.StatusOK {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
}

// request reports whether m is a request packet (WRITE, SEND, READ).
func request(m *rocev2.Meta) bool { return m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() }

// dropOnce drops the first transmission of each PSN in psns.
func dropOnce(psns ...psn.PSN) func([]byte, *rocev2.Meta) nictest.Action {
	seen := map[psn.PSN]bool{}
	return func(_ []byte, m *rocev2.Meta) nictest.Action {
		if !request(m) && !m.Opcode.IsResponse() || m.Opcode == rocev2.RCAck {
			return nictest.Pass
		}
		for _, x := range psns {
			if m.PSN == x && !seen[x] {
				seen[x] = true
				return nictest.Drop
			}
		}
		return nictest.Pass
	}
}

// TestDelivery moves WRITEs, SENDs and READs of 1 B to 1 MiB, posted all
// at once, and checks every byte and the completion order.
func TestDelivery(t *testing.T) {
	sizes := []int{1, 3, 255, 1023, 1024, 1025, 4096, 65537, 1 << 20}
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend, nic.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			p := newPair(t, nictest.Options{MRSize: 4 << 20}, gbn.Config{})
			src, dst := p.A, p.B
			if op == nic.OpRead {
				src, dst = p.B, p.A
			}
			off := 0
			for i, n := range sizes {
				nictest.Fill(src.Buf[off:off+n], uint64(i))
				if op == nic.OpSend {
					if err := p.B.Post(nic.OpRecv, 0, uint64(100+i), off, 0, n); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.A.Post(op, 0, uint64(i), off, off, n); err != nil {
					t.Fatal(err)
				}
				off += n
			}
			run(t, p, len(sizes))
			wantOK(t, p.A.CQ)
			off = 0
			for i, n := range sizes {
				if c := p.A.CQ[i]; c.ID != uint64(i) || c.Len != n || c.Op != op || c.Latency <= 0 {
					t.Errorf("completion %d: %+v, want ID %d, %d bytes, in post order", i, c, i, n)
				}
				if err := nictest.Check(dst.Buf[off:off+n], uint64(i)); err != nil {
					t.Errorf("%s of %d bytes: %v", op, n, err)
				}
				off += n
			}
			if op == nic.OpSend {
				p.Collect()
				wantOK(t, p.B.CQ)
				for i, c := range p.B.CQ {
					if c.Op != nic.OpRecv || c.ID != uint64(100+i) || c.Len != sizes[i] {
						t.Errorf("receive completion %d: %+v", i, c)
					}
				}
			}
			a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
			if a.Retransmits+b.Retransmits+a.Timeouts+b.NAKsSent+b.Duplicates+b.OutOfOrder != 0 {
				t.Errorf("lossless run recovered from something: A %+v B %+v", a, b)
			}
		})
	}
}

// TestSingleLoss drops the middle packet of a 64-packet WRITE once: the
// responder NAKs exactly once, the requester goes back to the lost PSN,
// no timer expires, and the data arrives intact.
func TestSingleLoss(t *testing.T) {
	const first = 5000
	p := newPair(t, nictest.Options{PSN: [2]psn.PSN{first, 9000}}, gbn.Config{})
	lost := psn.PSN(first + 32)
	p.AB.Filter = dropOnce(lost)
	nictest.Fill(p.A.Buf[:64<<10], 1)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 1); err != nil {
		t.Fatal(err)
	}
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if b.SeqNAKsSent != 1 || a.SeqNAKsRecv != 1 {
		t.Errorf("NAKs sent %d, received %d: want exactly one", b.SeqNAKsSent, a.SeqNAKsRecv)
	}
	if a.Timeouts != 0 {
		t.Errorf("%d timeouts: the NAK should have recovered the loss", a.Timeouts)
	}
	// Go-back-N: the lost packet and every packet sent after it before
	// the NAK arrived (dropped as out of order at B) go again.
	if a.Retransmits < 1 || a.Retransmits != b.OutOfOrder+1 {
		t.Errorf("retransmitted %d, responder dropped %d out of order: want drops+1", a.Retransmits, b.OutOfOrder)
	}
	if a.Requests != 64+a.Retransmits {
		t.Errorf("%d requests for 64 packets and %d retransmissions", a.Requests, a.Retransmits)
	}
}

// TestBurstLoss drops ten consecutive packets once: still one NAK.
func TestBurstLoss(t *testing.T) {
	p := newPair(t, nictest.Options{}, gbn.Config{})
	var lost []psn.PSN
	for i := 20; i < 30; i++ {
		lost = append(lost, psn.PSN(i))
	}
	p.AB.Filter = dropOnce(lost...)
	nictest.Fill(p.A.Buf[:256<<10], 2)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 256<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:256<<10], 2); err != nil {
		t.Fatal(err)
	}
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if b.SeqNAKsSent != 1 || a.Timeouts != 0 || a.Retransmits < 10 {
		t.Errorf("NAKs %d, timeouts %d, retransmits %d: want 1, 0, ≥ 10", b.SeqNAKsSent, a.Timeouts, a.Retransmits)
	}
}

// TestTailLoss drops the last packet of a message once: nothing follows
// it to reveal the gap, so the retransmission timer recovers it.
func TestTailLoss(t *testing.T) {
	p := newPair(t, nictest.Options{}, gbn.Config{})
	const n = 64 << 10 // PSNs 0..63
	p.AB.Filter = dropOnce(63)
	nictest.Fill(p.A.Buf[:n], 3)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, n); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:n], 3); err != nil {
		t.Fatal(err)
	}
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if a.Timeouts != 1 || b.NAKsSent != 0 {
		t.Errorf("timeouts %d, NAKs %d: want one timeout and no NAK", a.Timeouts, b.NAKsSent)
	}
	if lat := p.A.CQ[0].Latency; lat < rto {
		t.Errorf("completed after %d ns, before the %d ns timeout could recover the tail", lat, rto)
	}
}

// TestAckLoss loses ACKs: early ones are covered by later cumulative
// ACKs; a lost final ACK costs one timeout, and the resent packets are
// duplicates the responder acknowledges again.
func TestAckLoss(t *testing.T) {
	// dropACKs loses the first n ACKs from B.
	dropACKs := func(p *nictest.Pair, n int) *int {
		acks := 0
		p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if m.Opcode == rocev2.RCAck && acks < n {
				acks++
				return nictest.Drop
			}
			return nictest.Pass
		}
		return &acks
	}
	t.Run("early", func(t *testing.T) {
		// With a window wider than the message the sender never waits
		// for an ACK, and the last cumulative ACK covers the lost ones.
		p := newPair(t, nictest.Options{}, gbn.Config{Window: 2048})
		acks := dropACKs(p, 5)
		nictest.Fill(p.A.Buf[:1<<20], 4)
		if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
		run(t, p, 1)
		wantOK(t, p.A.CQ)
		a := p.A.E.LiveStats()
		if *acks != 5 || a.Retransmits != 0 || a.Timeouts != 0 {
			t.Errorf("dropped %d ACKs; retransmits %d, timeouts %d: want 5, 0, 0", *acks, a.Retransmits, a.Timeouts)
		}
	})
	t.Run("window", func(t *testing.T) {
		// With the default 128-PSN window, losing every ACK of the first
		// window (one per responder batch of 64) stalls the sender until
		// its timer expires; it then resends the window as duplicates.
		p := newPair(t, nictest.Options{}, gbn.Config{})
		acks := dropACKs(p, 2)
		nictest.Fill(p.A.Buf[:1<<20], 4)
		if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
		run(t, p, 1)
		wantOK(t, p.A.CQ)
		a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
		if *acks != 2 || a.Timeouts != 1 || a.Retransmits != 128 || b.Duplicates != 128 {
			t.Errorf("dropped %d ACKs; timeouts %d, retransmits %d, duplicates %d: want 2, 1, 128, 128",
				*acks, a.Timeouts, a.Retransmits, b.Duplicates)
		}
	})
	t.Run("final", func(t *testing.T) {
		p := newPair(t, nictest.Options{}, gbn.Config{})
		const n = 64 << 10
		dropped := false
		p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if m.Opcode == rocev2.RCAck && m.PSN == 63 && !dropped {
				dropped = true
				return nictest.Drop
			}
			return nictest.Pass
		}
		nictest.Fill(p.A.Buf[:n], 5)
		if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, n); err != nil {
			t.Fatal(err)
		}
		run(t, p, 1)
		wantOK(t, p.A.CQ)
		if err := nictest.Check(p.B.Buf[:n], 5); err != nil {
			t.Fatal(err)
		}
		a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
		if !dropped || a.Timeouts != 1 || a.Retransmits == 0 || b.Duplicates != a.Retransmits {
			t.Errorf("timeouts %d, retransmits %d, duplicates at B %d: want 1, ≥ 1, all retransmits",
				a.Timeouts, a.Retransmits, b.Duplicates)
		}
	})
}

// TestDuplicates duplicates every request and every ACK: the responder
// drops the copies as duplicates and acknowledges again; nothing is
// retransmitted and the data is intact.
func TestDuplicates(t *testing.T) {
	p := newPair(t, nictest.Options{}, gbn.Config{})
	dup := func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE {
			return nictest.Duplicate
		}
		return nictest.Pass
	}
	p.AB.Filter, p.BA.Filter = dup, dup
	nictest.Fill(p.A.Buf[:256<<10], 6)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 256<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:256<<10], 6); err != nil {
		t.Fatal(err)
	}
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if b.Duplicates != a.Requests || a.Retransmits != 0 || b.NAKsSent != 0 {
		t.Errorf("requests %d, duplicates %d, retransmits %d, NAKs %d", a.Requests, b.Duplicates, a.Retransmits, b.NAKsSent)
	}
}

// TestReorder swaps two packets. Go-Back-N cannot tell a reordering
// from a loss, and it costs two NAKs: the later packet arrives first and
// is dropped (NAK for the earlier), the earlier is accepted, and the one
// after the dropped packet is a new gap (NAK for the dropped one). Every
// out-of-order drop is sent again; the data is intact.
func TestReorder(t *testing.T) {
	p := newPair(t, nictest.Options{}, gbn.Config{})
	held := false
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if request(m) && m.PSN == 10 && !held {
			held = true
			return nictest.Hold
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 7)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 7); err != nil {
		t.Fatal(err)
	}
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if b.SeqNAKsSent != 2 || b.OutOfOrder < 2 || a.Retransmits != b.OutOfOrder || a.Timeouts != 0 {
		t.Errorf("NAKs %d, out-of-order drops %d, retransmits %d, timeouts %d: want 2, ≥ 2, the drops, 0",
			b.SeqNAKsSent, b.OutOfOrder, a.Retransmits, a.Timeouts)
	}
}

// TestPSNWrap runs every operation across the 2^24 wrap, with a loss
// right at it.
func TestPSNWrap(t *testing.T) {
	const start = 0xfffff0
	p := newPair(t, nictest.Options{PSN: [2]psn.PSN{start, start}, MRSize: 8 << 20}, gbn.Config{})
	p.AB.Filter = dropOnce(0xffffff, 0)
	const n = 1 << 20
	nictest.Fill(p.A.Buf[:n], 8)
	nictest.Fill(p.A.Buf[n:2*n], 9)
	nictest.Fill(p.B.Buf[2*n:3*n], 10)
	if err := p.B.Post(nic.OpRecv, 0, 50, n, 0, n); err != nil {
		t.Fatal(err)
	}
	for i, op := range []nic.Op{nic.OpWrite, nic.OpSend, nic.OpRead} {
		if err := p.A.Post(op, 0, uint64(i), i*n, i*n, n); err != nil {
			t.Fatal(err)
		}
	}
	run(t, p, 3)
	wantOK(t, p.A.CQ)
	for i, b := range [][]byte{p.B.Buf[:n], p.B.Buf[n : 2*n], p.A.Buf[2*n : 3*n]} {
		if err := nictest.Check(b, uint64(8+i)); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if a := p.A.E.LiveStats(); a.SeqNAKsRecv == 0 {
		t.Error("the loss at the wrap was not NAKed")
	}
}

// TestRetryExhausted loses every request: after RetryLimit doubling
// timeouts the work request completes with StatusRetryExceeded (never a
// hang), the QP enters the error state, and later posts are flushed.
func TestRetryExhausted(t *testing.T) {
	p := newPair(t, nictest.Options{}, gbn.Config{RetryLimit: 7, MaxRTO: 1e9})
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if request(m) {
			return nictest.Drop
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := p.A.Post(nic.OpWrite, 0, 2, 0, 0, 4096); err != nil {
		t.Fatal(err)
	}
	run(t, p, 2)
	c := p.A.CQ
	if c[0].Status != nic.StatusRetryExceeded || c[1].Status != nic.StatusFlushed {
		t.Fatalf("completions %+v: want retry_exceeded then flushed", c)
	}
	// 1+2+4+…+128 = 255 timeouts' worth, each seen within one clock step.
	if lo, hi := int64(255*rto), int64(255*rto+16*p.Step); c[0].Latency < lo || c[0].Latency > hi {
		t.Errorf("failed after %d ns, want %d–%d (seven doublings of %d ns)", c[0].Latency, lo, hi, rto)
	}
	// Each of the 7 retries goes back over both requests' 8 PSNs.
	if a := p.A.E.LiveStats(); a.Timeouts != 8 || a.Retransmits != 7*8 {
		t.Errorf("timeouts %d, retransmits %d: want 8 and 56", a.Timeouts, a.Retransmits)
	}
	if err := p.A.Post(nic.OpWrite, 0, 3, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	run(t, p, 3)
	if c := p.A.CQ[2]; c.Status != nic.StatusFlushed {
		t.Errorf("post to a failed QP completed %+v, want flushed", c)
	}
}

// TestReadResponseLoss loses READ responses: a gap makes the requester
// re-issue the READ from the lost response's PSN; a lost last response
// is recovered by the timer.
func TestReadResponseLoss(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lost     psn.PSN
		timeouts uint64
	}{{"middle", 100, 0}, {"tail", 255, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, nictest.Options{}, gbn.Config{Window: 1024})
			p.BA.Filter = dropOnce(tc.lost)
			const n = 256 << 10 // PSNs 0..255
			nictest.Fill(p.B.Buf[:n], 11)
			if err := p.A.Post(nic.OpRead, 0, 1, 0, 0, n); err != nil {
				t.Fatal(err)
			}
			run(t, p, 1)
			wantOK(t, p.A.CQ)
			if err := nictest.Check(p.A.Buf[:n], 11); err != nil {
				t.Fatal(err)
			}
			a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
			if a.ReadRetries != 1 || a.Timeouts != tc.timeouts {
				t.Errorf("read re-issues %d, timeouts %d: want 1 and %d", a.ReadRetries, a.Timeouts, tc.timeouts)
			}
			if b.Retransmits == 0 || b.Responses != 256+b.Retransmits {
				t.Errorf("responder sent %d responses, %d again", b.Responses, b.Retransmits)
			}
		})
	}
}

// TestRandomLoss loses 1% of the frames each way over many messages of
// every kind: everything completes intact, and Go-Back-N resends far
// more than it lost.
func TestRandomLoss(t *testing.T) {
	const msgs, size = 60, 64 << 10
	var base nic.Stats
	for _, loss := range []float64{0, 0.01} {
		p := newPair(t, nictest.Options{MRSize: 2 * msgs * size}, gbn.Config{})
		rng := rand.New(rand.NewPCG(1, 2))
		var lostReq uint64
		p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if rng.Float64() < loss {
				if request(m) {
					lostReq++
				}
				return nictest.Drop
			}
			return nictest.Pass
		}
		p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if rng.Float64() < loss {
				return nictest.Drop
			}
			return nictest.Pass
		}
		ops := []nic.Op{nic.OpWrite, nic.OpSend, nic.OpRead}
		posted := 0
		for posted < msgs || p.A.Done() < msgs {
			for posted < msgs && p.A.E.Outstanding() < 8 {
				op := ops[posted%3]
				off := posted * size
				if op == nic.OpRead {
					nictest.Fill(p.B.Buf[off:off+size], uint64(posted))
				} else {
					nictest.Fill(p.A.Buf[off:off+size], uint64(posted))
				}
				if op == nic.OpSend {
					if err := p.B.Post(nic.OpRecv, 0, uint64(posted), off, 0, size); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.A.Post(op, 0, uint64(posted), off, off, size); err != nil {
					t.Fatal(err)
				}
				posted++
			}
			done := p.A.Done()
			if !p.Run(func() bool { return p.A.Done() > done }, 1e9) {
				t.Fatalf("loss %v: stuck at %d of %d\nA %+v\nB %+v", loss, done, msgs, p.A.E.LiveStats(), p.B.E.LiveStats())
			}
		}
		wantOK(t, p.A.CQ)
		for i := 0; i < msgs; i++ {
			b := p.B.Buf[i*size : (i+1)*size]
			if ops[i%3] == nic.OpRead {
				b = p.A.Buf[i*size : (i+1)*size]
			}
			if err := nictest.Check(b, uint64(i)); err != nil {
				t.Fatalf("loss %v: message %d (%s): %v", loss, i, ops[i%3], err)
			}
		}
		a := p.A.E.LiveStats()
		t.Logf("loss %.0f%%: %d requests lost; requester sent %d requests, %d again, %d timeouts; %d NAKs",
			loss*100, lostReq, a.Requests, a.Retransmits, a.Timeouts, a.SeqNAKsRecv)
		if loss == 0 {
			base = a
			if a.Retransmits != 0 {
				t.Fatalf("lossless run retransmitted %d", a.Retransmits)
			}
			continue
		}
		if lostReq == 0 || a.Retransmits < 3*lostReq || a.Requests < base.Requests+a.Retransmits {
			t.Errorf("lost %d requests, retransmitted %d: Go-Back-N should resend at least 3× what it lost", lostReq, a.Retransmits)
		}
	}
}

// TestRemoteErrors covers the fatal NAKs: an access outside the peer's
// region, a bad rkey, and a SEND without a posted receive.
func TestRemoteErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		post   func(p *nictest.Pair) error
		status nic.Status
	}{
		{"range", func(p *nictest.Pair) error { return p.A.Post(nic.OpWrite, 0, 1, 0, len(p.B.Buf)-100, 4096) }, nic.StatusRemoteAccess},
		{"rkey", func(p *nictest.Pair) error {
			return p.A.E.Post(nic.WR{ID: 1, Op: nic.OpRead, QP: p.A.QPs[0].QPN, LKey: p.A.MR.Key, LocalVA: p.A.MR.VA,
				Len: 100, RKey: p.B.MR.Key + 0x100, RemoteVA: p.B.MR.VA})
		}, nic.StatusRemoteAccess},
		{"rnr", func(p *nictest.Pair) error { return p.A.Post(nic.OpSend, 0, 1, 0, 0, 100) }, nic.StatusRNR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, nictest.Options{}, gbn.Config{})
			if err := tc.post(p); err != nil {
				t.Fatal(err)
			}
			run(t, p, 1)
			if c := p.A.CQ[0]; c.Status != tc.status {
				t.Fatalf("completion %+v, want %v", c, tc.status)
			}
			b := p.B.E.LiveStats()
			if tc.status == nic.StatusRemoteAccess && (b.AccessErrors != 1 || b.NAKsSent != 1) {
				t.Errorf("responder: access errors %d, NAKs %d: want 1 and 1", b.AccessErrors, b.NAKsSent)
			}
			if tc.status == nic.StatusRNR && b.RNRNAKsSent != 1 {
				t.Errorf("responder sent %d RNR NAKs", b.RNRNAKsSent)
			}
		})
	}
}

func ExampleNew() {
	t, err := gbn.New(gbn.Config{RTO: 500_000, RetryLimit: 5})
	fmt.Println(t.Name(), err)
	// Output: gbn <nil>
}
