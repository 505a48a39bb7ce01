package rocev2_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

// TestBuildClassify builds every opcode over IPv4 and IPv6, with and
// without a VLAN tag and with payloads of every pad count, and checks that
// Classify reads back every field.
func TestBuildClassify(t *testing.T) {
	for _, o := range fxOps {
		for _, v6 := range []bool{false, true} {
			for _, vlan := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/v6=%v/vlan=%v", o.name, v6, vlan), func(t *testing.T) {
					lens := []int{0}
					if o.payload {
						lens = []int{0, 1, 2, 3, 4, 257, 1024}
					}
					for _, n := range lens {
						s := fxSpec(o.op, v6, vlan, n)
						fxCheck(t, rocev2.Classifier{}, fxBuild(t, s), len(fxBuild(t, s)), s)
					}
				})
			}
		}
	}
}

// TestBuildClassifyOOOSACK builds every opcode in the OOO layout with
// SACK ACKs, over IPv4 and IPv6, and checks that Classify in OOO and SACK
// mode reads back every field: the RETH of every WRITE, the SETH of every
// SEND, the SACKETH of an ACK.
func TestBuildClassifyOOOSACK(t *testing.T) {
	for _, o := range fxOps {
		for _, v6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/v6=%v", o.name, v6), func(t *testing.T) {
				lens := []int{0}
				if o.payload {
					lens = []int{0, 3, 1024}
				}
				for _, n := range lens {
					s := fxSpec(o.op, v6, !v6, n)
					s.OOO, s.SACK = true, true
					b := fxBuild(t, s)
					m := fxCheck(t, rocev2.Classifier{OOO: true, SACK: true}, b, len(b), s)
					if o.op.IsSend() && m.Ext&rocev2.ExtSETH == 0 || o.op.IsWrite() && m.Ext&rocev2.ExtRETH == 0 {
						t.Errorf("%v: ext %v", o.op, m.Ext)
					}
				}
			})
		}
	}
}

// TestBuildClassifyNetRTUnfulfilled covers the 4-byte NetRT message.
func TestBuildClassifyNetRTUnfulfilled(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		s := fxSpec(rocev2.NetRTOpcode, v6, false, 0)
		s.NetRTType = rocev2.NetRTUnfulfilled
		b := fxBuild(t, s)
		m := fxCheck(t, rocev2.Classifier{}, b, len(b), s)
		if got := int(m.PayloadOff) - m.ExtOff(rocev2.ExtNetRT); got != rocev2.NetRTUnfulfilledLen {
			t.Errorf("unfulfilled NetRT header is %d bytes, want 4", got)
		}
	}
}

// TestBuildClassifyDCP builds DCP ACK, data and header-only packets of
// every opcode and classifies them with DCP mode on (the DCP header and the
// RETH of every WRITE are found) and off (the bytes are read as a standard
// packet of the same opcode, the DCP header counted as payload).
func TestBuildClassifyDCP(t *testing.T) {
	for _, o := range fxOps {
		for _, tag := range []rocev2.DCPTag{rocev2.DCPAck, rocev2.DCPData, rocev2.DCPHeaderOnly} {
			for _, v6 := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/v6=%v", o.name, tag, v6), func(t *testing.T) {
					n := 0
					if o.payload && tag != rocev2.DCPHeaderOnly {
						n = 37
					}
					s := fxSpec(o.op, v6, v6, n) // tag the IPv6 ones
					s.DCP, s.DSCP = true, rocev2.WithTag(40, tag)
					b := fxBuild(t, s)
					m := fxCheck(t, rocev2.Classifier{DCP: true}, b, len(b), s)
					if m.Tag != tag {
						t.Errorf("Tag = %v, want %v", m.Tag, tag)
					}

					// DCP mode off: a standard reading of the same bytes.
					var std rocev2.Meta
					rocev2.Classifier{VerifyICRC: true}.Classify(b, &std)
					wantStd, stdLen := rocev2.Ext(0), 0
					for _, x := range o.ext {
						wantStd |= x
						stdLen += fxExtLen(x, s.NetRTType)
					}
					room := int(m.ICRCOff) - int(m.BTHOff) - rocev2.BTHLen - int(m.PadCount)
					switch {
					case o.op == rocev2.NetRTOpcode:
						// The DCP header's MSN sits where the NetRT
						// type byte would be.
						if std.Reason != rocev2.ReasonBadNetRT {
							t.Fatalf("DCP off: reason %v, want bad_netrt", std.Reason)
						}
						return
					case room < stdLen:
						// A header-only packet is too short for the
						// opcode's standard headers.
						if std.Reason != rocev2.ReasonBadLength {
							t.Fatalf("DCP off: %d bytes for %d of headers: reason %v, want bad_length", room, stdLen, std.Reason)
						}
						return
					case std.Reason != rocev2.ReasonNone:
						t.Fatalf("DCP off: reason %v", std.Reason)
					}
					if std.Ext != wantStd || std.Tag != tag || std.ICRCOff != m.ICRCOff ||
						std.BTHOff != m.BTHOff || std.PSN != m.PSN || std.Flow != m.Flow {
						t.Errorf("DCP off: %+v, want ext %v and the DCP reading's offsets %+v", std, wantStd, m)
					}
					if wantStd&rocev2.ExtNetRT == 0 && int(std.PayloadOff) != int(std.BTHOff)+rocev2.BTHLen+wantStd.Len() {
						t.Errorf("DCP off: PayloadOff %d, want BTH+12+%d", std.PayloadOff, wantStd.Len())
					}
				})
			}
		}
	}
}

