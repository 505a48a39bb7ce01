package dcp_test

import (
	"math/rand/v2"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/dcp"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// once applies action a to the first transmission of each data packet
// whose PSN is in psns, and passes everything else.
func once(a nictest.Action, psns ...psn.PSN) func([]byte, *rocev2.Meta) nictest.Action {
	seen := map[psn.PSN]bool{}
	return func(_ []byte, m *rocev2.Meta) nictest.Action {
		if !data(m) {
			return nictest.Pass
		}
		for _, x := range psns {
			if m.PSN == x && !seen[x] {
				seen[x] = true
				return a
			}
		}
		return nictest.Pass
	}
}

// sent counts the data packets a link carried per PSN.
type sent map[psn.PSN]int

func (s sent) filter(next func([]byte, *rocev2.Meta) nictest.Action) func([]byte, *rocev2.Meta) nictest.Action {
	return func(f []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			s[m.PSN]++
		}
		if next == nil {
			return nictest.Pass
		}
		return next(f, m)
	}
}

// twice returns the PSNs sent more than once and how often in all.
func (s sent) twice() (psns []psn.PSN, extra int) {
	for x, n := range s {
		if n > 1 {
			psns = append(psns, x)
			extra += n - 1
		}
	}
	return psns, extra
}

// TestReorder delivers a fifth of the data packets late, behind the ones
// sent after them, over WRITEs of many sizes: each is placed at its
// offset on arrival, nothing is resent, and completions stay in post
// order. (Go-Back-N resends from every gap: gbn's TestReorder.)
func TestReorder(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	rng := rand.New(rand.NewPCG(7, 8))
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if data(m) && rng.IntN(5) == 0 {
			return nictest.Late
		}
		return nictest.Pass
	}
	offs := post(t, p, nic.OpWrite, sizes)
	run(t, p, len(sizes))
	verify(t, p, nic.OpWrite, sizes, offs)
	as, bs := a.Stats(), b.Stats()
	st := p.A.E.LiveStats()
	t.Logf("%d packets late; receiver %+v", p.AB.Delayed, bs)
	if p.AB.Delayed < 100 || st.Retransmits != 0 || st.Timeouts != 0 || as != (dcp.Stats{}) ||
		bs.HOBounced+bs.Duplicates+bs.Poisoned != 0 || bs.Deferred == 0 {
		t.Errorf("%d late: retransmits %d, timeouts %d; A %+v B %+v", p.AB.Delayed, st.Retransmits, st.Timeouts, as, bs)
	}
}

// TestReorderSend does the same to SENDs. A SEND packet carries no
// address: its offset is its PSN's distance from its message's first
// PSN. Packets that arrive before anything told where their message
// starts go back like trimmed ones and are resent once each.
func TestReorderSend(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	rng := rand.New(rand.NewPCG(9, 10))
	s := sent{}
	p.AB.Filter = s.filter(func(_ []byte, m *rocev2.Meta) nictest.Action {
		if rng.IntN(5) == 0 {
			return nictest.Late
		}
		return nictest.Pass
	})
	offs := post(t, p, nic.OpSend, sizes)
	run(t, p, len(sizes))
	verify(t, p, nic.OpSend, sizes, offs)
	as, bs := a.Stats(), b.Stats()
	st := p.A.E.LiveStats()
	_, extra := s.twice()
	t.Logf("%d packets late; %d unanchored and resent; receiver %+v", p.AB.Delayed, bs.Unanchored, bs)
	if st.Retransmits != bs.Unanchored || uint64(extra) != bs.Unanchored || as.HORetransmits != bs.Unanchored ||
		st.Timeouts != 0 || bs.Duplicates+bs.Poisoned != 0 {
		t.Errorf("retransmits %d, resent on the link %d, unanchored %d, timeouts %d; A %+v B %+v",
			st.Retransmits, extra, bs.Unanchored, st.Timeouts, as, bs)
	}
}

