package rocev2_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// fxFrame builds a frame and returns it with its Meta.
func fxFrame(tb testing.TB, op rocev2.Opcode, v6, vlan bool, n int) ([]byte, rocev2.Meta) {
	b := fxBuild(tb, fxSpec(op, v6, vlan, n))
	var m rocev2.Meta
	rocev2.Classifier{VerifyICRC: true}.Classify(b, &m)
	if m.Reason != rocev2.ReasonNone {
		tb.Fatalf("fresh %v frame: %v", op, m.Reason)
	}
	return b, m
}

// fxSetIPLen rewrites the IP length of frame (described by m) so that the
// datagram ends at end, keeping the IPv4 checksum valid.
func fxSetIPLen(b []byte, m *rocev2.Meta, end int) {
	if m.IPVersion == 4 {
		rocev2.IPv4(b[m.L3Off:]).SetTotalLen(end - int(m.L3Off))
	} else {
		rocev2.IPv6(b[m.L3Off:]).SetPayloadLen(end - int(m.L3Off) - rocev2.IPv6Len)
	}
}

// fxSetUDPLen makes the UDP datagram and the IP datagram end at end.
func fxSetUDPLen(b []byte, m *rocev2.Meta, end int) {
	fxSetIPLen(b, m, end)
	rocev2.UDP(b[m.L4Off:]).SetLength(end - int(m.L4Off))
}

