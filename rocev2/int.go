package rocev2

import "encoding/binary"

// In-band network telemetry (INT) for HPCC (Li et al., "HPCC: High
// Precision Congestion Control", SIGCOMM 2019): a sender
// that wants to know what its path's queues and links are doing asks for
// it by carrying an empty INT tail; every switch that stamps INT fills
// the next hop record at egress; the receiver copies the records into
// the ACK it returns; the sender's HPCC reads them.
//
// Where INT lives. The tail follows the IP datagram, between its end
// (Meta.End) and the end of the Ethernet frame, where Ethernet padding
// would be:
//
//	Ethernet | IP | UDP | BTH | ext | payload | ICRC | INT tail
//	                                                  ^ Meta.End
//
// so that
//   - the ICRC needs no recomputing: it covers the IP datagram only
//     (IBA Annex A17.3.3), and stamping writes outside it; the IP and
//     UDP lengths and checksums are untouched too;
//   - an ordinary RoCE receiver is unaffected: Linux trims an skb to the
//     IP total length before UDP sees it (ip_rcv_core), so rxe never
//     sees the tail, and a receiver that parses by the IP and UDP
//     lengths (this package's Classify) ignores it as it ignores padding;
//   - a capture shows it: tshark prints the bytes as the Ethernet
//     trailer (eth.trailer), and rocedump decodes it.
//
// The price is that the frame is longer than the IP datagram says: a
// link must carry frames of the RoCE MTU plus headers plus
// INTLen(hops), which a 1024- or 4096-byte RoCE MTU under a 9000-byte IP
// MTU does. HPCC's ns-3 model (alibaba-edu/High-Precision-Congestion-
// Control, int-header.h) carries INT in a custom header after the IP
// header instead, which ordinary receivers cannot parse; INT-MD over UDP
// would shift the BTH and need the ICRC recomputed at every hop.
//
// Layout, big-endian, 4 + 16·max bytes:
//
//	bytes 0-1  magic  0x494e ("IN")
//	byte  2    flags  bits 7-4 version (1), bit 0 echo (E); rest 0
//	byte  3    hops   bits 7-4 max: the records the sender reserved
//	                  (1..INTMaxHops); bits 3-0 n: how many are filled
//	then max records of 16 bytes, the first n filled in path order:
//	bytes 0-3   ts     the switch's clock when it stamped, ns (low 32 bits)
//	bytes 4-7   qlen   bytes queued ahead of the packet at its egress
//	                   queue (saturates at 2³²−1)
//	bytes 8-11  tx     bytes the egress port has sent (low 32 bits)
//	bytes 12-15 rate   the port's line rate, Mbit/s
//
// A request tail (E clear) is one switches stamp; an echo tail (E set)
// is what a receiver returns in an ACK, and switches leave it alone. The
// records are byte-aligned words rather than ns-3's 8-byte bit fields:
// they read in a hex dump as they are, and ts and tx wrap after 4.3 s
// and 4 GiB rather than 16 ms and 128 MiB. A record costs 16 bytes
// rather than 8; a sender that knows its path is short reserves fewer.

// INT tail constants.
const (
	INTMagic      = 0x494e
	INTVersion    = 1
	INTHeaderLen  = 4
	INTRecordLen  = 16
	INTMaxHops    = 8 // the most records a tail may reserve
	INTDefaultMax = 5 // HPCC's ns-3 model's IntHeader::maxHop
	intEcho       = 1 << 0
)

// INTLen returns the bytes of a tail that reserves max records.
func INTLen(max int) int { return INTHeaderLen + INTRecordLen*max }

// INT is a view of an INT tail, as FindINT returns it: at least
// INTLen(Max()) bytes with a valid header.
type INT []byte

