package rocev2_test

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

func TestDCPTag(t *testing.T) {
	names := []string{"none", "ack", "data", "header-only"}
	for tag := rocev2.DCPTag(0); tag < 4; tag++ {
		if tag.String() != names[tag] {
			t.Errorf("%d.String() = %q", tag, tag.String())
		}
		for dscp := uint8(0); dscp < 64; dscp++ {
			d := rocev2.WithTag(dscp, tag)
			if rocev2.TagOfDSCP(d) != tag || d>>2 != dscp>>2 {
				t.Errorf("WithTag(%d, %v) = %d", dscp, tag, d)
			}
		}
	}
	if rocev2.TagOfDSCP(0x2b) != rocev2.DCPHeaderOnly {
		t.Error("TagOfDSCP reads the two low bits")
	}
}

func TestDCPETH(t *testing.T) {
	b := bytes.Repeat([]byte{0xee}, rocev2.DCPLen)
	d := rocev2.DCPETH(b)
	d.Set(0xabcdef, 9, 0x123456)
	if d.MSN() != 0xabcdef || d.RetryNo() != 9 || d.SSN() != 0x123456 || b[7] != 0 {
		t.Fatalf("DCPETH read back %#x %d %#x, reserved %#x", d.MSN(), d.RetryNo(), d.SSN(), b[7])
	}
	if want := []byte{0xab, 0xcd, 0xef, 9, 0x12, 0x34, 0x56, 0}; !bytes.Equal(b, want) {
		t.Fatalf("DCPETH bytes % x, want % x", b, want)
	}
}

// fxWrapShim inserts a link shim between the Ethernet header (and tag) and
// TestSACKETH pins the SACK header's byte layout (docs/wire-formats.md).
func TestSACKETH(t *testing.T) {
	b := bytes.Repeat([]byte{0xee}, rocev2.SACKLen)
	x := rocev2.SACKETH(b)
	x.Set(0xabcdef, rocev2.SACKFNACK|rocev2.SACKLostOverflow, 7)
	if x.PSN() != 0xabcdef || x.Flags() != 3 || x.LostCnt() != 7 {
		t.Fatalf("SACKETH read back %v %#x %d", x.PSN(), x.Flags(), x.LostCnt())
	}
	if want := []byte{0xab, 0xcd, 0xef, 0x03, 0x07, 0, 0, 0}; !bytes.Equal(b, want) {
		t.Fatalf("SACKETH bytes % x, want % x", b, want)
	}
}

// TestSETH pins the SEND placement header's byte layout.
func TestSETH(t *testing.T) {
	b := bytes.Repeat([]byte{0xee}, rocev2.SETHLen)
	x := rocev2.SETH(b)
	x.Set(0x123456, 0x0789ab)
	if x.SSN() != 0x123456 || x.Index() != 0x0789ab {
		t.Fatalf("SETH read back %#x %#x", x.SSN(), x.Index())
	}
	if want := []byte{0x12, 0x34, 0x56, 0x07, 0x89, 0xab, 0, 0}; !bytes.Equal(b, want) {
		t.Fatalf("SETH bytes % x, want % x", b, want)
	}
}

