package layers

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// FuzzDecode decodes arbitrary frames on both gopacket paths, with DCP
// off and on. Nothing may panic; and wherever the switch's classifier
// takes a RoCEv2 packet that gopacket decoded as far as UDP, the BTH layer
// must agree with it: the same fields and ICRC verdict when it accepts the
// packet, the same reason when it rejects the transport headers. The seed
// corpus is every frame the other tests build, plus the malformed ones in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, fr := range append(roceFrames(f), otherFrames(f)...) {
		f.Add(fr.b)
	}
	x := newParser()
	f.Fuzz(func(t *testing.T, b []byte) {
		// A mutation almost always breaks the IPv4 checksum, which stops
		// the classifier before the transport headers; repair it so that
		// the comparison below is reached.
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(b, &m)
		if m.Reason == rocev2.ReasonBadIPChecksum {
			b = bytes.Clone(b)
			rocev2.IPv4(b[m.L3Off:]).SetChecksum()
		}
		for _, dcp := range []bool{false, true} {
			withDCP(dcp, func() {
				p := decode(b, gopacket.Default)
				err := x.decode(b)
				var m rocev2.Meta
				rocev2.Classifier{VerifyICRC: true, DCP: dcp}.Classify(b, &m)
				if m.Kind != rocev2.KindRoCE {
					return
				}
				// gopacket hands an empty UDP payload to no decoder, so a
				// BTH that is not there at all is no error of ours.
				if u, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok && len(u.Payload) > 0 {
					agree(t, "packet", b, &m, p.Layer(LayerTypeBTH), p.ErrorLayer())
				}
				if x.has(layers.LayerTypeUDP) && len(x.udp.Payload) > 0 {
					var bth gopacket.Layer
					if x.has(LayerTypeBTH) {
						bth = &x.bth
					}
					agree(t, "parser", b, &m, bth, err)
				}
			})
		}
	})
}

// agree checks a decoded BTH (or the decode error) against the
// classifier's verdict on the same frame.
func agree(t *testing.T, path string, b []byte, m *rocev2.Meta, l gopacket.Layer, failure any) {
	t.Helper()
	switch m.Reason {
	case rocev2.ReasonNone, rocev2.ReasonBadICRC:
		bth, ok := l.(*BTH)
		if !ok {
			t.Fatalf("%s: classifier accepts (%v), no BTH decoded; error %v", path, m.Reason, failure)
		}
		payload := b[m.PayloadOff : int(m.PayloadOff)+m.PayloadLen()]
		if bth.Opcode != m.Opcode || bth.PSN != m.PSN || bth.DestQP != m.Flow.QP || bth.Ext != m.Ext ||
			bth.PadCount != m.PadCount || bth.AckReq != m.AckReq || !bytes.Equal(bth.Payload, payload) ||
			!bth.ICRCChecked || bth.ICRCValid != (m.Reason == rocev2.ReasonNone) {
			t.Fatalf("%s: BTH %+v\ndisagrees with classifier %+v", path, bth, m)
		}
	case rocev2.ReasonTruncated, rocev2.ReasonBadTVer, rocev2.ReasonUnknownOpcode, rocev2.ReasonBadLength, rocev2.ReasonBadNetRT:
		var err error
		switch e := failure.(type) {
		case gopacket.ErrorLayer:
			err = e.Error()
		case error:
			err = e
		}
		var de *DecodeError
		if !errors.As(err, &de) || de.Layer != LayerTypeBTH || de.Reason != m.Reason {
			t.Fatalf("%s: classifier rejects with %v, decoding gave %v", path, m.Reason, failure)
		}
	}
}