// TestTrim trims one packet in the middle of a WRITE on its way, as a
// DCP switch over its threshold does: the receiver returns the header,
// the sender resends exactly that PSN once, no timer fires, and the data
// arrive intact.
func TestTrim(t *testing.T) {
	const first = 5000
	p, a, b := newPair(t, nictest.Options{PSN: [2]psn.PSN{first, 9000}}, dcp.Config{})
	lost := psn.PSN(first + 32)
	s := sent{}
	p.AB.Filter = s.filter(once(nictest.Trim, lost))
	var ho []rocev2.Meta
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if returned(m) {
			d := dcpETH(f, m)
			if d.MSN() != 0 || d.RetryNo() != 0 || m.Flow.QP != p.A.QPs[0].QPN || m.End-m.L3Off != 52 {
				t.Errorf("returned header-only packet: %+v, MSN %d, retry %d", *m, d.MSN(), d.RetryNo())
			}
			ho = append(ho, *m)
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 1)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 1); err != nil {
		t.Fatal(err)
	}
	as, bs := a.Stats(), b.Stats()
	st := p.A.E.LiveStats()
	psns, extra := s.twice()
	if p.AB.Trimmed != 1 || len(ho) != 1 || ho[0].PSN != lost || bs.HOBounced != 1 || as.HOReturned != 1 || as.HORetransmits != 1 {
		t.Errorf("trimmed %d, returned %d; B %+v A %+v", p.AB.Trimmed, len(ho), bs, as)
	}
	if st.Retransmits != 1 || extra != 1 || psns[0] != lost || st.Timeouts != 0 || as.FallbackTimeouts != 0 {
		t.Errorf("resent %v (%d), retransmits %d, timeouts %d: want PSN %d once", psns, extra, st.Retransmits, st.Timeouts, lost)
	}
	if bs.Duplicates+bs.Poisoned+bs.Recounts != 0 {
		t.Errorf("receiver %+v", bs)
	}
}

// TestDuplicateHO duplicates the returned header-only packet: the sender
// queues one retransmission and ignores the copy.
func TestDuplicateHO(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	s := sent{}
	p.AB.Filter = s.filter(once(nictest.Trim, 10))
	p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if returned(m) {
			return nictest.Duplicate
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 2)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 2); err != nil {
		t.Fatal(err)
	}
	as, bs := a.Stats(), b.Stats()
	_, extra := s.twice()
	if as.HOReturned != 2 || as.HODuplicates != 1 || as.HORetransmits != 1 || extra != 1 || bs.Poisoned != 0 {
		t.Errorf("resent %d; A %+v B %+v", extra, as, bs)
	}
}

// TestLateDuplicateHO returns a header-only packet a second time after
// its retransmission has left, so the packet arrives twice and would be
// counted twice: the receiver's PSN sums catch it, the message waits for
// the coarse timeout, which resends it whole in retry round 1, and the
// receiver counts it afresh.
func TestLateDuplicateHO(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	s := sent{}
	// PSN 63 arrives late, so the message is still incomplete when the
	// copy of PSN 10 arrives.
	p.AB.Late = 50_000
	trim, late := once(nictest.Trim, 10), once(nictest.Late, 63)
	p.AB.Filter = s.filter(func(f []byte, m *rocev2.Meta) nictest.Action {
		if a := trim(f, m); a != nictest.Pass {
			return a
		}
		return late(f, m)
	})
	var copyHO []byte
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if returned(m) && copyHO == nil {
			copyHO = append([]byte(nil), f...)
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 3)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	// Let the retransmission arrive, then replay the header-only packet.
	p.Run(func() bool { return s[10] == 2 }, 1e8)
	p.Run(func() bool { return false }, 5000)
	if !p.A.Port.Inject(copyHO) {
		t.Fatal("inject")
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 3); err != nil {
		t.Fatal(err)
	}
	as, bs := a.Stats(), b.Stats()
	t.Logf("A %+v\nB %+v; completed after %d ns", as, bs, p.A.CQ[0].Latency)
	if as.HOReturned != 2 || as.HORetransmits != 2 || as.FallbackTimeouts != 1 || as.FallbackRetransmits != 64 ||
		bs.Poisoned != 1 || bs.Recounts != 1 || p.A.CQ[0].Latency < rto {
		t.Errorf("A %+v B %+v", as, bs)
	}
}