// FindINT returns the INT tail of a frame whose IP datagram ends at end
// (Meta.End), or nil when the frame carries none: fewer than a header's
// bytes follow the datagram, or they do not start with the magic and
// version. bad reports a tail that does start so but is malformed —
// max is 0 or above INTMaxHops, n above max, or the frame ends before
// max records — which a switch counts and leaves alone.
func FindINT(frame []byte, end int) (t INT, bad bool) {
	if end < 0 || len(frame)-end < INTHeaderLen {
		return nil, false
	}
	h := frame[end:]
	if binary.BigEndian.Uint16(h) != INTMagic || h[2]>>4 != INTVersion {
		return nil, false
	}
	max, n := int(h[3]>>4), int(h[3]&0xf)
	if max == 0 || max > INTMaxHops || n > max || len(h) < INTLen(max) {
		return nil, true
	}
	return INT(h[:INTLen(max)]), false
}

// PutINT writes an empty request tail reserving max records
// (1..INTMaxHops) at the start of b and returns its length, or 0 when b
// is too short or max out of range.
func PutINT(b []byte, max int) int {
	l := INTLen(max)
	if max < 1 || max > INTMaxHops || len(b) < l {
		return 0
	}
	binary.BigEndian.PutUint16(b, INTMagic)
	b[2], b[3] = INTVersion<<4, uint8(max)<<4
	clear(b[INTHeaderLen:l])
	return l
}

// PutEcho writes t at the start of b as an echo tail (E set) and returns
// its length, or 0 when b is too short.
func PutEcho(b []byte, t INT) int {
	if len(b) < len(t) {
		return 0
	}
	n := copy(b, t)
	b[2] |= intEcho
	return n
}

// Echo reports whether the tail is a receiver's echo.
func (t INT) Echo() bool { return t[2]&intEcho != 0 }

// Max returns the records the sender reserved.
func (t INT) Max() int { return int(t[3] >> 4) }

// Hops returns the records filled.
func (t INT) Hops() int { return int(t[3] & 0xf) }

// Full reports whether every reserved record is filled.
func (t INT) Full() bool { return t.Hops() >= t.Max() }

// Hop returns record i (0 ≤ i < Hops()).
func (t INT) Hop(i int) INTHop {
	r := t[INTHeaderLen+INTRecordLen*i:]
	return INTHop{TS: binary.BigEndian.Uint32(r[0:4]), QLen: binary.BigEndian.Uint32(r[4:8]),
		TxBytes: binary.BigEndian.Uint32(r[8:12]), RateMbps: binary.BigEndian.Uint32(r[12:16])}
}

// Push fills the next record with h and reports whether there was one
// (false: the tail is full, or an echo, which no switch stamps).
func (t INT) Push(h INTHop) bool {
	if t.Echo() || t.Full() {
		return false
	}
	n := t.Hops()
	r := t[INTHeaderLen+INTRecordLen*n:]
	binary.BigEndian.PutUint32(r[0:4], h.TS)
	binary.BigEndian.PutUint32(r[4:8], h.QLen)
	binary.BigEndian.PutUint32(r[8:12], h.TxBytes)
	binary.BigEndian.PutUint32(r[12:16], h.RateMbps)
	t[3] = t[3]&0xf0 | uint8(n+1)
	return true
}

// INTHop is one switch's record: see the layout above. TS and TxBytes
// are counters that wrap; subtract them as uint32.
type INTHop struct {
	TS       uint32 // ns
	QLen     uint32 // bytes
	TxBytes  uint32 // bytes
	RateMbps uint32 // Mbit/s
}

// Stamp returns the record of a port whose clock reads now (ns), whose
// egress queue holds qlen bytes ahead of the packet, which has sent tx
// bytes and runs at rateBps.
func Stamp(now int64, qlen int, tx uint64, rateBps uint64) INTHop {
	return INTHop{TS: uint32(now), QLen: uint32(min(uint64(max(qlen, 0)), 1<<32-1)),
		TxBytes: uint32(tx), RateMbps: uint32(min(rateBps/1e6, 1<<32-1))}
}
