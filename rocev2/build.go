package rocev2

import (
	"encoding/binary"
	"net/netip"

	"rocetor/rocev2/psn"
)

// Spec describes a RoCEv2 frame for Build. The opcode decides which
// extension headers are written (Opcode.Ext, or Opcode.DCPExt when DCP is
// set, then Opcode.OOOExt when OOO is set — except for a DCP header-only
// packet — and Opcode.SACKExt when SACK is set); the fields of headers the opcode does not carry are ignored. The
// zero values of TTL, PKey and SrcPort select sensible defaults.
type Spec struct {
	Src, Dst MAC
	VLAN     bool   // write an 802.1Q tag
	VID      uint16 // VLAN of the tag
	PCP      uint8  // priority of the tag

	SrcIP, DstIP netip.Addr // both IPv4 or both IPv6
	DSCP, ECN    uint8
	TTL          uint8  // TTL or hop limit; 0 means 64
	FlowLabel    uint32 // IPv6 only
	SrcPort      uint16 // UDP source port; 0 means 0xc000 | DestQP&0x3fff

	Opcode     Opcode
	SE, MigReq bool
	FECN, BECN bool
	PKey       uint16 // 0 means the default partition 0xffff
	DestQP     uint32
	AckReq     bool
	PSN        psn.PSN

	// DCP writes the DCP extension header; DSCP must carry a DCP tag.
	DCP    bool
	MSN    uint32 // DCP: MSN (data) or eMSN (ACK)
	Retry  uint8  // DCP: sRetryNo (data) or rRetryNo (ACK)
	SSN    uint32 // DCP and SETH: send sequence number
	VA     uint64 // RETH and AtomicETH
	RKey   uint32 // RETH, AtomicETH and IETH
	DMALen uint32 // RETH

	Syndrome Syndrome // AETH
	AckMSN   uint32   // AETH message sequence number
	Imm      uint32   // ImmDt
	QKey     uint32   // DETH
	SrcQP    uint32   // DETH
	SwapAdd  uint64   // AtomicETH
	Compare  uint64   // AtomicETH
	OrigData uint64   // AtomicAckETH
	FETH     uint32   // FETH

	// SACK writes a SACKETH after the AETH of an RC ACK (Opcode.SACKExt);
	// other opcodes ignore it.
	SACK      bool
	SACKPSN   psn.PSN // SACKETH: the SACK PSN
	SACKFlags uint8   // SACKETH: SACKFNACK, SACKLostOverflow
	LostCnt   uint8   // SACKETH: FaSR's lost-cnt

	// OOO writes the OOO layout (Opcode.OOOExt): a RETH in every WRITE
	// packet, a SETH (SSN and PktIndex) in every SEND packet.
	OOO      bool
	PktIndex uint32 // SETH: the packet's index in its message

	NetRTType uint8     // NetRT: NetRTRequest or NetRTUnfulfilled
	NetRTPSN  psn.PSN   // NetRT: ePSN or unfulfilled PSN
	Bitmap    Bitmap128 // NetRT request

	Payload []byte // copied after the headers; pad bytes are added
}

