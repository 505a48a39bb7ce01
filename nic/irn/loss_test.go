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

// TestTailLoss drops the last packet of a long WRITE: nothing after it
// can be SACKed, so the timer recovers it — RTO_low, one packet being in
// flight — and it is resent once.
func TestTailLoss(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{})
	d := newDrop(63)
	p.AB.Filter = d.filter
	sz := []int{64 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	as := a.Stats()
	if len(order) != 1 || order[0] != 63 || extra != 1 || as.TimeoutsLow != 1 || as.TimeoutsHigh != 0 {
		t.Errorf("resent %v (%d extra); A %+v", order, extra, as)
	}
}

// TestLostNACK drops a data packet and the first five NACKs it causes:
// the later NACKs carry the same cumulative ACK, so recovery starts on
// the first that arrives, without a timeout. The five PSNs whose SACK
// was lost look like holes below a SACKed PSN and are resent too — the
// price of IRN's one SACK per NACK — and the receiver drops them as
// duplicates and NACKs them again.
func TestLostNACK(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, irn.Config{})
	d := newDrop(20)
	p.AB.Filter = d.filter
	nacks := 0
	p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && m.PSN == 20 {
			if nacks++; nacks <= 5 {
				return nictest.Drop
			}
		}
		return nictest.Pass
	}
	sz := []int{128 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	as, bs := a.Stats(), b.Stats()
	want := []psn.PSN{20, 21, 22, 23, 24, 25}
	if extra != 6 || len(order) != 6 || order[0] != 20 || order[5] != 25 || as.TimeoutsLow+as.TimeoutsHigh != 0 ||
		as.NACKsRecv != bs.NACKsSent-5 || as.Recoveries != 1 || bs.Duplicates != 5 {
		t.Errorf("resent %v (%d extra), want %v; A %+v B %+v", order, extra, want, as, bs)
	}
}

// TestAllNACKsLost drops every NACK: the sender never learns of the
// hole from them and the timer recovers it. The SACKs it did not get
// cost the sweep: after the expiry every PSN not SACKed from the
// cumulative ACK (20) to the last sent (63) is resent, 44 packets of
// which the receiver drops 43 as duplicates — one expiry instead of the
// one per lost tail packet that resending the cumulative ACK's packet
// alone costs (TestTailLosses).
func TestAllNACKsLost(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{})
	d := newDrop(20)
	p.AB.Filter = d.filter
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if nak(f, m) {
			return nictest.Drop
		}
		return nictest.Pass
	}
	sz := []int{64 << 10}
	write(t, p, sz...)
	_, extra := d.resent()
	as := a.Stats()
	if extra != 44 || as.TimeoutsLow+as.TimeoutsHigh != 1 || as.NACKsRecv != 0 {
		t.Errorf("%d resent; A %+v", extra, as)
	}
}

// TestLostRetransmission drops a packet and its first retransmission:
// the retransmission is not resent within the same recovery (each hole
// goes once), the timer starts recovery again from the cumulative ACK,
// and the other hole, already repaired, is not sent a third time.
func TestLostRetransmission(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{})
	d := newDrop(10, 10, 30)
	p.AB.Filter = d.filter
	sz := []int{64 << 10}
	write(t, p, sz...)
	as := a.Stats()
	if d.sent[10] != 3 || d.sent[30] != 2 || as.TimeoutsLow+as.TimeoutsHigh != 1 || as.Recoveries != 2 {
		t.Errorf("PSN 10 sent %d times, 30 %d times; A %+v", d.sent[10], d.sent[30], as)
	}
}

