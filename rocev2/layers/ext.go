package layers

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// The extension headers of IBA §9.2. Each is a layer of its own in a
// decoded gopacket.Packet, and a field of BTH. Decoded standalone, a
// header's payload is everything after it; inside a BTH, everything up to
// the pad and ICRC. None of them can tell what follows it, so NextLayerType
// is always gopacket.LayerTypePayload. The fields are read through the
// rocev2 views, which document the byte layout.

// RETH is the RDMA extended transport header.
type RETH struct {
	layers.BaseLayer
	VA     uint64 // remote virtual address
	RKey   uint32 // remote key
	DMALen uint32 // length of the whole RDMA operation
}

func (r *RETH) LayerType() gopacket.LayerType     { return LayerTypeRETH }
func (r *RETH) CanDecode() gopacket.LayerClass    { return LayerTypeRETH }
func (r *RETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (r *RETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&r.BaseLayer, data, rocev2.RETHLen, LayerTypeRETH, df); err != nil {
		return err
	}
	h := rocev2.RETH(data)
	r.VA, r.RKey, r.DMALen = h.VA(), h.RKey(), h.DMALen()
	return nil
}
func (r *RETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.RETHLen)
	if err == nil {
		rocev2.RETH(p).Set(r.VA, r.RKey, r.DMALen)
	}
	return err
}

// AETH is the ACK extended transport header.
type AETH struct {
	layers.BaseLayer
	Syndrome rocev2.Syndrome // ACK with credits, RNR NAK with timer, or NAK with code
	MSN      uint32          // message sequence number
}

func (a *AETH) LayerType() gopacket.LayerType     { return LayerTypeAETH }
func (a *AETH) CanDecode() gopacket.LayerClass    { return LayerTypeAETH }
func (a *AETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&a.BaseLayer, data, rocev2.AETHLen, LayerTypeAETH, df); err != nil {
		return err
	}
	h := rocev2.AETH(data)
	a.Syndrome, a.MSN = h.Syndrome(), h.MSN()
	return nil
}
func (a *AETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.AETHLen)
	if err == nil {
		rocev2.AETH(p).Set(a.Syndrome, a.MSN)
	}
	return err
}

// ImmDt is the immediate data header.
type ImmDt struct {
	layers.BaseLayer
	Value uint32
}

func (i *ImmDt) LayerType() gopacket.LayerType     { return LayerTypeImmDt }
func (i *ImmDt) CanDecode() gopacket.LayerClass    { return LayerTypeImmDt }
func (i *ImmDt) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (i *ImmDt) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&i.BaseLayer, data, rocev2.ImmDtLen, LayerTypeImmDt, df); err != nil {
		return err
	}
	i.Value = rocev2.ImmDt(data).Value()
	return nil
}
func (i *ImmDt) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.ImmDtLen)
	if err == nil {
		rocev2.ImmDt(p).Set(i.Value)
	}
	return err
}

// DETH is the datagram extended transport header of UD packets.
type DETH struct {
	layers.BaseLayer
	QKey  uint32 // queue key
	SrcQP uint32 // 24-bit source queue pair
}

func (d *DETH) LayerType() gopacket.LayerType     { return LayerTypeDETH }
func (d *DETH) CanDecode() gopacket.LayerClass    { return LayerTypeDETH }
func (d *DETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (d *DETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&d.BaseLayer, data, rocev2.DETHLen, LayerTypeDETH, df); err != nil {
		return err
	}
	h := rocev2.DETH(data)
	d.QKey, d.SrcQP = h.QKey(), h.SrcQP()
	return nil
}
func (d *DETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.DETHLen)
	if err == nil {
		rocev2.DETH(p).Set(d.QKey, d.SrcQP)
	}
	return err
}

// IETH is the invalidate extended transport header.
type IETH struct {
	layers.BaseLayer
	RKey uint32 // remote key to invalidate
}

func (i *IETH) LayerType() gopacket.LayerType     { return LayerTypeIETH }
func (i *IETH) CanDecode() gopacket.LayerClass    { return LayerTypeIETH }
func (i *IETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (i *IETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&i.BaseLayer, data, rocev2.IETHLen, LayerTypeIETH, df); err != nil {
		return err
	}
	i.RKey = rocev2.IETH(data).RKey()
	return nil
}
func (i *IETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.IETHLen)
	if err == nil {
		rocev2.IETH(p).Set(i.RKey)
	}
	return err
}

// AtomicETH is the atomic extended transport header.
type AtomicETH struct {
	layers.BaseLayer
	VA      uint64 // remote virtual address
	RKey    uint32 // remote key
	SwapAdd uint64 // swap (compare-and-swap) or add (fetch-and-add) operand
	Compare uint64 // compare operand
}

func (a *AtomicETH) LayerType() gopacket.LayerType     { return LayerTypeAtomicETH }
func (a *AtomicETH) CanDecode() gopacket.LayerClass    { return LayerTypeAtomicETH }
func (a *AtomicETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (a *AtomicETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&a.BaseLayer, data, rocev2.AtomicETHLen, LayerTypeAtomicETH, df); err != nil {
		return err
	}
	h := rocev2.AtomicETH(data)
	a.VA, a.RKey, a.SwapAdd, a.Compare = h.VA(), h.RKey(), h.SwapAdd(), h.Compare()
	return nil
}
func (a *AtomicETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.AtomicETHLen)
	if err == nil {
		rocev2.AtomicETH(p).Set(a.VA, a.RKey, a.SwapAdd, a.Compare)
	}
	return err
}

// AtomicAckETH is the atomic ACK extended transport header.
type AtomicAckETH struct {
	layers.BaseLayer
	OrigData uint64 // what the remote location held before the atomic
}

func (a *AtomicAckETH) LayerType() gopacket.LayerType     { return LayerTypeAtomicAckETH }
func (a *AtomicAckETH) CanDecode() gopacket.LayerClass    { return LayerTypeAtomicAckETH }
func (a *AtomicAckETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (a *AtomicAckETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&a.BaseLayer, data, rocev2.AtomicAckLen, LayerTypeAtomicAckETH, df); err != nil {
		return err
	}
	a.OrigData = rocev2.AtomicAck(data).OrigData()
	return nil
}
func (a *AtomicAckETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.AtomicAckLen)
	if err == nil {
		rocev2.AtomicAck(p).Set(a.OrigData)
	}
	return err
}

// FETH is the flush extended transport header.
type FETH struct {
	layers.BaseLayer
	Selectivity uint32 // placement type and selectivity level bits
}

func (f *FETH) LayerType() gopacket.LayerType     { return LayerTypeFETH }
func (f *FETH) CanDecode() gopacket.LayerClass    { return LayerTypeFETH }
func (f *FETH) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (f *FETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := fixed(&f.BaseLayer, data, rocev2.FETHLen, LayerTypeFETH, df); err != nil {
		return err
	}
	f.Selectivity = rocev2.FETH(data).Selectivity()
	return nil
}
func (f *FETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(rocev2.FETHLen)
	if err == nil {
		rocev2.FETH(p).Set(f.Selectivity)
	}
	return err
}
