package rocev2_test

import (
	"encoding/binary"
	"math/rand"
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

// fxSlowChecksum is RFC 1071 written out: the ones' complement of the
// ones' complement sum of the header's 16-bit words, the checksum word
// taken as zero, with the carries folded at the end.
func fxSlowChecksum(h []byte) uint16 {
	var sum uint64
	for i := 0; i < len(h); i += 2 {
		if i != 10 {
			sum += uint64(h[i])<<8 | uint64(h[i+1])
		}
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// TestIPv4ChecksumKnown checks the classic example header (RFC 1071 style
// worked example: 192.168.0.1 → 192.168.0.199, checksum 0xb861).
func TestIPv4ChecksumKnown(t *testing.T) {
	h := rocev2.IPv4{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7}
	if h.ComputeChecksum() != 0xb861 || !h.ChecksumValid() {
		t.Fatalf("checksum %#04x, want 0xb861", h.ComputeChecksum())
	}
	if h.Src() != netip.MustParseAddr("192.168.0.1") || h.Dst() != netip.MustParseAddr("192.168.0.199") ||
		h.TotalLen() != 0x73 || h.TTL() != 64 || h.Protocol() != 17 || h.FragOff() != 0x4000 || h.ID() != 0 {
		t.Fatalf("header fields read wrong")
	}
}

// fxRandIPv4 returns a random IPv4 header, with options when ihl > 5, and
// a valid checksum.
func fxRandIPv4(r *rand.Rand) rocev2.IPv4 {
	ihl := 5 + r.Intn(11)
	h := make(rocev2.IPv4, ihl*4)
	r.Read(h)
	h[0] = 0x40 | byte(ihl)
	h.SetChecksum()
	return h
}

// TestChecksumUpdateDifferential rewrites TTL, TOS, DSCP, ECN and the
// total length of random headers through the incremental setters, and
// compares the patched checksum with a full recomputation after each.
func TestChecksumUpdateDifferential(t *testing.T) {
	r := rand.New(rand.NewSource(1624))
	for i := 0; i < 20000; i++ {
		h := fxRandIPv4(r)
		if got, want := h.ComputeChecksum(), fxSlowChecksum(h); got != want {
			t.Fatalf("ComputeChecksum(% x) = %#04x, RFC 1071 says %#04x", []byte(h), got, want)
		}
		for j := 0; j < 8; j++ {
			v := r.Intn(1 << 16)
			var what string
			switch r.Intn(5) {
			case 0:
				h.SetTTL(uint8(v))
				what = "TTL"
			case 1:
				h.SetTOS(uint8(v))
				what = "TOS"
			case 2:
				h.SetTotalLen(v)
				what = "total length"
			case 3:
				h.SetDSCP(uint8(v) & 63)
				what = "DSCP"
			case 4:
				h.SetECN(uint8(v) & 3)
				what = "ECN"
			}
			if got, want := h.Checksum(), h.ComputeChecksum(); got != want {
				t.Fatalf("after the %s rewrite of % x: checksum %#04x, full recompute %#04x", what, []byte(h), got, want)
			}
		}
	}
}

// TestChecksumUpdateWords patches every 16-bit word but the checksum
// itself, including changes to and from 0x0000 and 0xffff, through
// ChecksumUpdate alone.
func TestChecksumUpdateWords(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	special := []uint16{0, 0xffff, 1, 0xfffe, 0x8000}
	for i := 0; i < 20000; i++ {
		h := fxRandIPv4(r)
		if i%4 == 0 { // headers whose sum sits next to the 0x0000/0xffff edge
			h[12], h[13] = 0, 0
			h.SetChecksum()
		}
		w := r.Intn(h.HeaderLen() / 2)
		if w == 5 {
			continue
		}
		old := binary.BigEndian.Uint16(h[2*w:])
		v := uint16(r.Intn(1 << 16))
		if i%3 == 0 {
			v = special[r.Intn(len(special))]
		}
		if w == 0 { // keep version and IHL: they say what the checksum covers
			v = old&0xff00 | v&0xff
		}
		binary.BigEndian.PutUint16(h[2*w:], v)
		got := rocev2.ChecksumUpdate(h.Checksum(), old, v)
		if want := h.ComputeChecksum(); got != want {
			t.Fatalf("word %d %#04x→%#04x in % x: ChecksumUpdate %#04x, recompute %#04x", w, old, v, []byte(h), got, want)
		}
	}
}

func TestIPViews(t *testing.T) {
	h := make(rocev2.IPv4, 20)
	h[0] = 0x45
	h.SetChecksum()
	h.SetTOS(0xb9)
	if h.TOS() != 0xb9 || h.DSCP() != 0xb9>>2 || h.ECN() != 1 || !h.ChecksumValid() {
		t.Errorf("IPv4 TOS %#x DSCP %d ECN %d", h.TOS(), h.DSCP(), h.ECN())
	}
	h.SetDSCP(7)
	h.SetECN(2)
	if h.DSCP() != 7 || h.ECN() != 2 || h.Version() != 4 || h.HeaderLen() != 20 || !h.ChecksumValid() {
		t.Errorf("IPv4 SetDSCP/SetECN: DSCP %d ECN %d", h.DSCP(), h.ECN())
	}

	v6 := make(rocev2.IPv6, 40)
	binary.BigEndian.PutUint32(v6, 6<<28|0xabcde)
	v6.SetTrafficClass(0xa7)
	if v6.Version() != 6 || v6.TrafficClass() != 0xa7 || v6.FlowLabel() != 0xabcde || v6.DSCP() != 0xa7>>2 || v6.ECN() != 3 {
		t.Errorf("IPv6 version %d TC %#x flow %#x", v6.Version(), v6.TrafficClass(), v6.FlowLabel())
	}
	v6.SetDSCP(0x15)
	v6.SetECN(1)
	v6.SetPayloadLen(1234)
	v6.SetHopLimit(9)
	if v6.DSCP() != 0x15 || v6.ECN() != 1 || v6.FlowLabel() != 0xabcde || v6.Version() != 6 || v6.PayloadLen() != 1234 || v6.HopLimit() != 9 {
		t.Errorf("IPv6 setters: DSCP %d ECN %d flow %#x len %d hop %d", v6.DSCP(), v6.ECN(), v6.FlowLabel(), v6.PayloadLen(), v6.HopLimit())
	}

	u := make(rocev2.UDP, 8)
	u.SetSrcPort(0xc001)
	u.SetDstPort(rocev2.UDPPortRoCE)
	u.SetLength(1000)
	u.SetChecksum(0xbeef)
	if u.SrcPort() != 0xc001 || u.DstPort() != 4791 || u.Length() != 1000 || u.Checksum() != 0xbeef {
		t.Errorf("UDP %d %d %d %#x", u.SrcPort(), u.DstPort(), u.Length(), u.Checksum())
	}
}

func TestEthernetAndMAC(t *testing.T) {
	m, err := rocev2.ParseMAC("02:aB:cd:EF:00:9f")
	if err != nil || m != (rocev2.MAC{0x02, 0xab, 0xcd, 0xef, 0x00, 0x9f}) || m.String() != "02:ab:cd:ef:00:9f" {
		t.Fatalf("ParseMAC = %v, %v", m, err)
	}
	for _, bad := range []string{"", "02:ab:cd:ef:00", "02-ab-cd-ef-00-9f", "02:ab:cd:ef:00:9g", "02:ab:cd:ef:00:9f:"} {
		if _, err := rocev2.ParseMAC(bad); err == nil {
			t.Errorf("ParseMAC(%q) accepted", bad)
		}
	}
	e := make(rocev2.Ethernet, 18)
	e.SetType(rocev2.EtherTypeIPv4)
	e.SetInnerType(rocev2.EtherTypeIPv6)
	if e.Tagged() || e.Type() != rocev2.EtherTypeIPv6 || e.InnerType() != rocev2.EtherTypeIPv6 || e.HeaderLen() != 14 {
		t.Errorf("untagged: type %#x inner %#x", e.Type(), e.InnerType())
	}
	e.SetType(rocev2.EtherTypeVLAN)
	binary.BigEndian.PutUint16(e[14:], 6<<13|0x0fed)
	e.SetInnerType(rocev2.EtherTypeIPv4)
	e.SetDst(m)
	e.SetSrc(rocev2.MAC{1, 2, 3, 4, 5, 6})
	if !e.Tagged() || e.PCP() != 6 || e.VID() != 0xfed || e.TCI() != 6<<13|0xfed || e.InnerType() != rocev2.EtherTypeIPv4 ||
		e.HeaderLen() != 18 || e.Dst() != m || e.Src() != (rocev2.MAC{1, 2, 3, 4, 5, 6}) {
		t.Errorf("tagged: %v", []byte(e))
	}
}