// TestLostACKs drops every ACK of a WRITE's last packets: the sender's
// timer resends the cumulative ACK's packet, the receiver drops it as a
// duplicate and acknowledges again, and the WRITE completes once.
func TestLostACKs(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, irn.Config{})
	lost := 0
	p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && lost < 3 && m.PSN.Diff(psn.PSN(40)) >= 0 {
			lost++
			return nictest.Drop
		}
		return nictest.Pass
	}
	sz := []int{64 << 10}
	write(t, p, sz...)
	p.Run(func() bool { return false }, 5*rtoHigh)
	as, bs := a.Stats(), b.Stats()
	if len(p.A.CQ) != 1 || as.TimeoutsLow+as.TimeoutsHigh == 0 || bs.Duplicates == 0 || bs.OutOfOrder != 0 {
		t.Errorf("%d completions; A %+v B %+v", len(p.A.CQ), as, bs)
	}
}

// TestDuplicates duplicates every seventh data packet on the link: the
// copies are dropped (and acknowledged again), nothing is resent, the
// data and completions are right.
func TestDuplicates(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
		p, a, b := newPair(t, nictest.Options{}, irn.Config{})
		k := 0
		p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if data(m) {
				if k++; k%7 == 0 {
					return nictest.Duplicate
				}
			}
			return nictest.Pass
		}
		offs := post(t, p, op, sizes)
		run(t, p, len(sizes))
		verify(t, p, op, sizes, offs)
		st := p.A.E.LiveStats()
		if bs := b.Stats(); bs.Duplicates != p.AB.Duplicated || st.Retransmits != 0 || a.Stats().Recoveries != 0 {
			t.Errorf("%v: %d duplicated, receiver counted %d, %d retransmits", op, p.AB.Duplicated, bs.Duplicates, st.Retransmits)
		}
	}
}

// TestReorder delivers a fifth of the data packets late, behind later
// ones: each later packet is placed on arrival and NACKed. IRN has no
// reordering threshold, so the sender takes the first NACK for a loss
// and resends the late packet, once; the receiver drops whichever copy
// comes second. Data and completions are right; nothing times out.
func TestReorder(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
		p, a, b := newPair(t, nictest.Options{}, irn.Config{})
		rng := rand.New(rand.NewPCG(7, 8))
		d := newDrop()
		p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
			d.filter(f, m)
			if data(m) && rng.IntN(5) == 0 {
				return nictest.Late
			}
			return nictest.Pass
		}
		offs := post(t, p, op, sizes)
		run(t, p, len(sizes))
		verify(t, p, op, sizes, offs)
		st := p.A.E.LiveStats()
		as, bs := a.Stats(), b.Stats()
		_, extra := d.resent()
		t.Logf("%v: %d late, %d resent; A %+v B %+v", op, p.AB.Delayed, extra, as, bs)
		if p.AB.Delayed < 100 || uint64(extra) > p.AB.Delayed || st.Timeouts != 0 || bs.OutOfOrder == 0 {
			t.Errorf("%v: %d late, %d resent, %d timeouts", op, p.AB.Delayed, extra, st.Timeouts)
		}
	}
}

// TestSendLoss drops SEND packets, first ones included: a SEND packet
// carries its SSN and index (SETH), so one arriving ahead of its
// message's first packet is placed anyway, and receives complete in
// order with their lengths.
func TestSendLoss(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{})
	rng := rand.New(rand.NewPCG(1, 2))
	d := newDrop()
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if d.filter(f, m) == nictest.Pass && data(m) && rng.IntN(30) == 0 {
			return nictest.Drop
		}
		return nictest.Pass
	}
	offs := post(t, p, nic.OpSend, sizes)
	run(t, p, len(sizes))
	verify(t, p, nic.OpSend, sizes, offs)
	if a.Stats().Recoveries == 0 || p.AB.Dropped == 0 {
		t.Errorf("nothing was lost: %+v", a.Stats())
	}
}