// TestReasons crafts a frame for every drop reason and checks the Reason,
// how far parsing got (Kind), and that every reason has a name.
func TestReasons(t *testing.T) {
	type tc struct {
		name string
		c    rocev2.Classifier
		b    []byte
		kind rocev2.Kind
		want rocev2.Reason
	}
	var cases []tc
	add := func(name string, c rocev2.Classifier, b []byte, kind rocev2.Kind, want rocev2.Reason) {
		cases = append(cases, tc{name, c, b, kind, want})
	}
	plain := rocev2.Classifier{}
	verify := rocev2.Classifier{VerifyICRC: true}
	frame := func(op rocev2.Opcode, v6, vlan bool, n int) ([]byte, rocev2.Meta) { return fxFrame(t, op, v6, vlan, n) }

	// Truncated at each header boundary and inside each header.
	b4, m4 := frame(rocev2.RCWriteFirst, false, false, 64)
	b6, m6 := frame(rocev2.RCWriteFirst, true, true, 64)
	for n := 0; n < 14; n++ {
		add("ethernet cut", plain, b4[:n], rocev2.KindOther, rocev2.ReasonTruncated)
	}
	for n := 14; n < 18; n++ {
		add("vlan tag cut", plain, b6[:n], rocev2.KindOther, rocev2.ReasonTruncated)
	}
	for n := 14; n < 34; n++ {
		add("ipv4 header cut", plain, b4[:n], rocev2.KindIP, rocev2.ReasonTruncated)
	}
	for n := 18; n < 58; n++ {
		add("ipv6 header cut", plain, b6[:n], rocev2.KindIP, rocev2.ReasonTruncated)
	}
	shimmed := fxWrapShim(b4, psn.LinkOf(1, false), rocev2.ShimOriginal)
	for n := 14; n < 22; n++ {
		add("shim cut", plain, shimmed[:n], rocev2.KindOther, rocev2.ReasonTruncated)
	}
	// A frame cut after the IP header: the IP length now overshoots.
	for _, n := range []int{34, 41, 42, 53, 54, 57, len(b4) - 1} {
		add("ip datagram cut", plain, b4[:n], rocev2.KindIP, rocev2.ReasonBadIPLength)
	}
	// Lengths that agree with each other but end inside UDP or the BTH.
	for _, end := range []int{34, 35, 41} {
		b := append([]byte(nil), b4...)
		fxSetIPLen(b, &m4, end)
		add("udp header cut", plain, b, rocev2.KindIP, rocev2.ReasonTruncated)
	}
	for _, end := range []int{42, 50, 53, 57} { // BTH 12 + ICRC 4 need 58
		b := append([]byte(nil), b4...)
		fxSetUDPLen(b, &m4, end)
		add("bth cut", plain, b, rocev2.KindRoCE, rocev2.ReasonTruncated)
	}
	pfc := make([]byte, 60)
	rocev2.BuildPFC(pfc, fxSrcMAC, 1, [8]uint16{})
	add("pfc cut", plain, pfc[:33], rocev2.KindMACControl, rocev2.ReasonTruncated)
	add("mac control cut", plain, pfc[:17], rocev2.KindMACControl, rocev2.ReasonTruncated)

	// Link shim.
	{
		b := append([]byte(nil), shimmed...)
		b[16] |= 0x10 // a reserved bit: a later version's shim
		add("shim reserved bits", plain, b, rocev2.KindOther, rocev2.ReasonBadShim)
	}

	// IP headers.
	{
		b := append([]byte(nil), b4...)
		b[14] = 0x65
		add("ipv4 with version 6", plain, b, rocev2.KindIP, rocev2.ReasonBadIPVersion)
		b = append([]byte(nil), b6...)
		b[18] = 0x46
		add("ipv6 with version 4", plain, b, rocev2.KindIP, rocev2.ReasonBadIPVersion)
		for ihl := byte(0); ihl < 5; ihl++ {
			b = append([]byte(nil), b4...)
			b[14] = 0x40 | ihl
			add("ihl below 5", plain, b, rocev2.KindIP, rocev2.ReasonBadIPHeader)
		}
		b = append([]byte(nil), b4...)
		b[14] = 0x4f // a 60-byte header; lengths are checked before the checksum
		rocev2.IPv4(b[14:]).SetTotalLen(59)
		add("total length below ihl", plain, b, rocev2.KindIP, rocev2.ReasonBadIPLength)
		b = append([]byte(nil), b4...)
		rocev2.IPv4(b[14:]).SetTotalLen(19)
		add("total length below 20", plain, b, rocev2.KindIP, rocev2.ReasonBadIPLength)
		b = append([]byte(nil), b4...)
		rocev2.IPv4(b[14:]).SetTotalLen(len(b) - 14 + 1)
		add("total length past the frame", plain, b, rocev2.KindIP, rocev2.ReasonBadIPLength)
		b = append([]byte(nil), b6...)
		rocev2.IPv6(b[18:]).SetPayloadLen(len(b) - 18 - 40 + 1)
		add("ipv6 payload past the frame", plain, b, rocev2.KindIP, rocev2.ReasonBadIPLength)
		b = append([]byte(nil), b4...)
		b[14+10] ^= 0x01
		add("ipv4 checksum", plain, b, rocev2.KindIP, rocev2.ReasonBadIPChecksum)
		b = append([]byte(nil), b4...)
		b[14+12] ^= 0x80 // source address: covered by the checksum
		add("ipv4 source changed", plain, b, rocev2.KindIP, rocev2.ReasonBadIPChecksum)
	}

	// UDP length.
	for _, ul := range []int{0, 7} {
		b := append([]byte(nil), b4...)
		rocev2.UDP(b[m4.L4Off:]).SetLength(ul)
		add("udp length below 8", plain, b, rocev2.KindRoCE, rocev2.ReasonBadUDPLength)
	}
	{
		b := append([]byte(nil), b6...)
		rocev2.UDP(b[m6.L4Off:]).SetLength(int(m6.End-m6.L4Off) + 1)
		add("udp length past the ip payload", plain, b, rocev2.KindRoCE, rocev2.ReasonBadUDPLength)
	}

	// BTH.
	for _, tver := range []byte{1, 8, 15} {
		b := append([]byte(nil), b4...)
		b[m4.BTHOff+1] |= tver
		add("tver", plain, b, rocev2.KindRoCE, rocev2.ReasonBadTVer)
	}
	for _, op := range []byte{0x15, 0x1a, 0x1e, 0x1f, 0x2c, 0x40, 0x4a, 0x60, 0x66, 0x80, 0x82, 0xc1, 0xff} {
		b := append([]byte(nil), b4...)
		b[m4.BTHOff] = op
		add("unknown opcode", plain, b, rocev2.KindRoCE, rocev2.ReasonUnknownOpcode)
	}

	// Lengths after the BTH.
	{
		ack, ma := frame(rocev2.RCAck, false, false, 0)
		for pad := byte(1); pad < 4; pad++ {
			b := append([]byte(nil), ack...)
			b[ma.BTHOff+1] |= pad << 4
			add("pad with no payload", plain, b, rocev2.KindRoCE, rocev2.ReasonBadLength)
		}
		b := append([]byte(nil), b4...)
		fxSetUDPLen(b, &m4, int(m4.BTHOff)+12+15+4) // RETH needs 16
		add("reth cut", plain, b, rocev2.KindRoCE, rocev2.ReasonBadLength)
		b = append([]byte(nil), b6...)
		fxSetUDPLen(b, &m6, int(m6.BTHOff)+12+16+4) // RETH fits exactly
		rocev2.RefreshICRC(b, plain)
		add("reth exactly", verify, b, rocev2.KindRoCE, rocev2.ReasonNone)

		nr, mn := frame(rocev2.NetRTOpcode, false, false, 0)
		for _, typ := range []byte{0, 3, 0xff} {
			b = append([]byte(nil), nr...)
			b[mn.ExtOff(rocev2.ExtNetRT)] = typ
			add("netrt type", plain, b, rocev2.KindRoCE, rocev2.ReasonBadNetRT)
		}
		b = append([]byte(nil), nr...)
		fxSetUDPLen(b, &mn, int(mn.BTHOff)+12+4) // no room for the type byte
		add("netrt without type", plain, b, rocev2.KindRoCE, rocev2.ReasonBadLength)
		b = append([]byte(nil), nr...)
		fxSetUDPLen(b, &mn, int(mn.BTHOff)+12+19+4) // request needs 20
		add("netrt request cut", plain, b, rocev2.KindRoCE, rocev2.ReasonBadLength)
		b = append([]byte(nil), nr...)
		b[mn.ExtOff(rocev2.ExtNetRT)] = rocev2.NetRTUnfulfilled // shorter: the rest is payload
		add("netrt unfulfilled in a longer packet", plain, b, rocev2.KindRoCE, rocev2.ReasonNone)

		// DCP: with DCP mode on, a WRITE MIDDLE carries DCP header + RETH.
		s := fxSpec(rocev2.RCWriteMiddle, false, false, 0)
		s.DSCP = rocev2.WithTag(8, rocev2.DCPData)
		b = fxBuild(t, s) // built as a standard packet: only 0 bytes of payload
		add("dcp headers missing", rocev2.Classifier{DCP: true}, b, rocev2.KindRoCE, rocev2.ReasonBadLength)
		add("same frame, dcp mode off", plain, b, rocev2.KindRoCE, rocev2.ReasonNone)
	}

	// ICRC.
	// IP ID, source address, UDP source port, PSN, payload, the ICRC.
	for _, off := range []int{14 + 4, 14 + 12, int(m4.L4Off), int(m4.BTHOff) + 11, int(m4.PayloadOff), int(m4.ICRCOff)} {
		b := append([]byte(nil), b4...)
		b[off] ^= 0x10
		if off < int(m4.L4Off) { // keep the IP header valid: test the ICRC alone
			rocev2.IPv4(b[14:]).SetChecksum()
		}
		add("icrc", verify, b, rocev2.KindRoCE, rocev2.ReasonBadICRC)
		add("icrc not verified", plain, b, rocev2.KindRoCE, rocev2.ReasonNone)
	}

	seen := make(map[rocev2.Reason]bool)
	for _, c := range cases {
		var m rocev2.Meta
		c.c.Classify(c.b, &m)
		if m.Reason != c.want || m.Kind != c.kind {
			t.Errorf("%s (%d bytes): %v/%v, want %v/%v", c.name, len(c.b), m.Kind, m.Reason, c.kind, c.want)
		}
		seen[m.Reason] = true
	}
	// ReasonNotRoCE comes from RefreshICRC.
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], rocev2.EtherTypeARP)
	if r := rocev2.RefreshICRC(arp, plain); r != rocev2.ReasonNotRoCE {
		t.Errorf("RefreshICRC(ARP) = %v, want not_roce", r)
	} else {
		seen[r] = true
	}
	for r := rocev2.Reason(0); r < rocev2.NumReasons; r++ {
		if !seen[r] {
			t.Errorf("no test frame reaches %v", r)
		}
	}
}

