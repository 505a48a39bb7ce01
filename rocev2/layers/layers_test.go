package layers

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"rocetor/rocev2"
)

// decode decodes b as gopacket.NewPacket does for a tool, except that a
// panic in a decoder is not turned into an error layer but fails the test.
func decode(b []byte, opt gopacket.DecodeOptions) gopacket.Packet {
	opt.SkipDecodeRecovery = true
	return gopacket.NewPacket(b, layers.LayerTypeEthernet, opt)
}

// parser is a DecodingLayerParser over every layer a rocetor link carries.
type parser struct {
	eth     layers.Ethernet
	dot1q   layers.Dot1Q
	shim    Shim
	ip4     layers.IPv4
	ip6     layers.IPv6
	udp     layers.UDP
	bth     BTH
	mac     MACControl
	payload gopacket.Payload
	p       *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
}

func newParser() *parser {
	x := &parser{}
	x.bth.SetNetworkLayers(&x.ip4, &x.ip6)
	x.p = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet,
		&x.eth, &x.dot1q, &x.shim, &x.ip4, &x.ip6, &x.udp, &x.bth, &x.mac, &x.payload)
	x.p.IgnorePanic = true // a decoder panic must crash the test, not become an error
	return x
}

func (x *parser) decode(b []byte) error { return x.p.DecodeLayers(b, &x.decoded) }

func (x *parser) has(lt gopacket.LayerType) bool {
	for _, d := range x.decoded {
		if d == lt {
			return true
		}
	}
	return false
}

// withDCP runs f with the package's DCP option set to on.
func withDCP(on bool, f func()) {
	old := DCP
	DCP = on
	defer func() { DCP = old }()
	f()
}

// checkBTH compares every field of a decoded BTH, present headers and
// absent ones alike, with the Spec the frame was built from.
func checkBTH(t *testing.T, s *rocev2.Spec, b *BTH) {
	t.Helper()
	pkey := s.PKey
	if pkey == 0 {
		pkey = 0xffff
	}
	ext := s.Opcode.Ext()
	if s.DCP {
		ext = s.Opcode.DCPExt(rocev2.TagOfDSCP(s.DSCP))
	}
	type field struct {
		name      string
		got, want any
	}
	fs := []field{
		{"opcode", b.Opcode, s.Opcode}, {"SE", b.SE, s.SE}, {"MigReq", b.MigReq, s.MigReq},
		{"P_Key", b.PKey, pkey}, {"FECN", b.FECN, s.FECN}, {"BECN", b.BECN, s.BECN},
		{"DestQP", b.DestQP, s.DestQP}, {"AckReq", b.AckReq, s.AckReq}, {"PSN", b.PSN, s.PSN},
		{"pad", int(b.PadCount), -len(s.Payload) & 3}, {"ext", b.Ext, ext},
		{"DSCP", b.DSCP, s.DSCP}, {"tag", b.DCPTag, rocev2.TagOfDSCP(s.DSCP)},
		{"payload", string(b.Payload), string(s.Payload)},
		{"ICRC checked", b.ICRCChecked, true}, {"ICRC valid", b.ICRCValid, true},
	}
	// want returns v if header x is present, else the zero value: a
	// header the opcode does not carry must stay empty.
	want := func(x rocev2.Ext, v any) any {
		if ext&x != 0 {
			return v
		}
		switch v.(type) {
		case uint8:
			return uint8(0)
		case uint32:
			return uint32(0)
		case uint64:
			return uint64(0)
		case rocev2.Syndrome:
			return rocev2.Syndrome(0)
		}
		return nil
	}
	fs = append(fs,
		field{"DCP MSN", b.DCPETH.MSN, want(rocev2.ExtDCP, s.MSN)},
		field{"DCP retry", b.DCPETH.RetryNo, want(rocev2.ExtDCP, s.Retry)},
		field{"DCP SSN", b.DCPETH.SSN, want(rocev2.ExtDCP, s.SSN)},
		field{"Q_Key", b.DETH.QKey, want(rocev2.ExtDETH, s.QKey)},
		field{"SrcQP", b.DETH.SrcQP, want(rocev2.ExtDETH, s.SrcQP)},
		field{"RETH VA", b.RETH.VA, want(rocev2.ExtRETH, s.VA)},
		field{"RETH R_Key", b.RETH.RKey, want(rocev2.ExtRETH, s.RKey)},
		field{"DMALen", b.RETH.DMALen, want(rocev2.ExtRETH, s.DMALen)},
		field{"atomic VA", b.AtomicETH.VA, want(rocev2.ExtAtomicETH, s.VA)},
		field{"atomic R_Key", b.AtomicETH.RKey, want(rocev2.ExtAtomicETH, s.RKey)},
		field{"swap/add", b.AtomicETH.SwapAdd, want(rocev2.ExtAtomicETH, s.SwapAdd)},
		field{"compare", b.AtomicETH.Compare, want(rocev2.ExtAtomicETH, s.Compare)},
		field{"syndrome", b.AETH.Syndrome, want(rocev2.ExtAETH, s.Syndrome)},
		field{"AETH MSN", b.AETH.MSN, want(rocev2.ExtAETH, s.AckMSN)},
		field{"orig data", b.AtomicAck.OrigData, want(rocev2.ExtAtomicAck, s.OrigData)},
		field{"imm", b.ImmDt.Value, want(rocev2.ExtImmDt, s.Imm)},
		field{"IETH R_Key", b.IETH.RKey, want(rocev2.ExtIETH, s.RKey)},
		field{"FETH", b.FETH.Selectivity, want(rocev2.ExtFETH, s.FETH)},
	)
	if ext&rocev2.ExtNetRT != 0 {
		bm := s.Bitmap
		if s.NetRTType != rocev2.NetRTRequest {
			bm = rocev2.Bitmap128{}
		}
		fs = append(fs, field{"NetRT type", b.NetRT.Type, s.NetRTType},
			field{"NetRT PSN", b.NetRT.PSN, s.NetRTPSN}, field{"bitmap", b.NetRT.Bitmap, bm})
	} else {
		fs = append(fs, field{"NetRT", b.NetRT.Type, uint8(0)})
	}
	for _, f := range fs {
		if f.got != f.want {
			t.Errorf("%s: got %v, want %v", f.name, f.got, f.want)
		}
	}
}

