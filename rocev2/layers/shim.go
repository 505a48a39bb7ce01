package layers

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Shim is the link-retransmission shim (seed 003, §3.5 and appendix A;
// layout in rocev2.Shim), under EtherType rocev2.EtherTypeShim. An original
// or retransmitted packet carries a frame's L3 payload, which gopacket
// decodes next by InnerType; dummy, ACK and loss-notice packets carry
// nothing, so decoding ends at the shim and its payload is only padding.
type Shim struct {
	layers.BaseLayer
	Seq       psn.Link // link sequence: number and era
	Type      uint8    // rocev2.ShimOriginal … rocev2.ShimProtect
	HasAck    bool     // Ack carries a cumulative ACK
	Ack       psn.Link // piggybacked cumulative ACK: number and era
	Count     uint8    // loss notice: missing sequences from Seq
	InnerType layers.EthernetType
}

func (s *Shim) LayerType() gopacket.LayerType  { return LayerTypeShim }
func (s *Shim) CanDecode() gopacket.LayerClass { return LayerTypeShim }

// NextLayerType is the inner EtherType's layer, or gopacket.LayerTypeZero
// for the shim-only types, which ends a DecodingLayerParser cleanly.
func (s *Shim) NextLayerType() gopacket.LayerType {
	if !s.carries() {
		return gopacket.LayerTypeZero
	}
	return s.InnerType.LayerType()
}

func (s *Shim) carries() bool {
	return s.Type == rocev2.ShimOriginal || s.Type == rocev2.ShimRetransmit || s.Type == rocev2.ShimWatch
}

// TypeName names the packet type: "original", "ack", ….
func (s *Shim) TypeName() string { return rocev2.ShimTypeName(s.Type) }

func (s *Shim) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&s.BaseLayer, data, rocev2.ShimLen, LayerTypeShim, df); err != nil {
		return err
	}
	h := rocev2.Shim(data)
	s.Seq, s.Type, s.HasAck, s.Ack = h.Seq(), h.Type(), h.HasAck(), h.Ack()
	s.Count, s.InnerType = h.Count(), layers.EthernetType(h.InnerType())
	if h.Reserved() != 0 {
		return fail(LayerTypeShim, rocev2.ReasonBadShim, df)
	}
	if s.carries() && len(s.Payload) == 0 {
		// An inner frame is announced but absent, as rocev2 sees it.
		return fail(LayerTypeShim, rocev2.ReasonTruncated, df)
	}
	return nil
}

func (s *Shim) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.ShimLen)
	if err != nil {
		return err
	}
	h := rocev2.Shim(p)
	h.Set(s.Seq, s.Type, s.Count, uint16(s.InnerType))
	if s.HasAck {
		h.SetAck(s.Ack)
	}
	return nil
}

func decodeShim(data []byte, p gopacket.PacketBuilder) error {
	s := &Shim{}
	if err := s.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(s)
	if !s.carries() {
		return nil
	}
	return p.NextDecoder(s.InnerType)
}