// TestEveryPrefixRejected cuts well-formed frames at every length short of
// their IP datagram's end: none may classify as well formed, none may
// panic.
func TestEveryPrefixRejected(t *testing.T) {
	for _, o := range []rocev2.Opcode{rocev2.RCWriteOnlyImm, rocev2.RCAck, rocev2.NetRTOpcode, rocev2.UDSendOnlyImm} {
		for _, v6 := range []bool{false, true} {
			for _, vlan := range []bool{false, true} {
				b, m := fxFrame(t, o, v6, vlan, 13)
				for _, c := range []rocev2.Classifier{{}, {VerifyICRC: true}, {DCP: true}} {
					for n := 0; n < int(m.End); n++ {
						var p rocev2.Meta
						c.Classify(b[:n], &p)
						if p.Reason == rocev2.ReasonNone {
							t.Errorf("%v v6=%v vlan=%v cut to %d of %d bytes classified well formed", o, v6, vlan, n, m.End)
						}
					}
				}
			}
		}
	}
}

// TestNotRoCE: frames the switch forwards without parsing RoCE.
func TestNotRoCE(t *testing.T) {
	b, m := fxFrame(t, rocev2.RCSendOnly, false, false, 40)
	cases := []struct {
		name string
		edit func(b []byte)
		kind rocev2.Kind
	}{
		{"arp", func(b []byte) { binary.BigEndian.PutUint16(b[12:], rocev2.EtherTypeARP) }, rocev2.KindOther},
		{"lldp", func(b []byte) { binary.BigEndian.PutUint16(b[12:], rocev2.EtherTypeLLDP) }, rocev2.KindOther},
		{"other udp port", func(b []byte) { rocev2.UDP(b[m.L4Off:]).SetDstPort(4792) }, rocev2.KindIP},
		{"tcp", func(b []byte) { b[m.L3Off+9] = 6; rocev2.IPv4(b[m.L3Off:]).SetChecksum() }, rocev2.KindIP},
		{"first fragment", func(b []byte) { b[m.L3Off+6] |= 0x20; rocev2.IPv4(b[m.L3Off:]).SetChecksum() }, rocev2.KindIP},
		{"later fragment", func(b []byte) { b[m.L3Off+7] = 1; rocev2.IPv4(b[m.L3Off:]).SetChecksum() }, rocev2.KindIP},
	}
	for _, c := range cases {
		f := append([]byte(nil), b...)
		c.edit(f)
		var p rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &p)
		if p.Kind != c.kind || p.Reason != rocev2.ReasonNone {
			t.Errorf("%s: %v/%v, want %v/none", c.name, p.Kind, p.Reason, c.kind)
		}
		if p.Kind == rocev2.KindIP && (p.L3Off != m.L3Off || p.End != m.End || p.Flow.Src != m.Flow.Src || p.BTHOff != 0) {
			t.Errorf("%s: IP fields %+v", c.name, p)
		}
		if r := rocev2.RefreshICRC(f, rocev2.Classifier{}); r != rocev2.ReasonNotRoCE {
			t.Errorf("%s: RefreshICRC = %v, want not_roce", c.name, r)
		}
	}
	b6, m6 := fxFrame(t, rocev2.RCSendOnly, true, false, 40)
	b6[m6.L3Off+6] = 6 // TCP
	var p rocev2.Meta
	rocev2.Classifier{}.Classify(b6, &p)
	if p.Kind != rocev2.KindIP || p.Reason != rocev2.ReasonNone || p.IPVersion != 6 {
		t.Errorf("IPv6 TCP: %v/%v", p.Kind, p.Reason)
	}
}

func TestNames(t *testing.T) {
	names := make(map[string]bool)
	for r := rocev2.Reason(0); r < rocev2.NumReasons; r++ {
		s := r.String()
		if s == "" || strings.HasPrefix(s, "reason") || strings.ContainsAny(s, " -ABCDEFGHIJKLMNOPQRSTUVWXYZ") || names[s] {
			t.Errorf("Reason %d has name %q: want a unique lower_snake metric label", r, s)
		}
		names[s] = true
	}
	for r, want := range map[rocev2.Reason]string{
		rocev2.ReasonNone: "none", rocev2.ReasonTruncated: "truncated", rocev2.ReasonBadICRC: "bad_icrc",
		rocev2.ReasonNotRoCE: "not_roce", rocev2.NumReasons: "reason14", 255: "reason255",
	} {
		if r.String() != want {
			t.Errorf("Reason(%d).String() = %q, want %q", r, r.String(), want)
		}
	}
	for k, want := range map[rocev2.Kind]string{
		rocev2.KindOther: "other", rocev2.KindIP: "ip", rocev2.KindRoCE: "roce",
		rocev2.KindMACControl: "mac-control", rocev2.KindLinkCtrl: "link-ctrl", 9: "kind9",
	} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}
