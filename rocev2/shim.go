package rocev2

import (
	"encoding/binary"
	"math"

	"rocetor/rocev2/psn"
)

// Link shim packet types (seed 003, §3 and appendix A).
const (
	ShimOriginal   = 0 // a protected packet sent for the first time
	ShimRetransmit = 1 // a copy sent again after a loss notice
	ShimDummy      = 2 // idle filler from the sender's lowest-priority queue
	ShimAck        = 3 // explicit ACK when no reverse traffic carries one
	ShimLoss       = 4 // loss notice naming Count sequences from Seq
	// ShimWatch numbers a frame of a dormant sender that keeps no copy:
	// the receiver counts the gaps, the link's loss rate, and asks for
	// nothing (rocetor's corruption monitor, beside seed 003 appendix C).
	ShimWatch = 5
	// ShimProtect asks the neighbour to protect what it sends on the
	// link; Count carries the loss rate the asker measured, LossCode.
	ShimProtect = 6
	// ShimSync opens a link session (rocetor, beside seed 003 §3.5,
	// which assumes both ends start together and never restart): Seq is
	// the sender's position on the wire, the sequence of the next frame
	// it numbers; bytes 4-5 echo the neighbour's epoch as last heard (0:
	// none) and bytes 6-7 carry the sender's own epoch, drawn at random
	// when it starts; Count holds SyncNeed. A sync carries no ACK.
	ShimSync = 7
)

// SyncNeed in a sync's Count says that its sender has no session the
// neighbour confirmed (the echo it last heard was not its epoch): the
// neighbour must answer with a sync of its own.
const SyncNeed = 1

// LossCode encodes a loss rate for ShimProtect's Count byte in tenths of
// a decade: round(−10·log10(rate)), 1 to 255 (1e-3 is 30, 1e-8 is 80).
func LossCode(rate float64) uint8 {
	if !(rate > 0) {
		return 255
	}
	return uint8(min(max(math.Round(-10*math.Log10(rate)), 1), 255))
}

// LossOfCode is LossCode's inverse: 10^(−code/10); 0 for code 0.
func LossOfCode(code uint8) float64 {
	if code == 0 {
		return 0
	}
	return math.Pow(10, -float64(code)/10)
}

// ShimLen is the length of the link shim.
const ShimLen = 8

var shimTypeNames = [8]string{"original", "retransmit", "dummy", "ack", "loss", "watch", "protect", "sync"}

// ShimTypeName names a shim packet type.
func ShimTypeName(t uint8) string { return shimTypeNames[t&7] }

// Shim is a view of the 8-byte link-retransmission shim, which sits where
// the frame's L3 header would be, after EtherType EtherTypeShim:
//
//	bytes 0-1  Seq        link sequence number (16 bits)
//	byte  2    E(1) A(1) AE(1) reserved(2) Type(3)
//	           E: era of Seq; A: Ack is valid; AE: era of Ack
//	byte  3    Count      loss notice: consecutive missing sequences from
//	                      Seq (1–255); protection request: LossCode of
//	                      the measured loss rate; sync: SyncNeed or 0;
//	                      0 otherwise
//	bytes 4-5  Ack        piggybacked cumulative ACK (16 bits): the
//	                      receiver's ackNo, the next sequence it expects;
//	                      sync: the neighbour's epoch echoed
//	bytes 6-7  InnerType  EtherType of the carried frame's payload; 0 for
//	                      dummy, ACK, loss-notice and protect packets,
//	                      which carry none; sync: the sender's epoch
//
// The era bit and the 16-bit number form a psn.Link.
type Shim []byte

// Seq returns the link sequence (number and era).
func (s Shim) Seq() psn.Link { return psn.LinkOf(binary.BigEndian.Uint16(s[0:2]), s[2]&0x80 != 0) }

// Type returns the packet type (ShimOriginal … ShimSync).
func (s Shim) Type() uint8 { return s[2] & 7 }

// Reserved returns the two reserved bits of byte 2 (0 in this version).
func (s Shim) Reserved() uint8 { return s[2] & 0x18 }

// HasAck reports whether Ack carries a cumulative ACK.
func (s Shim) HasAck() bool { return s[2]&0x40 != 0 }

// Ack returns the piggybacked cumulative ACK (number and era).
func (s Shim) Ack() psn.Link { return psn.LinkOf(binary.BigEndian.Uint16(s[4:6]), s[2]&0x20 != 0) }

// Count returns the number of missing sequences a loss notice names.
func (s Shim) Count() uint8 { return s[3] }

// InnerType returns the EtherType of the carried payload.
func (s Shim) InnerType() uint16 { return binary.BigEndian.Uint16(s[6:8]) }

// Set writes a whole shim without an ACK.
func (s Shim) Set(seq psn.Link, typ uint8, count uint8, inner uint16) {
	binary.BigEndian.PutUint16(s[0:2], seq.Seq())
	s[2] = bit(seq.Era(), 0x80) | typ&7
	s[3] = count
	binary.BigEndian.PutUint16(s[4:6], 0)
	binary.BigEndian.PutUint16(s[6:8], inner)
}

// SetSeq rewrites the sequence and type, keeping the ACK fields; a
// retransmission reuses the buffered copy this way.
func (s Shim) SetSeq(seq psn.Link, typ uint8) {
	binary.BigEndian.PutUint16(s[0:2], seq.Seq())
	s[2] = s[2]&0x60 | bit(seq.Era(), 0x80) | typ&7
}

// SetAck piggybacks a cumulative ACK.
func (s Shim) SetAck(ack psn.Link) {
	binary.BigEndian.PutUint16(s[4:6], ack.Seq())
	s[2] = s[2]&^0x20 | 0x40 | bit(ack.Era(), 0x20)
}

// SetSync writes a whole sync: the sender's wire position next, flags
// (SyncNeed), the neighbour's epoch echo and the sender's epoch.
func (s Shim) SetSync(next psn.Link, flags uint8, echo, epoch uint16) {
	s.Set(next, ShimSync, flags, epoch)
	binary.BigEndian.PutUint16(s[4:6], echo)
}

// SyncEcho returns a sync's echo of the receiver's epoch (0: none).
func (s Shim) SyncEcho() uint16 { return binary.BigEndian.Uint16(s[4:6]) }

// SyncEpoch returns a sync's sender epoch.
func (s Shim) SyncEpoch() uint16 { return binary.BigEndian.Uint16(s[6:8]) }

// ClearAck removes the piggybacked ACK.
func (s Shim) ClearAck() {
	binary.BigEndian.PutUint16(s[4:6], 0)
	s[2] &^= 0x60
}
