package rocev2

import "rocetor/rocev2/psn"

// SACKETH flags (byte 3).
const (
	// SACKFNACK marks a NACK for a packet the receiver discarded rather
	// than placed, whose PSN the header names: FaSR's FNACK (seed 001
	// §III-B), for a retransmission between RCV-NXT and sack-high that
	// shows an earlier retransmission was lost; nic/irn's NACK of a READ
	// request that arrived ahead of its turn.
	SACKFNACK = 1 << 0
	// SACKLostOverflow marks a FaSR lost-cnt that overflowed (seed 001
	// §III-B, "Lost-cnt overflows"): LostCnt is no longer exact.
	SACKLostOverflow = 1 << 1
)

// SACKETH is a view of the 8-byte selective-acknowledgement extension
// header, which follows the AETH of every RC ACK (opcode 0x11, ACK or
// NAK) in a fabric whose transports acknowledge selectively — IRN (seed
// 004 §3.1) and FaSR (seed 001 §III-B) — when the classifier runs with
// Classifier.SACK:
//
//	bytes 0-2  SACK PSN  the out-of-order PSN that triggered the NACK
//	                     (IRN's "sequence number of the packet that
//	                     triggered the NACK"), FaSR's SACK PSN, or the PSN
//	                     of the packet a FaSR FNACK reports discarded;
//	                     the cumulative ACK stays in the BTH PSN
//	byte  3    flags     bit 0 FNACK, bit 1 lost-cnt overflow, rest 0
//	byte  4    lost-cnt  FaSR's loss counter; 0 for IRN
//	bytes 5-7  reserved, 0
//
// Plain ACKs carry it too, with whatever the transport sets (IRN: its
// expected PSN minus one as SACK PSN, i.e. nothing selective), so that
// every ACK of such a fabric has one layout.
type SACKETH []byte

// PSN returns the SACK PSN.
func (s SACKETH) PSN() psn.PSN { return psn.PSN(get24(s[0:3])) }

// Flags returns the flag byte.
func (s SACKETH) Flags() uint8 { return s[3] }

// LostCnt returns FaSR's loss counter.
func (s SACKETH) LostCnt() uint8 { return s[4] }

// Set sets all fields and clears the reserved bytes.
func (s SACKETH) Set(p psn.PSN, flags, lostCnt uint8) {
	put24(s[0:3], uint32(p))
	s[3], s[4] = flags, lostCnt
	s[5], s[6], s[7] = 0, 0, 0
}
