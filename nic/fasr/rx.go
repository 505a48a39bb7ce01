package fasr

import (
	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// maxAhead bounds how far past RCV-NXT a packet may be and still be
// tracked: a quarter of the PSN space, as the framework bounds a QP's
// outstanding PSNs.
const maxAhead = 1 << 22

// maxPackets bounds a message's packets: nic.MaxMessage at the smallest
// MTU.
const maxPackets = 1 << 22

// Request implements nic.Transport: the responder side (§III-B 1). The
// packet at RCV-NXT is placed and, in a recovery, moves RCV-NXT over
// what arrived after it; a WRITE or SEND packet past sack-high is placed
// at once and recorded — on the fast path by sack-high alone, on the
// slow path in the bitmap; one between RCV-NXT and sack-high is a
// retransmission that overtook the lost one of RCV-NXT and is discarded
// with an FNACK. SEND receives complete in order as RCV-NXT passes their
// last packets.
func (t *Transport) Request(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	s := &t.qs[q.Index()]
	op := p.Op
	read := op == rocev2.RCReadRequest
	if !read && !op.IsWrite() && !op.IsSend() {
		// Atomics and the rest are not FaSR operations here.
		t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	switch d := p.PSN.Diff(s.rcvNxt); {
	case d == 0:
		n := 1
		if read {
			if !t.read(c, q, s, p) {
				return
			}
			n = int(packets(p.DMALen, uint32(q.MTU())))
		} else if !t.place(c, q, s, p) {
			return
		}
		s.rflags &^= rNAKSent
		if s.rx != none {
			t.refill(c, q, s, n)
			return
		}
		s.rcvNxt = s.rcvNxt.Add(n)
		t.complete(c, q, s)
		if read {
			s.sinceAck = 0 // its responses acknowledge it
			return
		}
		s.sinceAck++
		if p.AckReq || int(s.sinceAck) >= t.cfg.AckEvery {
			s.sinceAck = 0
			c.ScheduleAck(q)
		}
	case d < 0:
		if read {
			c.RepeatRead(q, p) // a re-issued READ restarts its responses
		}
		t.duplicate(c, q, p)
	case d >= maxAhead:
		c.Drop(p, nic.ReasonOutOfOrder)
	default:
		t.ahead(c, q, s, p, d)
	}
}

// refill handles the arrival of RCV-NXT during a recovery (placed
// already; n PSNs, more than one for a READ request): lost-cnt goes down
// by as many; on the fast path RCV-NXT jumps to sack-high+1, on the slow
// path to the bitmap's next zero, releasing blocks from the head; the
// recovery ends past sack-high, and the slow path turns fast when
// lost-cnt is back to 1.
func (t *Transport) refill(c *nic.Ctx, q *nic.QP, s *qstate, n int) {
	u := &t.pool.units[s.rx]
	if u.flags&uOverflow == 0 {
		u.lost -= uint8(min(n, int(u.lost)))
	}
	next := s.rcvNxt.Add(n)
	if u.slow() {
		t.stats.SlowOps++
		s.rcvNxt = t.pool.nextMissing(u, next)
		t.pool.release(u, s.rcvNxt)
	} else {
		t.stats.FastOps++
		s.rcvNxt = u.sackHigh.Add(1)
		if s.rcvNxt.Less(next) {
			s.rcvNxt = next // a recovery that recorded nothing
		}
	}
	switch {
	case u.sackHigh.Less(s.rcvNxt):
		t.pool.freeUnit(s.rx)
		s.rx = none
	case u.slow() && u.flags&uOverflow == 0 && u.lost == 1:
		t.pool.freeBitmap(u)
		t.stats.FastEntries++
	}
	t.complete(c, q, s)
	// The AACK, at once: a SACK for a new gap later in this batch must
	// not reach the sender before the lower lost-cnt does, or the gap
	// would look like SACK loss.
	s.sinceAck = 0
	c.SendAck(q, rocev2.ACKSyndrome(31), s.rcvNxt.Add(-1))
}

// complete completes, in order, the receives of the SENDs whose last
// packets RCV-NXT has passed.
func (t *Transport) complete(c *nic.Ctx, q *nic.QP, s *qstate) {
	rend := t.rend[q.Index()]
	for {
		e := &rend[s.rssn&(t.tab-1)]
		if e.n == 0 || !e.last.Less(s.rcvNxt) {
			return
		}
		c.CompleteRecv(q, int(e.n-1))
		*e = sendEnd{}
		s.rssn = (s.rssn + 1) & psn.Mask
	}
}

// ahead handles packet p, d PSNs past RCV-NXT.
func (t *Transport) ahead(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt, d int) {
	read := p.Op == rocev2.RCReadRequest
	if s.rx == none {
		switch {
		case s.rflags&rNAKSent != 0:
			// Go-Back-N, the NAK is out: wait for RCV-NXT.
			c.Drop(p, nic.ReasonOutOfOrder)
			return
		case read:
			t.stats.GBNFallbacks++
			t.stats.ReadFallbacks++
			t.gbn(c, q, s, p)
			return
		case t.beyond(c, s, p):
			return
		}
		if s.rx = t.pool.allocUnit(); s.rx == none {
			t.stats.UnitsExhausted++
			t.stats.GBNFallbacks++
			t.gbn(c, q, s, p)
			return
		}
		u := &t.pool.units[s.rx]
		u.sackHigh, u.reported = s.rcvNxt.Add(-1), s.rcvNxt.Add(-1)
		t.stats.Recoveries++
	}
	u := &t.pool.units[s.rx]
	if u.flags&uGBN != 0 {
		t.gbn(c, q, s, p)
		return
	}
	h := p.PSN.Diff(u.sackHigh)
	switch {
	case h == 0:
		t.duplicate(c, q, p)
		return
	case h < 0:
		// Between RCV-NXT and sack-high: a retransmission, so the one of
		// RCV-NXT, sent before it, was lost. Discard it rather than
		// reach into the middle of the bitmap, and tell the sender with
		// an FNACK carrying its PSN (§III-D).
		t.stats.FNACKsSent++
		t.ackFNACK, t.ackPSN = true, p.PSN
		c.SendAck(q, rocev2.ACKSyndrome(31), s.rcvNxt.Add(-1))
		t.ackFNACK = false
		c.Drop(p, nic.ReasonOutOfOrder)
		return
	case read:
		// A READ executes in order, after the WRITEs before it.
		t.stats.ReadFallbacks++
		t.fallback(c, q, s, u, p)
		return
	case t.beyond(c, s, p):
		return
	}
	// A new packet past sack-high. It is placed first and recorded only
	// if placed: one refused (no receive, an error) did not arrive.
	if !t.place(c, q, s, p) {
		if s.rx != none && u.sackHigh.Less(s.rcvNxt) && !u.slow() {
			t.pool.freeUnit(s.rx) // a recovery that recorded nothing
			s.rx = none
		}
		return
	}
	// lost-cnt grows by the gap.
	gap := h - 1
	lost, ovf := int(u.lost)+gap, u.flags&uOverflow != 0
	if !ovf && lost > lostMax {
		ovf = true
	}
	if (lost > 1 || ovf) && !u.slow() {
		fresh := u.sackHigh.Less(s.rcvNxt)
		if !t.pool.startBitmap(u, s.rcvNxt, !fresh) {
			t.stats.BlocksExhausted++
			t.fallback(c, q, s, u, p)
			return
		}
		t.stats.SlowEntries++
	} else if !u.slow() && u.sackHigh.Less(s.rcvNxt) {
		t.stats.FastEntries++ // a recovery starting with one lost packet
	}
	if u.slow() && !t.pool.set(u, p.PSN) {
		// Placed but not recorded: dropped as Go-Back-N drops it, and
		// placed again when resent.
		t.stats.BlocksExhausted++
		t.fallback(c, q, s, u, p)
		return
	}
	if u.slow() {
		t.stats.SlowOps++
	} else {
		t.stats.FastOps++
	}
	if gap > 0 && u.reported != u.sackHigh {
		// Report the run since the last SACK before the gap, so that the
		// sender does not take it for lost.
		c.SendAck(q, rocev2.ACKSyndrome(31), s.rcvNxt.Add(-1))
	}
	if ovf && u.flags&uOverflow == 0 {
		// Frozen until the recovery ends; RCV-NXT now comes from the
		// bitmap alone, and the sender resends every gap (§III-D).
		u.flags |= uOverflow
		u.lost = lostMax
		t.stats.LostOverflows++
	} else if !ovf {
		u.lost = uint8(lost)
	}
	u.sackHigh = p.PSN
	if gap > 0 || ovf {
		// The SACK, at once. Overflowed, every arrival is reported at
		// once: the sender takes any discontinuity for loss.
		c.SendAck(q, rocev2.ACKSyndrome(31), s.rcvNxt.Add(-1))
	} else {
		c.ScheduleAck(q)
	}
}

// beyond drops a SEND packet more SENDs ahead of the oldest receive than
// the SEND-end table holds (only a peer with a larger window sends one):
// as if lost, it is resent.
func (t *Transport) beyond(c *nic.Ctx, s *qstate, p *nic.Pkt) bool {
	if !p.Op.IsSend() {
		return false
	}
	off := p.Meta.ExtOff(rocev2.ExtSETH)
	if off == 0 || psn.New(rocev2.SETH(p.Frame[off:]).SSN()).Diff(psn.New(s.rssn)) < int(t.tab) {
		return false // place refuses a SEND without a SETH
	}
	c.Drop(p, nic.ReasonOutOfOrder)
	return true
}

// fallback switches a recovering QP to Go-Back-N for the rest of the
// recovery: what it recorded stays, nothing more is (§III-D, "Exhausting
// of shared pool"). A recovery that had recorded nothing returns its
// unit at once.
func (t *Transport) fallback(c *nic.Ctx, q *nic.QP, s *qstate, u *unit, p *nic.Pkt) {
	t.stats.GBNFallbacks++
	if u.sackHigh.Less(s.rcvNxt) {
		t.pool.freeUnit(s.rx)
		s.rx = none
	} else {
		u.flags |= uGBN
	}
	t.gbn(c, q, s, p)
}

// gbn drops out-of-order packet p as Go-Back-N does: one NAK (PSN
// sequence error) carrying RCV-NXT, then silence until RCV-NXT arrives.
func (t *Transport) gbn(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt) {
	if s.rflags&rNAKSent == 0 {
		s.rflags |= rNAKSent
		c.SendAck(q, rocev2.NAKSyndrome(rocev2.NakPSNSeqError), s.rcvNxt)
	}
	c.Drop(p, nic.ReasonOutOfOrder)
}

func (t *Transport) duplicate(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	t.stats.Duplicates++
	if p.Op != rocev2.RCReadRequest {
		c.ScheduleAck(q)
	}
	c.Drop(p, nic.ReasonDuplicate)
}

// read starts a READ request at RCV-NXT through the framework's in-order
// path (nic.Ctx.Deliver), which streams its responses.
func (t *Transport) read(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt) bool {
	switch c.Deliver(q, p) {
	case nic.StatusOK:
		return true
	case nic.StatusRemoteAccess:
		t.fatal(c, q, s, p, rocev2.NakRemoteAccess, nic.ReasonAccess)
	default:
		t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
	}
	return false
}

// place writes WRITE or SEND packet p where the OOO layout says, in any
// order: a WRITE at the address of its own RETH, a SEND into the receive
// its SSN names at its index × MTU. A SEND's last packet records where
// the message ends, for complete. It reports false when p was refused
// (and answered).
func (t *Transport) place(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt) bool {
	op := p.Op
	mtu := uint32(q.MTU())
	n := uint32(len(p.Payload))
	end := op.IsLast() || op.IsOnly()
	if op.IsWrite() {
		np := packets(p.DMALen, mtu)
		var bad bool
		switch {
		case op.IsFirst():
			bad = np < 2 || n != mtu
		case op.IsMiddle():
			bad = np < 3 || n != mtu
		case op.IsLast():
			bad = np < 2 || n != p.DMALen-(np-1)*mtu
		default:
			bad = n != p.DMALen || np != 1
		}
		if bad || np > maxPackets {
			t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return false
		}
		switch c.Place(p) {
		case nic.StatusOK:
			return true
		case nic.StatusRemoteAccess:
			t.fatal(c, q, s, p, rocev2.NakRemoteAccess, nic.ReasonAccess)
		default:
			// No RETH: the peer does not use the OOO layout.
			t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		}
		return false
	}
	off := p.Meta.ExtOff(rocev2.ExtSETH)
	if off == 0 {
		t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return false
	}
	h := rocev2.SETH(p.Frame[off:])
	ssn, idx := h.SSN(), h.Index()
	k := psn.New(ssn).Diff(psn.New(s.rssn))
	first := op.IsFirst() || op.IsOnly()
	if k < 0 || k >= int(t.tab) || idx >= maxPackets || n > mtu || !end && n != mtu || first != (idx == 0) {
		t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return false
	}
	switch c.PlaceRecv(q, uint32(k), idx*mtu, p) {
	case nic.StatusOK:
	case nic.StatusRNR:
		c.SendAck(q, rocev2.RNRSyndrome(0), p.PSN)
		c.Drop(p, nic.ReasonRNR)
		return false
	default:
		t.fatal(c, q, s, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return false
	}
	if end {
		t.rend[q.Index()][ssn&(t.tab-1)] = sendEnd{last: p.PSN, n: idx*mtu + n + 1}
	}
	return true
}

// fatal answers p with a NAK and puts q in the error state, as a
// responder does for an invalid request or an access violation.
func (t *Transport) fatal(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt, nak uint8, r dataplane.Reason) {
	c.SendAck(q, rocev2.NAKSyndrome(nak), p.PSN)
	c.Drop(p, r)
	t.release(s)
	c.Fail(q, nic.StatusFlushed)
}

// packets returns how many packets (PSNs) a message of n bytes takes.
func packets(n, mtu uint32) uint32 {
	if n == 0 {
		return 1
	}
	return (n + mtu - 1) / mtu
}