// TestBuildMasksFields checks that out-of-range Spec values are cut to
// their field widths rather than spilling into neighbouring fields.
func TestBuildMasksFields(t *testing.T) {
	s := fxSpec(rocev2.RCWriteOnlyImm, false, true, 3)
	s.VID, s.PCP, s.DSCP, s.ECN = 0xffff, 0xff, 0xff&^3, 0xff
	s.DestQP, s.PSN, s.FlowLabel = 0xffffffff, 0xffffffff, 0xffffffff
	b := fxBuild(t, s)
	fxCheck(t, rocev2.Classifier{}, b, len(b), s)

	s = fxSpec(rocev2.UDSendOnly, true, false, 3)
	s.SrcQP, s.FlowLabel, s.DSCP = 0xffffffff, 0xffffffff, 0x3c
	b = fxBuild(t, s)
	fxCheck(t, rocev2.Classifier{}, b, len(b), s)
}

// TestBuildDefaults checks the defaults the zero values select.
func TestBuildDefaults(t *testing.T) {
	s := fxSpec(rocev2.RCSendOnly, false, false, 8)
	s.TTL, s.PKey, s.SrcPort, s.DestQP = 0, 0, 0, 0x123456
	b := fxBuild(t, s)
	m := fxCheck(t, rocev2.Classifier{}, b, len(b), s)
	if ttl := rocev2.IPv4(b[m.L3Off:]).TTL(); ttl != 64 {
		t.Errorf("default TTL %d, want 64", ttl)
	}
	if k := rocev2.BTH(b[m.BTHOff:]).PKey(); k != 0xffff {
		t.Errorf("default P_Key %#x, want 0xffff", k)
	}
	if m.SrcPort != 0xc000|0x3456 {
		t.Errorf("default source port %#x, want %#x", m.SrcPort, 0xc000|0x3456)
	}
}

// TestBuildIPv4Mapped accepts IPv4-mapped IPv6 addresses as IPv4.
func TestBuildIPv4Mapped(t *testing.T) {
	s := fxSpec(rocev2.RCSendOnly, false, false, 4)
	s.SrcIP = netip.AddrFrom16(fxV4Src.As16())
	b := fxBuild(t, s)
	m := fxCheck(t, rocev2.Classifier{}, b, len(b), s)
	if m.IPVersion != 4 {
		t.Fatalf("IPv4-mapped source built as IPv%d", m.IPVersion)
	}
}

// TestBuildReusesBuffer builds an untagged frame into a buffer that held a
// tagged one: nothing of the old frame may survive.
func TestBuildReusesBuffer(t *testing.T) {
	buf := make([]byte, 2048)
	for i := range buf {
		buf[i] = 0xa5
	}
	tagged := fxSpec(rocev2.RCWriteFirst, true, true, 100)
	if _, err := rocev2.Build(buf, tagged); err != nil {
		t.Fatal(err)
	}
	for _, v6 := range []bool{false, true} {
		s := fxSpec(rocev2.RCSendOnly, v6, false, 5)
		n, err := rocev2.Build(buf, s)
		if err != nil {
			t.Fatal(err)
		}
		fxCheck(t, rocev2.Classifier{}, buf, n, s)
	}
	// The shortest frame is padded to 60 bytes with zeros.
	s := fxSpec(rocev2.RCSendOnly, false, false, 0)
	n, err := rocev2.Build(buf, s)
	if err != nil || n != rocev2.MinFrameLen {
		t.Fatalf("Build = %d, %v; want 60 (58 bytes padded)", n, err)
	}
	fxCheck(t, rocev2.Classifier{}, buf, n, s)
}

