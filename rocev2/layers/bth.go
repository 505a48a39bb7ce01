package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// BTH is the InfiniBand base transport header together with the rest of
// the transport header chain of its RoCEv2 packet: the extension headers
// its opcode (and, with DCP, its DSCP tag) calls for, in the fields named
// after them; the pad; and the ICRC. Its Contents are the 12 BTH bytes and
// its Payload the transport payload, without pad and ICRC.
//
// On the DecodingLayer path the IP header is not in reach of the layer:
// call SetNetworkLayers once with the IP layers the parser decodes into,
// or set DSCP before each DecodeFromBytes when decoding DCP packets
// without them (ICRCChecked then stays false).
//
// A BTH is not safe for concurrent use; its zero value is ready.
type BTH struct {
	layers.BaseLayer
	Opcode   rocev2.Opcode
	SE       bool // solicited event
	MigReq   bool
	PadCount uint8 // pad bytes (0–3) between payload and ICRC
	TVer     uint8
	PKey     uint16
	FECN     bool
	BECN     bool
	DestQP   uint32 // 24-bit destination queue pair
	AckReq   bool
	PSN      psn.PSN

	// Ext is the set of extension headers that follow the BTH; the field
	// of each header present is filled, the others are zero.
	Ext       rocev2.Ext
	DCPETH    DCPETH
	DETH      DETH
	RETH      RETH
	AtomicETH AtomicETH
	AETH      AETH
	AtomicAck AtomicAckETH
	ImmDt     ImmDt
	IETH      IETH
	FETH      FETH
	NetRT     NetRT

	// ICRC is the stored invariant CRC. ICRCChecked reports whether the
	// IP and UDP headers were at hand to compute it, as rocev2 does;
	// ICRCValid whether the stored one matched.
	ICRC        uint32
	ICRCChecked bool
	ICRCValid   bool

	// DSCP of the enclosing IP header, which carries the DCP tag. Decoding
	// sets it when it finds the IP header (0 if linked IP layers did not
	// decode this packet); without linked layers the caller's value stays.
	DSCP   uint8
	DCPTag rocev2.DCPTag // tag bits of DSCP; a DCP header follows only with DCP set

	ip4     *layers.IPv4
	ip6     *layers.IPv6
	scratch []byte // reused to lay the covered headers out for the ICRC
}

