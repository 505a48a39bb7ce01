package rocev2

import (
	"encoding/binary"

	"rocetor/rocev2/psn"
)

// NetRT message types (seed 000, §III-C and §III-D).
const (
	NetRTRequest     = 1 // retransmission request: ePSN and 128-bit bitmap
	NetRTUnfulfilled = 2 // unfulfilled notice: the first PSN the pool lacks
)

// NetRT message lengths in bytes.
const (
	NetRTRequestLen     = 20 // type(1) ePSN(3) bitmap(16)
	NetRTUnfulfilledLen = 4  // type(1) PSN(3)
)

// NetRTLen returns the length of a NetRT header of type t, or 0 for an
// unknown type.
func NetRTLen(t uint8) int {
	switch t {
	case NetRTRequest:
		return NetRTRequestLen
	case NetRTUnfulfilled:
		return NetRTUnfulfilledLen
	}
	return 0
}

// NetRT is a view of a NetRT message header. It follows a BTH with opcode
// NetRTOpcode (0xc0, manufacturer-specific) in a RoCEv2 packet sent along
// the served flow's reversed addresses; the BTH's destination QP is the
// served flow's destination QP, so the source ToR finds the flow under the
// key it stored it with.
//
//	byte  0      type: 1 request, 2 unfulfilled
//	bytes 1-3    ePSN (request) or unfulfilled PSN
//	bytes 4-19   bitmap, request only: a 128-bit big-endian integer whose
//	             bit i (value 2^i) is set when PSN ePSN+1+i has arrived
type NetRT []byte

// Type returns the message type.
func (n NetRT) Type() uint8 { return n[0] }

// PSN returns the ePSN of a request or the PSN of an unfulfilled notice.
func (n NetRT) PSN() psn.PSN { return psn.PSN(get24(n[1:4])) }

// Bitmap returns the arrival bitmap of a request.
func (n NetRT) Bitmap() Bitmap128 {
	return Bitmap128{Hi: binary.BigEndian.Uint64(n[4:12]), Lo: binary.BigEndian.Uint64(n[12:20])}
}

// SetRequest writes a request header; n must hold NetRTRequestLen bytes.
func (n NetRT) SetRequest(ePSN psn.PSN, b Bitmap128) {
	n[0] = NetRTRequest
	put24(n[1:4], uint32(ePSN))
	binary.BigEndian.PutUint64(n[4:12], b.Hi)
	binary.BigEndian.PutUint64(n[12:20], b.Lo)
}

// SetUnfulfilled writes an unfulfilled notice; n must hold
// NetRTUnfulfilledLen bytes.
func (n NetRT) SetUnfulfilled(p psn.PSN) {
	n[0] = NetRTUnfulfilled
	put24(n[1:4], uint32(p))
}

// Bitmap128 is NetRT's arrival bitmap: bit i stands for PSN ePSN+1+i. The
// zero value is empty.
type Bitmap128 struct{ Hi, Lo uint64 }

// Has reports whether bit i (0–127) is set.
func (b Bitmap128) Has(i int) bool {
	if i < 64 {
		return b.Lo&(1<<uint(i)) != 0
	}
	return i < 128 && b.Hi&(1<<uint(i-64)) != 0
}

// Set returns b with bit i (0–127) set; other values of i are ignored.
func (b Bitmap128) Set(i int) Bitmap128 {
	switch {
	case i < 0 || i >= 128:
	case i < 64:
		b.Lo |= 1 << uint(i)
	default:
		b.Hi |= 1 << uint(i-64)
	}
	return b
}

// Shift returns b shifted right by one: the bitmap after ePSN advances.
func (b Bitmap128) Shift() Bitmap128 { return Bitmap128{Hi: b.Hi >> 1, Lo: b.Lo>>1 | b.Hi<<63} }

// Empty reports whether no bit is set.
func (b Bitmap128) Empty() bool { return b.Hi|b.Lo == 0 }