// TestReadLoss drops READ requests and READ responses: a lost request is
// resent like any packet (the responder takes a READ only in order);
// a lost response makes the requester re-issue the READ from it, as gbn
// does.
func TestReadLoss(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, irn.Config{})
	reqs, resps := 0, 0
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && m.Opcode == rocev2.RCReadRequest {
			if reqs++; reqs == 3 {
				return nictest.Drop
			}
		}
		return nictest.Pass
	}
	p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && m.Opcode.IsResponse() && m.Opcode != rocev2.RCAck {
			if resps++; resps%97 == 5 {
				return nictest.Drop
			}
		}
		return nictest.Pass
	}
	offs := post(t, p, nic.OpRead, sizes)
	run(t, p, len(sizes))
	verify(t, p, nic.OpRead, sizes, offs)
	as, bs := a.Stats(), b.Stats()
	t.Logf("A %+v B %+v", as, bs)
	if as.ReadReissues == 0 || p.AB.Dropped != 1 || p.BA.Dropped == 0 {
		t.Errorf("re-issues %d, dropped %d requests and %d responses", as.ReadReissues, p.AB.Dropped, p.BA.Dropped)
	}
}

// TestMixed interleaves WRITEs, SENDs and READs on one QP over a lossy
// link both ways.
func TestMixed(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, irn.Config{})
	rng := rand.New(rand.NewPCG(3, 4))
	lossy := func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && rng.IntN(50) == 0 {
			return nictest.Drop
		}
		return nictest.Pass
	}
	p.AB.Filter, p.BA.Filter = lossy, lossy
	ops := []nic.Op{nic.OpWrite, nic.OpSend, nic.OpRead}
	off := 0
	type msg struct {
		op       nic.Op
		off, len int
	}
	var msgs []msg
	for i := 0; i < 60; i++ {
		op, n := ops[i%3], 1+rng.IntN(20000)
		msgs = append(msgs, msg{op, off, n})
		if op == nic.OpRead {
			nictest.Fill(p.B.Buf[off:off+n], uint64(i))
		} else {
			nictest.Fill(p.A.Buf[off:off+n], uint64(i))
		}
		if op == nic.OpSend {
			if err := p.B.Post(nic.OpRecv, 0, uint64(1000+i), off, 0, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.A.Post(op, 0, uint64(i), off, off, n); err != nil {
			t.Fatal(err)
		}
		off += n
		if i%10 == 9 { // stay within the send queue
			run(t, p, i+1)
		}
	}
	run(t, p, len(msgs))
	wantOK(t, p.A.CQ)
	for i, m := range msgs {
		if c := p.A.CQ[i]; c.ID != uint64(i) || c.Op != m.op || c.Len != m.len {
			t.Errorf("completion %d: %+v", i, c)
		}
		buf := p.B.Buf
		if m.op == nic.OpRead {
			buf = p.A.Buf
		}
		if err := nictest.Check(buf[m.off:m.off+m.len], uint64(i)); err != nil {
			t.Errorf("%v %d: %v", m.op, i, err)
		}
	}
	p.Run(func() bool { return p.B.Done() >= 20 }, 1e7)
	wantOK(t, p.B.CQ)
	if len(p.B.CQ) != 20 {
		t.Errorf("B completed %d receives of 20", len(p.B.CQ))
	}
	if p.AB.Dropped == 0 || p.BA.Dropped == 0 {
		t.Errorf("dropped %d and %d", p.AB.Dropped, p.BA.Dropped)
	}
}

// TestPSNWrap runs WRITEs with losses across the 24-bit PSN wrap.
func TestPSNWrap(t *testing.T) {
	first := psn.PSN(psn.Mask - 40)
	p, a, _ := newPair(t, nictest.Options{PSN: [2]psn.PSN{first, psn.Mask - 3}}, irn.Config{Window: 32})
	d := newDrop(first.Add(30), first.Add(41), first.Add(42), first.Add(80))
	p.AB.Filter = d.filter
	sz := []int{40 << 10, 100 << 10, 3}
	offs := post(t, p, nic.OpWrite, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpWrite, sz, offs)
	if _, extra := d.resent(); extra != 4 || a.Stats().Recoveries == 0 {
		t.Errorf("%d resent for 4 losses; A %+v", extra, a.Stats())
	}
}

// TestRetryExceeded cuts the link: after RetryLimit expiries without
// progress the WRITE fails with StatusRetryExceeded and the rest is
// flushed — an error the poster sees, never a hang.
func TestRetryExceeded(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{RetryLimit: 3, MaxRTO: 4 * rtoHigh})
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			return nictest.Drop
		}
		return nictest.Pass
	}
	post(t, p, nic.OpWrite, []int{4096, 100})
	run(t, p, 2)
	if p.A.CQ[0].Status != nic.StatusRetryExceeded || p.A.CQ[1].Status != nic.StatusFlushed {
		t.Errorf("completions %+v", p.A.CQ)
	}
	if as := a.Stats(); as.TimeoutsLow+as.TimeoutsHigh != 3 {
		t.Errorf("A %+v", as)
	}
}