// TestDuplicateData lets the network deliver a data packet twice: before
// its message completes the copy poisons the count and a timeout round
// recovers; after, the copy is dropped as a duplicate.
func TestDuplicateData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		at       psn.PSN
		poisoned bool
	}{{"middle", 20, true}, {"last", 63, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
			p.AB.Filter = once(nictest.Duplicate, tc.at)
			nictest.Fill(p.A.Buf[:64<<10], 4)
			if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
				t.Fatal(err)
			}
			run(t, p, 1)
			wantOK(t, p.A.CQ)
			if err := nictest.Check(p.B.Buf[:64<<10], 4); err != nil {
				t.Fatal(err)
			}
			as, bs := a.Stats(), b.Stats()
			if tc.poisoned && (bs.Poisoned != 1 || bs.Recounts != 1 || as.FallbackTimeouts != 1) ||
				!tc.poisoned && (bs.Poisoned != 0 || bs.Duplicates != 1 || as.FallbackTimeouts != 0) {
				t.Errorf("A %+v B %+v", as, bs)
			}
			if n := p.B.E.LiveStats().Duplicates; n != bs.Duplicates {
				t.Errorf("endpoint counted %d duplicates, transport %d", n, bs.Duplicates)
			}
		})
	}
}

// TestLostHO loses the header-only packet of a trimmed packet, as a
// control plane that broke its promise would: the coarse timeout resends
// the message whole with sRetryNo 1, and the receiver, holding all but
// one packet of round 0, starts counting round 1 from zero.
func TestLostHO(t *testing.T) {
	for _, where := range []string{"to the receiver", "back to the sender"} {
		t.Run(where, func(t *testing.T) {
			p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
			retries := map[uint8]int{}
			p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				if data(m) {
					retries[dcpETH(f, m).RetryNo()]++
				}
				if data(m) && m.PSN == 40 && retries[0] <= 41 {
					if where == "to the receiver" {
						return nictest.Drop // trimmed, and its header lost
					}
					return nictest.Trim
				}
				return nictest.Pass
			}
			p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
				if returned(m) {
					return nictest.Drop
				}
				return nictest.Pass
			}
			nictest.Fill(p.A.Buf[:64<<10], 5)
			if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
				t.Fatal(err)
			}
			run(t, p, 1)
			wantOK(t, p.A.CQ)
			if err := nictest.Check(p.B.Buf[:64<<10], 5); err != nil {
				t.Fatal(err)
			}
			as, bs := a.Stats(), b.Stats()
			st := p.A.E.LiveStats()
			if retries[0] != 64 || retries[1] != 64 || as.FallbackTimeouts != 1 || as.FallbackRetransmits != 64 ||
				st.Timeouts != 1 || bs.Recounts != 1 || as.HOReturned != 0 || p.A.CQ[0].Latency < rto {
				t.Errorf("packets by retry round %v; A %+v B %+v", retries, as, bs)
			}
		})
	}
}

// TestCompletionOrder holds back the last packet of the first of four
// SENDs until the others have arrived whole: those complete at the
// receiver first, but their receives complete after the first's, in the
// order of the messages, and the ACK's eMSN jumps from 0 to 4.
func TestCompletionOrder(t *testing.T) {
	p, _, b := newPair(t, nictest.Options{}, dcp.Config{})
	p.AB.Late = 100_000
	p.AB.Filter = once(nictest.Late, 15) // message 0 is PSNs 0..15
	var emsns []uint32
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Tag == rocev2.DCPAck {
			emsns = append(emsns, dcpETH(f, m).MSN())
		}
		return nictest.Pass
	}
	sz := []int{16 << 10, 4 << 10, 8 << 10, 1000}
	offs := post(t, p, nic.OpSend, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpSend, sz, offs)
	if bs := b.Stats(); bs.Deferred != 3 {
		t.Errorf("deferred %d messages, want 3: %+v", bs.Deferred, bs)
	}
	if len(emsns) != 1 || emsns[0] != 4 {
		t.Errorf("ACKs carried eMSN %v, want one with 4", emsns)
	}
}

// TestUnanchored delays the first packet of a SEND behind its middle
// ones, whose offsets are then unknown: they go back to the sender and
// are resent once each.
func TestUnanchored(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	// Message 0's last packet and message 1's first: nothing tells
	// where message 1 starts until they arrive.
	p.AB.Filter = once(nictest.Late, 15, 16)
	sz := []int{16 << 10, 16 << 10}
	offs := post(t, p, nic.OpSend, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpSend, sz, offs)
	as, bs := a.Stats(), b.Stats()
	if bs.Unanchored == 0 || as.HORetransmits != bs.Unanchored || bs.HOBounced != 0 || as.FallbackTimeouts != 0 {
		t.Errorf("A %+v B %+v", as, bs)
	}
}