func TestBuildErrors(t *testing.T) {
	v4, v6 := fxV4Src, fxV6Src
	cases := []struct {
		name string
		edit func(*rocev2.Spec)
		want error
	}{
		{"v4 to v6", func(s *rocev2.Spec) { s.SrcIP, s.DstIP = v4, v6 }, rocev2.ErrAddrFamily},
		{"v6 to v4", func(s *rocev2.Spec) { s.SrcIP, s.DstIP = v6, v4 }, rocev2.ErrAddrFamily},
		{"no source", func(s *rocev2.Spec) { s.SrcIP = netip.Addr{} }, rocev2.ErrAddrFamily},
		{"no destination", func(s *rocev2.Spec) { s.DstIP = netip.Addr{} }, rocev2.ErrAddrFamily},
		{"DCP tag 00", func(s *rocev2.Spec) { s.DCP, s.DSCP = true, 24 }, rocev2.ErrDCPTag},
		{"NetRT type 0", func(s *rocev2.Spec) { s.Opcode, s.NetRTType = rocev2.NetRTOpcode, 0 }, rocev2.ErrNetRTType},
		{"NetRT type 3", func(s *rocev2.Spec) { s.Opcode, s.NetRTType = rocev2.NetRTOpcode, 3 }, rocev2.ErrNetRTType},
		{"DCP NetRT type 9", func(s *rocev2.Spec) {
			s.Opcode, s.NetRTType, s.DCP, s.DSCP = rocev2.NetRTOpcode, 9, true, 2
		}, rocev2.ErrNetRTType},
		{"IPv4 datagram over 65535", func(s *rocev2.Spec) { s.Payload = make([]byte, 65535-20-8-12-16-4+1) }, rocev2.ErrTooLong},
		{"frame over 65535", func(s *rocev2.Spec) {
			s.VLAN, s.Payload = true, make([]byte, 65535-18-20-8-12-16-4+1)
		}, rocev2.ErrTooLong},
	}
	buf := make([]byte, 1<<17)
	for _, c := range cases {
		s := fxSpec(rocev2.RCWriteFirst, false, false, 16)
		c.edit(s)
		if n, err := rocev2.Build(buf, s); !errors.Is(err, c.want) || n != 0 {
			t.Errorf("%s: Build = %d, %v; want %v", c.name, n, err, c.want)
		}
	}

	// The longest frame Meta can describe still builds and classifies
	// (with its pad, a frame is 18+20+8+12+16+4 bytes plus a multiple of
	// four: 65534 at most).
	s := fxSpec(rocev2.RCWriteFirst, false, true, 65456)
	n, err := rocev2.Build(buf, s)
	if err != nil || n != 65534 {
		t.Fatalf("65535-byte frame: Build = %d, %v", n, err)
	}
	fxCheck(t, rocev2.Classifier{}, buf, n, s)

	// Every buffer shorter than the frame is refused, and left alone.
	s = fxSpec(rocev2.RCWriteOnlyImm, true, true, 33)
	need := len(fxBuild(t, s))
	for l := 0; l < need; l++ {
		b := make([]byte, l)
		if n, err := rocev2.Build(b, s); err != rocev2.ErrShortBuffer || n != 0 {
			t.Fatalf("Build into %d of %d bytes = %d, %v; want ErrShortBuffer", l, need, n, err)
		}
		for _, x := range b {
			if x != 0 {
				t.Fatalf("Build into %d bytes wrote before failing", l)
			}
		}
	}
	short := fxSpec(rocev2.RCSendOnly, false, false, 0) // 58 bytes, padded to 60
	if _, err := rocev2.Build(make([]byte, 59), short); err != rocev2.ErrShortBuffer {
		t.Errorf("59-byte buffer for a padded 60-byte frame: %v, want ErrShortBuffer", err)
	}
}