// TestRemoteErrors: a WRITE outside the peer's region is NAKed as a
// remote access error and fails both QPs, as in gbn.
func TestRemoteErrors(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{MRSize: 64 << 10}, irn.Config{})
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 60<<10, 8<<10); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	if p.A.CQ[0].Status != nic.StatusRemoteAccess {
		t.Errorf("completion %+v", p.A.CQ[0])
	}
	if st := p.B.E.LiveStats(); st.AccessErrors == 0 {
		t.Errorf("B %+v", st)
	}
}

// TestBidirectional runs WRITEs both ways with loss: each side is a
// sender and a receiver at once, on the same QP.
func TestBidirectional(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, irn.Config{})
	rng := rand.New(rand.NewPCG(5, 6))
	lossy := func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && rng.IntN(40) == 0 {
			return nictest.Drop
		}
		return nictest.Pass
	}
	p.AB.Filter, p.BA.Filter = lossy, lossy
	const n = 256 << 10
	nictest.Fill(p.A.Buf[:n], 1)
	nictest.Fill(p.B.Buf[n:2*n], 2)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 2*n, n); err != nil {
		t.Fatal(err)
	}
	if err := p.B.Post(nic.OpWrite, 0, 2, n, 3*n, n); err != nil {
		t.Fatal(err)
	}
	if !p.Run(func() bool { return p.A.Done() == 1 && p.B.Done() == 1 }, 2e9) {
		t.Fatalf("A %d B %d completions", p.A.Done(), p.B.Done())
	}
	wantOK(t, p.A.CQ)
	wantOK(t, p.B.CQ)
	if err := nictest.Check(p.B.Buf[2*n:3*n], 1); err != nil {
		t.Error(err)
	}
	if err := nictest.Check(p.A.Buf[3*n:4*n], 2); err != nil {
		t.Error(err)
	}
}

// TestRefusals: a NAK — RNR, remote access, invalid request, IRN's NACK
// — for a request placed ahead of a lost one acknowledges only the
// cumulative ACK it carries, not the PSNs before it.
func TestRefusals(t *testing.T) {
	nictest.Refusals(t, nictest.Options{Transport: func() nic.Transport { return nictest.Must(irn.New(irn.Config{})) }})
}

// TestStaleRefusal delays the RNR NAK for a SEND that found no receive
// until after the timer resent the SEND, a receive was posted meanwhile,
// and the SEND completed: the late NAK refuses a PSN acknowledged since
// and changes nothing — the QP stays up and the next WRITE completes.
func TestStaleRefusal(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, irn.Config{})
	p.BA.Late = 1_000_000
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).Syndrome().IsRNR() {
			return nictest.Late
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpSend, 0, 1, 0, 0, 100); err != nil {
		t.Fatal(err)
	}
	p.Run(func() bool { return false }, 20_000)
	if err := p.B.Post(nic.OpRecv, 0, 9, 0, 0, 100); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	p.Run(func() bool { return p.BA.Delayed > 0 && p.BA.InFlight() == 0 }, 2e6)
	if err := p.A.Post(nic.OpWrite, 0, 2, 0, 0, 100); err != nil {
		t.Fatal(err)
	}
	run(t, p, 2)
	wantOK(t, p.A.CQ)
	if p.BA.Delayed != 1 {
		t.Errorf("%d RNR NAKs delayed, want 1", p.BA.Delayed)
	}
}