// TestSACKMode checks what SACK mode changes: an RC ACK or NAK, DCP ACKs
// included, carries the SACKETH after its AETH; a returned DCP
// header-only packet (RC ACK without AETH), a read response (AETH, other
// opcode) and an atomic ACK do not; a standard ACK without the 8 bytes is
// ReasonBadLength in SACK mode, and a SACK ACK read without SACK mode is a
// standard ACK with 8 payload bytes.
func TestSACKMode(t *testing.T) {
	for _, c := range []struct {
		op   rocev2.Opcode
		tag  rocev2.DCPTag
		want bool
	}{
		{rocev2.RCAck, rocev2.DCPNone, true},
		{rocev2.RCAck, rocev2.DCPAck, true},
		{rocev2.RCAck, rocev2.DCPHeaderOnly, false},
		{rocev2.RCReadResponseFirst, rocev2.DCPNone, false},
		{rocev2.RCAtomicAck, rocev2.DCPNone, false},
		{rocev2.RCWriteFirst, rocev2.DCPNone, false},
	} {
		n := 0
		if c.op.HasPayload() && c.tag != rocev2.DCPHeaderOnly {
			n = 5
		}
		s := fxSpec(c.op, false, false, n)
		s.SACK = true
		if c.tag != rocev2.DCPNone {
			s.DCP, s.DSCP = true, rocev2.WithTag(24, c.tag)
		}
		b := fxBuild(t, s)
		m := fxCheck(t, rocev2.Classifier{DCP: s.DCP, SACK: true, VerifyICRC: true}, b, len(b), s)
		if got := m.Ext&rocev2.ExtSACK != 0; got != c.want {
			t.Errorf("%v tag %v: SACKETH %v, want %v", c.op, c.tag, got, c.want)
		}
		if !c.want {
			continue
		}
		if off := m.ExtOff(rocev2.ExtSACK); off != m.ExtOff(rocev2.ExtAETH)+rocev2.AETHLen {
			t.Errorf("%v tag %v: SACKETH at %d, AETH at %d", c.op, c.tag, off, m.ExtOff(rocev2.ExtAETH))
		}
		var std rocev2.Meta
		rocev2.Classifier{DCP: s.DCP, VerifyICRC: true}.Classify(b, &std)
		if std.Reason != rocev2.ReasonNone || std.Ext&rocev2.ExtSACK != 0 || std.PayloadLen() != rocev2.SACKLen {
			t.Errorf("%v tag %v without SACK mode: %v, ext %v, %d payload bytes", c.op, c.tag, std.Reason, std.Ext, std.PayloadLen())
		}
		s.SACK = false
		b = fxBuild(t, s)
		rocev2.Classifier{DCP: s.DCP, SACK: true}.Classify(b, &std)
		if std.Reason != rocev2.ReasonBadLength {
			t.Errorf("%v tag %v: ACK without SACKETH in SACK mode: %v, want bad_length", c.op, c.tag, std.Reason)
		}
	}
}

// the L3 header of frame.
func fxWrapShim(frame []byte, seq psn.Link, typ uint8) []byte {
	l2 := rocev2.Ethernet(frame).HeaderLen()
	inner := rocev2.Ethernet(frame).InnerType()
	out := append([]byte(nil), frame[:l2]...)
	out = append(out, make([]byte, rocev2.ShimLen)...)
	out = append(out, frame[l2:]...)
	rocev2.Ethernet(out).SetInnerType(rocev2.EtherTypeShim)
	rocev2.Shim(out[l2:]).Set(seq, typ, 0, inner)
	return out
}

// TestTrim trims DCP data packets of every payload-carrying opcode into
// header-only packets and classifies the result afresh.
func TestTrim(t *testing.T) {
	for _, o := range fxOps {
		if !o.payload || o.op == rocev2.CNP {
			continue
		}
		for _, v6 := range []bool{false, true} {
			for _, vlan := range []bool{false, true} {
				for _, shim := range []bool{false, true} {
					name := fmt.Sprintf("%s/v6=%v/vlan=%v/shim=%v", o.name, v6, vlan, shim)
					t.Run(name, func(t *testing.T) { fxTrimOne(t, o.op, v6, vlan, shim) })
				}
			}
		}
	}
}