func (b *BTH) LayerType() gopacket.LayerType     { return LayerTypeBTH }
func (b *BTH) CanDecode() gopacket.LayerClass    { return LayerTypeBTH }
func (b *BTH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// SetNetworkLayers links the IP layers a DecodingLayerParser decodes into,
// so that DecodeFromBytes can read the DSCP and check the ICRC. Either may
// be nil. DecodeFromBytes uses whichever one decoded the datagram its bytes
// belong to (it compares addresses, so a stale layer from an earlier packet
// is never taken).
func (b *BTH) SetNetworkLayers(ip4 *layers.IPv4, ip6 *layers.IPv6) { b.ip4, b.ip6 = ip4, ip6 }

// DecodeFromBytes decodes the transport header chain of a UDP payload, in
// the same order and with the same length rules as rocev2.Classify, so an
// error carries the Reason the switch would count.
func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	dscp := b.DSCP
	if b.ip4 != nil || b.ip6 != nil {
		dscp = 0 // not the caller's but an earlier packet's
	}
	*b = BTH{DSCP: dscp, ip4: b.ip4, ip6: b.ip6, scratch: b.scratch}
	ip, v6, udp := b.network(data)
	if udp != nil && rocev2.UDP(udp).Length() > rocev2.UDPLen+len(data) {
		// The UDP header announces bytes the capture lacks: what would be
		// read as the ICRC is payload.
		return fail(LayerTypeBTH, rocev2.ReasonTruncated, df)
	}
	if len(data) < rocev2.BTHLen+rocev2.ICRCLen {
		return fail(LayerTypeBTH, rocev2.ReasonTruncated, df)
	}
	h := rocev2.BTH(data)
	b.Opcode, b.SE, b.MigReq, b.PadCount, b.TVer = h.Opcode(), h.SE(), h.MigReq(), uint8(h.PadCount()), h.TVer()
	b.PKey, b.FECN, b.BECN, b.DestQP = h.PKey(), h.FECN(), h.BECN(), h.DestQP()
	b.AckReq, b.PSN = h.AckReq(), h.PSN()
	icrcOff := len(data) - rocev2.ICRCLen
	b.ICRC = binary.LittleEndian.Uint32(data[icrcOff:]) // little-endian, as rocev2 stores it
	if b.TVer != 0 {
		return fail(LayerTypeBTH, rocev2.ReasonBadTVer, df)
	}
	if !b.Opcode.Known() {
		return fail(LayerTypeBTH, rocev2.ReasonUnknownOpcode, df)
	}
	if ip != nil {
		if v6 {
			b.DSCP = rocev2.IPv6(ip).DSCP()
		} else {
			b.DSCP = rocev2.IPv4(ip).DSCP()
		}
	}
	b.DCPTag = rocev2.TagOfDSCP(b.DSCP)
	b.Ext = b.Opcode.Ext()
	if DCP && b.DCPTag != rocev2.DCPNone {
		b.Ext = b.Opcode.DCPExt(b.DCPTag)
	}
	off := rocev2.BTHLen
	for x := rocev2.Ext(1); x <= rocev2.ExtNetRT; x <<= 1 {
		if b.Ext&x == 0 {
			continue
		}
		l, _ := b.ext(x)
		if err := l.DecodeFromBytes(data[off:icrcOff], gopacket.NilDecodeFeedback); err != nil {
			r := rocev2.ReasonBadLength
			if e, ok := err.(*DecodeError); ok && e.Reason == rocev2.ReasonBadNetRT {
				r = e.Reason
			}
			return fail(LayerTypeBTH, r, df)
		}
		off += len(l.LayerContents())
	}
	end := icrcOff - int(b.PadCount)
	if off > end {
		return fail(LayerTypeBTH, rocev2.ReasonBadLength, df)
	}
	// Each header's payload runs to the end of the transport payload, not
	// into the pad and ICRC it was decoded with.
	b.Contents, b.Payload = data[:rocev2.BTHLen], data[off:end]
	o := rocev2.BTHLen
	for x := rocev2.Ext(1); x <= rocev2.ExtNetRT; x <<= 1 {
		if b.Ext&x != 0 {
			l, base := b.ext(x)
			o += len(l.LayerContents())
			base.Payload = data[o:end]
		}
	}
	if ip != nil {
		b.ICRCChecked, b.ICRCValid = true, b.checkICRC(ip, v6, udp, data)
	}
	return nil
}

// ext returns the field that holds extension header x.
func (b *BTH) ext(x rocev2.Ext) (decodingLayer, *layers.BaseLayer) {
	switch x {
	case rocev2.ExtDCP:
		return &b.DCPETH, &b.DCPETH.BaseLayer
	case rocev2.ExtDETH:
		return &b.DETH, &b.DETH.BaseLayer
	case rocev2.ExtRETH:
		return &b.RETH, &b.RETH.BaseLayer
	case rocev2.ExtAtomicETH:
		return &b.AtomicETH, &b.AtomicETH.BaseLayer
	case rocev2.ExtAETH:
		return &b.AETH, &b.AETH.BaseLayer
	case rocev2.ExtAtomicAck:
		return &b.AtomicAck, &b.AtomicAck.BaseLayer
	case rocev2.ExtImmDt:
		return &b.ImmDt, &b.ImmDt.BaseLayer
	case rocev2.ExtIETH:
		return &b.IETH, &b.IETH.BaseLayer
	case rocev2.ExtFETH:
		return &b.FETH, &b.FETH.BaseLayer
	}
	return &b.NetRT, &b.NetRT.BaseLayer
}

// network returns the IP header (and whether it is IPv6) and the UDP
// header in front of data, when a linked IP layer decoded the very
// datagram data was cut from and UDP follows its fixed header directly.
// The address comparison rules out a stale layer of an earlier packet; the
// version and protocol are read from the bytes as they are now.
func (b *BTH) network(data []byte) (ip []byte, v6 bool, udp []byte) {
	if len(data) == 0 {
		return nil, false, nil
	}
	if b.ip4 != nil && follows(b.ip4.Payload, data) {
		h := b.ip4.Contents
		if len(h) >= rocev2.IPv4MinLen && rocev2.IPv4(h).Version() == 4 && rocev2.IPv4(h).Protocol() == rocev2.ProtoUDP {
			return h, false, b.ip4.Payload[:rocev2.UDPLen]
		}
	}
	if b.ip6 != nil && follows(b.ip6.Payload, data) {
		h := b.ip6.Contents
		if len(h) == rocev2.IPv6Len && rocev2.IPv6(h).Version() == 6 && rocev2.IPv6(h).NextHeader() == rocev2.ProtoUDP {
			return h, true, b.ip6.Payload[:rocev2.UDPLen]
		}
	}
	return nil, false, nil
}

