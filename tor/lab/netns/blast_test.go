package netns

import (
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

// TestBlastMix builds every kind of forged frame, many times over with
// their random fields, and checks that rocev2's classifier — the
// switch's — sees each as the kind the blaster means, so that the soak
// exercises the switch's paths it claims to.
func TestBlastMix(t *testing.T) {
	me, peer := netip.MustParseAddr("10.0.1.2"), netip.MustParseAddr("10.0.2.2")
	b := newBlaster(1, rocev2.MAC{2, 0, 0, 0, 0, 1}, rocev2.MAC{2, 0, 0, 0, 0, 2}, me, peer)
	cls := rocev2.Classifier{DCP: true, VerifyICRC: true}
	for k := range numBlastKinds {
		t.Run(k.String(), func(t *testing.T) {
			for i := range 200 {
				f := b.frame(k)
				var m rocev2.Meta
				cls.Classify(f, &m)
				if msg := blastCheck(k, f, &m); msg != "" {
					t.Fatalf("frame %d (%d bytes): %s; meta %+v", i, len(f), msg, m)
				}
			}
		})
	}
	// The mix draws every kind about as often as its weight says.
	var n [numBlastKinds]int
	const draws = 20000
	for range draws {
		n[b.next()]++
	}
	for k := range numBlastKinds {
		want := draws * blastWeights[k] / b.total
		if n[k] < want*8/10 || n[k] > want*12/10 {
			t.Errorf("%s: drawn %d times in %d, want about %d", k, n[k], draws, want)
		}
	}
}

// blastCheck says what is wrong with frame f of kind k, as classified
// into m; "" if nothing.
func blastCheck(k blastKind, f []byte, m *rocev2.Meta) string {
	switch k {
	case blastRandom:
		if m.Kind != rocev2.KindRoCE || m.L4Off == 0 {
			return "not RoCEv2 (UDP 4791)"
		}
		if m.Reason == rocev2.ReasonNone {
			return "random bytes passed the ICRC check"
		}
	case blastTruncated:
		if m.Reason != rocev2.ReasonTruncated && m.Reason != rocev2.ReasonBadIPLength {
			return "not truncated: " + m.Reason.String()
		}
	case blastNetRTRequest, blastNetRTUnfulfil:
		want := uint8(rocev2.NetRTRequest)
		if k == blastNetRTUnfulfil {
			want = rocev2.NetRTUnfulfilled
		}
		if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone || m.Opcode != rocev2.NetRTOpcode ||
			m.Ext&rocev2.ExtNetRT == 0 || rocev2.NetRT(f[m.ExtOff(rocev2.ExtNetRT):]).Type() != want {
			return "not a well-formed NetRT message of its type"
		}
	case blastLLRData:
		if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone || m.ShimOff == 0 ||
			(m.ShimType != rocev2.ShimOriginal && m.ShimType != rocev2.ShimRetransmit) {
			return "not a well-formed RoCEv2 frame behind a data shim"
		}
	case blastLLRAck, blastLLRLoss, blastLLRSync, blastLLRProtect, blastLLRDummy:
		want := map[blastKind]uint8{blastLLRAck: rocev2.ShimAck, blastLLRLoss: rocev2.ShimLoss,
			blastLLRSync: rocev2.ShimSync, blastLLRProtect: rocev2.ShimProtect, blastLLRDummy: rocev2.ShimDummy}[k]
		if m.Kind != rocev2.KindLinkCtrl || m.Reason != rocev2.ReasonNone || m.ShimType != want {
			return "not a link control frame of its type"
		}
	case blastDCPPayload:
		if !m.HeaderOnly() || m.PayloadLen() == 0 {
			return "not a DCP header-only packet with payload"
		}
	case blastPFC, blastPause:
		op := uint16(rocev2.MACControlPFC)
		if k == blastPause {
			op = rocev2.MACControlPause
		}
		if m.Kind != rocev2.KindMACControl || m.Reason != rocev2.ReasonNone ||
			rocev2.MACControl(f[m.L3Off:]).Opcode() != op {
			return "not a MAC control frame of its opcode"
		}
	}
	return ""
}
