package dcp

import (
	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Request implements nic.Transport: the receiver side. A header-only
// packet goes back to its sender; a data packet is placed where it
// belongs, whatever its order, and counted against its message.
func (t *Transport) Request(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	off := p.Meta.ExtOff(rocev2.ExtDCP)
	if off == 0 {
		// Not a DCP packet (tag 00): a peer with another transport.
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	d := rocev2.DCPETH(p.Frame[off:])
	if p.Meta.Tag == rocev2.DCPHeaderOnly {
		if t.bounce(c, q, p, d) {
			t.stats.HOBounced++
		} else {
			// The packet it names is lost until the coarse timeout:
			// count it as the header-only drop it is.
			t.stats.HONotReturned++
			c.Drop(p, ReasonNotReturned)
		}
		return
	}
	if p.Meta.Tag != rocev2.DCPData {
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	i := q.Index()
	s := &t.st[i]
	rx := t.rxOf(i)
	if t.win != nil {
		// Every data packet that arrives left the network, whatever
		// becomes of it here: count it for the sender's window and
		// acknowledge the batch's arrivals (DecorateAck carries the
		// count), as ns-3's RNICs acknowledge every packet.
		t.win[i].rcvd = t.win[i].rcvd.Add(1)
		c.ScheduleAck(q)
	}
	msn, retry := psn.New(d.MSN()), d.RetryNo()
	k := msn.Diff(s.emsn)
	switch {
	case k < 0:
		// A message that completed: a timeout resent it because the
		// ACK was lost, or the network duplicated it. Its memory may be
		// the application's again, so nothing is placed; the ACK goes
		// again.
		t.duplicate(c, p)
		c.ScheduleAck(q)
		return
	case k >= int(t.w):
		// The sender passed the message window: a peer configured
		// with more Messages than ours, or a broken one. Nothing tracks
		// the message, and a silent drop would only be retried by
		// timeouts once the window reaches it: fail the QP, as for
		// every invalid request.
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	case k == 0 && retry < s.rRetry:
		t.duplicate(c, p) // a packet of an older retry round
		return
	case k == 0 && retry > s.rRetry:
		// The sender timed out and resends the message whole: count
		// it again from zero in the new round (§4.5).
		m := &rx[uint32(msn)&(t.w-1)]
		m.cnt, m.s1, m.s2 = 0, 0, 0
		m.flags &^= fPoisoned
		s.rRetry = retry
		t.stats.Recounts++
	case k > 0 && retry != 0:
		// Only the unaMSN-th message is ever resent in a new round, and
		// unaMSN ≤ eMSN.
		c.Drop(p, nic.ReasonInvalid)
		return
	}
	m := &rx[uint32(msn)&(t.w-1)]
	if m.flags&fDone != 0 {
		t.duplicate(c, p) // its message completed, waiting for an earlier one
		return
	}
	mtu := uint32(q.MTU())
	n := uint32(len(p.Payload))
	op := p.Op
	switch {
	case op.IsWrite():
		np := packets(p.DMALen, mtu)
		bad := np > maxPackets || m.n != 0 && m.n != np
		switch {
		case op.IsFirst():
			bad = bad || np < 2 || n != mtu || !t.setFirst(m, p.PSN)
		case op.IsMiddle():
			bad = bad || np < 3 || n != mtu
		case op.IsLast():
			bad = bad || np < 2 || n != p.DMALen-(np-1)*mtu || !t.setFirst(m, p.PSN.Add(1-int(np)))
		default:
			bad = bad || np != 1 || n != p.DMALen || !t.setFirst(m, p.PSN)
		}
		if bad {
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		m.n = np
		switch c.Place(p) {
		case nic.StatusOK:
		case nic.StatusRemoteAccess:
			t.fatal(c, q, p, rocev2.NakRemoteAccess, nic.ReasonAccess)
			return
		default:
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
	case op.IsSend():
		if op.IsFirst() || op.IsOnly() {
			if !t.setFirst(m, p.PSN) {
				t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
				return
			}
		} else if !t.anchor(rx, s, msn) {
			// Where this packet goes in the receive buffer depends on
			// where its message starts, which no packet has told yet.
			// Rather than hold it, return it like a trimmed packet: the
			// sender resends it, by when the message's first packet or
			// its predecessor's last has usually arrived; once its
			// message is the eMSN-th, it always has.
			t.bounce(c, q, p, d)
			if t.win != nil {
				t.win[i].rcvd = t.win[i].rcvd.Add(-1) // its header, returned, credits the sender
			}
			t.stats.Unanchored++
			c.Drop(p, nic.ReasonOutOfOrder)
			return
		}
		j := p.PSN.Diff(m.first)
		last := op.IsLast() || op.IsOnly()
		bad := j < 0 || j >= maxPackets || n > mtu || !last && n != mtu ||
			(op.IsFirst() || op.IsOnly()) && j != 0 || !op.IsFirst() && !op.IsOnly() && j == 0 ||
			m.n != 0 && (uint32(j) >= m.n || last && uint32(j) != m.n-1)
		if bad {
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		ssn := psn.New(d.SSN()).Diff(psn.New(s.rssn))
		if ssn < 0 {
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		switch c.PlaceRecv(q, uint32(ssn), uint32(j)*mtu, p) {
		case nic.StatusOK:
		case nic.StatusRNR:
			c.SendAck(q, rocev2.RNRSyndrome(0), p.PSN)
			c.Drop(p, nic.ReasonRNR)
			return
		default:
			t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
			return
		}
		m.flags |= fSend
		if last {
			m.n, m.tail = uint32(j)+1, uint16(n)
		}
	default:
		// READ and atomics are not DCP operations (§4.4 covers Send,
		// Write and Write-with-Immediate).
		t.fatal(c, q, p, rocev2.NakInvalidReq, nic.ReasonInvalid)
		return
	}
	if m.flags&fPoisoned != 0 {
		return // placed, not counted: the next retry round recounts it
	}
	x := uint32(p.PSN)
	m.cnt++
	m.s1 += x
	m.s2 += x * x
	t.check(m, k)
	if k == 0 && m.flags&fDone != 0 {
		t.advance(c, q, rx, s)
	}
}

// setFirst records m's first PSN, or reports whether it agrees with the
// one known.
func (t *Transport) setFirst(m *rxMsg, first psn.PSN) bool {
	if m.flags&fFirst != 0 {
		return m.first == first
	}
	m.first = first
	m.flags |= fFirst
	return true
}

// anchor finds the first PSN of message msn from the messages before it
// — the eMSN-th always knows its own — and reports whether it is known.
func (t *Transport) anchor(rx []rxMsg, s *qstate, msn psn.PSN) bool {
	m := &rx[uint32(msn)&(t.w-1)]
	if m.flags&fFirst != 0 {
		return true
	}
	next := s.emsn
	f := rx[uint32(next)&(t.w-1)].first
	for next != msn {
		x := &rx[uint32(next)&(t.w-1)]
		if x.flags&fFirst != 0 {
			f = x.first
		}
		if x.n == 0 {
			return false
		}
		f = f.Add(int(x.n))
		next = next.Add(1)
	}
	m.first = f
	m.flags |= fFirst
	return true
}

// check marks m done when its counter has reached its size and the
// counted PSNs are exactly its PSNs, and poisoned when the counter
// cannot be trusted any more.
//
// The counter alone is exact only if every packet arrives once, which is
// what the lossless control plane promises (§4.5). A duplicate — the
// network copied a frame, a returned header-only packet came twice
// after its retransmission left — would let the counter reach the size
// with a packet missing. So the receiver also sums the counted PSNs and
// their squares (mod 2^32) and compares them with the sums over the
// message's PSNs when the counter reaches the size: one duplicate always
// shows (the sums differ by the two PSNs' difference, less than 2^24),
// more show unless their PSNs and squares sum exactly like the missing
// ones'. A count that passes the size, or sums that differ, poison the
// message: its packets are still placed, but counting waits for the
// sender's coarse timeout to resend it whole in a new retry round, which
// resets the counter. Eight bytes per message instead of a bitmap.
func (t *Transport) check(m *rxMsg, k int) {
	if m.n == 0 || m.cnt < m.n {
		return
	}
	if m.cnt == m.n && m.flags&fFirst != 0 {
		s1, s2 := moments(m.first, m.n)
		if s1 == m.s1 && s2 == m.s2 {
			m.flags |= fDone
			if k > 0 {
				t.stats.Deferred++
			}
			return
		}
	}
	m.flags |= fPoisoned
	t.stats.Poisoned++
}

// advance moves eMSN over the messages that are done, in MSN order:
// each SEND completes its receive, and the next message learns where it
// starts. One ACK with the new eMSN goes at the end of the batch (§4.5).
func (t *Transport) advance(c *nic.Ctx, q *nic.QP, rx []rxMsg, s *qstate) {
	mtu := q.MTU()
	for {
		m := &rx[uint32(s.emsn)&(t.w-1)]
		if m.flags&fDone == 0 {
			break
		}
		if m.flags&fSend != 0 {
			c.CompleteRecv(q, int(m.n-1)*mtu+int(m.tail))
			s.rssn = (s.rssn + 1) & psn.Mask
		}
		next := m.first.Add(int(m.n))
		*m = rxMsg{}
		s.emsn = s.emsn.Add(1)
		s.rRetry = 0
		// Not setFirst: a message placed ahead may have learnt its
		// first PSN already (the same one).
		nm := &rx[uint32(s.emsn)&(t.w-1)]
		nm.first = next
		nm.flags |= fFirst
	}
	c.ScheduleAck(q)
}

// bounce returns the header of packet p to its sender as a header-only
// packet on the control queue (§4.1 ②): source and destination MAC, IP
// and QPN swapped — which is what the QP's own addressing gives — and
// the PSN and the DCP extension header (MSN, RetryNo, SSN) kept. It
// travels as an RC ACKNOWLEDGE opcode with the header-only tag and no
// AETH, so that the peer's framework hands it to its requester
// (Response), not to its responder: a QP that carries data both ways
// could not tell a returned header-only packet from one trimmed on its
// way in otherwise, since both arrive with the peer's addresses.
// It reports whether the packet was queued (the worker counts a
// failure; the coarse timeout recovers the packet).
func (t *Transport) bounce(c *nic.Ctx, q *nic.QP, p *nic.Pkt, d rocev2.DCPETH) bool {
	s := c.Header(q)
	s.Opcode, s.PSN = rocev2.RCAck, p.PSN
	s.DCP, s.DSCP = true, rocev2.WithTag(s.DSCP, rocev2.DCPHeaderOnly)
	s.MSN, s.Retry, s.SSN = d.MSN(), d.RetryNo(), d.SSN()
	return c.Send(q, true)
}

func (t *Transport) duplicate(c *nic.Ctx, p *nic.Pkt) {
	t.stats.Duplicates++
	c.Drop(p, nic.ReasonDuplicate)
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

// moments returns Σx and Σx² mod 2^32 over the n PSNs x from first on,
// wrapping at 2^24 as PSNs do.
func moments(first psn.PSN, n uint32) (uint32, uint32) {
	f := uint32(first)
	head := min(n, psn.Mask+1-f)
	s1, s2 := rangeMoments(f, head)
	if n > head {
		a, b := rangeMoments(0, n-head)
		s1, s2 = s1+a, s2+b
	}
	return s1, s2
}

// rangeMoments returns Σ(f+i) and Σ(f+i)² mod 2^32 for i < n, without
// wrapping. Every product is taken mod 2^64, which 2^32 divides; the
// division by 6 of Σi² = (n-1)n(2n-1)/6 is done on the factors first, so
// that it stays exact.
func rangeMoments(f, n uint32) (uint32, uint32) {
	if n == 0 {
		return 0, 0
	}
	F, N := uint64(f), uint64(n)
	si := N * (N - 1) / 2
	a, b, c := N-1, N, 2*N-1
	if a%2 == 0 {
		a /= 2
	} else {
		b /= 2
	}
	switch {
	case a%3 == 0:
		a /= 3
	case b%3 == 0:
		b /= 3
	default:
		c /= 3
	}
	sii := a * b * c
	return uint32(N*F + si), uint32(N*F*F + 2*F*si + sii)
}
