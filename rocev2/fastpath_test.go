package rocev2

import (
	"net/netip"
	"testing"
)

// fastFrames are frames at and near v4RoCE's common case: IPv4 RoCEv2
// of several opcodes and lengths, one with a VLAN tag, one IPv6.
func fastFrames(t testing.TB) [][]byte {
	v4s, v4d := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.1")
	specs := []Spec{
		{SrcIP: v4s, DstIP: v4d, Opcode: RCWriteMiddle, DestQP: 7, PSN: 9, Payload: make([]byte, 1000), DSCP: 26, ECN: 2},
		{SrcIP: v4s, DstIP: v4d, Opcode: RCAck, DestQP: 3, AckReq: true},
		{SrcIP: v4s, DstIP: v4d, Opcode: RCSendOnly, DestQP: 5, Payload: make([]byte, 3)},
		{SrcIP: v4s, DstIP: v4d, Opcode: RCWriteOnlyImm, DestQP: 6, Payload: make([]byte, 17), AckReq: true, PSN: 0xabcdef},
		{SrcIP: v4s, DstIP: v4d, Opcode: NetRTOpcode, NetRTType: NetRTRequest, DestQP: 4},
		{SrcIP: v4s, DstIP: v4d, Opcode: NetRTOpcode, NetRTType: NetRTUnfulfilled, DestQP: 4},
		{SrcIP: v4s, DstIP: v4d, Opcode: RCWriteOnly, DestQP: 1, Payload: make([]byte, 300), VLAN: true, VID: 5},
		{SrcIP: netip.MustParseAddr("fd00::1"), DstIP: netip.MustParseAddr("fd00::2"), Opcode: RCWriteFirst, DestQP: 2, Payload: make([]byte, 64)},
	}
	var out [][]byte
	for i := range specs {
		b := make([]byte, 2048)
		n, err := Build(b, &specs[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[:n])
	}
	return out
}

// fastAgrees fails when Classify (through v4RoCE where it applies)
// gives other than the general path alone, under every classifier.
func fastAgrees(t *testing.T, b []byte) {
	t.Helper()
	for _, c := range []Classifier{{}, {VerifyICRC: true}, {VerifyICRC: true, owned: true}, {DCP: true}, {OOO: true}, {SACK: true}} {
		var got, want Meta
		c.Classify(b, &got)
		c.general(b, &want)
		if got != want {
			t.Fatalf("%+v on % x:\nfast    %+v\ngeneral %+v", c, b[:min(len(b), 64)], got, want)
		}
	}
}

// TestClassifyFastPath checks that the common frame takes v4RoCE, and
// that Classify agrees with the general parser on every frame that
// differs from the common ones in one header byte (with the IPv4
// checksum left wrong, and set right), and on every truncation: every
// way out of v4RoCE, to the general parser or to bth, is taken.
func TestClassifyFastPath(t *testing.T) {
	frames := fastFrames(t)
	var m Meta
	if c := (Classifier{}); !c.v4RoCE(frames[0], &m) || m.Kind != KindRoCE || m.PSN != 9 {
		t.Fatalf("the common frame missed the fast path: %+v", m)
	}
	for _, f := range frames {
		fastAgrees(t, f)
		for n := 0; n <= 80; n++ {
			fastAgrees(t, f[:n])
		}
		fastAgrees(t, f[:len(f)-1])
		for i := 0; i < min(len(f), 66); i++ {
			for _, x := range []byte{0x01, 0x10, 0x40, 0x80, 0xff} {
				g := append([]byte(nil), f...)
				g[i] ^= x
				fastAgrees(t, g)
				if len(g) >= 34 && g[12] == 0x08 && g[13] == 0x00 && g[14] == 0x45 {
					IPv4(g[14:]).SetChecksum()
					fastAgrees(t, g)
				}
			}
		}
	}
}

// FuzzClassifyFast compares Classify with the general parser alone.
func FuzzClassifyFast(f *testing.F) {
	for _, b := range fastFrames(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fastAgrees(t, b)
		if len(b) >= 34 && b[12] == 0x08 && b[13] == 0x00 && b[14] == 0x45 {
			g := append([]byte(nil), b...)
			IPv4(g[14:]).SetChecksum()
			fastAgrees(t, g)
		}
	})
}

// TestFlowKeyEqual: Equal is ==, for equal keys and for keys that differ
// in any one byte of either address or of the QP.
func TestFlowKeyEqual(t *testing.T) {
	k := FlowKey{QP: 0x123456}
	for i := range k.Src {
		k.Src[i], k.Dst[i] = byte(i+1), byte(2*i+3)
	}
	o := k
	if !k.Equal(&o) {
		t.Fatal("a key differs from its copy")
	}
	for i := 0; i < 36; i++ {
		o := k
		switch {
		case i < 16:
			o.Src[i] ^= 0x80
		case i < 32:
			o.Dst[i-16] ^= 0x01
		default:
			o.QP ^= 1 << (8 * (i - 32))
		}
		if k.Equal(&o) || k == o {
			t.Errorf("byte %d: Equal %v, == %v; want both false", i, k.Equal(&o), k == o)
		}
	}
}