func fxTrimOne(t *testing.T, op rocev2.Opcode, v6, vlan, shim bool) {
	s := fxSpec(op, v6, vlan, 1001)
	s.DCP, s.DSCP, s.ECN = true, rocev2.WithTag(44, rocev2.DCPData), 1
	b := fxBuild(t, s)
	if shim {
		b = fxWrapShim(b, psn.LinkOf(77, true), rocev2.ShimRetransmit)
	}
	c := rocev2.Classifier{DCP: true, VerifyICRC: true}
	var m rocev2.Meta
	c.Classify(b, &m)
	if m.Reason != rocev2.ReasonNone || m.Tag != rocev2.DCPData {
		t.Fatalf("data packet: %v tag %v", m.Reason, m.Tag)
	}
	orig := append([]byte(nil), b...)
	before := m
	n, err := rocev2.Trim(b, &m)
	if err != nil {
		t.Fatal(err)
	}
	l2 := 14
	if vlan {
		l2 = 18
	}
	if shim {
		l2 += rocev2.ShimLen
	}
	l3 := 20
	if v6 {
		l3 = 40
	}
	if want := l2 + l3 + 8 + 12 + 8 + 4; n != want {
		t.Errorf("header-only packet is %d bytes, want %d", n, want)
	}
	if !v6 && !vlan && !shim && n != 66 {
		t.Errorf("untagged IPv4 header-only packet is %d bytes, want 66", n)
	}
	var fresh rocev2.Meta
	c.Classify(b[:n], &fresh)
	if fresh.Reason != rocev2.ReasonNone {
		t.Fatalf("header-only packet: reason %v", fresh.Reason)
	}
	if fresh != m {
		t.Errorf("Trim's Meta %+v\ndiffers from a fresh Classify %+v", m, fresh)
	}
	if fresh.Tag != rocev2.DCPHeaderOnly || fresh.Ext != rocev2.ExtDCP || fresh.PayloadLen() != 0 || fresh.PadCount != 0 {
		t.Errorf("header-only packet: tag %v ext %v payload %d pad %d", fresh.Tag, fresh.Ext, fresh.PayloadLen(), fresh.PadCount)
	}
	var plain rocev2.Meta
	rocev2.Classifier{}.Classify(b[:n], &plain)
	if !fresh.HeaderOnly() || before.HeaderOnly() || plain.HeaderOnly() {
		t.Errorf("HeaderOnly: trimmed %v, data %v, trimmed without DCP parsing %v; want true, false, false",
			fresh.HeaderOnly(), before.HeaderOnly(), plain.HeaderOnly())
	}
	// What the sender needs from a header-only packet survives: flow,
	// opcode, PSN, the DCP header and the class bits of the DSCP.
	if fresh.Flow != before.Flow || fresh.Opcode != op || fresh.PSN != before.PSN || fresh.AckReq != before.AckReq ||
		fresh.DSCP>>2 != before.DSCP>>2 || fresh.ECN != before.ECN || fresh.SrcPort != before.SrcPort ||
		fresh.ShimOff != before.ShimOff || fresh.LinkSeq != before.LinkSeq || fresh.VID != before.VID {
		t.Errorf("trimmed %+v\nlost fields of %+v", fresh, before)
	}
	dcp := fresh.ExtOff(rocev2.ExtDCP)
	if !bytes.Equal(b[dcp:dcp+8], orig[dcp:dcp+8]) {
		t.Errorf("DCP header changed: % x, was % x", b[dcp:dcp+8], orig[dcp:dcp+8])
	}
	h, h0 := rocev2.BTH(b[fresh.BTHOff:]), rocev2.BTH(orig[before.BTHOff:])
	if h.SE() != h0.SE() || h.MigReq() != h0.MigReq() || h.PKey() != h0.PKey() || h.FECN() != h0.FECN() {
		t.Errorf("BTH flags changed")
	}
	if !bytes.Equal(b[:fresh.L3Off], orig[:fresh.L3Off]) {
		t.Errorf("Ethernet header or shim changed")
	}
	// Trimming an already trimmed packet, or a non-data one, is refused.
	if _, err := rocev2.Trim(b, &fresh); err != rocev2.ErrNotDCPData {
		t.Errorf("Trim of a header-only packet: %v, want ErrNotDCPData", err)
	}
}

func TestTrimRefuses(t *testing.T) {
	cases := []struct {
		name string
		tag  rocev2.DCPTag
		c    rocev2.Classifier
		edit func(b []byte, m *rocev2.Meta)
	}{
		{"standard packet", rocev2.DCPNone, rocev2.Classifier{DCP: true}, nil},
		{"DCP ACK", rocev2.DCPAck, rocev2.Classifier{DCP: true}, nil},
		{"header-only", rocev2.DCPHeaderOnly, rocev2.Classifier{DCP: true}, nil},
		{"DCP mode off", rocev2.DCPData, rocev2.Classifier{}, nil},
		{"bad ICRC", rocev2.DCPData, rocev2.Classifier{DCP: true, VerifyICRC: true}, func(b []byte, m *rocev2.Meta) {}},
		{"not RoCE", rocev2.DCPData, rocev2.Classifier{DCP: true}, func(b []byte, m *rocev2.Meta) { m.Kind = rocev2.KindIP }},
	}
	for _, c := range cases {
		s := fxSpec(rocev2.RCWriteMiddle, false, false, 64)
		if c.tag != rocev2.DCPNone {
			s.DCP = true
		}
		s.DSCP = rocev2.WithTag(8, c.tag)
		b := fxBuild(t, s)
		if c.name == "bad ICRC" {
			b[len(b)-10] ^= 1
		}
		var m rocev2.Meta
		c.c.Classify(b, &m)
		if c.edit != nil {
			c.edit(b, &m)
		}
		orig := append([]byte(nil), b...)
		if n, err := rocev2.Trim(b, &m); err != rocev2.ErrNotDCPData || n != 0 {
			t.Errorf("%s: Trim = %d, %v; want ErrNotDCPData", c.name, n, err)
		}
		if !bytes.Equal(b, orig) {
			t.Errorf("%s: a refused Trim changed the frame", c.name)
		}
	}
}

