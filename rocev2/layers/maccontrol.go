package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// MACControl is an IEEE 802.3 MAC control frame body under EtherType
// 0x8808, which gopacket does not decode: an 802.3x PAUSE or an 802.1Qbb
// PFC frame (layout in rocev2.MACControl). Other opcodes decode to Opcode
// alone. Nothing follows it but padding.
type MACControl struct {
	layers.BaseLayer
	Opcode      uint16    // rocev2.MACControlPause or rocev2.MACControlPFC
	PauseTime   uint16    // PAUSE: quanta of 512 bit times
	ClassEnable uint8     // PFC: bit i pauses (or resumes) priority i
	Times       [8]uint16 // PFC: pause time of each priority, in quanta
}

func (c *MACControl) LayerType() gopacket.LayerType     { return LayerTypeMACControl }
func (c *MACControl) CanDecode() gopacket.LayerClass    { return LayerTypeMACControl }
func (c *MACControl) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// IsPFC reports whether this is a PFC frame.
func (c *MACControl) IsPFC() bool { return c.Opcode == rocev2.MACControlPFC }

// DecodeFromBytes applies the classifier's length rule: four bytes for any
// MAC control frame, the whole twenty for PFC.
func (c *MACControl) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*c = MACControl{}
	if len(data) < rocev2.PauseLen {
		return fail(LayerTypeMACControl, rocev2.ReasonTruncated, df)
	}
	h := rocev2.MACControl(data)
	c.Opcode = h.Opcode()
	n := 2
	switch c.Opcode {
	case rocev2.MACControlPause:
		n, c.PauseTime = rocev2.PauseLen, h.PauseTime()
	case rocev2.MACControlPFC:
		if len(data) < rocev2.PFCLen {
			return fail(LayerTypeMACControl, rocev2.ReasonTruncated, df)
		}
		n, c.ClassEnable = rocev2.PFCLen, h.ClassEnable()
		for i := range c.Times {
			c.Times[i] = h.Time(i)
		}
	}
	c.Contents, c.Payload = data[:n], data[n:]
	return nil
}

// SerializeTo writes a PAUSE or PFC body through rocev2's frame builders,
// which own the layout; gopacket's Ethernet layer pads the frame.
func (c *MACControl) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	var f [rocev2.MinFrameLen]byte
	var n int
	switch c.Opcode {
	case rocev2.MACControlPause:
		rocev2.BuildPause(f[:], rocev2.MAC{}, c.PauseTime)
		n = rocev2.PauseLen
	case rocev2.MACControlPFC:
		rocev2.BuildPFC(f[:], rocev2.MAC{}, c.ClassEnable, c.Times)
		n = rocev2.PFCLen
	default:
		return errMACControlOpcode
	}
	p, err := b.PrependBytes(n)
	if err == nil {
		copy(p, f[rocev2.EthernetLen:])
	}
	return err
}

var errMACControlOpcode = errors.New("rocev2/layers: MACControl serializes only PAUSE and PFC")

func decodeMACControl(data []byte, p gopacket.PacketBuilder) error {
	c := &MACControl{}
	if err := c.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(c)
	return nil
}
