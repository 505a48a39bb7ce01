package rocev2

import (
	"encoding/binary"
	"hash/crc32"
)

// The invariant CRC (ICRC) of RoCEv2 (IBA annex A17.3.3) is the IEEE
// CRC-32 of the packet from the IP header to the end of the pad bytes,
// preceded by eight 0xff bytes that stand for the masked InfiniBand LRH,
// with every field a router may change masked to ones:
//
//	IPv4: TOS (DSCP and ECN), TTL, header checksum
//	IPv6: traffic class, flow label, hop limit
//	UDP:  checksum
//	BTH:  byte 4 (FECN, BECN and reserved bits, "resv8a")
//
// It is stored after the payload in little-endian byte order, the order
// Linux Soft-RoCE and ConnectX NICs use. The masking touches only the first
// 80 bytes: those are copied and masked on the stack and run through a
// slicing-by-8 loop of our own (handing a stack buffer to hash/crc32 makes
// it escape, one allocation per packet); the rest goes to crc32.Update
// straight from the frame, which on amd64 uses the carry-less-multiply
// kernel (see BenchmarkICRC).

// lrhSeed is the CRC-32 state after eight 0xff bytes.
var lrhSeed = crc32.Update(0, crc32.IEEETable, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

// maxMasked is the longest masked prefix: an IPv4 header with options
// (60), or IPv6 (40), plus UDP (8) and BTH (12).
const maxMasked = 60 + UDPLen + BTHLen

// ComputeICRC returns the ICRC of the RoCEv2 packet whose headers m
// describes in frame b. m must come from Classify with Kind == KindRoCE
// (a failed ICRC check still leaves the offsets set).
func (m *Meta) ComputeICRC(b []byte) uint32 {
	return computeICRC(b, int(m.L3Off), int(m.BTHOff), int(m.ICRCOff), m.IPVersion == 6)
}

func computeICRC(b []byte, l3, bth, icrcOff int, v6 bool) uint32 {
	var h [maxMasked]byte
	n := copy(h[:], b[l3:bth+BTHLen])
	udp := bth - UDPLen - l3
	if v6 {
		h[0] |= 0x0f // traffic class, high nibble
		h[1], h[2], h[3] = 0xff, 0xff, 0xff
		h[7] = 0xff
	} else {
		h[1] = 0xff
		h[8] = 0xff
		h[10], h[11] = 0xff, 0xff
	}
	h[udp+6], h[udp+7] = 0xff, 0xff
	h[udp+UDPLen+4] = 0xff
	crc := update8(lrhSeed, &h, n)
	return crc32.Update(crc, crc32.IEEETable, b[bth+BTHLen:icrcOff])
}

// slicing8 holds the eight tables of the slicing-by-8 CRC-32 (IEEE,
// reflected): slicing8[0] is the classic byte table, slicing8[k][i] the
// CRC of byte i followed by k zero bytes.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *crc32.MakeTable(crc32.IEEE)
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// update8 continues crc (as crc32.Update returns it) over the first n
// bytes of h. It takes the array by pointer so that h stays on the
// caller's stack.
func update8(crc uint32, h *[maxMasked]byte, n int) uint32 {
	t := &slicing8
	c := ^crc
	i := 0
	for ; i+8 <= n; i += 8 {
		c ^= uint32(h[i]) | uint32(h[i+1])<<8 | uint32(h[i+2])<<16 | uint32(h[i+3])<<24
		c = t[7][c&0xff] ^ t[6][c>>8&0xff] ^ t[5][c>>16&0xff] ^ t[4][c>>24] ^
			t[3][h[i+4]] ^ t[2][h[i+5]] ^ t[1][h[i+6]] ^ t[0][h[i+7]]
	}
	for ; i < n; i++ {
		c = t[0][byte(c)^h[i]] ^ c>>8
	}
	return ^c
}

// ICRC returns the ICRC stored in the packet.
func (m *Meta) ICRC(b []byte) uint32 {
	return binary.LittleEndian.Uint32(b[m.ICRCOff:])
}

// SetICRC recomputes and stores the ICRC. A stage that rewrites covered
// bytes (a BTH field other than FECN/BECN, the IP or UDP length, the
// payload) calls it once after its last change; TTL, TOS (DSCP, and so the
// DCP tag, and ECN), traffic class, flow label and FECN/BECN rewrites need
// no new ICRC.
func (m *Meta) SetICRC(b []byte) {
	binary.LittleEndian.PutUint32(b[m.ICRCOff:], m.ComputeICRC(b))
}

// RefreshICRC classifies frame b and, if it is a well-formed RoCEv2
// packet, stores a fresh ICRC. It returns the classification's reason,
// ReasonNone on success, or ReasonNotRoCE.
func RefreshICRC(b []byte, c Classifier) Reason {
	var m Meta
	c.VerifyICRC = false
	c.Classify(b, &m)
	if m.Reason != ReasonNone {
		return m.Reason
	}
	if m.Kind != KindRoCE {
		return ReasonNotRoCE
	}
	m.SetICRC(b)
	return ReasonNone
}