// TestBidirectional runs WRITEs both ways on one QP pair with packets
// trimmed both ways: each side tells a header-only packet trimmed on its
// way in (return it) from one of its own coming back (resend it).
func TestBidirectional(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{MRSize: 2 << 20}, dcp.Config{})
	rng := rand.New(rand.NewPCG(3, 4))
	trim := func(_ []byte, m *rocev2.Meta) nictest.Action {
		if data(m) && rng.IntN(10) == 0 {
			return nictest.Trim
		}
		return nictest.Pass
	}
	p.AB.Filter, p.BA.Filter = trim, trim
	const n = 16
	// A writes from its first quarter into B's second, B from its third
	// into A's fourth.
	const q = 512 << 10
	for i := range n {
		nictest.Fill(p.A.Buf[i<<15:(i+1)<<15], uint64(i))
		nictest.Fill(p.B.Buf[2*q+i<<15:2*q+(i+1)<<15], uint64(100+i))
		if err := p.A.Post(nic.OpWrite, 0, uint64(i), i<<15, q+i<<15, 32<<10); err != nil {
			t.Fatal(err)
		}
		if err := p.B.Post(nic.OpWrite, 0, uint64(i), 2*q+i<<15, 3*q+i<<15, 32<<10); err != nil {
			t.Fatal(err)
		}
	}
	if !p.Run(func() bool { return p.A.Done() == n && p.B.Done() == n }, 1e9) {
		t.Fatalf("completed %d and %d of %d", p.A.Done(), p.B.Done(), n)
	}
	t.Logf("A %+v\nB %+v", p.A.E.LiveStats(), p.B.E.LiveStats())
	wantOK(t, p.A.CQ)
	wantOK(t, p.B.CQ)
	for i := range n {
		if err := nictest.Check(p.B.Buf[q+i<<15:q+(i+1)<<15], uint64(i)); err != nil {
			t.Errorf("A→B %d: %v", i, err)
		}
		if err := nictest.Check(p.A.Buf[3*q+i<<15:3*q+(i+1)<<15], uint64(100+i)); err != nil {
			t.Errorf("B→A %d: %v", i, err)
		}
	}
	as, bs := a.Stats(), b.Stats()
	if p.AB.Trimmed == 0 || p.BA.Trimmed == 0 || as.HOBounced != p.BA.Trimmed || bs.HOBounced != p.AB.Trimmed ||
		as.HORetransmits != p.AB.Trimmed || bs.HORetransmits != p.BA.Trimmed || as.FallbackTimeouts+bs.FallbackTimeouts != 0 {
		t.Errorf("trimmed %d and %d; A %+v B %+v", p.AB.Trimmed, p.BA.Trimmed, as, bs)
	}
}

// TestRetransQOverflow trims 40 packets in a row into a 16-entry
// RetransQ: the overflow is counted and the coarse timeout recovers.
func TestRetransQOverflow(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, dcp.Config{RetransQ: 16})
	var psns []psn.PSN
	for x := psn.PSN(10); x < 50; x++ {
		psns = append(psns, x)
	}
	p.AB.Filter = once(nictest.Trim, psns...)
	nictest.Fill(p.A.Buf[:64<<10], 6)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 6); err != nil {
		t.Fatal(err)
	}
	as := a.Stats()
	t.Logf("A %+v", as)
	if as.RetransQOverflows == 0 || as.HORetransmits+as.RetransQOverflows != 40 || as.FallbackTimeouts != 1 {
		t.Errorf("A %+v", as)
	}
	// Each overflow is a drop of a header-only packet, with its reason.
	ws := snapshot(p, p.A)
	if d, h := ws.Drops[dcp.ReasonRetransQFull], ws.HODrops[dcp.ReasonRetransQFull]; d != as.RetransQOverflows || h != d {
		t.Errorf("A's worker: %d dcp_retransq_full drops, %d of them header-only; want %d", d, h, as.RetransQOverflows)
	}
}

// snapshot returns s's worker counters, published after a few more
// milliseconds of simulated time.
func snapshot(p *nictest.Pair, s *nictest.Side) dataplane.Snapshot {
	p.Run(func() bool { return false }, 2e6)
	return s.W.Snapshot()
}

