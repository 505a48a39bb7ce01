package layers

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// DCPETH is the project's DCP extension header (seed 002, §4.4; layout in
// rocev2.DCPETH). It follows the BTH of a DCP packet, which only the DSCP
// tag marks: see the package variable DCP.
type DCPETH struct {
	layers.BaseLayer
	MSN     uint32 // message sequence number; eMSN in an ACK
	RetryNo uint8  // sRetryNo of the sender; rRetryNo in an ACK
	SSN     uint32 // send sequence number, 0 where unused
}

func (d *DCPETH) LayerType() gopacket.LayerType     { return LayerTypeDCPETH }
func (d *DCPETH) CanDecode() gopacket.LayerClass    { return LayerTypeDCPETH }
func (d *DCPETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (d *DCPETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&d.BaseLayer, data, rocev2.DCPLen, LayerTypeDCPETH, df); err != nil {
		return err
	}
	h := rocev2.DCPETH(data)
	d.MSN, d.RetryNo, d.SSN = h.MSN(), h.RetryNo(), h.SSN()
	return nil
}
func (d *DCPETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.DCPLen)
	if err == nil {
		rocev2.DCPETH(p).Set(d.MSN, d.RetryNo, d.SSN)
	}
	return err
}

// NetRT is a NetRT message header (seed 000, §III-C/D; layout in
// rocev2.NetRT): a retransmission request or an unfulfilled notice, after a
// BTH with opcode rocev2.NetRTOpcode.
type NetRT struct {
	layers.BaseLayer
	Type   uint8            // rocev2.NetRTRequest or rocev2.NetRTUnfulfilled
	PSN    psn.PSN          // ePSN of a request, or the PSN the pool lacks
	Bitmap rocev2.Bitmap128 // arrivals after ePSN; request only
}

func (n *NetRT) LayerType() gopacket.LayerType     { return LayerTypeNetRT }
func (n *NetRT) CanDecode() gopacket.LayerClass    { return LayerTypeNetRT }
func (n *NetRT) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes reads the type byte first: it sets the length.
func (n *NetRT) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) == 0 {
		return fail(LayerTypeNetRT, rocev2.ReasonTruncated, df)
	}
	l := rocev2.NetRTLen(data[0])
	if l == 0 {
		return fail(LayerTypeNetRT, rocev2.ReasonBadNetRT, df)
	}
	if err := fixed(&n.BaseLayer, data, l, LayerTypeNetRT, df); err != nil {
		return err
	}
	h := rocev2.NetRT(data)
	n.Type, n.PSN, n.Bitmap = h.Type(), h.PSN(), rocev2.Bitmap128{}
	if n.Type == rocev2.NetRTRequest {
		n.Bitmap = h.Bitmap()
	}
	return nil
}

func (n *NetRT) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	l := rocev2.NetRTLen(n.Type)
	if l == 0 {
		return rocev2.ErrNetRTType
	}
	p, err := b.PrependBytes(l)
	if err != nil {
		return err
	}
	if n.Type == rocev2.NetRTRequest {
		rocev2.NetRT(p).SetRequest(n.PSN, n.Bitmap)
	} else {
		rocev2.NetRT(p).SetUnfulfilled(n.PSN)
	}
	return nil
}
