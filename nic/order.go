package nic

import (
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// SendOrder numbers a QP's SENDs in the order they start, which is the
// order of the receives they take, for the OOO layout that IRN and FaSR
// requests carry (seed 001 §IV-D): a RETH in every WRITE packet, and in
// every SEND packet a SETH with the SEND's number and the packet's index
// in its message, so a responder places packets that arrive in any
// order. Its zero value starts at the QP's first message.
type SendOrder struct {
	next psn.PSN // MSN of the next message to start
	ssn  uint32  // SSN of the next SEND to start
}

// Decorate sets sp's OOO fields for request r (a Decorator's work).
// table keeps the SSN of each outstanding message by MSN, modulo its
// length, a power of two at least the messages a QP has outstanding: a
// retransmitted packet finds its SEND's number there.
func (o *SendOrder) Decorate(table []uint32, r *Request, sp *rocev2.Spec) {
	msn := psn.New(r.MSN)
	slot := &table[uint32(msn)&uint32(len(table)-1)]
	if msn == o.next && r.Index == 0 {
		if r.Op == OpSend {
			*slot = o.ssn
			o.ssn = (o.ssn + 1) & psn.Mask
		}
		o.next = o.next.Add(1)
	}
	sp.OOO = true
	if r.Op == OpSend {
		sp.SSN, sp.PktIndex = *slot, uint32(r.Index)
	}
}

// Backoff returns base doubled shift times, at most max (also when the
// doubling overflows): a retransmission timeout after shift expiries
// without progress.
func Backoff(base int64, shift uint8, max int64) int64 {
	d := base << shift
	if d > max || d <= 0 {
		return max
	}
	return d
}