func checkShim(t *testing.T, want *shimSpec, s *Shim) {
	t.Helper()
	if s.Seq != want.seq || s.Type != want.typ || !s.HasAck || s.Ack != want.ack || s.Count != want.count {
		t.Errorf("shim: got seq=%v type=%v ack=%v/%v count=%v, want seq=%v type=%v ack=%v count=%v",
			s.Seq, s.Type, s.HasAck, s.Ack, s.Count, want.seq, want.typ, want.ack, want.count)
	}
}

// extLayerType maps each extension header to its layer type.
var extLayerType = map[rocev2.Ext]gopacket.LayerType{
	rocev2.ExtDCP: LayerTypeDCPETH, rocev2.ExtDETH: LayerTypeDETH, rocev2.ExtRETH: LayerTypeRETH,
	rocev2.ExtAtomicETH: LayerTypeAtomicETH, rocev2.ExtAETH: LayerTypeAETH,
	rocev2.ExtAtomicAck: LayerTypeAtomicAckETH, rocev2.ExtImmDt: LayerTypeImmDt,
	rocev2.ExtIETH: LayerTypeIETH, rocev2.ExtFETH: LayerTypeFETH, rocev2.ExtNetRT: LayerTypeNetRT,
}

// TestPacket decodes every kind of RoCEv2 frame the project builds with
// gopacket.NewPacket and checks each field, the layer sequence and the
// payload against what was built.
func TestPacket(t *testing.T) {
	for _, f := range roceFrames(t) {
		t.Run(f.name, func(t *testing.T) {
			withDCP(f.dcp, func() {
				p := decode(f.b, gopacket.Default)
				if e := p.ErrorLayer(); e != nil {
					t.Fatalf("decode error: %v", e.Error())
				}
				b, ok := p.Layer(LayerTypeBTH).(*BTH)
				if !ok {
					t.Fatalf("no BTH layer in %v", p)
				}
				checkBTH(t, f.spec, b)
				// After the BTH come the extension headers in wire
				// order, then the payload, and nothing else.
				var want []gopacket.LayerType
				for x := rocev2.Ext(1); x <= rocev2.ExtNetRT; x <<= 1 { // wire order
					if b.Ext&x != 0 {
						want = append(want, extLayerType[x])
					}
				}
				if len(f.spec.Payload) > 0 {
					want = append(want, gopacket.LayerTypePayload)
				}
				var got []gopacket.LayerType
				ls := p.Layers()
				for i, l := range ls {
					if l.LayerType() == LayerTypeBTH {
						for _, l := range ls[i+1:] {
							got = append(got, l.LayerType())
						}
					}
				}
				if len(got) != len(want) {
					t.Fatalf("layers after BTH: got %v, want %v", got, want)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("layers after BTH: got %v, want %v", got, want)
					}
				}
				if a := p.ApplicationLayer(); len(f.spec.Payload) > 0 && (a == nil || !bytes.Equal(a.Payload(), f.spec.Payload)) {
					t.Errorf("application layer: got %v, want payload %q", a, f.spec.Payload)
				}
				if f.shim != nil {
					s, ok := p.Layer(LayerTypeShim).(*Shim)
					if !ok {
						t.Fatalf("no shim layer in %v", p)
					}
					checkShim(t, f.shim, s)
				}
			})
		})
	}
}

