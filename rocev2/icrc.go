package rocev2

import (
	"encoding/binary"
	"hash/crc32"

	"rocetor/rocev2/crc"
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
// Linux Soft-RoCE and ConnectX NICs use.
//
// There are two ways to compute it. Where the caller owns the frame
// (ClassifyOwned, SetICRC, Build), icrcOwned sets the masked bytes to ones
// in the frame itself, runs the CRC once over the whole covered range
// and puts the bytes back. Where the frame may not be written
// (ComputeICRC, Classify), computeICRC copies the masked headers to the
// stack and runs them through crc.Slicing8 (handing a stack buffer to
// hash/crc32 or crc.Update makes it escape, one allocation per packet),
// and the rest goes to crc.Update straight from the frame. crc.Update
// (rocev2/crc) is hash/crc32's CRC with a faster AVX-512 kernel where the
// CPU has one.
//
// Either way the pass that crc.Update makes is kept a multiple of 16
// bytes long: both its kernel and hash/crc32's take 16 bytes at a time
// and leave the rest to a table loop, which for hash/crc32 is byte at a
// time and cost as much for the 14 bytes left of a 1 KB frame's payload
// as the kernel for the other 928 (43 against 65–83 ns, go1.26 on the
// 2 vCPU machine of docs/performance.md, 2026-11-28). The few bytes the
// length is off by go through crc.Slicing8 ahead of it instead. See
// BenchmarkICRC.

// lrhSeed is the CRC-32 state after eight 0xff bytes.
var lrhSeed = crc32.Update(0, crc32.IEEETable, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

// maxMasked is the longest masked prefix: an IPv4 header with options
// (60), or IPv6 (40), plus UDP (8) and BTH (12).
const maxMasked = 60 + UDPLen + BTHLen

// ComputeICRC returns the ICRC of the RoCEv2 packet whose headers m
// describes in frame b. m must come from Classify with Kind == KindRoCE
// (a failed ICRC check still leaves the offsets set). It does not write
// to b.
func (m *Meta) ComputeICRC(b []byte) uint32 {
	return computeICRC(b, int(m.L3Off), int(m.BTHOff), int(m.ICRCOff), m.IPVersion == 6)
}

// computeICRC computes the ICRC without writing to b: the masked headers,
// and the payload bytes that make the rest a multiple of 16 long, are
// copied to the stack.
func computeICRC(b []byte, l3, bth, icrcOff int, v6 bool) uint32 {
	var h [maxMasked + 15]byte
	hdr := bth + BTHLen
	n := copy(h[:], b[l3:hdr])
	if rest := icrcOff - hdr; rest >= 64 {
		odd := rest & 15
		n += copy(h[n:], b[hdr:hdr+odd])
		hdr += odd
	}
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
	sum := crc.Slicing8(lrhSeed, h[:n])
	return crc.Update(sum, b[hdr:icrcOff])
}

// icrcOwned computes the ICRC in one pass over b, which the caller owns
// and nobody else reads or writes meanwhile: it sets the masked bytes to
// ones, runs the CRC over b[l3:icrcOff] and restores them, so b is as it
// was on return. One pass instead of a copy of the headers and two: the
// ICRC of BenchmarkICRC/1KB (1010 bytes covered) took 136 ns with the
// copy (before its alignment), 121 ns with it and 79 ns in place (CPU
// time per iteration, medians of 10 interleaved runs, 2026-11-28; see
// docs/performance.md, "Per-core cost").
//
// The masks are applied in registers and stored with one wide store per
// group: a load that spans a narrower earlier store cannot take its bytes
// from the store buffer and waits for the store to reach the cache. For
// the same reason the bytes ahead of crc.Update's aligned pass, which
// start at the IP header, are fed from the masked registers rather than
// read back from b: read back, that first 4-byte load was 2.5% of
// BenchmarkWorkerForward/plain (pprof, 2026-11-28).
func icrcOwned(b []byte, l3, bth, icrcOff int, v6 bool) uint32 {
	_ = b[icrcOff-1]
	w0, w1, u := maskOwned(b, l3, bth, v6)
	p := b[l3:icrcOff]
	sum := lrhSeed
	if len(p) >= 64 {
		// Under 16 bytes, all within the first 16 of the IP header.
		var h [16]byte
		m0, m1 := maskIP(w0, w1, v6)
		binary.LittleEndian.PutUint64(h[:], m0)
		binary.LittleEndian.PutUint64(h[8:], m1)
		sum = crc.Slicing8(sum, h[:len(p)&15])
		p = p[len(p)&15:]
	}
	sum = crc.Update(sum, p)
	unmaskOwned(b, l3, bth, w0, w1, u)
	return sum
}

// maskIP returns the first 16 bytes of the IP header, w0 and w1 (little
// endian), with their masked fields set to ones.
func maskIP(w0, w1 uint64, v6 bool) (m0, m1 uint64) {
	if v6 {
		// traffic class and flow label; hop limit
		return w0 | 0xff000000_ffffff0f, w1
	}
	return w0 | 0xff00, w1 | 0xffff00ff // IPv4: TOS; TTL and header checksum
}

// maskOwned sets the masked fields of the packet in b to ones and returns
// what unmaskOwned needs to put them back: the first 16 bytes of the IP
// header and the 8 from the UDP checksum to BTH byte 5 as they were.
func maskOwned(b []byte, l3, bth int, v6 bool) (w0, w1, u uint64) {
	ip := b[l3 : l3+16 : l3+16]
	// From the UDP checksum to BTH byte 5: the UDP checksum and BTH
	// byte 4 are masked.
	ub := b[bth-UDPLen+6 : bth+6 : bth+6]
	w0, w1 = binary.LittleEndian.Uint64(ip), binary.LittleEndian.Uint64(ip[8:])
	u = binary.LittleEndian.Uint64(ub)
	m0, m1 := maskIP(w0, w1, v6)
	binary.LittleEndian.PutUint64(ip, m0)
	binary.LittleEndian.PutUint64(ip[8:], m1)
	binary.LittleEndian.PutUint64(ub, u|0x00ff0000_0000ffff)
	return w0, w1, u
}

// unmaskOwned undoes maskOwned.
func unmaskOwned(b []byte, l3, bth int, w0, w1, u uint64) {
	ip := b[l3 : l3+16 : l3+16]
	binary.LittleEndian.PutUint64(ip, w0)
	binary.LittleEndian.PutUint64(ip[8:], w1)
	binary.LittleEndian.PutUint64(b[bth-UDPLen+6:bth+6:bth+6], u)
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
	// b is written anyway, so the ICRC is computed in place.
	crc := icrcOwned(b, int(m.L3Off), int(m.BTHOff), int(m.ICRCOff), m.IPVersion == 6)
	binary.LittleEndian.PutUint32(b[m.ICRCOff:], crc)
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

// icrcResidue is what crc32.Update returns over any bytes followed by
// their own CRC in little-endian order: a packet's ICRC checks out when
// the CRC over the covered bytes and the ICRC field, from lrhSeed, is
// this constant, so verifying needs no separate comparison with the
// stored field.
const icrcResidue = 0x2144df1c

// zeroResidue[z] is the CRC that a packet with a valid ICRC gives when z
// zero bytes follow its ICRC field: a zero byte shifts the CRC register
// and adds nothing, so the residue after z zeros is a constant too.
var zeroResidue = func() (t [16]uint32) {
	t[0] = icrcResidue
	for z := 1; z < len(t); z++ {
		t[z] = crc.Slicing8(t[z-1], []byte{0})
	}
	return t
}()

// icrcVerifyOwned reports whether the ICRC of the packet in b is valid,
// like icrcOwned(…) == the stored ICRC, for a b that the caller owns up
// to cap(b): the bytes between len(b) and cap(b) may be overwritten.
//
// The CRC runs over the covered bytes and the ICRC field, followed by
// zeros written into b's spare capacity, and is compared with the
// residue such a packet leaves (zeroResidue). The zeros make the pass a
// multiple of 16 bytes long, so that none of it falls to the table loop
// after crc.Update's kernel or to crc.Slicing8 ahead of it. When the
// packet does not end the frame (a trailer, Ethernet padding) or b has
// too little capacity, it falls back to icrcOwned.
//
// Before rocev2/crc, a pass from 896 bytes was padded further, to the
// 1024 bytes from which hash/crc32 used its 512-bit kernel; crc.Update's
// kernel takes 512-bit steps from 256 bytes, so a longer pass would only
// cost more. Padding to a multiple of 64, so that the kernel never takes
// its 16-byte steps, cost more too: BenchmarkICRCVerify/covered=988/kernel=wide
// took 65.8 ns of CPU against 57.6 (medians of 6, 2026-11-29): the
// zeros are stored just before the kernel loads them, and a 64-byte
// load that spans them waits for those stores to reach the cache.
func icrcVerifyOwned(b []byte, l3, bth, icrcOff int, v6 bool) bool {
	end := icrcOff + ICRCLen
	n := end - l3
	p := (n + 15) &^ 15
	if end != len(b) || l3+p > cap(b) || n < 64 {
		return icrcOwned(b, l3, bth, icrcOff, v6) == binary.LittleEndian.Uint32(b[icrcOff:])
	}
	c := b[l3 : l3+p]
	clear(c[n:])
	w0, w1, u := maskOwned(b, l3, bth, v6)
	sum := crc.Update(lrhSeed, c)
	unmaskOwned(b, l3, bth, w0, w1, u)
	return sum == zeroResidue[p-n]
}

// icrcMask4 and icrcMask6 are the masks of the first 64 bytes from the
// IP header, for crc.CheckMasked: ones where a field is masked, for a
// packet with the usual 20-byte IPv4 header and for IPv6.
var icrcMask4, icrcMask6 = icrcMask(IPv4MinLen, false), icrcMask(IPv6Len, true)

func icrcMask(ipLen int, v6 bool) (m [64]byte) {
	m0, m1 := maskIP(0, 0, v6)
	binary.LittleEndian.PutUint64(m[:], m0)
	binary.LittleEndian.PutUint64(m[8:], m1)
	m[ipLen+6], m[ipLen+7] = 0xff, 0xff // UDP checksum
	m[ipLen+UDPLen+4] = 0xff            // BTH resv8a
	return m
}

// icrcVerify reports whether the ICRC of the packet in b is valid. Where
// crc.Update has its AVX-512 kernel, the packet (IP header to ICRC) is
// at least crc.MinWide long and the masked fields are in its first 64
// bytes (IPv6, IPv4 without options), crc.CheckMasked masks them in a
// register and pads the pass with zeros in a register too, so b is not
// written at all; otherwise icrcVerifyOwned for a frame the caller owns,
// computeICRC for one it does not.
//
// In place (icrcVerifyOwned), the kernel's first and last 64-byte loads
// spanned the narrower stores that had just masked the fields and
// zeroed the spare bytes, and waited for them to reach the cache; its
// 16-byte steps and its reduction of 128 bits to 32 were a chain of ten
// multiplies after the last block. With CheckMasked (its first commit:
// no stores, every block 64 bytes) BenchmarkWorkerForward/plain's CPU
// time per frame went from 160.8 to 158.1 ns by medians, the median
// paired difference −7.7 ns, 10 rounds (2M frames each, GOMAXPROCS=1,
// perf stat -e task-clock, 2026-11-29, on a machine loaded with other
// work: the quiet figure was 99 ns).
func icrcVerify(b []byte, l3, bth, icrcOff int, v6, owned bool) bool {
	end := icrcOff + ICRCLen
	if crc.Wide() && end-l3 >= crc.MinWide {
		switch {
		case v6:
			return crc.CheckMasked(lrhSeed, b[l3:end], &icrcMask6)
		case bth-UDPLen-l3 == IPv4MinLen:
			return crc.CheckMasked(lrhSeed, b[l3:end], &icrcMask4)
		}
	}
	if owned {
		return icrcVerifyOwned(b, l3, bth, icrcOff, v6)
	}
	return computeICRC(b, l3, bth, icrcOff, v6) == binary.LittleEndian.Uint32(b[icrcOff:])
}