// TestNetRTBitmapEdges sends requests with the bitmap's edge bits set and
// checks where they land on the wire.
func TestNetRTBitmapEdges(t *testing.T) {
	cases := []struct {
		bits []int
		wire map[int]byte // byte offset in the NetRT header → value
	}{
		{[]int{0}, map[int]byte{19: 0x01}},
		{[]int{63}, map[int]byte{12: 0x80}},
		{[]int{64}, map[int]byte{11: 0x01}},
		{[]int{127}, map[int]byte{4: 0x80}},
		{[]int{0, 63, 64, 127}, map[int]byte{19: 0x01, 12: 0x80, 11: 0x01, 4: 0x80}},
		{nil, nil},
	}
	for _, c := range cases {
		var bm rocev2.Bitmap128
		for _, i := range c.bits {
			bm = bm.Set(i)
		}
		for _, v6 := range []bool{false, true} {
			s := fxSpec(rocev2.NetRTOpcode, v6, false, 0)
			s.Bitmap, s.NetRTPSN = bm, psn.Mask
			b := fxBuild(t, s)
			m := fxCheck(t, rocev2.Classifier{VerifyICRC: true}, b, len(b), s)
			h := b[m.ExtOff(rocev2.ExtNetRT):m.PayloadOff]
			if len(h) != rocev2.NetRTRequestLen || h[0] != rocev2.NetRTRequest || h[1] != 0xff || h[2] != 0xff || h[3] != 0xff {
				t.Fatalf("request header % x", h)
			}
			for i := 4; i < 20; i++ {
				if h[i] != c.wire[i] {
					t.Errorf("bits %v: byte %d = %#02x, want %#02x", c.bits, i, h[i], c.wire[i])
				}
			}
			got := rocev2.NetRT(h).Bitmap()
			for i := -1; i <= 128; i++ {
				want := false
				for _, j := range c.bits {
					want = want || i == j
				}
				if got.Has(i) != want {
					t.Errorf("bits %v: Has(%d) = %v", c.bits, i, got.Has(i))
				}
			}
			if got.Empty() != (len(c.bits) == 0) {
				t.Errorf("bits %v: Empty = %v", c.bits, got.Empty())
			}
		}
	}
}

func TestNetRTViews(t *testing.T) {
	b := bytes.Repeat([]byte{0x5a}, rocev2.NetRTRequestLen)
	n := rocev2.NetRT(b)
	n.SetUnfulfilled(0x123456)
	if n.Type() != rocev2.NetRTUnfulfilled || n.PSN() != 0x123456 || b[4] != 0x5a {
		t.Errorf("unfulfilled: type %d PSN %#x, byte 4 %#x (must stay untouched)", n.Type(), n.PSN(), b[4])
	}
	bm := rocev2.Bitmap128{Hi: 0x8000000000000001, Lo: 0x0123456789abcdef}
	n.SetRequest(0xabcdef, bm)
	if n.Type() != rocev2.NetRTRequest || n.PSN() != 0xabcdef || n.Bitmap() != bm {
		t.Errorf("request: type %d PSN %#x bitmap %+v", n.Type(), n.PSN(), n.Bitmap())
	}
	for typ, want := range map[uint8]int{0: 0, 1: 20, 2: 4, 3: 0, 255: 0} {
		if rocev2.NetRTLen(typ) != want {
			t.Errorf("NetRTLen(%d) = %d, want %d", typ, rocev2.NetRTLen(typ), want)
		}
	}
}

// fxBig converts a bitmap to the integer it stands for.
func fxBig(b rocev2.Bitmap128) *big.Int {
	x := new(big.Int).SetUint64(b.Hi)
	x.Lsh(x, 64)
	return x.Or(x, new(big.Int).SetUint64(b.Lo))
}

