package layers

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// DCP makes BTH decoding treat a packet whose DSCP carries a DCP tag other
// than 00 as a DCP packet, with the extension headers of
// rocev2.Opcode.DCPExt. Leave it false outside a DCP fabric, where those
// DSCP bits mean nothing to RoCE. Set it before decoding starts: it is read
// without synchronisation.
var DCP bool

// Layer types. The numbers sit in gopacket's range for application layers
// (1000–1999), from 1791 after RoCEv2's UDP port 4791. They are constants
// registered in init, so that a decoder may name its own layer type
// without an initialisation cycle.
const (
	LayerTypeBTH gopacket.LayerType = 1791 + iota
	LayerTypeRETH
	LayerTypeAETH
	LayerTypeImmDt
	LayerTypeDETH
	LayerTypeIETH
	LayerTypeAtomicETH
	LayerTypeAtomicAckETH
	LayerTypeFETH
	LayerTypeDCPETH
	LayerTypeNetRT
	LayerTypeShim
	LayerTypeMACControl
)

func init() {
	for _, r := range []struct {
		lt   gopacket.LayerType
		name string
		dec  func([]byte, gopacket.PacketBuilder) error
	}{
		{LayerTypeBTH, "BTH", decodeBTH},
		{LayerTypeRETH, "RETH", decoderOf[RETH]()},
		{LayerTypeAETH, "AETH", decoderOf[AETH]()},
		{LayerTypeImmDt, "ImmDt", decoderOf[ImmDt]()},
		{LayerTypeDETH, "DETH", decoderOf[DETH]()},
		{LayerTypeIETH, "IETH", decoderOf[IETH]()},
		{LayerTypeAtomicETH, "AtomicETH", decoderOf[AtomicETH]()},
		{LayerTypeAtomicAckETH, "AtomicAckETH", decoderOf[AtomicAckETH]()},
		{LayerTypeFETH, "FETH", decoderOf[FETH]()},
		{LayerTypeDCPETH, "DCPETH", decoderOf[DCPETH]()},
		{LayerTypeNetRT, "NetRT", decoderOf[NetRT]()},
		{LayerTypeShim, "LinkShim", decodeShim},
		{LayerTypeMACControl, "MACControl", decodeMACControl},
	} {
		gopacket.RegisterLayerType(int(r.lt), gopacket.LayerTypeMetadata{Name: r.name, Decoder: gopacket.DecodeFunc(r.dec)})
	}
	layers.RegisterUDPPortLayerType(rocev2.UDPPortRoCE, LayerTypeBTH)
	// gopacket decodes an EtherType through this table: the shim then
	// hands the rest of the frame to the decoder of its InnerType.
	layers.EthernetTypeMetadata[rocev2.EtherTypeShim] = layers.EnumMetadata{
		DecodeWith: LayerTypeShim, Name: "LinkShim", LayerType: LayerTypeShim,
	}
	layers.EthernetTypeMetadata[rocev2.EtherTypeMACControl] = layers.EnumMetadata{
		DecodeWith: LayerTypeMACControl, Name: "MACControl", LayerType: LayerTypeMACControl,
	}
}

// decodingLayer is what every layer of this package is.
type decodingLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
}

// decoderOf returns the gopacket decoder of a layer that needs nothing but
// its own bytes, for packets decoded starting from that layer.
func decoderOf[T any, P interface {
	*T
	decodingLayer
}]() func([]byte, gopacket.PacketBuilder) error {
	return func(data []byte, p gopacket.PacketBuilder) error {
		l := P(new(T))
		if err := l.DecodeFromBytes(data, p); err != nil {
			return err
		}
		p.AddLayer(l)
		return p.NextDecoder(l.NextLayerType())
	}
}

// DecodeError says why a layer could not be decoded, with the reason the
// switch's classifier counts for the same fault.
type DecodeError struct {
	Layer  gopacket.LayerType
	Reason rocev2.Reason
}

func (e *DecodeError) Error() string {
	return "rocev2/layers: " + e.Layer.String() + ": " + e.Reason.String()
}

// fail reports a malformed layer; a truncated one is also flagged on df.
func fail(lt gopacket.LayerType, r rocev2.Reason, df gopacket.DecodeFeedback) error {
	if r == rocev2.ReasonTruncated {
		df.SetTruncated()
	}
	return &DecodeError{Layer: lt, Reason: r}
}

// fixed takes the first n bytes of data as the header of a fixed-size
// layer and the rest as its payload.
func fixed(b *layers.BaseLayer, data []byte, n int, lt gopacket.LayerType, df gopacket.DecodeFeedback) error {
	if len(data) < n {
		return fail(lt, rocev2.ReasonTruncated, df)
	}
	b.Contents, b.Payload = data[:n], data[n:]
	return nil
}
