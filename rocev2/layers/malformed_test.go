package layers

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// TestTruncated cuts every frame at every length inside its headers and
// datagram: each cut must be reported (an error layer or the truncated
// flag) on both decode paths, and none may panic.
func TestTruncated(t *testing.T) {
	x := newParser()
	for _, f := range append(roceFrames(t), otherFrames(t)...) {
		var m rocev2.Meta
		rocev2.Classifier{DCP: f.dcp}.Classify(f.b, &m)
		end := len(f.b)
		if m.End != 0 {
			end = int(m.End) // the rest is Ethernet padding
		} else if m.Kind == rocev2.KindMACControl {
			end = int(m.L3Off) + rocev2.PauseLen
			if rocev2.MACControl(f.b[m.L3Off:]).Opcode() == rocev2.MACControlPFC {
				end = int(m.L3Off) + rocev2.PFCLen
			}
		} else if m.Kind == rocev2.KindLinkCtrl {
			end = int(m.ShimOff) + rocev2.ShimLen
		}
		withDCP(f.dcp, func() {
			for cut := 1; cut < end; cut++ {
				if cut == rocev2.EthernetLen || cut == rocev2.Ethernet(f.b).HeaderLen() {
					// gopacket's Ethernet and Dot1Q layers rightly
					// accept an empty payload.
					continue
				}
				b := f.b[:cut]
				p := decode(b, gopacket.Default)
				if p.ErrorLayer() == nil && !p.Metadata().Truncated {
					t.Errorf("%s cut at %d of %d: decoded without error: %v", f.name, cut, end, p)
				}
				err := x.decode(b)
				if err == nil && !x.p.Truncated {
					t.Errorf("%s cut at %d of %d: parser reported nothing (decoded %v)", f.name, cut, end, x.decoded)
				}
			}
		})
	}
}

// TestReasons checks that a BTH chain the classifier rejects is rejected
// by the layer with the same reason.
func TestReasons(t *testing.T) {
	base := build(t, specFor(rocev2.RCWriteOnly, v4A, v4B))
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(base, &m)
	bth := int(m.BTHOff)
	for _, c := range []struct {
		name  string
		patch func(b []byte) []byte
		want  rocev2.Reason
	}{
		{"tver", func(b []byte) []byte { b[bth+1] |= 1; return b }, rocev2.ReasonBadTVer},
		{"RD opcode", func(b []byte) []byte { b[bth] = 0x40; return b }, rocev2.ReasonUnknownOpcode},
		{"RETH past the end", func(b []byte) []byte { b[bth] = byte(rocev2.RCWriteOnly); return shrinkUDP(b, &m, 16+13+3) }, rocev2.ReasonBadLength},
		{"pad past the headers", func(b []byte) []byte { return shrinkUDP(b, &m, 16) }, rocev2.ReasonBadLength},
		{"NetRT type", func(b []byte) []byte { b[bth] = byte(rocev2.NetRTOpcode); b[bth+rocev2.BTHLen] = 7; return b }, rocev2.ReasonBadNetRT},
	} {
		b := c.patch(append([]byte(nil), base...))
		rocev2.RefreshICRC(b, rocev2.Classifier{})
		var cm rocev2.Meta
		rocev2.Classifier{}.Classify(b, &cm)
		if cm.Reason != c.want {
			t.Fatalf("%s: the classifier says %v, the test wants %v", c.name, cm.Reason, c.want)
		}
		p := decode(b, gopacket.Default)
		var de *DecodeError
		if e := p.ErrorLayer(); e == nil || !errors.As(e.Error(), &de) || de.Reason != c.want || de.Layer != LayerTypeBTH {
			t.Errorf("%s: got error layer %v, want BTH: %v", c.name, e, c.want)
		}
	}
}

// shrinkUDP removes n bytes before the ICRC, fixing the IP and UDP
// lengths, so that headers or pad run past the end.
func shrinkUDP(b []byte, m *rocev2.Meta, n int) []byte {
	icrc := int(m.ICRCOff)
	out := append(append([]byte(nil), b[:icrc-n]...), b[icrc:m.End]...)
	h := rocev2.IPv4(out[m.L3Off:])
	h.SetTotalLen(h.TotalLen() - n)
	u := rocev2.UDP(out[m.L4Off:])
	u.SetLength(u.Length() - n)
	return out
}

// TestRandomBytes feeds random frames behind real Ethernet, IP and UDP
// headers, so that the bytes reach the BTH decoder; no input may panic.
func TestRandomBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := newParser()
	base := build(t, specFor(rocev2.RCSendOnly, v4A, v4B))
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), base[:42]...)
		tail := make([]byte, r.IntN(80))
		for j := range tail {
			tail[j] = byte(r.Uint32())
		}
		b = append(b, tail...)
		if i%2 == 1 {
			b = tail // and bare random frames
		}
		DCP = i%3 == 0
		decode(b, gopacket.Default)
		x.decode(b)
	}
	DCP = false
	var bth BTH
	var eth layers.Ethernet
	for _, dl := range []gopacket.DecodingLayer{&bth, &eth, &RETH{}, &NetRT{}, &Shim{}, &MACControl{}} {
		if err := dl.DecodeFromBytes(nil, gopacket.NilDecodeFeedback); err == nil {
			t.Errorf("%T decoded an empty slice", dl)
		}
	}
}