// TestBitmap128 compares Set, Has and Shift with math/big.
func TestBitmap128(t *testing.T) {
	edges := []struct{ in, out int }{{0, -1}, {1, 0}, {63, 62}, {64, 63}, {65, 64}, {127, 126}}
	for _, e := range edges {
		s := rocev2.Bitmap128{}.Set(e.in).Shift()
		for i := 0; i < 128; i++ {
			if s.Has(i) != (i == e.out) {
				t.Errorf("Set(%d).Shift().Has(%d) = %v", e.in, i, s.Has(i))
			}
		}
	}
	if !(rocev2.Bitmap128{}.Set(-1).Set(128).Set(1000)).Empty() {
		t.Error("Set out of range changed the bitmap")
	}
	r := rand.New(rand.NewSource(2))
	for k := 0; k < 5000; k++ {
		b := rocev2.Bitmap128{Hi: r.Uint64(), Lo: r.Uint64()}
		if k%3 == 0 {
			b.Hi = 0
		}
		x := fxBig(b)
		for i := 0; i < 128; i++ {
			if b.Has(i) != (x.Bit(i) == 1) {
				t.Fatalf("%+v.Has(%d) = %v", b, i, b.Has(i))
			}
		}
		i := r.Intn(128)
		if got, want := fxBig(b.Set(i)), new(big.Int).SetBit(x, i, 1); got.Cmp(want) != 0 {
			t.Fatalf("%+v.Set(%d) = %x, want %x", b, i, got, want)
		}
		if got, want := fxBig(b.Shift()), new(big.Int).Rsh(x, 1); got.Cmp(want) != 0 {
			t.Fatalf("%+v.Shift() = %x, want %x", b, got, want)
		}
		if b.Empty() != (x.Sign() == 0) {
			t.Fatalf("%+v.Empty() = %v", b, b.Empty())
		}
	}
}

// TestShim writes each shim type and checks that SetAck, ClearAck and
// SetSeq change only their own fields.
func TestShim(t *testing.T) {
	type want struct {
		seq    psn.Link
		typ    uint8
		count  uint8
		hasAck bool
		ack    psn.Link
		inner  uint16
	}
	check := func(step string, s rocev2.Shim, w want) {
		t.Helper()
		got := want{s.Seq(), s.Type(), s.Count(), s.HasAck(), s.Ack(), s.InnerType()}
		if got != w {
			t.Errorf("%s: %+v, want %+v", step, got, w)
		}
	}
	for typ := uint8(0); typ < 8; typ++ {
		for _, era := range []bool{false, true} {
			b := bytes.Repeat([]byte{0xff}, rocev2.ShimLen)
			s := rocev2.Shim(b)
			seq := psn.LinkOf(0xfffe, era)
			s.Set(seq, typ, 3, rocev2.EtherTypeIPv4)
			w := want{seq, typ, 3, false, 0, rocev2.EtherTypeIPv4}
			check("Set", s, w)
			if b[2]&0x18 != 0 {
				t.Errorf("Set left reserved bits %#x", b[2])
			}
			for _, ackEra := range []bool{true, false} {
				ack := psn.LinkOf(0x1234, ackEra)
				s.SetAck(ack)
				w.hasAck, w.ack = true, ack
				check("SetAck", s, w)
			}
			seq2 := psn.LinkOf(0x0001, !era)
			s.SetSeq(seq2, rocev2.ShimRetransmit)
			w.seq, w.typ = seq2, rocev2.ShimRetransmit
			check("SetSeq", s, w)
			s.SetAck(psn.LinkOf(0xffff, true))
			w.ack = psn.LinkOf(0xffff, true)
			check("SetAck after SetSeq", s, w)
			s.ClearAck()
			w.hasAck, w.ack = false, 0
			check("ClearAck", s, w)
			s.SetSeq(seq, typ)
			w.seq, w.typ = seq, typ
			check("SetSeq without ACK", s, w)
		}
	}
	names := []string{"original", "retransmit", "dummy", "ack", "loss", "watch", "protect", "sync"}
	for i, n := range names {
		if rocev2.ShimTypeName(uint8(i)) != n || rocev2.ShimTypeName(uint8(i+8)) != n {
			t.Errorf("ShimTypeName(%d) = %q, want %q", i, rocev2.ShimTypeName(uint8(i)), n)
		}
	}
}

