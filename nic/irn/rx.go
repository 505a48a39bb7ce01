package irn

import (
	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Request implements nic.Transport: the receiver side (§3.1). A WRITE or
// SEND packet within the window is placed on arrival, in order or not;
// one ahead of the expected PSN is recorded in the arrival bitmap and
// answered with a NACK carrying the expected PSN and its own; the
// expected PSN then moves over every packet that arrived, completing
// SENDs in order.
func (t *Transport) Request(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	i := q.Index()
	s := &t.st[i]
	d := p.PSN.Diff(s.epsn)
	switch {
	case d < 0:
		// A duplicate of a packet the expected PSN passed: a READ
		// restarts its responses, anything else is acknowledged again
		// (coalesced with the batch's other ACKs).
		if p.Op == rocev2.RCReadRequest {
			c.RepeatRead(q, p)
		} else {
			c.ScheduleAck(q)
		}
		t.stats.Duplicates++
		c.Drop(p, nic.ReasonDuplicate)
		return
	case d > 0 && t.cfg.GoBackN:
		// Go-back-N (the §4.3 ablation): a gap is NACKed once, and
		// everything past it is discarded until the expected PSN comes.
		if s.flags&fNakSent == 0 {
			s.flags |= fNakSent
			t.stats.OutOfOrder++
			t.nackFlags = rocev2.SACKFNACK // discarded, not placed
			t.nack(c, q, s, p.PSN)
			t.nackFlags = 0
		}
		c.Drop(p, nic.ReasonOutOfOrder)
		return
	case d >= t.cap:
		// Beyond the bitmap: only a sender with a larger window sends
		// that far. Unacknowledged, it is resent once a later PSN is
		// SACKed or by a timeout.
		c.Drop(p, nic.ReasonOutOfOrder)
		return
	}
	s.flags &^= fNakSent
	arrived := t.bitmap(i, bmArrived)
	if d > 0 && t.test(arrived, p.PSN) {
		// Resent because its NACK was lost: say again that it arrived.
		t.stats.Duplicates++
		t.nack(c, q, s, p.PSN)
		c.Drop(p, nic.ReasonDuplicate)
		return
	}
	if p.Op == rocev2.RCReadRequest {
		t.read(c, q, s, p, d)
		return
	}
	mtu := uint32(q.MTU())
	n := uint32(len(p.Payload))
	op := p.Op
	end := op.IsLast() || op.IsOnly()
	switch {
	case op.IsWrite():
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
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		switch c.Place(p) {
		case nic.StatusOK:
		case nic.StatusRemoteAccess:
			t.fatal(c, q, p, rocev2.NakRemoteAccess, nic.ReasonAccess)
			return
		default:
			// No RETH: the peer does not use the OOO layout.
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
	case op.IsSend():
		off := p.Meta.ExtOff(rocev2.ExtSETH)
		if off == 0 {
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		h := rocev2.SETH(p.Frame[off:])
		ssn, idx := h.SSN(), h.Index()
		k := psn.New(ssn).Diff(psn.New(s.rssn))
		first := op.IsFirst() || op.IsOnly()
		if k < 0 || idx >= maxPackets || n > mtu || !end && n != mtu || first != (idx == 0) {
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		if k >= int(t.tab) {
			// More SENDs ahead than the length table holds (only a
			// sender with a larger window gets there): like a packet
			// beyond the window.
			c.Drop(p, nic.ReasonOutOfOrder)
			return
		}
		switch c.PlaceRecv(q, uint32(k), idx*mtu, p) {
		case nic.StatusOK:
		case nic.StatusRNR:
			c.SendAck(q, rocev2.RNRSyndrome(0), p.PSN)
			c.Drop(p, nic.ReasonRNR)
			return
		default:
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		if end {
			t.rlen[i][ssn&(t.tab-1)] = idx*mtu + n
			t.set(t.bitmap(i, bmSendEnd), p.PSN)
		}
	default:
		// Atomics and the rest: not IRN operations here.
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	t.set(arrived, p.PSN)
	if end {
		t.set(t.bitmap(i, bmEnd), p.PSN)
	}
	if d > 0 {
		t.stats.OutOfOrder++
		t.nack(c, q, s, p.PSN)
		return
	}
	moved := t.sweep(c, q, i, s)
	s.sinceAck += uint16(min(moved, 0xffff-int(s.sinceAck)))
	if moved > 1 {
		t.stats.GapsFilled++
	}
	// Acknowledge what asks for it, every AckEvery packets (at most half
	// a window), and at once when a gap closed: the sender waits for
	// that cumulative ACK to leave loss recovery.
	every := min(t.cfg.AckEvery, max(1, int(s.w)/2))
	if p.AckReq || end || moved > 1 || int(s.sinceAck) >= every {
		s.sinceAck = 0
		c.ScheduleAck(q)
	}
}

// read takes a READ request at the expected PSN through the framework's
// in-order path (nic.Ctx.Deliver), which starts the responses. One ahead
// of the expected PSN is discarded: a READ must see the WRITEs before
// it, so it executes in order. Its NACK says so with the SACKETH's FNACK
// flag (the named packet was discarded, not placed), and the sender
// resends it after the cumulative ACK's packet instead of waiting for a
// timeout — in a run of READs nothing later would ever be SACKed.
func (t *Transport) read(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt, d int) {
	if d > 0 {
		t.stats.EarlyReads++
		t.nackFlags = rocev2.SACKFNACK
		t.nack(c, q, s, p.PSN)
		t.nackFlags = 0
		c.Drop(p, nic.ReasonOutOfOrder)
		return
	}
	switch c.Deliver(q, p) {
	case nic.StatusOK:
	case nic.StatusRemoteAccess:
		t.fatal(c, q, p, rocev2.NakRemoteAccess, nic.ReasonAccess)
		return
	default:
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	// Its responses take the PSNs up to its last, and acknowledge it.
	s.epsn = s.epsn.Add(int(packets(p.DMALen, uint32(q.MTU()))))
	s.msn++
	s.sinceAck = 0
	if t.sweep(c, q, q.Index(), s) > 0 {
		c.ScheduleAck(q)
	}
}

// sweep moves the expected PSN over the packets that arrived, counting
// the messages they end and completing, in order, the receives of the
// SENDs they end. It returns how far it moved.
func (t *Transport) sweep(c *nic.Ctx, q *nic.QP, i int, s *qstate) int {
	arrived, ends, sends := t.bitmap(i, bmArrived), t.bitmap(i, bmEnd), t.bitmap(i, bmSendEnd)
	n := 0
	for x := s.epsn; t.test(arrived, x); x = x.Add(1) {
		t.clr(arrived, x)
		if t.test(ends, x) {
			t.clr(ends, x)
			s.msn++
		}
		if t.test(sends, x) {
			t.clr(sends, x)
			c.CompleteRecv(q, int(t.rlen[i][s.rssn&(t.tab-1)]))
			s.rssn = (s.rssn + 1) & psn.Mask
		}
		s.epsn = x.Add(1)
		n++
	}
	return n
}

// nack sends IRN's NACK (§3.1): NAK code 0 with the expected PSN in the
// BTH, the PSN that arrived ahead of it in the SACKETH (DecorateAck
// reads it from nackPSN during the call).
func (t *Transport) nack(c *nic.Ctx, q *nic.QP, s *qstate, x psn.PSN) {
	t.nackOn, t.nackPSN = true, x
	if c.SendAck(q, rocev2.NAKSyndrome(rocev2.NakPSNSeqError), s.epsn) {
		t.stats.NACKsSent++
	}
	t.nackOn = false
}

// fatal answers p with a NAK and puts q in the error state, as a
// responder does for an invalid request or an access violation.
func (t *Transport) fatal(c *nic.Ctx, q *nic.QP, p *nic.Pkt, nak uint8, r dataplane.Reason) {
	c.SendAck(q, rocev2.NAKSyndrome(nak), p.PSN)
	c.Drop(p, r)
	c.Fail(q, nic.StatusFlushed)
}

// packets returns how many packets a message of n bytes takes.
func packets(n, mtu uint32) uint32 {
	if n == 0 {
		return 1
	}
	return (n + mtu - 1) / mtu
}
