package rocev2_test

// Fixtures shared by the rocev2 tests, fuzz targets and benchmarks: an
// opcode table written from the IBA tables independently of opcode.go, Spec
// values with every field set, and fxCheck, which asserts that a built and
// classified frame carries exactly what its Spec asked for. Names start
// with fx so that they stay clear of other test files in the package.

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"slices"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// fxOp is one opcode with the extension headers IBA vol. 1 §9.2 (table 38)
// and the 1.5 release put after its BTH, in wire order.
type fxOp struct {
	op      rocev2.Opcode
	name    string
	ext     []rocev2.Ext
	payload bool
}

var (
	fxRETH   = rocev2.ExtRETH
	fxAETH   = rocev2.ExtAETH
	fxImmDt  = rocev2.ExtImmDt
	fxIETH   = rocev2.ExtIETH
	fxDETH   = rocev2.ExtDETH
	fxAtomic = rocev2.ExtAtomicETH
	fxAtAck  = rocev2.ExtAtomicAck
	fxFETH   = rocev2.ExtFETH
	fxNetRT  = rocev2.ExtNetRT
	fxDCP    = rocev2.ExtDCP
	fxSACK   = rocev2.ExtSACK
	fxSETH   = rocev2.ExtSETH
)

func fxExts(e ...rocev2.Ext) []rocev2.Ext { return e }