// TestHONotReturned fills the receiver's control queue, with its tx
// stopped, when a trimmed packet's header-only packet arrives: the
// receiver cannot return it, counts the drop (dcp_ho_not_returned, a
// header-only drop), and the sender's coarse timeout recovers.
func TestHONotReturned(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
	p.AB.Filter = once(nictest.Trim, 10)
	eg := p.B.W.Egress(0)
	ctrl := eg.QueueIndex("control")
	p.B.Port.SetTxRoom(0)
	for _, n := range []int{1500, 64} { // to the last 63 bytes: no room for a 66-byte HO packet
		for {
			addr, ok := p.B.Mem.Alloc()
			if !ok {
				t.Fatal("out of frames")
			}
			if !eg.Enqueue(ctrl, addr, n) {
				p.B.Mem.Release(addr)
				break
			}
		}
	}
	nictest.Fill(p.A.Buf[:64<<10], 7)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	p.Run(func() bool { return false }, 500e3) // every packet reached B
	p.B.Port.SetTxRoom(dataplane.BatchSize)    // the filler goes, as junk A drops
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:64<<10], 7); err != nil {
		t.Fatal(err)
	}
	as, bs := a.Stats(), b.Stats()
	ws := snapshot(p, p.B)
	if bs.HONotReturned != 1 || bs.HOBounced != 0 || as.FallbackTimeouts == 0 || as.HOReturned != 0 {
		t.Errorf("B %+v, A %+v: want one header-only packet not returned, recovered by timeout", bs, as)
	}
	if d, h := ws.Drops[dcp.ReasonNotReturned], ws.HODrops[dcp.ReasonNotReturned]; d != 1 || h != 1 {
		t.Errorf("B's worker: %d dcp_ho_not_returned drops, %d of them header-only; want 1 and 1", d, h)
	}
}

// TestBeyondWindow has a sender tracking 16 messages talk to a receiver
// tracking 8, with the first message's packet lost: the ninth message
// is beyond the receiver's window, which NAKs it as an invalid request
// and fails the QP, as the package doc says, rather than dropping it
// unseen; the messages before it, which the NAK does not acknowledge,
// complete flushed.
func TestBeyondWindow(t *testing.T) {
	msgs := []int{16, 8}
	p, _, _ := nictest.NewWith(t, nictest.Options{}, func() (*dcp.Transport, error) {
		m := msgs[0]
		msgs = msgs[1:]
		return dcp.New(dcp.Config{Messages: m, RTO: rto})
	})
	p.AB.Filter = once(nictest.Drop, 0)
	for i := range 12 {
		if err := p.A.Post(nic.OpWrite, 0, uint64(i), i*1024, i*1024, 1024); err != nil {
			t.Fatal(err)
		}
	}
	p.MustComplete(t, 12, 1e9)
	if st := p.B.E.LiveStats(); st.NAKsSent != 1 || st.InvalidReqs != 1 {
		t.Errorf("B sent %d NAKs, refused %d invalid requests; want 1 and 1", st.NAKsSent, st.InvalidReqs)
	}
	// The NAK acknowledges nothing (eMSN is still 0): the messages before
	// the ninth are flushed, the lost first one among them, and the
	// ninth fails as an invalid request.
	for i, c := range p.A.CQ {
		want := nic.StatusFlushed
		if i == 8 {
			want = nic.StatusRemoteInvalid
		}
		if c.Status != want || c.ID != uint64(i) {
			t.Errorf("A's completion %d: %+v, want %v", i, c, want)
		}
	}
}

// TestPacedRetransmissions trims every packet of a 64 KiB WRITE once:
// 64 header-only packets come back within microseconds, but the
// retransmissions leave at the QP's congestion-control rate, not at the
// rate the headers arrive (§4.3, "Incompatible with CC module").
func TestPacedRetransmissions(t *testing.T) {
	const rate = 1e9 // 1 Gb/s: about 9 µs per 1 KiB packet
	p, a, _ := newPair(t, nictest.Options{CC: func() nic.CC { return cc.NewFixed(rate, 2048) }}, dcp.Config{})
	var all []psn.PSN
	for x := psn.PSN(0); x < 64; x++ {
		all = append(all, x)
	}
	var times []int64
	var bytes int
	trim := once(nictest.Trim, all...)
	first := map[psn.PSN]bool{}
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			if first[m.PSN] {
				times = append(times, p.Now)
				bytes += len(f)
			}
			first[m.PSN] = true
		}
		return trim(f, m)
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
	if as := a.Stats(); len(times) != 64 || as.HORetransmits != 64 || as.FallbackTimeouts != 0 {
		t.Fatalf("%d retransmissions seen; A %+v", len(times), as)
	}
	span := times[len(times)-1] - times[0]
	min := int64(float64(bytes-2048-len(times)*80) * 8 / rate * 1e9) // less the bucket, with slack for frame overheads
	t.Logf("64 retransmissions over %d µs (%d bytes at %.0f Gb/s take at least %d µs)", span/1000, bytes, rate/1e9, min/1000)
	if span < min {
		t.Errorf("retransmissions left within %d ns, faster than the pacer allows (%d ns)", span, min)
	}
}