// follows reports whether data starts right after a UDP header at the
// start of l3payload, in the same memory.
func follows(l3payload, data []byte) bool {
	return len(l3payload) > rocev2.UDPLen && &l3payload[rocev2.UDPLen] == &data[0]
}

// checkICRC lays the IP header, UDP header and transport bytes out as a
// frame behind a blank Ethernet header and lets rocev2 compute the ICRC,
// so that tools and the switch agree by construction. ComputeICRC reads
// only the four offsets set here.
func (b *BTH) checkICRC(ip []byte, v6 bool, udp, data []byte) bool {
	var eth [rocev2.EthernetLen]byte
	f := append(append(append(append(b.scratch[:0], eth[:]...), ip...), udp...), data...)
	b.scratch = f
	if len(f) > 0xffff {
		return false
	}
	m := rocev2.Meta{
		L3Off:     rocev2.EthernetLen,
		BTHOff:    uint16(rocev2.EthernetLen + len(ip) + rocev2.UDPLen),
		ICRCOff:   uint16(len(f) - rocev2.ICRCLen),
		IPVersion: 4,
	}
	if v6 {
		m.IPVersion = 6
	}
	return m.ComputeICRC(f) == m.ICRC(f)
}

// SerializeTo writes the BTH in front of what is serialized so far (the
// extension header layers and the payload) and appends the pad and the
// ICRC field. With FixLengths the pad count follows the payload length.
// The ICRC covers the IP and UDP headers, which are serialized after this
// layer, so the field gets b.ICRC as it is: call rocev2.RefreshICRC on the
// finished frame to store the right one.
func (b *BTH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	pad := int(b.PadCount & 3)
	if opts.FixLengths {
		// Every extension header is a multiple of four bytes long.
		pad = -len(buf.Bytes()) & 3
		b.PadCount = uint8(pad)
	}
	t, err := buf.AppendBytes(pad + rocev2.ICRCLen)
	if err != nil {
		return err
	}
	clear(t[:pad])
	binary.LittleEndian.PutUint32(t[pad:], b.ICRC)
	p, err := buf.PrependBytes(rocev2.BTHLen)
	if err != nil {
		return err
	}
	clear(p)
	h := rocev2.BTH(p)
	h.SetOpcode(b.Opcode)
	h.SetFlags(b.SE, b.MigReq, pad)
	h.SetPKey(b.PKey)
	h.SetDestQP(b.DestQP)
	h.SetECN(b.FECN, b.BECN)
	h.SetPSN(b.PSN)
	h.SetAckReq(b.AckReq)
	return nil
}

// decodeBTH is the gopacket.Packet path: it finds the IP layer decoded
// before it, decodes the chain, and adds the BTH, each extension header and
// then the payload as layers.
func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	b := &BTH{}
	// The packet under construction is also a gopacket.Packet; its layers
	// so far are safe to read during decoding, eager or lazy.
	if pk, ok := p.(interface{ Layers() []gopacket.Layer }); ok {
		b.ip4, b.ip6 = lastIP(pk.Layers())
	}
	err := b.DecodeFromBytes(data, p)
	b.ip4, b.ip6, b.scratch = nil, nil, nil
	if err != nil {
		return err
	}
	p.AddLayer(b)
	for x := rocev2.Ext(1); x <= rocev2.ExtNetRT; x <<= 1 {
		if b.Ext&x != 0 {
			l, _ := b.ext(x)
			p.AddLayer(l)
		}
	}
	return p.NextDecoder(gopacket.LayerTypePayload)
}

// lastIP returns the innermost IP layer, the one a tunnelled packet's BTH
// belongs to.
func lastIP(ls []gopacket.Layer) (*layers.IPv4, *layers.IPv6) {
	for i := len(ls) - 1; i >= 0; i-- {
		switch l := ls[i].(type) {
		case *layers.IPv4:
			return l, nil
		case *layers.IPv6:
			return nil, l
		}
	}
	return nil, nil
}