// TestDecodingLayerParser decodes the same frames with one reused
// DecodingLayerParser, as a capture tool would: the BTH must get its DSCP
// and ICRC from whichever IP layer decoded this frame, never a stale one.
func TestDecodingLayerParser(t *testing.T) {
	x := newParser()
	for _, f := range roceFrames(t) {
		t.Run(f.name, func(t *testing.T) {
			withDCP(f.dcp, func() {
				if err := x.decode(f.b); err != nil {
					t.Fatalf("decode: %v (decoded %v)", err, x.decoded)
				}
				if !x.has(LayerTypeBTH) {
					t.Fatalf("no BTH among %v", x.decoded)
				}
				checkBTH(t, f.spec, &x.bth)
				if len(f.spec.Payload) > 0 && !bytes.Equal(x.payload, f.spec.Payload) {
					t.Errorf("payload layer: got %q, want %q", x.payload, f.spec.Payload)
				}
				if f.shim != nil {
					checkShim(t, f.shim, &x.shim)
				}
			})
		})
	}
}

// TestDCPOption checks that the DCP extension header is read only when
// the option is set: without it a DCP data packet is plain RoCEv2 whose
// payload starts with the DCP header.
func TestDCPOption(t *testing.T) {
	s := specFor(rocev2.RCWriteMiddle, v4A, v4B)
	s.DCP, s.DSCP, s.MSN = true, rocev2.WithTag(24, rocev2.DCPData), 77
	b := build(t, s)
	p := decode(b, gopacket.Default)
	bth := p.Layer(LayerTypeBTH).(*BTH)
	if bth.Ext != 0 || p.Layer(LayerTypeDCPETH) != nil || len(bth.Payload) != rocev2.DCPLen+rocev2.RETHLen+len(s.Payload) {
		t.Errorf("DCP off: ext=%v payload %d bytes, want no headers and %d bytes", bth.Ext, len(bth.Payload), rocev2.DCPLen+rocev2.RETHLen+len(s.Payload))
	}
	if bth.DCPTag != rocev2.DCPData {
		t.Errorf("DCP off: tag %v, want data (reported even when not acted on)", bth.DCPTag)
	}
	withDCP(true, func() {
		p := decode(b, gopacket.Default)
		d, ok := p.Layer(LayerTypeDCPETH).(*DCPETH)
		if !ok || d.MSN != 77 || p.Layer(LayerTypeRETH) == nil {
			t.Errorf("DCP on: DCPETH %v, RETH %v; want MSN 77 and a RETH in a middle WRITE", d, p.Layer(LayerTypeRETH))
		}
	})
	// On the DecodingLayer path without linked IP layers the caller
	// supplies the DSCP.
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var udp layers.UDP
	var h BTH
	dlp := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &udp, &h)
	dlp.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	withDCP(true, func() {
		h.DSCP = s.DSCP
		if err := dlp.DecodeLayers(b, &decoded); err != nil {
			t.Fatal(err)
		}
	})
	if h.Ext&rocev2.ExtDCP == 0 || h.DCPETH.MSN != 77 || h.ICRCChecked {
		t.Errorf("caller-set DSCP: ext=%v MSN=%d ICRCChecked=%v; want DCPETH with MSN 77, ICRC unchecked", h.Ext, h.DCPETH.MSN, h.ICRCChecked)
	}
}

// TestICRC checks that a corrupted byte under the ICRC is reported, that
// the fields a router may change (masked in the ICRC) are not, and that
// lazy decoding finds the IP header as well.
func TestICRC(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		src, dst := v4A, v4B
		if v6 {
			src, dst = v6A, v6B
		}
		s := specFor(rocev2.RCSendOnly, src, dst)
		good := build(t, s)
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(good, &m)

		bad := bytes.Clone(good)
		bad[m.PayloadOff] ^= 0x40
		routed := bytes.Clone(good)
		routed[m.BTHOff+4] |= 0x80 // FECN, masked
		if v6 {
			routed[m.L3Off+7]-- // hop limit, masked
		} else {
			h := rocev2.IPv4(routed[m.L3Off:])
			h.SetTTL(h.TTL() - 1)
		}
		for _, c := range []struct {
			name string
			b    []byte
			ok   bool
			opt  gopacket.DecodeOptions
		}{
			{"good", good, true, gopacket.Default},
			{"lazy", good, true, gopacket.Lazy},
			{"corrupt payload", bad, false, gopacket.Default},
			{"ECN and TTL rewritten", routed, true, gopacket.Default},
		} {
			p := decode(c.b, c.opt)
			b, ok := p.Layer(LayerTypeBTH).(*BTH)
			if !ok {
				t.Fatalf("v6=%v %s: no BTH: %v", v6, c.name, p)
			}
			if !b.ICRCChecked || b.ICRCValid != c.ok {
				t.Errorf("v6=%v %s: ICRCChecked=%v ICRCValid=%v, want checked and %v", v6, c.name, b.ICRCChecked, b.ICRCValid, c.ok)
			}
		}
	}
}