// TestRetryExceeded loses every data packet: after RetryLimit timeouts
// the WRITE fails with StatusRetryExceeded.
func TestRetryExceeded(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, dcp.Config{RetryLimit: 3, MaxRTO: rto})
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
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
	if c := p.A.CQ; c[0].Status != nic.StatusRetryExceeded || c[1].Status != nic.StatusFlushed {
		t.Fatalf("completions %+v", c)
	}
	if as := a.Stats(); as.FallbackTimeouts != 3 {
		t.Errorf("A %+v", as)
	}
}

// TestRemoteErrors: READ is not a DCP operation and fails the QP as an
// invalid request; a bad range and a SEND without a receive fail as
// they do elsewhere.
func TestRemoteErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     nic.Op
		roff   int
		status nic.Status
	}{
		{"read", nic.OpRead, 0, nic.StatusRemoteInvalid},
		{"range", nic.OpWrite, 4<<20 - 100, nic.StatusRemoteAccess},
		{"rnr", nic.OpSend, 0, nic.StatusRNR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newPair(t, nictest.Options{}, dcp.Config{})
			if err := p.A.Post(tc.op, 0, 1, 0, tc.roff, 4096); err != nil {
				t.Fatal(err)
			}
			run(t, p, 1)
			if c := p.A.CQ[0]; c.Status != tc.status {
				t.Fatalf("completion %+v, want %v", c, tc.status)
			}
		})
	}
}

// TestMessageWindow posts 40 messages at once: the sender never has more
// than Messages of them between the receiver's eMSN and its newest.
func TestMessageWindow(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, dcp.Config{Messages: 4})
	var top, emsn uint32
	worst := 0
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			top = max(top, dcpETH(f, m).MSN())
			worst = max(worst, int(top-emsn))
		}
		return nictest.Pass
	}
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Tag == rocev2.DCPAck {
			emsn = dcpETH(f, m).MSN()
		}
		return nictest.Pass
	}
	sz := make([]int, 32)
	for i := range sz {
		sz[i] = 8 << 10
	}
	offs := post(t, p, nic.OpWrite, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpWrite, sz, offs)
	if worst != 3 {
		t.Errorf("newest MSN sent ran %d ahead of the acknowledged eMSN, want 3 (4 messages)", worst)
	}
}

// TestPSNWrap runs messages across the PSN wrap, which the counters'
// PSN sums must follow.
func TestPSNWrap(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{PSN: [2]psn.PSN{psn.Mask - 40, psn.Mask - 3}}, dcp.Config{})
	p.AB.Filter = once(nictest.Trim, psn.Mask-2, 5)
	offs := post(t, p, nic.OpWrite, []int{64 << 10, 64 << 10})
	run(t, p, 2)
	verify(t, p, nic.OpWrite, []int{64 << 10, 64 << 10}, offs)
	if as, bs := a.Stats(), b.Stats(); as.HORetransmits != 2 || bs.Poisoned != 0 || as.FallbackTimeouts != 0 {
		t.Errorf("A %+v B %+v", as, bs)
	}
}

// TestRefusals: an RNR or fatal NAK for a request placed ahead of a
// lost one acknowledges only what eMSN says arrived; the lost WRITE is
// resent (here by the coarse timeout: it was dropped, not trimmed) and
// completes OK only with its bytes in place.
func TestRefusals(t *testing.T) {
	nictest.Refusals(t, nictest.Options{Transport: func() nic.Transport { return nictest.Must(dcp.New(dcp.Config{})) }})
}
