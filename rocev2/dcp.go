package rocev2

// DCPTag is the two-bit DCP packet class (seed 002, §4.2), carried in the
// two low-order bits of the DSCP so that the ECN bits stay free for
// congestion control and the four high DSCP bits still select a traffic
// class.
type DCPTag uint8

// DCP tags.
const (
	DCPNone       DCPTag = 0 // 00: not DCP; dropped above the trim threshold
	DCPAck        DCPTag = 1 // 01: DCP ACK; dropped above the trim threshold
	DCPData       DCPTag = 2 // 10: DCP data, original or retransmitted; trimmed
	DCPHeaderOnly DCPTag = 3 // 11: header-only packet; always on the control queue
)

var dcpTagNames = [4]string{"none", "ack", "data", "header-only"}

// String returns "none", "ack", "data" or "header-only".
func (t DCPTag) String() string { return dcpTagNames[t&3] }

// TagOfDSCP returns the DCP tag carried in a DSCP value.
func TagOfDSCP(dscp uint8) DCPTag { return DCPTag(dscp & 3) }

// WithTag returns dscp with its DCP tag bits replaced by t.
func WithTag(dscp uint8, t DCPTag) uint8 { return dscp&^3 | uint8(t)&3 }

// DCPETH is a view of the 8-byte DCP extension header, which follows the
// BTH of every DCP packet (tag other than 00) before any standard
// extension header:
//
//	bytes 0-2  MSN       message sequence number (data); eMSN (ACK)
//	byte  3    RetryNo   sRetryNo of the sender (data); rRetryNo (ACK)
//	bytes 4-6  SSN       send sequence number (SEND, and the last packet of
//	                     a WRITE with immediate); 0 otherwise
//	byte  7    reserved, 0
//
// A header-only packet keeps the whole header, so the sender learns the
// message, the retry round and the PSN of what was trimmed (§4.3).
type DCPETH []byte

// MSN returns the message sequence number, or the eMSN of an ACK.
func (d DCPETH) MSN() uint32 { return get24(d[0:3]) }

// RetryNo returns the retry number.
func (d DCPETH) RetryNo() uint8 { return d[3] }

// SSN returns the send sequence number.
func (d DCPETH) SSN() uint32 { return get24(d[4:7]) }

// Set sets all fields and clears the reserved byte.
func (d DCPETH) Set(msn uint32, retry uint8, ssn uint32) {
	put24(d[0:3], msn)
	d[3] = retry
	put24(d[4:7], ssn)
	d[7] = 0
}