// TestLinkAndMACControl decodes the frames without a BTH: shim-only link
// control packets end at the shim; PFC and PAUSE decode into MACControl.
func TestLinkAndMACControl(t *testing.T) {
	x := newParser()
	for _, f := range otherFrames(t) {
		t.Run(f.name, func(t *testing.T) {
			p := decode(f.b, gopacket.Default)
			if e := p.ErrorLayer(); e != nil {
				t.Fatalf("decode error: %v", e.Error())
			}
			if err := x.decode(f.b); err != nil {
				t.Fatalf("parser: %v", err)
			}
			if f.shim != nil {
				s, ok := p.Layer(LayerTypeShim).(*Shim)
				if !ok || len(p.Layers()) != 2 {
					t.Fatalf("want Ethernet and shim only, got %v", p)
				}
				checkShim(t, f.shim, s)
				checkShim(t, f.shim, &x.shim)
				return
			}
			c, ok := p.Layer(LayerTypeMACControl).(*MACControl)
			if !ok {
				t.Fatalf("no MACControl layer: %v", p)
			}
			var want MACControl
			if f.name == "pfc" {
				want = MACControl{Opcode: rocev2.MACControlPFC, ClassEnable: 0x09, Times: [8]uint16{100, 0, 0, 0xffff, 0, 0, 0, 7}}
			} else {
				want = MACControl{Opcode: rocev2.MACControlPause, PauseTime: 0x1234}
			}
			for _, got := range []*MACControl{c, &x.mac} {
				if got.Opcode != want.Opcode || got.PauseTime != want.PauseTime || got.ClassEnable != want.ClassEnable || got.Times != want.Times {
					t.Errorf("got %+v, want %+v", *got, want)
				}
			}
			if f.name == "pfc" && !c.IsPFC() {
				t.Error("IsPFC false for a PFC frame")
			}
		})
	}
}

// TestStandalone decodes extension headers on their own, as a user
// starting a packet at one of them would.
func TestStandalone(t *testing.T) {
	var r [rocev2.RETHLen + 3]byte
	rocev2.RETH(r[:]).Set(0x1000, 0x2000, 0x3000)
	copy(r[rocev2.RETHLen:], "abc")
	p := gopacket.NewPacket(r[:], LayerTypeRETH, gopacket.DecodeOptions{SkipDecodeRecovery: true})
	h, ok := p.Layer(LayerTypeRETH).(*RETH)
	if !ok || h.VA != 0x1000 || h.RKey != 0x2000 || h.DMALen != 0x3000 || string(p.ApplicationLayer().Payload()) != "abc" {
		t.Errorf("RETH: got %v", p)
	}
	var n [rocev2.NetRTUnfulfilledLen]byte
	rocev2.NetRT(n[:]).SetUnfulfilled(99)
	p = gopacket.NewPacket(n[:], LayerTypeNetRT, gopacket.DecodeOptions{SkipDecodeRecovery: true})
	if h, ok := p.Layer(LayerTypeNetRT).(*NetRT); !ok || h.Type != rocev2.NetRTUnfulfilled || h.PSN != 99 {
		t.Errorf("NetRT: got %v", p)
	}
	n[0] = 9
	var nr NetRT
	var de *DecodeError
	if err := nr.DecodeFromBytes(n[:], gopacket.NilDecodeFeedback); !errors.As(err, &de) || de.Reason != rocev2.ReasonBadNetRT {
		t.Errorf("NetRT type 9: got %v, want bad_netrt", err)
	}
}

// TestParserAllocs checks that the DecodingLayer path, ICRC check
// included, allocates nothing once warm: a capture tool can decode at line
// rate without feeding the garbage collector.
func TestParserAllocs(t *testing.T) {
	x := newParser()
	b := build(t, specFor(rocev2.RCWriteOnlyImm, v6A, v6B))
	x.decode(b)
	if n := testing.AllocsPerRun(100, func() { x.decode(b) }); n != 0 || !x.bth.ICRCValid {
		t.Errorf("%v allocations per frame (ICRC valid %v), want 0", n, x.bth.ICRCValid)
	}
}
