package nic

import (
	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Ctx is what a transport may do besides keeping its own state: send,
// place, complete, arm its timer. The endpoint passes the same Ctx to
// every call; it is valid only during the call and only on the worker's
// goroutine.
type Ctx struct {
	// Now is the worker's clock in nanoseconds.
	Now int64
	e   *Endpoint
	dc  *dataplane.Ctx
}

// Drop marks the packet dropped with reason r; the worker frees it and
// counts r. Transports drop what they cannot use (out-of-order and
// duplicate packets, stale responses); the matching Stats counter is
// bumped here.
func (c *Ctx) Drop(p *Pkt, r dataplane.Reason) {
	p.p.Drop(r)
	st := &c.e.st
	switch r {
	case ReasonOutOfOrder:
		st.OutOfOrder++
	case ReasonDuplicate:
		st.Duplicates++
	case ReasonStale:
		st.Stale++
	case ReasonAccess:
		st.AccessErrors++
	case ReasonInvalid:
		st.InvalidReqs++
	}
}

// Wake tells the scheduler that q may have something to send.
func (c *Ctx) Wake(q *QP) { c.e.wake(q) }

// SetTimer sets q's timer to expire at time at, replacing any earlier
// setting; the transport's Timeout runs then. One heap entry per QP is
// kept where possible: a later deadline is reached by re-arming when the
// earlier entry fires; an earlier one arms a new entry with a new
// generation, and the old entry is ignored when it fires.
func (c *Ctx) SetTimer(q *QP, at int64) {
	q.rtoAt, q.rtoOn = at, true
	if q.heapArmed && q.heapAt <= at {
		return
	}
	c.e.armRTO(c, q, at)
}

// StopTimer stops q's timer.
func (c *Ctx) StopTimer(q *QP) { q.rtoOn = false }

// SendRequest builds the requester packet with PSN p from q's send queue
// and queues it on the data queue. p must lie in [Una, the end of the
// posted work]; the packet is rebuilt from the work request and its
// memory region, so resending any unacknowledged PSN costs nothing to
// keep. A WRITE or SEND PSN is one packet; a READ is one request packet
// that covers the rest of the read, re-issued from p with the VA and
// length advanced when p is not the read's first PSN (as rxe's
// req_retry does). It returns how many PSNs the packet covers, or false
// when there is nothing to send at p yet (no work posted, ReadDepth
// reads outstanding, the PSN span would pass a quarter of the space) or
// the frame could not be made.
func (c *Ctx) SendRequest(q *QP, p psn.PSN) (int, bool) {
	e := c.e
	if q.Refused(p) {
		return 0, false
	}
	w := e.wqeAt(q, p)
	if w == nil {
		return 0, false
	}
	k := uint32(p.Diff(w.first))
	mtu := uint32(q.mtu)
	s := e.header(q)
	s.PSN = p
	last := k == w.npkts-1
	covered := 1
	switch w.op {
	case OpWrite:
		s.Opcode = position(k, w.npkts, rocev2.RCWriteFirst, rocev2.RCWriteMiddle, rocev2.RCWriteLast, rocev2.RCWriteOnly)
		// Every packet's own address: the standard RETH of a FIRST or
		// ONLY carries k == 0; a Decorator's layout may carry the rest.
		s.VA, s.RKey, s.DMALen = w.rva+uint64(k*mtu), w.rkey, w.len
		s.Payload = e.chunk(w.mr, w.off, w.len, k, mtu)
	case OpSend:
		s.Opcode = position(k, w.npkts, rocev2.RCSendFirst, rocev2.RCSendMiddle, rocev2.RCSendLast, rocev2.RCSendOnly)
		s.Payload = e.chunk(w.mr, w.off, w.len, k, mtu)
	case OpRead:
		if k == 0 && e.readsBefore(q, w) >= ReadDepth {
			return 0, false
		}
		s.Opcode = rocev2.RCReadRequest
		s.VA, s.RKey, s.DMALen = w.rva+uint64(k*mtu), w.rkey, w.len-min(w.len, k*mtu)
		covered = int(w.npkts - k)
		last = true
	}
	s.AckReq = last
	retx := p.Less(q.sndMax)
	if e.rtt != nil && !last && e.rtt.Probe(q, p, len(s.Payload), retx) {
		s.AckReq = true
	}
	if e.dec != nil {
		r := &e.req
		*r = Request{Op: w.op, MSN: w.msn, Index: int(k), Count: int(w.npkts), Retransmit: retx}
		e.dec.Decorate(q, r, s)
	}
	if e.ints != nil {
		e.intReq = e.ints.INTHops(q)
	}
	ok := c.emit(q, e.dataQ, true)
	e.intReq = 0
	if !ok {
		return 0, false
	}
	e.st.Requests++
	if e.rtt != nil {
		e.rtt.Requested(q, c.Now, p, len(s.Payload), retx, s.AckReq)
	}
	if retx {
		e.st.Retransmits++
		if q.timedOut {
			e.st.TimeoutRetransmits++
		}
		if w.op == OpRead {
			e.st.ReadRetries++
		}
		if o := e.cfg.Observer; o != nil {
			o.Retransmitted(q.qpn, w.id)
		}
	}
	if end := p.Add(covered); q.sndMax.Less(end) {
		q.sndMax = end
	}
	return covered, true
}

// position picks the first/middle/last/only opcode for packet k of n.
func position(k, n uint32, first, middle, last, only rocev2.Opcode) rocev2.Opcode {
	switch {
	case n == 1:
		return only
	case k == 0:
		return first
	case k == n-1:
		return last
	}
	return middle
}

// chunk returns packet k's bytes of a length-n buffer at off in region m.
func (e *Endpoint) chunk(m uint16, off uint64, n, k, mtu uint32) []byte {
	if n == 0 {
		return nil
	}
	lo := k * mtu
	hi := min(n, lo+mtu)
	return e.mrs[m].buf[off+uint64(lo) : off+uint64(hi)]
}

// SendAck sends an ACK or NAK with syndrome syn for PSN p on the control
// queue, carrying q's MSN, and reports whether it was queued.
func (c *Ctx) SendAck(q *QP, syn rocev2.Syndrome, p psn.PSN) bool {
	e := c.e
	s := e.header(q)
	s.Opcode, s.PSN, s.Syndrome, s.AckMSN = rocev2.RCAck, p, syn, q.msn&psn.Mask
	if e.adec != nil {
		e.adec.DecorateAck(q, s)
	}
	e.intAck = q.Index() + 1
	ok := c.emit(q, e.ctrlQ, false)
	e.intAck = 0
	if !ok {
		return false
	}
	st := &e.st
	switch {
	case syn.IsACK():
		st.AcksSent++
	case syn.IsNAK():
		st.NAKsSent++
		if syn.Value() == rocev2.NakPSNSeqError {
			st.SeqNAKsSent++
		}
	case syn.IsRNR():
		st.RNRNAKsSent++
	}
	return true
}

// Header returns the endpoint's frame description, reset and filled with
// q's addressing (MACs, IPs, DSCP, ECN, UDP source port, destination
// QP), for a transport that sends a frame of its own with Send: a DCP
// receiver returning a header-only packet, an IRN NACK carrying a SACK.
// It is valid until the next Header or Send.
func (c *Ctx) Header(q *QP) *rocev2.Spec { return c.e.header(q) }

// Send builds the frame Header's description now holds and queues it:
// on the control queue (never paced, PFC-exempt in DefaultEgress) or on
// the data queue (charged to congestion control). It reports whether the
// frame was queued; failures are counted by the worker.
func (c *Ctx) Send(q *QP, control bool) bool {
	if control {
		return c.emit(q, c.e.ctrlQ, false)
	}
	return c.emit(q, c.e.dataQ, true)
}

// Place writes the payload of a WRITE packet that carries its own RETH
// (DCP and IRN put one in every WRITE packet, seed 002 §4.4) at the VA it
// names, after checking the rkey, range and permission; it keeps no
// sequence state, so packets may arrive in any order. Tracking which
// packets arrived is the transport's. A packet without a RETH is
// StatusRemoteInvalid.
func (c *Ctx) Place(p *Pkt) Status {
	if p.Meta.Ext&rocev2.ExtRETH == 0 || !p.Op.IsWrite() {
		return StatusRemoteInvalid
	}
	e := c.e
	n := uint32(len(p.Payload))
	m, off, ok := e.region(p.RKey, p.VA, n, AccessRemoteWrite)
	if !ok {
		return StatusRemoteAccess
	}
	if n > 0 {
		copy(e.mrs[m].buf[off:], p.Payload)
	}
	e.st.DeliveredBytes += uint64(n)
	return StatusOK
}

// PlaceRecv writes the payload of SEND packet p at byte off of q's k-th
// outstanding receive (0 is the oldest, the one the next in-order SEND
// would take), for a transport that places SENDs in any order: DCP
// matches a SEND to its receive by the SSN it carries (seed 002 §4.4).
// It keeps no state; completing the receive is CompleteRecv. StatusRNR
// means fewer than k+1 receives are posted, StatusLocalLength that the
// payload does not fit the receive, StatusRemoteInvalid that p is not a
// SEND.
func (c *Ctx) PlaceRecv(q *QP, k, off uint32, p *Pkt) Status {
	if !p.Op.IsSend() {
		return StatusRemoteInvalid
	}
	if k >= q.rqTail-q.rqHead {
		return StatusRNR
	}
	e := c.e
	r := &q.rq[(q.rqHead+k)&uint32(len(q.rq)-1)]
	n := uint32(len(p.Payload))
	if uint64(off)+uint64(n) > uint64(r.len) {
		return StatusLocalLength
	}
	if n > 0 {
		copy(e.mrs[r.mr].buf[r.off+uint64(off):], p.Payload)
	}
	e.st.DeliveredBytes += uint64(n)
	return StatusOK
}

// CompleteRecv completes q's oldest outstanding receive with n bytes
// (StatusOK): the end of a SEND placed with PlaceRecv. Receives complete
// in the order they were posted, which is the SENDs' order; it reports
// false when none is outstanding.
func (c *Ctx) CompleteRecv(q *QP, n int) bool {
	if q.rqHead == q.rqTail {
		return false
	}
	r := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
	q.rqHead++
	c.e.complete(&Completion{ID: r.id, QP: q.qpn, Op: OpRecv, Status: StatusOK, Len: n})
	return true
}

// ScheduleAck asks for one ACK of everything q's responder has accepted
// (PSN EPSN-1) at the end of the current batch: several requests of a
// batch that want an ACK get one.
func (c *Ctx) ScheduleAck(q *QP) {
	if !q.ackPending {
		q.ackPending = true
		c.e.acks = append(c.e.acks, q.idx)
	}
}

// emit builds e.spec into a fresh frame and queues it on queue; data
// frames are charged to congestion control.
func (c *Ctx) emit(q *QP, queue uint8, data bool) bool {
	e := c.e
	addr, room, ok := c.dc.Alloc()
	if !ok {
		e.txBlocked = true
		return false
	}
	n, err := rocev2.Build(room, &e.spec)
	if err != nil {
		e.out = dataplane.Packet{Addr: addr}
		c.dc.Discard(&e.out, ReasonBuild)
		return false
	}
	n = e.tail(room, n)
	e.out = dataplane.Packet{Addr: addr, Len: uint16(n), Out: e.port, Queue: queue}
	if !c.dc.Emit(&e.out) {
		e.txBlocked = true
		return false
	}
	e.st.TxPackets++
	e.st.TxBytes += uint64(n)
	if data {
		e.cc.Sent(q, c.Now, n)
	}
	return true
}

// Deliver consumes request packet p at q's expected PSN, which the
// transport has checked: it checks the opcode sequence (IBA §9.7.5.1.3,
// rxe's check_op_seq), the length against the MTU and the message, the
// rkey, range and permission of a WRITE or READ, and a receive for a
// SEND; then it places the payload, advances EPSN (by the READ's
// response count for a READ request) and the MSN, completes the receive
// of a SEND's last packet, and takes a read resource for a READ. On any
// status but StatusOK nothing changed; StatusRNR means no receive was
// posted, StatusRemoteAccess and StatusRemoteInvalid are fatal for the
// QP (the transport NAKs and calls Fail).
func (c *Ctx) Deliver(q *QP, p *Pkt) Status {
	e := c.e
	op := p.Op
	mtu := uint32(q.mtu)
	n := uint32(len(p.Payload))
	switch q.rop {
	case rocev2.RCWriteFirst, rocev2.RCWriteMiddle:
		if op != rocev2.RCWriteMiddle && op != rocev2.RCWriteLast {
			return StatusRemoteInvalid
		}
	case rocev2.RCSendFirst, rocev2.RCSendMiddle:
		if op != rocev2.RCSendMiddle && op != rocev2.RCSendLast {
			return StatusRemoteInvalid
		}
	default:
		if op.IsMiddle() || op.IsLast() {
			return StatusRemoteInvalid
		}
	}
	switch op {
	case rocev2.RCWriteFirst, rocev2.RCWriteOnly:
		if op == rocev2.RCWriteFirst && (n != mtu || p.DMALen <= mtu) ||
			op == rocev2.RCWriteOnly && (n != p.DMALen || n > mtu) {
			return StatusRemoteInvalid
		}
		m, off, ok := e.region(p.RKey, p.VA, p.DMALen, AccessRemoteWrite)
		if !ok {
			return StatusRemoteAccess
		}
		if n > 0 {
			copy(e.mrs[m].buf[off:], p.Payload)
		}
		q.wmr, q.woff, q.wrem = m, off+uint64(n), p.DMALen-n
	case rocev2.RCWriteMiddle, rocev2.RCWriteLast:
		if op == rocev2.RCWriteMiddle && (n != mtu || q.wrem <= mtu) || op == rocev2.RCWriteLast && n != q.wrem {
			return StatusRemoteInvalid
		}
		copy(e.mrs[q.wmr].buf[q.woff:], p.Payload)
		q.woff += uint64(n)
		q.wrem -= n
	case rocev2.RCSendFirst, rocev2.RCSendOnly, rocev2.RCSendMiddle, rocev2.RCSendLast:
		if q.rqHead == q.rqTail {
			return StatusRNR
		}
		if (op == rocev2.RCSendFirst || op == rocev2.RCSendMiddle) && n != mtu || n > mtu {
			return StatusRemoteInvalid
		}
		if op.IsFirst() || op.IsOnly() {
			q.roff = 0
		}
		r := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
		if q.roff+n > r.len {
			// The receive fails with a local length error (the QP then
			// fails as the transport NAKs the invalid request).
			q.rqHead++
			e.complete(&Completion{ID: r.id, QP: q.qpn, Op: OpRecv, Status: StatusLocalLength, Len: int(q.roff + n)})
			return StatusRemoteInvalid
		}
		if n > 0 {
			copy(e.mrs[r.mr].buf[r.off+uint64(q.roff):], p.Payload)
		}
		q.roff += n
	case rocev2.RCReadRequest:
		m, off, ok := e.region(p.RKey, p.VA, p.DMALen, AccessRemoteRead)
		if !ok {
			return StatusRemoteAccess
		}
		np := npkts(p.DMALen, q.mtu)
		r := &q.reads[q.rdNext]
		q.rdNext = (q.rdNext + 1) % ReadDepth
		*r = readRes{base: p.PSN, first: p.PSN, next: p.PSN, last: p.PSN.Add(int(np) - 1), hi: p.PSN,
			off: off, len: p.DMALen, mr: m, valid: true, busy: true}
		q.epsn = q.epsn.Add(int(np))
		q.msn++
		q.rop = op
		return StatusOK
	default:
		return StatusRemoteInvalid
	}
	q.rop = op
	q.epsn = q.epsn.Add(1)
	e.st.DeliveredBytes += uint64(n)
	if op.IsLast() || op.IsOnly() {
		q.msn++
		if op.IsSend() {
			r := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
			q.rqHead++
			e.complete(&Completion{ID: r.id, QP: q.qpn, Op: OpRecv, Status: StatusOK, Len: int(q.roff)})
		}
	}
	return StatusOK
}

// RepeatRead handles a duplicate READ request (a PSN before EPSN): when
// it falls in one of q's read resources, the responses restart from its
// PSN, as rxe's duplicate_request does. It reports whether a resource
// matched.
func (c *Ctx) RepeatRead(q *QP, p *Pkt) bool {
	e := c.e
	for i := range q.reads {
		r := &q.reads[i]
		if !r.valid || !p.PSN.InWindow(r.base, r.last.Diff(r.base)+1) {
			continue
		}
		// The re-issued request must address what the original's
		// responses from this PSN on carry.
		j := uint64(p.PSN.Diff(r.base)) * uint64(q.mtu)
		if r.len != 0 && (p.RKey != e.mrs[r.mr].key || p.VA != e.mrs[r.mr].va+r.off+j ||
			uint64(p.DMALen) != uint64(r.len)-min(uint64(r.len), j)) {
			return false
		}
		r.first, r.next, r.busy = p.PSN, p.PSN, true
		c.Wake(q)
		return true
	}
	return false
}

// respond sends q's next read response, oldest read first, and reports
// whether it sent one.
func (e *Endpoint) respond(c *Ctx, q *QP) bool {
	for i := 0; i < ReadDepth; i++ {
		r := &q.reads[(int(q.rdNext)+i)%ReadDepth]
		if !r.busy {
			continue
		}
		x := r.next
		mtu := uint32(q.mtu)
		j := uint32(x.Diff(r.base))
		s := e.header(q)
		s.PSN = x
		total := uint32(r.last.Diff(r.first)) + 1
		s.Opcode = position(uint32(x.Diff(r.first)), total, rocev2.RCReadResponseFirst,
			rocev2.RCReadResponseMiddle, rocev2.RCReadResponseLast, rocev2.RCReadResponseOnly)
		s.Syndrome, s.AckMSN = rocev2.ACKSyndrome(31), q.msn&psn.Mask
		s.Payload = e.chunk(r.mr, r.off, r.len, j, mtu)
		if !c.emit(q, e.dataQ, true) {
			return false
		}
		e.st.Responses++
		if x.Less(r.hi) {
			e.st.Retransmits++ // a READ asked again: the requester's timeout or gap, not this side's
		} else {
			r.hi = x.Add(1)
		}
		r.next = x.Add(1)
		if x == r.last {
			r.busy = false
		}
		return true
	}
	return false
}

// Ack records that q's responder has received every request up to and
// including PSN a: it completes the WRITEs and SENDs that ends, in order,
// and advances Una. A READ completes only through its responses (it
// blocks the completion of later work until then; the ACK is remembered).
// An ACK for a PSN never sent is ignored. It reports whether Una moved;
// when that makes a refusal waiting for it due (Refuse), q fails instead
// and Ack reports false.
func (c *Ctx) Ack(q *QP, a psn.PSN) bool {
	if !a.Less(q.sndMax) {
		return false
	}
	if q.Refused(a) {
		a = q.refAt.Add(-1) // the refused request never completes OK
	}
	if q.acked.Less(a) {
		q.acked = a
	}
	return c.e.advance(q) && !c.e.refusalDue(q)
}

// advance completes acknowledged work from the head of q's send queue.
func (e *Endpoint) advance(q *QP) bool {
	progress := false
	mask := uint32(len(q.sq) - 1)
	for q.sqHead != q.sqSent {
		w := &q.sq[q.sqHead&mask]
		if w.op == OpRead {
			break
		}
		last := w.last()
		if q.acked.Less(last) {
			if q.una.LessEq(q.acked) {
				q.una = q.acked.Add(1)
				progress = true
			}
			break
		}
		q.una = last.Add(1)
		e.completeWQE(q, w, StatusOK)
		q.sqHead++
		progress = true
	}
	return progress
}

// ReadResponse places read response p, whose PSN must be Una, into the
// local buffer of the READ at the head of q's send queue, advances Una,
// and completes the READ on its last response (then the later work the
// remembered ACKs cover). The payload must be the MTU-sized chunk the
// PSN stands for (the last one shorter); otherwise, or when no READ is
// waiting for this PSN, nothing changes and StatusRemoteInvalid is
// returned.
func (c *Ctx) ReadResponse(q *QP, p *Pkt) Status {
	e := c.e
	if q.sqHead == q.sqSent || p.PSN != q.una {
		return StatusRemoteInvalid
	}
	w := &q.sq[q.sqHead&uint32(len(q.sq)-1)]
	if w.op != OpRead || !p.Op.IsResponse() || !p.Op.HasPayload() {
		return StatusRemoteInvalid
	}
	k := uint32(p.PSN.Diff(w.first))
	mtu := uint32(q.mtu)
	want := min(mtu, w.len-min(w.len, k*mtu))
	if uint32(len(p.Payload)) != want {
		return StatusRemoteInvalid
	}
	if want > 0 {
		copy(e.mrs[w.mr].buf[w.off+uint64(k*mtu):], p.Payload)
	}
	e.st.DeliveredBytes += uint64(want)
	q.una = q.una.Add(1)
	if q.acked.Less(p.PSN) {
		q.acked = p.PSN
	}
	if k == w.npkts-1 {
		e.completeWQE(q, w, StatusOK)
		q.sqHead++
		e.advance(q)
	}
	e.refusalDue(q)
	return StatusOK
}

// Fail puts q in the error state: the oldest unfinished work request
// completes with status, every other one and every posted receive with
// StatusFlushed, and q sends and accepts nothing more (IBA's error state;
// rxe's QP error transition). Later posts complete as flushed.
func (c *Ctx) Fail(q *QP, status Status) { c.e.fail(q, status) }

func (e *Endpoint) fail(q *QP, status Status) {
	if q.state == stateError {
		return
	}
	q.state = stateError
	q.rtoOn = false
	mask := uint32(len(q.sq) - 1)
	for q.sqHead != q.sqTail {
		e.completeWQE(q, &q.sq[q.sqHead&mask], status)
		status = StatusFlushed
		q.sqHead++
	}
	q.sqSent = q.sqHead
	e.flushRecv(q)
	for i := range q.reads {
		q.reads[i].busy = false
	}
}

func (e *Endpoint) flushRecv(q *QP) {
	for q.rqHead != q.rqTail {
		r := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
		e.complete(&Completion{ID: r.id, QP: q.qpn, Op: OpRecv, Status: StatusFlushed})
		q.rqHead++
	}
}

func (e *Endpoint) completeWQE(q *QP, w *wqe, s Status) {
	e.complete(&Completion{ID: w.id, QP: q.qpn, Op: w.op, Status: s, Len: int(w.len), Latency: e.c.Now - w.post})
}

// complete pushes a completion to the CQ.
func (e *Endpoint) complete(cq *Completion) {
	if cq.Status == StatusOK {
		e.st.CompletionsOK++
		e.st.CompletedBytes += uint64(cq.Len)
	} else {
		e.st.CompletionsErr++
	}
	e.cq.push(cq) // never full: Post keeps at most CQDepth completions outstanding
}

// wqeAt returns the work request PSN p belongs to, assigning PSNs to the
// next posted one when p is where the assigned ones end; nil when there
// is none.
func (e *Endpoint) wqeAt(q *QP, p psn.PSN) *wqe {
	mask := uint32(len(q.sq) - 1)
	// Start at the request found last (sends move forward); a PSN before
	// it (a rewind) or a stale cache starts at the head.
	i := q.wcache
	if i-q.sqHead >= q.sqSent-q.sqHead || p.Less(q.sq[i&mask].first) {
		i = q.sqHead
	}
	for ; i != q.sqSent; i++ {
		w := &q.sq[i&mask]
		if p.InWindow(w.first, int(w.npkts)) {
			q.wcache = i
			return w
		}
	}
	if p != q.next || q.sqSent == q.sqTail {
		return nil
	}
	w := &q.sq[q.sqSent&mask]
	n := npkts(w.len, q.mtu)
	if q.next.Add(int(n)).Diff(q.una) > 1<<22 {
		return nil
	}
	w.first, w.npkts = q.next, n
	q.next = q.next.Add(int(n))
	q.wcache = q.sqSent
	q.sqSent++
	return w
}

// readsBefore counts the READs in q's send queue before w that have not
// completed.
func (e *Endpoint) readsBefore(q *QP, w *wqe) int {
	mask := uint32(len(q.sq) - 1)
	n := 0
	for i := q.sqHead; i != q.sqSent; i++ {
		x := &q.sq[i&mask]
		if x == w {
			break
		}
		if x.op == OpRead {
			n++
		}
	}
	return n
}