var fxOps = []fxOp{
	{0x00, "RC_SEND_FIRST", nil, true},
	{0x01, "RC_SEND_MIDDLE", nil, true},
	{0x02, "RC_SEND_LAST", nil, true},
	{0x03, "RC_SEND_LAST_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x04, "RC_SEND_ONLY", nil, true},
	{0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x06, "RC_RDMA_WRITE_FIRST", fxExts(fxRETH), true},
	{0x07, "RC_RDMA_WRITE_MIDDLE", nil, true},
	{0x08, "RC_RDMA_WRITE_LAST", nil, true},
	{0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x0a, "RC_RDMA_WRITE_ONLY", fxExts(fxRETH), true},
	{0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", fxExts(fxRETH, fxImmDt), true},
	{0x0c, "RC_RDMA_READ_REQUEST", fxExts(fxRETH), false},
	{0x0d, "RC_RDMA_READ_RESPONSE_FIRST", fxExts(fxAETH), true},
	{0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", nil, true},
	{0x0f, "RC_RDMA_READ_RESPONSE_LAST", fxExts(fxAETH), true},
	{0x10, "RC_RDMA_READ_RESPONSE_ONLY", fxExts(fxAETH), true},
	{0x11, "RC_ACKNOWLEDGE", fxExts(fxAETH), false},
	{0x12, "RC_ATOMIC_ACKNOWLEDGE", fxExts(fxAETH, fxAtAck), false},
	{0x13, "RC_COMPARE_SWAP", fxExts(fxAtomic), false},
	{0x14, "RC_FETCH_ADD", fxExts(fxAtomic), false},
	{0x16, "RC_SEND_LAST_WITH_INVALIDATE", fxExts(fxIETH), true},
	{0x17, "RC_SEND_ONLY_WITH_INVALIDATE", fxExts(fxIETH), true},
	{0x1c, "RC_FLUSH", fxExts(fxFETH, fxRETH), false}, // FETH first (IBA 1.5, Linux rxe)
	{0x1d, "RC_ATOMIC_WRITE", fxExts(fxRETH), true},
	{0x20, "UC_SEND_FIRST", nil, true},
	{0x21, "UC_SEND_MIDDLE", nil, true},
	{0x22, "UC_SEND_LAST", nil, true},
	{0x23, "UC_SEND_LAST_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x24, "UC_SEND_ONLY", nil, true},
	{0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x26, "UC_RDMA_WRITE_FIRST", fxExts(fxRETH), true},
	{0x27, "UC_RDMA_WRITE_MIDDLE", nil, true},
	{0x28, "UC_RDMA_WRITE_LAST", nil, true},
	{0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", fxExts(fxImmDt), true},
	{0x2a, "UC_RDMA_WRITE_ONLY", fxExts(fxRETH), true},
	{0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", fxExts(fxRETH, fxImmDt), true},
	{0x64, "UD_SEND_ONLY", fxExts(fxDETH), true},
	{0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", fxExts(fxDETH, fxImmDt), true},
	{0x81, "CNP", nil, true},
	{0xc0, "NETRT", fxExts(fxNetRT), false},
}

// fxOpOf returns the table entry of op, or false for an opcode the table
// does not list.
func fxOpOf(op rocev2.Opcode) (fxOp, bool) {
	for _, o := range fxOps {
		if o.op == op {
			return o, true
		}
	}
	return fxOp{}, false
}

// fxIsWrite reports whether op is an RDMA WRITE (RC or UC), by number.
func fxIsWrite(op rocev2.Opcode) bool {
	low := op & 0x1f
	return (op < 0x40) && low >= 0x06 && low <= 0x0b
}

// fxIsSend reports whether op is a SEND (RC, UC or UD), by number.
func fxIsSend(op rocev2.Opcode) bool {
	low := op & 0x1f
	return op < 0x80 && op&0xe0 != 0x40 && (low <= 0x05 || op < 0x20 && (low == 0x16 || low == 0x17))
}

// fxExtLen gives header lengths from the IBA, not from the package.
func fxExtLen(x rocev2.Ext, netrtType uint8) int {
	switch x {
	case fxDCP, fxSACK, fxSETH:
		return 8
	case fxDETH:
		return 8
	case fxRETH:
		return 16
	case fxAtomic:
		return 28
	case fxAETH:
		return 4
	case fxAtAck:
		return 8
	case fxImmDt, fxIETH, fxFETH:
		return 4
	case fxNetRT:
		if netrtType == rocev2.NetRTRequest {
			return 20
		}
		return 4
	}
	panic("unknown extension header")
}

// fxWireExt returns the headers a packet with opcode op carries, in wire
// order: the standard ones, or for a DCP packet (tag != 0) the DCP header
// first, a RETH in every WRITE, and only the DCP header in a header-only
// packet; with ooo (the OOO layout), a RETH in every WRITE and a SETH
// after the standard headers of every SEND, but for a header-only packet;
// with sack, an RC ACK that has an AETH gets the SACKETH after it.
func fxWireExt(o fxOp, dcp, sack, ooo bool, tag rocev2.DCPTag) []rocev2.Ext {
	e := fxWireExtNoSACK(o, dcp, tag)
	if ooo && !(dcp && tag == rocev2.DCPHeaderOnly) {
		switch {
		case fxIsWrite(o.op) && !slices.Contains(e, fxRETH):
			// The RETH goes after a DCP header and before an ImmDt.
			i := 0
			if len(e) > 0 && e[0] == fxDCP {
				i = 1
			}
			e = slices.Insert(slices.Clone(e), i, fxRETH)
		case fxIsSend(o.op):
			e = append(slices.Clone(e), fxSETH)
		}
	}
	if sack && o.op == rocev2.RCAck && len(e) > 0 && e[len(e)-1] == fxAETH {
		e = append(append([]rocev2.Ext(nil), e...), fxSACK)
	}
	return e
}

func fxWireExtNoSACK(o fxOp, dcp bool, tag rocev2.DCPTag) []rocev2.Ext {
	if !dcp || tag == rocev2.DCPNone {
		return o.ext
	}
	if tag == rocev2.DCPHeaderOnly {
		return fxExts(fxDCP)
	}
	out := fxExts(fxDCP)
	if fxIsWrite(o.op) && (len(o.ext) == 0 || o.ext[0] != fxRETH) {
		out = append(out, fxRETH)
	}
	return append(out, o.ext...)
}

var (
	fxSrcMAC = rocev2.MAC{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	fxDstMAC = rocev2.MAC{0x02, 0x00, 0x5e, 0x10, 0x00, 0x02}
	fxV4Src  = netip.MustParseAddr("10.0.1.1")
	fxV4Dst  = netip.MustParseAddr("10.0.2.2")
	fxV6Src  = netip.MustParseAddr("fd00:1::1")
	fxV6Dst  = netip.MustParseAddr("fd00:2::2")
)

// fxPayload returns n bytes that differ from their neighbours.
func fxPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 3)
	}
	return p
}

// fxSpec returns a Spec with every field set to a distinctive value.
func fxSpec(op rocev2.Opcode, v6, vlan bool, payload int) *rocev2.Spec {
	s := &rocev2.Spec{
		Src: fxSrcMAC, Dst: fxDstMAC,
		VLAN: vlan, VID: 0x123, PCP: 5,
		SrcIP: fxV4Src, DstIP: fxV4Dst,
		DSCP: 24, ECN: 2, TTL: 33, FlowLabel: 0xabcde, // DSCP tag bits 00: standard
		SrcPort: 0xd00d,
		Opcode:  op, SE: true, MigReq: true, FECN: true, BECN: false,
		PKey: 0x8123, DestQP: 0x00a1b2, AckReq: true, PSN: 0xfedcba,
		MSN: 0x102030, Retry: 7, SSN: 0x405060,
		VA: 0x1122334455667788, RKey: 0x99aabbcc, DMALen: 0x10000,
		Syndrome: rocev2.ACKSyndrome(17), AckMSN: 0x0a0b0c,
		Imm: 0xdeadbeef, QKey: 0x11110000, SrcQP: 0xc0ffee,
		SwapAdd: 0x0102030405060708, Compare: 0x8070605040302010,
		OrigData: 0xcafef00dcafef00d, FETH: 0x00000003,
		PktIndex: 0x010203, SACKPSN: 0xabcdef, SACKFlags: rocev2.SACKFNACK | rocev2.SACKLostOverflow, LostCnt: 5,
		NetRTType: rocev2.NetRTRequest, NetRTPSN: 0x00ff00,
		Bitmap:  rocev2.Bitmap128{}.Set(0).Set(63).Set(64).Set(127),
		Payload: fxPayload(payload),
	}
	if v6 {
		s.SrcIP, s.DstIP = fxV6Src, fxV6Dst
	}
	return s
}

// fxBuild builds s into a fresh buffer and fails the test on error.
func fxBuild(tb testing.TB, s *rocev2.Spec) []byte {
	tb.Helper()
	b := make([]byte, 9216)
	n, err := rocev2.Build(b, s)
	if err != nil {
		tb.Fatalf("Build(%v): %v", s.Opcode, err)
	}
	return b[:n]
}

// fxRefICRC computes the ICRC of the RoCEv2 packet in frame the slow way,
// straight from IBA annex A17.3.3 and without the package's offsets: CRC-32
// of eight 0xff bytes, the IP datagram with TOS/TTL/checksum (IPv4) or
// traffic class/flow label/hop limit (IPv6), the UDP checksum and BTH byte
// 4 set to ones, up to the ICRC.
func fxRefICRC(frame []byte) uint32 {
	off := 14
	et := binary.BigEndian.Uint16(frame[12:])
	if et == rocev2.EtherTypeVLAN {
		off, et = 18, binary.BigEndian.Uint16(frame[16:])
	}
	if et == rocev2.EtherTypeShim {
		et = binary.BigEndian.Uint16(frame[off+6:])
		off += 8
	}
	pkt := append([]byte(nil), frame[off:]...)
	udp := 40
	if et == rocev2.EtherTypeIPv4 {
		udp = int(pkt[0]&15) * 4
		pkt = pkt[:binary.BigEndian.Uint16(pkt[2:])]
		pkt[1], pkt[8], pkt[10], pkt[11] = 0xff, 0xff, 0xff, 0xff
	} else {
		pkt = pkt[:40+int(binary.BigEndian.Uint16(pkt[4:]))]
		pkt[0] |= 0x0f
		pkt[1], pkt[2], pkt[3], pkt[7] = 0xff, 0xff, 0xff, 0xff
	}
	pkt = pkt[:udp+int(binary.BigEndian.Uint16(pkt[udp+4:]))-4]
	pkt[udp+6], pkt[udp+7], pkt[udp+12] = 0xff, 0xff, 0xff
	return crc32.ChecksumIEEE(append(bytes.Repeat([]byte{0xff}, 8), pkt...))
}

// fxCheck asserts that frame, n bytes long as Build returned, classifies
// (with c) into exactly what s describes: offsets, flow key, every header
// field, the extension headers at their offsets, payload, pad and a valid
// ICRC. c.DCP must equal s.DCP, c.SACK s.SACK, c.OOO s.OOO. It returns
// the Meta.
func fxCheck(tb testing.TB, c rocev2.Classifier, frame []byte, n int, s *rocev2.Spec) rocev2.Meta {
	tb.Helper()
	var m rocev2.Meta
	c.Classify(frame[:n], &m)
	if m.Reason != rocev2.ReasonNone || m.Kind != rocev2.KindRoCE {
		tb.Fatalf("%v: Classify = %v/%v, want roce/none", s.Opcode, m.Kind, m.Reason)
	}
	o, ok := fxOpOf(s.Opcode)
	if !ok {
		tb.Fatalf("opcode %v is not in the test table", s.Opcode)
	}
	v6 := s.SrcIP.Is6() && !s.SrcIP.Is4In6()
	tag := rocev2.DCPTag(s.DSCP & 3)
	exts := fxWireExt(o, s.DCP, s.SACK, s.OOO, tag)
	extLen := 0
	for _, x := range exts {
		extLen += fxExtLen(x, s.NetRTType)
	}
	pad := -len(s.Payload) & 3

	l3 := 14
	if s.VLAN {
		l3 = 18
	}
	l4 := l3 + 20
	if v6 {
		l4 = l3 + 40
	}
	bth := l4 + 8
	payOff := bth + 12 + extLen
	icrcOff := payOff + len(s.Payload) + pad
	end := icrcOff + 4
	if want := max(end, 60); n != want {
		tb.Errorf("%v: frame length %d, want %d", s.Opcode, n, want)
	}
	type field struct {
		name      string
		got, want any
	}
	var wantExt rocev2.Ext
	for _, x := range exts {
		wantExt |= x
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = 64
	}
	pkey := s.PKey
	if pkey == 0 {
		pkey = 0xffff
	}
	sport := s.SrcPort
	if sport == 0 {
		sport = 0xc000 | uint16(s.DestQP&0x3fff)
	}
	ipv := uint8(4)
	if v6 {
		ipv = 6
	}
	src16, dst16 := s.SrcIP.As16(), s.DstIP.As16()
	if !v6 { // IPv4 and IPv4-mapped specs both become IPv4-mapped keys
		src16 = netip.AddrFrom4(s.SrcIP.As4()).As16()
		dst16 = netip.AddrFrom4(s.DstIP.As4()).As16()
	}
	e := rocev2.Ethernet(frame)
	h := rocev2.BTH(frame[bth:])
	u := rocev2.UDP(frame[l4:])
	fields := []field{
		{"VLAN", m.VLAN, s.VLAN},
		{"L3Off", int(m.L3Off), l3},
		{"L4Off", int(m.L4Off), l4},
		{"BTHOff", int(m.BTHOff), bth},
		{"PayloadOff", int(m.PayloadOff), payOff},
		{"ICRCOff", int(m.ICRCOff), icrcOff},
		{"End", int(m.End), end},
		{"PayloadLen", m.PayloadLen(), len(s.Payload)},
		{"IPVersion", m.IPVersion, ipv},
		{"DSCP", m.DSCP, s.DSCP & 63},
		{"ECN", m.ECN, s.ECN & 3},
		{"Tag", m.Tag, tag},
		{"SrcPort", m.SrcPort, sport},
		{"Flow.Src", m.Flow.Src, src16},
		{"Flow.Dst", m.Flow.Dst, dst16},
		{"Flow.QP", m.Flow.QP, s.DestQP & 0xffffff},
		{"Opcode", m.Opcode, s.Opcode},
		{"PadCount", int(m.PadCount), pad},
		{"AckReq", m.AckReq, s.AckReq},
		{"Ext", m.Ext, wantExt},
		{"PSN", m.PSN, psn.New(uint32(s.PSN))},
		{"ShimOff", m.ShimOff, uint16(0)},
		{"Ethernet.Dst", e.Dst(), s.Dst},
		{"Ethernet.Src", e.Src(), s.Src},
		{"Ethernet.HeaderLen", e.HeaderLen(), l3},
		{"UDP.DstPort", u.DstPort(), uint16(rocev2.UDPPortRoCE)},
		{"UDP.Length", u.Length(), end - l4},
		{"UDP.Checksum", u.Checksum(), uint16(0)},
		{"BTH.SE", h.SE(), s.SE},
		{"BTH.MigReq", h.MigReq(), s.MigReq},
		{"BTH.TVer", h.TVer(), uint8(0)},
		{"BTH.PKey", h.PKey(), pkey},
		{"BTH.FECN", h.FECN(), s.FECN},
		{"BTH.BECN", h.BECN(), s.BECN},
		{"BTH.DestQP", h.DestQP(), s.DestQP & 0xffffff},
		{"BTH.PSN", h.PSN(), psn.New(uint32(s.PSN))},
		{"BTH.reserved", frame[bth+4] & 0x3f, uint8(0)},
		{"BTH.reserved7", frame[bth+8] & 0x7f, uint8(0)},
		{"ICRC", m.ICRC(frame), fxRefICRC(frame[:n])},
		{"ComputeICRC", m.ComputeICRC(frame), fxRefICRC(frame[:n])},
	}
	if s.VLAN {
		fields = append(fields,
			field{"PCP", m.PCP, s.PCP & 7},
			field{"VID", m.VID, s.VID & 0xfff},
			field{"Ethernet.Type", e.Type(), uint16(rocev2.EtherTypeVLAN)})
	} else {
		fields = append(fields, field{"Ethernet.Type", e.Type(), m.EtherType})
	}
	if v6 {
		ip := rocev2.IPv6(frame[l3:])
		fields = append(fields,
			field{"EtherType", m.EtherType, uint16(rocev2.EtherTypeIPv6)},
			field{"IPv6.Version", ip.Version(), uint8(6)},
			field{"IPv6.TrafficClass", ip.TrafficClass(), s.DSCP<<2 | s.ECN&3},
			field{"IPv6.FlowLabel", ip.FlowLabel(), s.FlowLabel & 0xfffff},
			field{"IPv6.PayloadLen", ip.PayloadLen(), end - l4},
			field{"IPv6.NextHeader", ip.NextHeader(), uint8(rocev2.ProtoUDP)},
			field{"IPv6.HopLimit", ip.HopLimit(), ttl},
			field{"IPv6.Src", ip.Src(), s.SrcIP},
			field{"IPv6.Dst", ip.Dst(), s.DstIP})
	} else {
		ip := rocev2.IPv4(frame[l3:])
		fields = append(fields,
			field{"EtherType", m.EtherType, uint16(rocev2.EtherTypeIPv4)},
			field{"IPv4.HeaderLen", ip.HeaderLen(), 20},
			field{"IPv4.TOS", ip.TOS(), s.DSCP<<2 | s.ECN&3},
			field{"IPv4.TotalLen", ip.TotalLen(), end - l3},
			field{"IPv4.FragOff", ip.FragOff(), uint16(0x4000)}, // DF
			field{"IPv4.TTL", ip.TTL(), ttl},
			field{"IPv4.Protocol", ip.Protocol(), uint8(rocev2.ProtoUDP)},
			field{"IPv4.ChecksumValid", ip.ChecksumValid(), true},
			field{"IPv4.Src", ip.Src(), s.SrcIP.Unmap()},
			field{"IPv4.Dst", ip.Dst(), s.DstIP.Unmap()})
	}

	// Each extension header sits where the wire order puts it and holds
	// the Spec's values.
	off := bth + 12
	for _, x := range exts {
		fields = append(fields, field{"ExtOff(" + x.String() + ")", m.ExtOff(x), off})
		p := frame[off:]
		switch x {
		case fxDCP:
			d := rocev2.DCPETH(p)
			fields = append(fields,
				field{"DCPETH.MSN", d.MSN(), s.MSN & 0xffffff},
				field{"DCPETH.RetryNo", d.RetryNo(), s.Retry},
				field{"DCPETH.SSN", d.SSN(), s.SSN & 0xffffff},
				field{"DCPETH.reserved", p[7], uint8(0)})
		case fxDETH:
			d := rocev2.DETH(p)
			fields = append(fields,
				field{"DETH.QKey", d.QKey(), s.QKey},
				field{"DETH.SrcQP", d.SrcQP(), s.SrcQP & 0xffffff},
				field{"DETH.reserved", p[4], uint8(0)})
		case fxRETH:
			r := rocev2.RETH(p)
			fields = append(fields,
				field{"RETH.VA", r.VA(), s.VA},
				field{"RETH.RKey", r.RKey(), s.RKey},
				field{"RETH.DMALen", r.DMALen(), s.DMALen})
		case fxAtomic:
			a := rocev2.AtomicETH(p)
			fields = append(fields,
				field{"AtomicETH.VA", a.VA(), s.VA},
				field{"AtomicETH.RKey", a.RKey(), s.RKey},
				field{"AtomicETH.SwapAdd", a.SwapAdd(), s.SwapAdd},
				field{"AtomicETH.Compare", a.Compare(), s.Compare})
		case fxAETH:
			a := rocev2.AETH(p)
			fields = append(fields,
				field{"AETH.Syndrome", a.Syndrome(), s.Syndrome},
				field{"AETH.MSN", a.MSN(), s.AckMSN & 0xffffff})
		case fxAtAck:
			fields = append(fields, field{"AtomicAck.OrigData", rocev2.AtomicAck(p).OrigData(), s.OrigData})
		case fxImmDt:
			fields = append(fields, field{"ImmDt", rocev2.ImmDt(p).Value(), s.Imm})
		case fxIETH:
			fields = append(fields, field{"IETH.RKey", rocev2.IETH(p).RKey(), s.RKey})
		case fxSACK:
			x := rocev2.SACKETH(p)
			fields = append(fields,
				field{"SACKETH.PSN", x.PSN(), psn.New(uint32(s.SACKPSN))},
				field{"SACKETH.Flags", x.Flags(), s.SACKFlags},
				field{"SACKETH.LostCnt", x.LostCnt(), s.LostCnt},
				field{"SACKETH.reserved", [3]byte(p[5:8]), [3]byte{}})
		case fxSETH:
			x := rocev2.SETH(p)
			fields = append(fields,
				field{"SETH.SSN", x.SSN(), s.SSN & 0xffffff},
				field{"SETH.Index", x.Index(), s.PktIndex & 0xffffff},
				field{"SETH.reserved", [2]byte(p[6:8]), [2]byte{}})
		case fxFETH:
			fields = append(fields, field{"FETH", rocev2.FETH(p).Selectivity(), s.FETH})
		case fxNetRT:
			nr := rocev2.NetRT(p)
			fields = append(fields,
				field{"NetRT.Type", nr.Type(), s.NetRTType},
				field{"NetRT.PSN", nr.PSN(), psn.New(uint32(s.NetRTPSN))})
			if s.NetRTType == rocev2.NetRTRequest {
				fields = append(fields, field{"NetRT.Bitmap", nr.Bitmap(), s.Bitmap})
			}
		}
		off += fxExtLen(x, s.NetRTType)
	}
	for _, f := range fields {
		if f.got != f.want {
			tb.Errorf("%v (v6=%v vlan=%v dcp=%v len=%d): %s = %#v, want %#v",
				s.Opcode, v6, s.VLAN, s.DCP, len(s.Payload), f.name, f.got, f.want)
		}
	}
	if !bytes.Equal(frame[payOff:payOff+len(s.Payload)], s.Payload) {
		tb.Errorf("%v: payload differs", s.Opcode)
	}
	for i := payOff + len(s.Payload); i < icrcOff; i++ {
		if frame[i] != 0 {
			tb.Errorf("%v: pad byte %d = %#x, want 0", s.Opcode, i, frame[i])
		}
	}
	for i := end; i < n; i++ {
		if frame[i] != 0 {
			tb.Errorf("%v: Ethernet padding byte %d = %#x, want 0", s.Opcode, i, frame[i])
		}
	}
	var mv rocev2.Meta
	c.VerifyICRC = true
	c.Classify(frame[:n], &mv)
	if mv != m {
		tb.Errorf("%v: Classify with VerifyICRC = %+v, want %+v", s.Opcode, mv, m)
	}
	return m
}