// TestShimClassify classifies shim-wrapped RoCE frames (inner offsets, the
// ICRC still valid since it covers nothing before L3), link control shims
// and unknown shim types.
func TestShimClassify(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []bool{false, true} {
			for _, typ := range []uint8{rocev2.ShimOriginal, rocev2.ShimRetransmit} {
				s := fxSpec(rocev2.RCWriteFirst, v6, vlan, 100)
				plain := fxBuild(t, s)
				var pm rocev2.Meta
				rocev2.Classifier{}.Classify(plain, &pm)
				seq := psn.LinkOf(0xabcd, true)
				b := fxWrapShim(plain, seq, typ)
				var m rocev2.Meta
				rocev2.Classifier{VerifyICRC: true}.Classify(b, &m)
				l2 := uint16(14)
				if vlan {
					l2 = 18
				}
				want := pm
				want.ShimOff, want.ShimType, want.LinkSeq = l2, typ, seq
				want.L3Off += 8
				want.L4Off += 8
				want.BTHOff += 8
				want.PayloadOff += 8
				want.ICRCOff += 8
				want.End += 8
				if m != want {
					t.Errorf("v6=%v vlan=%v type %d:\n got %+v\nwant %+v", v6, vlan, typ, m, want)
				}
			}
		}
	}
	for typ := uint8(0); typ < 9; typ++ {
		b := fxBuild(t, fxSpec(rocev2.RCSendOnly, false, false, 4))
		var w rocev2.Meta
		e := rocev2.Ethernet(b)
		e.SetType(rocev2.EtherTypeShim)
		rocev2.Shim(b[14:]).Set(psn.LinkOf(9, false), typ&7, 5, 0)
		if typ == 8 {
			b[16] |= 0x08 // a reserved bit: a later version's shim
		}
		rocev2.Classifier{}.Classify(b, &w)
		switch typ {
		case rocev2.ShimOriginal, rocev2.ShimRetransmit, rocev2.ShimWatch:
			// Inner type 0: a frame the switch does not know.
			if w.Kind != rocev2.KindOther || w.Reason != rocev2.ReasonNone || w.ShimOff != 14 {
				t.Errorf("type %d, inner 0: %v/%v", typ, w.Kind, w.Reason)
			}
		case rocev2.ShimDummy, rocev2.ShimAck, rocev2.ShimLoss, rocev2.ShimProtect, rocev2.ShimSync:
			if w.Kind != rocev2.KindLinkCtrl || w.Reason != rocev2.ReasonNone || w.ShimType != typ || w.LinkSeq != 9 || w.ShimOff != 14 {
				t.Errorf("type %d: %+v, want link-ctrl", typ, w)
			}
		default:
			if w.Reason != rocev2.ReasonBadShim {
				t.Errorf("type %d: reason %v, want bad_shim", typ, w.Reason)
			}
		}
	}
}

// TestTrimIPv4Options trims a data packet whose IPv4 header has options:
// the header-only packet keeps them.
func TestTrimIPv4Options(t *testing.T) {
	for _, opt := range []int{4, 40} {
		s := fxSpec(rocev2.RCWriteFirst, false, false, 300)
		s.DCP, s.DSCP = true, rocev2.WithTag(20, rocev2.DCPData)
		b := fxBuild(t, s)
		c := rocev2.Classifier{DCP: true, VerifyICRC: true}
		var m rocev2.Meta
		c.Classify(b, &m)
		b = fxWithOptions(t, b, &m, opt)
		c.Classify(b, &m)
		n, err := rocev2.Trim(b, &m)
		if err != nil || n != 14+20+opt+8+12+8+4 {
			t.Fatalf("%d bytes of options: Trim = %d, %v", opt, n, err)
		}
		var fresh rocev2.Meta
		c.Classify(b[:n], &fresh)
		if fresh != m || fresh.Reason != rocev2.ReasonNone || rocev2.IPv4(b[14:]).HeaderLen() != 20+opt {
			t.Errorf("%d bytes of options: trimmed frame %+v, Trim's Meta %+v", opt, fresh, m)
		}
	}
}

func TestLossCode(t *testing.T) {
	for _, c := range []struct {
		rate float64
		code uint8
	}{{1e-3, 30}, {1e-8, 80}, {0.5, 3}, {1, 1}, {1e-30, 255}, {0, 255}, {2e-5, 47}} {
		if got := rocev2.LossCode(c.rate); got != c.code {
			t.Errorf("LossCode(%g) = %d, want %d", c.rate, got, c.code)
		}
	}
	if got := rocev2.LossOfCode(30); got < 0.999e-3 || got > 1.001e-3 {
		t.Errorf("LossOfCode(30) = %g, want 1e-3", got)
	}
	if rocev2.LossOfCode(0) != 0 {
		t.Error("LossOfCode(0) != 0")
	}
}
