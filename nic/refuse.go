package nic

import (
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// NAKStatus returns the completion status of a request its responder
// refused with syn: StatusRNR for an RNR NAK, StatusRemoteInvalid,
// StatusRemoteAccess or StatusRemoteOp for the fatal NAK codes.
func NAKStatus(syn rocev2.Syndrome) Status {
	switch {
	case syn.IsRNR():
		return StatusRNR
	case syn.Value() == rocev2.NakInvalidReq:
		return StatusRemoteInvalid
	case syn.Value() == rocev2.NakRemoteAccess:
		return StatusRemoteAccess
	}
	return StatusRemoteOp
}

// Refuse handles a NAK by which q's responder refused the request at PSN
// at: an RNR NAK or a fatal one (invalid request, remote access, remote
// operational error). cum is the cumulative acknowledgement the NAK
// carries — the responder received every PSN up to cum — and what it
// acknowledges completes. Under Go-Back-N the NAK's PSN minus one is
// that acknowledgement (gbn's responder accepts only in order); under
// selective repeat the responder places out of order, so the PSNs
// between cum and at need not have arrived, and the NAK acknowledges
// none of them (IRN's and FaSR's responders send it with their
// cumulative ACK in the SACKETH).
//
// The work request holding at completes with NAKStatus(syn) and q fails
// — at once when every PSN before that request is acknowledged.
// Otherwise:
//
//   - an RNR NAK leaves the responder running: the missing PSNs are
//     resent as the transport resends lost ones (SendRequest sends
//     nothing from the refused request on), and Ack fails q once they
//     are all acknowledged, so work before the refused request
//     completes OK only when its data arrived;
//   - a fatal NAK put the responder in the error state, which accepts
//     nothing more: the unacknowledged work before the refused request
//     completes with StatusFlushed (it may not have arrived, and no
//     retransmission can tell), the refused one with its status.
//
// A NAK for a PSN outside [Una, SndMax) is stale — the refused request
// was resent and taken since, or never sent — and changes nothing. It
// reports whether q failed.
func (c *Ctx) Refuse(q *QP, syn rocev2.Syndrome, cum, at psn.PSN) bool {
	e := c.e
	if at.Less(q.una) || !at.Less(q.sndMax) {
		return false
	}
	st := NAKStatus(syn)
	if w := e.wqeAt(q, at); w != nil {
		at = w.first
	}
	if !cum.Less(at) {
		cum = at.Add(-1)
	}
	c.Ack(q, cum)
	if q.state == stateError {
		return true
	}
	if !q.una.Less(at) {
		e.fail(q, st)
		return true
	}
	if !syn.IsRNR() {
		mask := uint32(len(q.sq) - 1)
		for q.sqHead != q.sqSent && q.sq[q.sqHead&mask].last().Less(at) {
			e.completeWQE(q, &q.sq[q.sqHead&mask], StatusFlushed)
			q.sqHead++
		}
		e.fail(q, st)
		return true
	}
	if q.refSt == StatusOK || at.Less(q.refAt) {
		q.refSt, q.refAt = st, at
	}
	return false
}

// refusalDue fails q with the status of a refusal (Refuse) once every
// PSN before the refused request is acknowledged; it reports whether q
// failed.
func (e *Endpoint) refusalDue(q *QP) bool {
	if q.refSt == StatusOK || q.una.Less(q.refAt) {
		return false
	}
	st := q.refSt
	q.refSt = StatusOK
	e.fail(q, st)
	return true
}

// Refused reports whether PSN p is at or after a refused request that
// waits for the PSNs before it (Refuse): SendRequest sends nothing from
// there on, and a transport drops what it queued to resend there.
func (q *QP) Refused(p psn.PSN) bool {
	return q.refSt != StatusOK && !p.Less(q.refAt)
}