// Build writes the frame s describes into b, with a valid IPv4 header
// checksum and ICRC, and returns its length. Frames shorter than
// MinFrameLen are padded with zeros. It allocates nothing; errors are
// sentinels.
func Build(b []byte, s *Spec) (int, error) {
	v6 := s.SrcIP.Is6() && !s.SrcIP.Is4In6()
	if !s.SrcIP.IsValid() || !s.DstIP.IsValid() || v6 != (s.DstIP.Is6() && !s.DstIP.Is4In6()) {
		return 0, ErrAddrFamily
	}
	ext := s.Opcode.Ext()
	if s.DCP {
		tag := TagOfDSCP(s.DSCP)
		if tag == DCPNone {
			return 0, ErrDCPTag
		}
		ext = s.Opcode.DCPExt(tag)
	}
	if s.OOO && !(s.DCP && TagOfDSCP(s.DSCP) == DCPHeaderOnly) {
		ext = s.Opcode.OOOExt(ext)
	}
	if s.SACK {
		ext = s.Opcode.SACKExt(ext)
	}
	extLen := ext.Len()
	if ext&ExtNetRT != 0 {
		n := NetRTLen(s.NetRTType)
		if n == 0 {
			return 0, ErrNetRTType
		}
		extLen += n
	}
	pad := -len(s.Payload) & 3
	l2 := EthernetLen
	if s.VLAN {
		l2 += VLANTagLen
	}
	l3 := IPv4MinLen
	if v6 {
		l3 = IPv6Len
	}
	udpLen := UDPLen + BTHLen + extLen + len(s.Payload) + pad + ICRCLen
	n := l2 + l3 + udpLen
	if l3+udpLen > 0xffff || n > 0xffff {
		return 0, ErrTooLong
	}
	total := max(n, MinFrameLen)
	if len(b) < total {
		return 0, ErrShortBuffer
	}
	b = b[:total]

	e := Ethernet(b)
	e.SetDst(s.Dst)
	e.SetSrc(s.Src)
	et := uint16(EtherTypeIPv4)
	if v6 {
		et = EtherTypeIPv6
	}
	// Set the outer type first: SetInnerType reads it, and b may still
	// hold 0x8100 from an earlier, tagged frame.
	e.SetType(et)
	if s.VLAN {
		e.SetType(EtherTypeVLAN)
		binary.BigEndian.PutUint16(b[14:16], uint16(s.PCP&7)<<13|s.VID&0x0fff)
	}
	e.SetInnerType(et)

	ttl := s.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	tos := s.DSCP<<2 | s.ECN&3
	ip := b[l2:]
	if v6 {
		binary.BigEndian.PutUint32(ip[0:4], 6<<28|uint32(tos)<<20|s.FlowLabel&0xfffff)
		binary.BigEndian.PutUint16(ip[4:6], uint16(udpLen))
		ip[6], ip[7] = ProtoUDP, ttl
		src, dst := s.SrcIP.As16(), s.DstIP.As16()
		copy(ip[8:24], src[:])
		copy(ip[24:40], dst[:])
	} else {
		ip[0], ip[1] = 0x45, tos
		binary.BigEndian.PutUint16(ip[2:4], uint16(l3+udpLen))
		binary.BigEndian.PutUint32(ip[4:8], ipv4DontFrag)
		ip[8], ip[9] = ttl, ProtoUDP
		ip[10], ip[11] = 0, 0
		src, dst := s.SrcIP.As4(), s.DstIP.As4()
		copy(ip[12:16], src[:])
		copy(ip[16:20], dst[:])
		IPv4(ip).SetChecksum()
	}

	u := UDP(b[l2+l3:])
	sport := s.SrcPort
	if sport == 0 {
		sport = 0xc000 | uint16(s.DestQP&0x3fff)
	}
	u.SetSrcPort(sport)
	u.SetDstPort(UDPPortRoCE)
	u.SetLength(udpLen)
	u.SetChecksum(0)

	bth := l2 + l3 + UDPLen
	h := BTH(b[bth:])
	h.SetOpcode(s.Opcode)
	h.SetFlags(s.SE, s.MigReq, pad)
	pkey := s.PKey
	if pkey == 0 {
		pkey = 0xffff
	}
	h.SetPKey(pkey)
	b[bth+4] = 0
	h.SetDestQP(s.DestQP)
	h.SetECN(s.FECN, s.BECN)
	b[bth+8] = 0
	h.SetPSN(s.PSN)
	h.SetAckReq(s.AckReq)

	off := bth + BTHLen
	for x := Ext(1); x < ExtNetRT; x <<= 1 {
		if ext&x == 0 {
			continue
		}
		p := b[off:]
		switch x {
		case ExtDCP:
			DCPETH(p).Set(s.MSN, s.Retry, s.SSN)
		case ExtDETH:
			DETH(p).Set(s.QKey, s.SrcQP)
		case ExtRETH:
			RETH(p).Set(s.VA, s.RKey, s.DMALen)
		case ExtAtomicETH:
			AtomicETH(p).Set(s.VA, s.RKey, s.SwapAdd, s.Compare)
		case ExtAETH:
			AETH(p).Set(s.Syndrome, s.AckMSN)
		case ExtAtomicAck:
			AtomicAck(p).Set(s.OrigData)
		case ExtImmDt:
			ImmDt(p).Set(s.Imm)
		case ExtIETH:
			IETH(p).Set(s.RKey)
		case ExtFETH:
			FETH(p).Set(s.FETH)
		case ExtSACK:
			SACKETH(p).Set(s.SACKPSN, s.SACKFlags, s.LostCnt)
		case ExtSETH:
			SETH(p).Set(s.SSN, s.PktIndex)
		}
		off += int(extLens[extIndex(x)])
	}
	if ext&ExtNetRT != 0 {
		if s.NetRTType == NetRTRequest {
			NetRT(b[off:]).SetRequest(s.NetRTPSN, s.Bitmap)
		} else {
			NetRT(b[off:]).SetUnfulfilled(s.NetRTPSN)
		}
		off += NetRTLen(s.NetRTType)
	}
	off += copy(b[off:], s.Payload)
	clear(b[off:total])
	icrcOff := off + pad
	crc := icrcOwned(b, l2, bth, icrcOff, v6) // b is ours: Build writes it
	binary.LittleEndian.PutUint32(b[icrcOff:], crc)
	return total, nil
}

func extIndex(x Ext) int {
	i := 0
	for x > 1 {
		x >>= 1
		i++
	}
	return i
}

// Trim turns the DCP data packet m describes into a header-only packet in
// place (seed 002, §4.2): it drops every byte after the DCP extension
// header, sets the DCP tag to 11, fixes the IP and UDP lengths and the pad
// count, and writes a fresh ICRC. It returns the new frame length. m is
// updated to describe the trimmed packet.
func Trim(b []byte, m *Meta) (int, error) {
	if m.Kind != KindRoCE || m.Reason != ReasonNone || m.Tag != DCPData || m.Ext&ExtDCP == 0 {
		return 0, ErrNotDCPData
	}
	l3 := int(m.L3Off)
	bth := int(m.BTHOff)
	icrcOff := bth + BTHLen + DCPLen
	end := icrcOff + ICRCLen
	dscp := WithTag(m.DSCP, DCPHeaderOnly)
	if m.IPVersion == 4 {
		h := IPv4(b[l3:])
		h.SetDSCP(dscp)
		h.SetTotalLen(end - l3)
	} else {
		h := IPv6(b[l3:])
		h.SetDSCP(dscp)
		h.SetPayloadLen(end - l3 - IPv6Len)
	}
	UDP(b[m.L4Off:]).SetLength(end - int(m.L4Off))
	BTH(b[bth:]).SetFlags(b[bth+1]&0x80 != 0, b[bth+1]&0x40 != 0, 0)
	m.DSCP, m.Tag = dscp, DCPHeaderOnly
	m.Ext, m.PadCount = ExtDCP, 0
	m.PayloadOff, m.ICRCOff, m.End = uint16(icrcOff), uint16(icrcOff), uint16(end)
	m.SetICRC(b)
	n := max(end, MinFrameLen)
	clear(b[end:n])
	return n, nil
}
