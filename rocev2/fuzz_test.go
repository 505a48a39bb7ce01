package rocev2_test

// Fuzz targets. Run one with
//
//	go test -run '^$' -fuzz '^FuzzClassify$' -fuzztime 60s -parallel 1 ./rocev2/
//
// or all of them with scripts/fuzz.sh (make fuzz), which also copies new
// corpus entries into testdata/fuzz. Without -fuzz, go test runs the seeds
// below and the committed corpus as ordinary tests.

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"net/netip"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// fxSeedFrames returns one frame of every kind the classifier knows, well
// formed, for the fuzz corpora.
func fxSeedFrames(tb testing.TB) [][]byte {
	var out [][]byte
	for i, o := range fxOps {
		v6, vlan := i%2 == 1, i%3 == 0
		n := 0
		if o.payload {
			n = i * 3
		}
		out = append(out, fxBuild(tb, fxSpec(o.op, v6, vlan, n)))
	}
	for _, tag := range []rocev2.DCPTag{rocev2.DCPAck, rocev2.DCPData, rocev2.DCPHeaderOnly} {
		for _, op := range []rocev2.Opcode{rocev2.RCWriteFirst, rocev2.RCWriteMiddle, rocev2.RCSendLastImm, rocev2.RCAck, rocev2.NetRTOpcode} {
			s := fxSpec(op, tag == rocev2.DCPAck, tag == rocev2.DCPData, 9)
			s.DCP, s.DSCP = true, rocev2.WithTag(8, tag)
			out = append(out, fxBuild(tb, s))
		}
	}
	for _, op := range []rocev2.Opcode{rocev2.RCWriteMiddle, rocev2.RCSendLastImm, rocev2.RCSendOnlyInvalidate} {
		s := fxSpec(op, false, true, 17)
		s.OOO = true
		out = append(out, fxBuild(tb, s))
	}
	for _, dcp := range []bool{false, true} {
		s := fxSpec(rocev2.RCAck, dcp, !dcp, 0)
		s.SACK = true
		if dcp {
			s.DCP, s.DSCP = true, rocev2.WithTag(8, rocev2.DCPAck)
		}
		out = append(out, fxBuild(tb, s))
	}
	s := fxSpec(rocev2.NetRTOpcode, false, false, 0)
	s.NetRTType = rocev2.NetRTUnfulfilled
	out = append(out, fxBuild(tb, s))
	w := fxBuild(tb, fxSpec(rocev2.RCWriteOnly, false, true, 33))
	out = append(out, fxWrapShim(w, psn.LinkOf(0xffff, true), rocev2.ShimRetransmit))
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(w, &m)
	out = append(out, fxWithOptions(tb, w, &m, 12))
	ctrl := make([]byte, 60)
	rocev2.Ethernet(ctrl).SetType(rocev2.EtherTypeShim)
	rocev2.Shim(ctrl[14:]).Set(psn.LinkOf(5, false), rocev2.ShimAck, 0, 0)
	rocev2.Shim(ctrl[14:]).SetAck(psn.LinkOf(4, true))
	out = append(out, ctrl)
	pfc := make([]byte, 60)
	rocev2.BuildPFC(pfc, fxSrcMAC, 0x88, [8]uint16{3: 0xffff, 7: 1})
	pause := make([]byte, 60)
	rocev2.BuildPause(pause, fxSrcMAC, 0x1234)
	arp := make([]byte, 60)
	rocev2.Ethernet(arp).SetType(rocev2.EtherTypeARP)
	return append(out, pfc, pause, arp)
}

var fxClassifiers = []rocev2.Classifier{{}, {VerifyICRC: true}, {DCP: true}, {DCP: true, VerifyICRC: true},
	{SACK: true}, {SACK: true, VerifyICRC: true}, {DCP: true, SACK: true},
	{OOO: true, SACK: true}, {OOO: true, SACK: true, VerifyICRC: true}, {DCP: true, OOO: true}}

// fxCheckMeta asserts what a well-formed Meta promises about frame b:
// every offset inside the frame and in order, every extension header
// between the BTH and the payload.
func fxCheckMeta(t *testing.T, c rocev2.Classifier, b []byte, m *rocev2.Meta) {
	t.Helper()
	l2ok := func(off uint16) bool {
		for _, l2 := range []uint16{14, 18, 22, 26} { // tag and shim, each optional
			if off == l2 {
				return true
			}
		}
		return false
	}
	if m.ShimOff != 0 && (m.ShimOff != 14 && m.ShimOff != 18 || int(m.ShimOff)+rocev2.ShimLen > len(b)) {
		t.Fatalf("ShimOff %d in a %d-byte frame", m.ShimOff, len(b))
	}
	switch m.Kind {
	case rocev2.KindLinkCtrl:
		if m.ShimOff == 0 || m.ShimType < rocev2.ShimDummy || m.ShimType > rocev2.ShimSync || m.ShimType == rocev2.ShimWatch {
			t.Fatalf("link control frame: %+v", m)
		}
	case rocev2.KindMACControl:
		c := rocev2.MACControl(b[m.L3Off:])
		if int(m.L3Off)+rocev2.PauseLen > len(b) {
			t.Fatalf("MAC control frame of %d bytes", len(b))
		}
		if c.Opcode() == rocev2.MACControlPFC {
			_ = c.Time(7) // must be within the frame
		}
	case rocev2.KindIP, rocev2.KindRoCE:
		hl := 20
		if m.IPVersion == 6 {
			hl = 40
		}
		if !l2ok(m.L3Off) || int(m.L3Off)+hl > int(m.End) || int(m.End) > len(b) || (m.IPVersion != 4 && m.IPVersion != 6) {
			t.Fatalf("IP offsets L3 %d End %d IPv%d in %d bytes", m.L3Off, m.End, m.IPVersion, len(b))
		}
	}
	if m.Kind != rocev2.KindRoCE {
		if m.BTHOff != 0 || m.Ext != 0 {
			t.Fatalf("%v frame with transport fields: %+v", m.Kind, m)
		}
		return
	}
	if !(m.L3Off < m.L4Off && int(m.L4Off)+rocev2.UDPLen == int(m.BTHOff) &&
		int(m.BTHOff)+rocev2.BTHLen <= int(m.PayloadOff) &&
		int(m.PayloadOff)+int(m.PadCount) <= int(m.ICRCOff) &&
		int(m.ICRCOff)+rocev2.ICRCLen <= int(m.End) && m.PayloadLen() >= 0) {
		t.Fatalf("RoCE offsets out of order: %+v in %d bytes", m, len(b))
	}
	want := m.Opcode.Ext()
	if c.DCP && m.Tag != rocev2.DCPNone {
		want = m.Opcode.DCPExt(m.Tag)
	}
	if c.OOO && !(c.DCP && m.Tag == rocev2.DCPHeaderOnly) {
		switch {
		case m.Opcode.IsWrite():
			want |= rocev2.ExtRETH
		case m.Opcode.IsSend():
			want |= rocev2.ExtSETH
		}
	}
	if c.SACK && m.Opcode == rocev2.RCAck && want&rocev2.ExtAETH != 0 {
		want |= rocev2.ExtSACK
	}
	if !m.Opcode.Known() || m.Ext != want || m.PadCount > 3 {
		t.Fatalf("opcode %v with ext %v, want %v", m.Opcode, m.Ext, want)
	}
	h := rocev2.BTH(b[m.BTHOff:])
	if h.Opcode() != m.Opcode || h.PSN() != m.PSN || h.DestQP() != m.Flow.QP || h.TVer() != 0 {
		t.Fatalf("Meta disagrees with the BTH")
	}
	end := int(m.BTHOff) + rocev2.BTHLen
	for x := rocev2.Ext(1); x <= rocev2.ExtNetRT; x <<= 1 {
		if m.Ext&x == 0 {
			if m.ExtOff(x) != 0 {
				t.Fatalf("ExtOff(%v) = %d for an absent header", x, m.ExtOff(x))
			}
			continue
		}
		off := m.ExtOff(x)
		if off != end {
			t.Fatalf("ExtOff(%v) = %d, want %d (right after the previous header)", x, off, end)
		}
		if x == rocev2.ExtNetRT {
			end += rocev2.NetRTLen(b[off])
		} else {
			end += x.Len()
		}
	}
	if end != int(m.PayloadOff) {
		t.Fatalf("headers end at %d, payload at %d", end, m.PayloadOff)
	}
	if c.VerifyICRC && m.ComputeICRC(b) != m.ICRC(b) {
		t.Fatalf("ICRC verified but wrong")
	}
}

// FuzzClassify: Classify never panics, never writes to the frame, is
// deterministic, ClassifyOwned agrees with it and leaves the frame as it
// was, and a well-formed Meta keeps its promises in all four
// modes; verifying the ICRC changes nothing but the Reason, and SetICRC
// makes a well-formed RoCE frame verify.
func FuzzClassify(f *testing.F) {
	for _, b := range fxSeedFrames(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fxClassifyChecks(t, b)
		// Most mutations of an IPv4 header break its checksum and stop
		// parsing there; fix it up so that the deeper layers see them too.
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(b, &m)
		if m.Reason == rocev2.ReasonBadIPChecksum {
			fixed := append([]byte(nil), b...)
			rocev2.IPv4(fixed[m.L3Off:]).SetChecksum()
			fxClassifyChecks(t, fixed)
		}
	})
}

// fxClassifyChecks runs FuzzClassify's checks on one frame.
func fxClassifyChecks(t *testing.T, b []byte) {
	orig := append([]byte(nil), b...)
	for _, c := range fxClassifiers {
		var m, again rocev2.Meta
		c.Classify(b, &m)
		c.Classify(b, &again)
		if m != again {
			t.Fatalf("%+v: two runs differ:\n%+v\n%+v", c, m, again)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("%+v: Classify wrote to the frame", c)
		}
		var owned rocev2.Meta
		if c.ClassifyOwned(b, &owned); owned != m {
			t.Fatalf("%+v: ClassifyOwned differs from Classify:\n%+v\n%+v", c, owned, m)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("%+v: ClassifyOwned left the frame changed", c)
		}
		// With spare capacity (garbage) after the frame, ClassifyOwned
		// may pad its ICRC pass with zeros there (icrcVerifyOwned).
		sp := fxWithSpare(b)
		if c.ClassifyOwned(sp, &owned); owned != m {
			t.Fatalf("%+v: ClassifyOwned with spare capacity differs from Classify:\n%+v\n%+v", c, owned, m)
		}
		if !bytes.Equal(sp, orig) {
			t.Fatalf("%+v: ClassifyOwned with spare capacity left the frame changed", c)
		}
		if m.Reason >= rocev2.NumReasons || m.Kind > rocev2.KindLinkCtrl {
			t.Fatalf("reason %d kind %d out of range", m.Reason, m.Kind)
		}
		if m.Reason == rocev2.ReasonNone {
			fxCheckMeta(t, c, b, &m)
		}
		if c.VerifyICRC {
			continue
		}
		var v rocev2.Meta
		c.VerifyICRC = true
		c.Classify(b, &v)
		if v.Reason == rocev2.ReasonBadICRC {
			v.Reason = rocev2.ReasonNone
		}
		if v != m {
			t.Fatalf("VerifyICRC changed more than the reason:\n%+v\n%+v", v, m)
		}
		if m.Kind == rocev2.KindRoCE && m.Reason == rocev2.ReasonNone {
			fixed := append([]byte(nil), b...)
			m.SetICRC(fixed)
			c.Classify(fixed, &v)
			if v != m {
				t.Fatalf("after SetICRC: %+v, want %+v", v, m)
			}
			c.VerifyICRC = false
			if r := rocev2.RefreshICRC(append([]byte(nil), b...), c); r != rocev2.ReasonNone {
				t.Fatalf("RefreshICRC = %v", r)
			}
		}
	}
}

// fxWithSpare returns a copy of b with 1100 bytes of garbage capacity
// after it, enough to pad any covered range to 1024 bytes.
func fxWithSpare(b []byte) []byte {
	buf := make([]byte, len(b)+1100)
	for i := range buf {
		buf[i] = byte(i*131 + 7)
	}
	return buf[:copy(buf, b)]
}

// fxReader hands out fuzz bytes as field values, zeros once they run out.
type fxReader struct{ b []byte }

func (r *fxReader) u8() uint8 {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}
func (r *fxReader) u16() uint16 { return uint16(r.u8())<<8 | uint16(r.u8()) }
func (r *fxReader) u32() uint32 { return uint32(r.u16())<<16 | uint32(r.u16()) }
func (r *fxReader) u64() uint64 { return uint64(r.u32())<<32 | uint64(r.u32()) }
func (r *fxReader) bool() bool  { return r.u8()&1 != 0 }

// fxSpecFrom fills every Spec field from fuzz bytes, out-of-range values
// included; the opcode is one of the table's. mixed reports that the
// addresses are of different families.
func fxSpecFrom(cfg, payload []byte) (s *rocev2.Spec, mixed bool) {
	r := &fxReader{cfg}
	s = &rocev2.Spec{}
	s.Opcode = fxOps[int(r.u8())%len(fxOps)].op
	copy(s.Src[:], []byte{r.u8(), r.u8(), r.u8(), r.u8(), r.u8(), r.u8()})
	s.Dst = rocev2.MAC{r.u8(), 1, 2, 3, 4, r.u8()}
	s.VLAN, s.VID, s.PCP = r.bool(), r.u16(), r.u8()
	fam := r.u8()
	var a16, b16 [16]byte
	for i := range a16 {
		a16[i], b16[i] = r.u8(), r.u8()
	}
	switch fam % 4 {
	case 0:
		s.SrcIP, s.DstIP = netip.AddrFrom4([4]byte(a16[:4])), netip.AddrFrom4([4]byte(b16[:4]))
	case 1:
		s.SrcIP, s.DstIP = netip.AddrFrom16(a16), netip.AddrFrom16(b16)
	case 2: // IPv4-mapped IPv6 on one side: still IPv4
		s.SrcIP, s.DstIP = netip.AddrFrom16(netip.AddrFrom4([4]byte(a16[:4])).As16()), netip.AddrFrom4([4]byte(b16[:4]))
	case 3:
		s.SrcIP, s.DstIP = netip.AddrFrom4([4]byte(a16[:4])), netip.AddrFrom16(b16)
	}
	mixed = (s.SrcIP.Is6() && !s.SrcIP.Is4In6()) != (s.DstIP.Is6() && !s.DstIP.Is4In6())
	s.DSCP, s.ECN, s.TTL, s.FlowLabel, s.SrcPort = r.u8(), r.u8(), r.u8(), r.u32(), r.u16()
	s.SE, s.MigReq, s.FECN, s.BECN = r.bool(), r.bool(), r.bool(), r.bool()
	s.PKey, s.DestQP, s.AckReq, s.PSN = r.u16(), r.u32(), r.bool(), psn.PSN(r.u32())
	s.DCP, s.MSN, s.Retry, s.SSN = r.bool(), r.u32(), r.u8(), r.u32()
	s.VA, s.RKey, s.DMALen = r.u64(), r.u32(), r.u32()
	s.Syndrome, s.AckMSN, s.Imm, s.QKey, s.SrcQP = rocev2.Syndrome(r.u8()), r.u32(), r.u32(), r.u32(), r.u32()
	s.SwapAdd, s.Compare, s.OrigData, s.FETH = r.u64(), r.u64(), r.u64(), r.u32()
	s.NetRTType, s.NetRTPSN = r.u8(), psn.PSN(r.u32())
	s.Bitmap = rocev2.Bitmap128{Hi: r.u64(), Lo: r.u64()}
	s.SACK, s.SACKPSN, s.SACKFlags, s.LostCnt = r.bool(), psn.PSN(r.u32()), r.u8(), r.u8()
	s.OOO, s.PktIndex = r.bool(), r.u32()
	s.Payload = payload
	return s, mixed
}

// FuzzBuild builds frames from arbitrary Spec values into a buffer full
// of stale bytes: Build fails only for the documented reasons, and
// otherwise Classify reads back every field (fxCheck).
func FuzzBuild(f *testing.F) {
	for i := range fxOps {
		cfg := bytes.Repeat([]byte{byte(i * 37)}, 160)
		cfg[0] = byte(i)
		f.Add(cfg, fxPayload(i*5))
	}
	f.Add([]byte{40, 0, 0, 0, 0, 0, 0, 9, 1}, []byte{}) // NetRT with type 0
	f.Add(bytes.Repeat([]byte{0xff}, 200), fxPayload(3))
	f.Fuzz(func(t *testing.T, cfg, payload []byte) {
		if len(payload) > 9000 {
			payload = payload[:9000]
		}
		s, mixed := fxSpecFrom(cfg, payload)
		stale := bytes.Repeat([]byte{0x81, 0x00}, 4800) // stale VLAN types everywhere
		buf := append([]byte(nil), stale...)
		n, err := rocev2.Build(buf, s)
		tag := rocev2.TagOfDSCP(s.DSCP)
		badNetRT := s.Opcode == rocev2.NetRTOpcode && rocev2.NetRTLen(s.NetRTType) == 0 && !(s.DCP && tag == rocev2.DCPHeaderOnly)
		switch {
		case mixed:
			if err != rocev2.ErrAddrFamily {
				t.Fatalf("mixed families: %v", err)
			}
			return
		case s.DCP && tag == rocev2.DCPNone:
			if err != rocev2.ErrDCPTag {
				t.Fatalf("DCP without a tag: %v", err)
			}
			return
		case badNetRT:
			if err != rocev2.ErrNetRTType {
				t.Fatalf("NetRT type %d: %v", s.NetRTType, err)
			}
			return
		case err != nil:
			t.Fatalf("Build: %v", err)
		}
		fxCheck(t, rocev2.Classifier{DCP: s.DCP, SACK: s.SACK, OOO: s.OOO}, buf, n, s)
		if !bytes.Equal(buf[n:n+2], stale[n:n+2]) {
			t.Fatalf("Build wrote past its frame")
		}
		// The other DCP and SACK modes must not panic.
		var m rocev2.Meta
		rocev2.Classifier{DCP: !s.DCP, SACK: !s.SACK, VerifyICRC: true}.Classify(buf[:n], &m)
		rocev2.Classifier{DCP: s.DCP, SACK: !s.SACK, VerifyICRC: true}.Classify(buf[:n], &m)
		rocev2.Classifier{DCP: s.DCP, SACK: s.SACK, OOO: !s.OOO, VerifyICRC: true}.Classify(buf[:n], &m)
	})
}

// FuzzTrim trims whatever classifies as a DCP data packet: the result
// classifies afresh as a valid header-only packet equal to Trim's Meta,
// with the headers before the IP header, the BTH and the DCP header
// unchanged; anything else is refused and left alone.
func FuzzTrim(f *testing.F) {
	for _, b := range fxSeedFrames(f) {
		f.Add(b)
	}
	for _, op := range []rocev2.Opcode{rocev2.RCSendOnly, rocev2.RCWriteFirst, rocev2.RCWriteLastImm, rocev2.UCWriteMiddle, rocev2.UDSendOnlyImm, rocev2.RCAtomicWrite, rocev2.RCReadResponseFirst} {
		for _, v6 := range []bool{false, true} {
			s := fxSpec(op, v6, !v6, 100)
			s.DCP, s.DSCP = true, rocev2.WithTag(4, rocev2.DCPData)
			f.Add(fxBuild(f, s))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []rocev2.Classifier{{DCP: true}, {DCP: true, VerifyICRC: true}} {
			var m rocev2.Meta
			c.Classify(b, &m)
			before := m
			f := append([]byte(nil), b...)
			n, err := rocev2.Trim(f, &m)
			isData := before.Kind == rocev2.KindRoCE && before.Reason == rocev2.ReasonNone && before.Tag == rocev2.DCPData
			if err != nil {
				if isData || err != rocev2.ErrNotDCPData || !bytes.Equal(f, b) || m != before {
					t.Fatalf("Trim refused (%v) %+v, or changed it", err, before)
				}
				continue
			}
			if !isData {
				t.Fatalf("Trim accepted %+v", before)
			}
			var fresh rocev2.Meta
			rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(f[:n], &fresh)
			if fresh != m || fresh.Reason != rocev2.ReasonNone || fresh.Tag != rocev2.DCPHeaderOnly || fresh.Ext != rocev2.ExtDCP {
				t.Fatalf("trimmed frame classifies as %+v, Trim said %+v", fresh, m)
			}
			if n != max(int(fresh.End), rocev2.MinFrameLen) || n > len(b) {
				t.Fatalf("trimmed to %d bytes, End %d, from %d", n, fresh.End, len(b))
			}
			dcp := fresh.ExtOff(rocev2.ExtDCP)
			if !bytes.Equal(f[:fresh.L3Off], b[:fresh.L3Off]) || !bytes.Equal(f[dcp:dcp+8], b[dcp:dcp+8]) ||
				fresh.Opcode != before.Opcode || fresh.PSN != before.PSN || fresh.Flow != before.Flow ||
				fresh.DSCP>>2 != before.DSCP>>2 || fresh.ECN != before.ECN {
				t.Fatalf("Trim changed what it must keep: %+v from %+v", fresh, before)
			}
		}
	})
}

// FuzzShim: every setter changes its own fields and keeps the others.
func FuzzShim(f *testing.F) {
	f.Add(uint16(0xffff), true, uint8(0), uint8(0), uint16(0x0800), uint16(0x1234), false, uint16(0), false, uint8(1), uint8(0xff))
	f.Add(uint16(0), false, uint8(4), uint8(255), uint16(0), uint16(0xffff), true, uint16(7), true, uint8(3), uint8(0))
	f.Add(uint16(0x8000), true, uint8(7), uint8(1), uint16(0x86dd), uint16(0), true, uint16(0xfffe), false, uint8(9), uint8(0x60))
	f.Fuzz(func(t *testing.T, seq uint16, era bool, typ, count uint8, inner, ack uint16, ackEra bool, seq2 uint16, era2 bool, typ2, junk uint8) {
		b := bytes.Repeat([]byte{junk}, rocev2.ShimLen+2)
		s := rocev2.Shim(b[1 : 1+rocev2.ShimLen])
		type fields struct {
			seq    psn.Link
			typ    uint8
			count  uint8
			hasAck bool
			ack    psn.Link
			inner  uint16
		}
		get := func() fields { return fields{s.Seq(), s.Type(), s.Count(), s.HasAck(), s.Ack(), s.InnerType()} }
		check := func(step string, w fields) {
			if g := get(); g != w {
				t.Fatalf("%s: %+v, want %+v", step, g, w)
			}
			if b[0] != junk || b[len(b)-1] != junk {
				t.Fatalf("%s wrote outside the shim", step)
			}
		}
		w := fields{psn.LinkOf(seq, era), typ & 7, count, false, 0, inner}
		s.Set(w.seq, typ, count, inner)
		check("Set", w)
		w.hasAck, w.ack = true, psn.LinkOf(ack, ackEra)
		s.SetAck(w.ack)
		check("SetAck", w)
		w.seq, w.typ = psn.LinkOf(seq2, era2), typ2&7
		s.SetSeq(w.seq, typ2)
		check("SetSeq", w)
		s.ClearAck()
		w.hasAck, w.ack = false, 0
		check("ClearAck", w)
		w.hasAck, w.ack = true, psn.LinkOf(^ack, !ackEra)
		s.SetAck(w.ack)
		check("SetAck again", w)
		if rocev2.ShimTypeName(typ) != rocev2.ShimTypeName(typ&7) {
			t.Fatal("ShimTypeName reads more than three bits")
		}
	})
}

// FuzzNetRT round-trips NetRT headers and checks the bitmap against
// math/big.
func FuzzNetRT(f *testing.F) {
	f.Add(uint32(0), uint64(0), uint64(1), 0)
	f.Add(uint32(psn.Mask), uint64(1)<<63, uint64(1)<<63, 127)
	f.Add(uint32(0xffffffff), uint64(1), uint64(0), 64)
	f.Add(uint32(123), ^uint64(0), ^uint64(0), -1)
	f.Add(uint32(5), uint64(0), uint64(0), 128)
	f.Fuzz(func(t *testing.T, p uint32, hi, lo uint64, i int) {
		bm := rocev2.Bitmap128{Hi: hi, Lo: lo}
		x := fxBig(bm)
		b := make([]byte, rocev2.NetRTRequestLen+1)
		n := rocev2.NetRT(b[:rocev2.NetRTRequestLen])
		n.SetRequest(psn.PSN(p), bm)
		if n.Type() != rocev2.NetRTRequest || n.PSN() != psn.New(p) || n.Bitmap() != bm || b[20] != 0 {
			t.Fatalf("request read back %d %#x %+v", n.Type(), n.PSN(), n.Bitmap())
		}
		if new(big.Int).SetBytes(b[4:20]).Cmp(x) != 0 {
			t.Fatalf("bitmap bytes % x are not the big-endian integer %x", b[4:20], x)
		}
		n.SetUnfulfilled(psn.PSN(^p))
		if n.Type() != rocev2.NetRTUnfulfilled || n.PSN() != psn.New(^p) || n.Bitmap() != bm {
			t.Fatalf("unfulfilled read back %d %#x, bitmap bytes changed", n.Type(), n.PSN())
		}
		in := i >= 0 && i < 128
		if got := bm.Has(i); got != (in && x.Bit(i) == 1) {
			t.Fatalf("Has(%d) = %v", i, got)
		}
		want := x
		if in {
			want = new(big.Int).SetBit(x, i, 1)
		}
		if fxBig(bm.Set(i)).Cmp(want) != 0 {
			t.Fatalf("Set(%d) = %x, want %x", i, fxBig(bm.Set(i)), want)
		}
		if fxBig(bm.Shift()).Cmp(new(big.Int).Rsh(x, 1)) != 0 {
			t.Fatalf("Shift() = %x", fxBig(bm.Shift()))
		}
		if bm.Empty() != (x.Sign() == 0) {
			t.Fatalf("Empty() = %v", bm.Empty())
		}
	})
}

// FuzzViews sets every field of the transport and IP header views to
// fuzz values and reads them back, checking that no setter disturbs
// another field, writes outside its header, or breaks the IPv4 checksum.
func FuzzViews(f *testing.F) {
	f.Add(bytes.Repeat([]byte{0}, 128))
	f.Add(bytes.Repeat([]byte{0xff}, 128))
	f.Add(fxPayload(200))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fxReader{data}
		raw := func(n int) []byte {
			b := make([]byte, n+2)
			for i := range b {
				b[i] = r.u8()
			}
			return b
		}
		guard := func(name string, b []byte, g0, g1 byte) {
			if b[0] != g0 || b[len(b)-1] != g1 {
				t.Fatalf("%s wrote outside its header", name)
			}
		}

		// BTH: each setter against the other getters.
		bb := raw(rocev2.BTHLen)
		g0, g1 := bb[0], bb[len(bb)-1]
		h := rocev2.BTH(bb[1 : 1+rocev2.BTHLen])
		type bth struct {
			op         rocev2.Opcode
			se, mig    bool
			pad        int
			tver       uint8
			pkey       uint16
			fecn, becn bool
			qp         uint32
			ackReq     bool
			psn        psn.PSN
		}
		get := func() bth {
			return bth{h.Opcode(), h.SE(), h.MigReq(), h.PadCount(), h.TVer(), h.PKey(), h.FECN(), h.BECN(), h.DestQP(), h.AckReq(), h.PSN()}
		}
		w := get()
		for k := 0; k < 12; k++ {
			switch r.u8() % 7 {
			case 0:
				w.op = rocev2.Opcode(r.u8())
				h.SetOpcode(w.op)
			case 1:
				w.se, w.mig, w.pad, w.tver = r.bool(), r.bool(), int(r.u8()), 0
				h.SetFlags(w.se, w.mig, w.pad)
				w.pad &= 3
			case 2:
				w.pkey = r.u16()
				h.SetPKey(w.pkey)
			case 3:
				qp := r.u32()
				h.SetDestQP(qp)
				w.qp = qp & 0xffffff
			case 4:
				w.fecn, w.becn = r.bool(), r.bool()
				h.SetECN(w.fecn, w.becn)
			case 5:
				p := psn.PSN(r.u32())
				h.SetPSN(p)
				w.psn = psn.New(uint32(p))
			case 6:
				w.ackReq = r.bool()
				h.SetAckReq(w.ackReq)
			}
			if g := get(); g != w {
				t.Fatalf("BTH: %+v, want %+v", g, w)
			}
		}
		guard("BTH", bb, g0, g1)

		// The fixed-size extension headers.
		u32, u64, u8 := r.u32(), r.u64(), r.u8()
		b := raw(rocev2.RETHLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.RETH(b[1:17]).Set(u64, u32, ^u32)
		if x := rocev2.RETH(b[1:17]); x.VA() != u64 || x.RKey() != u32 || x.DMALen() != ^u32 {
			t.Fatal("RETH")
		}
		guard("RETH", b, g0, g1)
		b = raw(rocev2.AtomicETHLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.AtomicETH(b[1:29]).Set(u64, u32, ^u64, u64<<1)
		if x := rocev2.AtomicETH(b[1:29]); x.VA() != u64 || x.RKey() != u32 || x.SwapAdd() != ^u64 || x.Compare() != u64<<1 {
			t.Fatal("AtomicETH")
		}
		guard("AtomicETH", b, g0, g1)
		b = raw(rocev2.AETHLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.AETH(b[1:5]).Set(rocev2.Syndrome(u8), u32)
		if x := rocev2.AETH(b[1:5]); x.Syndrome() != rocev2.Syndrome(u8) || x.MSN() != u32&0xffffff {
			t.Fatal("AETH")
		}
		guard("AETH", b, g0, g1)
		b = raw(rocev2.DETHLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.DETH(b[1:9]).Set(u32, ^u32)
		if x := rocev2.DETH(b[1:9]); x.QKey() != u32 || x.SrcQP() != ^u32&0xffffff || b[5] != 0 {
			t.Fatal("DETH")
		}
		guard("DETH", b, g0, g1)
		b = raw(rocev2.DCPLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.DCPETH(b[1:9]).Set(u32, u8, ^u32)
		if x := rocev2.DCPETH(b[1:9]); x.MSN() != u32&0xffffff || x.RetryNo() != u8 || x.SSN() != ^u32&0xffffff || b[8] != 0 {
			t.Fatal("DCPETH")
		}
		guard("DCPETH", b, g0, g1)
		b = raw(rocev2.SACKLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.SACKETH(b[1:9]).Set(psn.PSN(u32), u8, ^u8)
		if x := rocev2.SACKETH(b[1:9]); x.PSN() != psn.PSN(u32&0xffffff) || x.Flags() != u8 || x.LostCnt() != ^u8 ||
			b[6] != 0 || b[7] != 0 || b[8] != 0 {
			t.Fatal("SACKETH")
		}
		guard("SACKETH", b, g0, g1)
		b = raw(rocev2.SETHLen)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.SETH(b[1:9]).Set(u32, ^u32)
		if x := rocev2.SETH(b[1:9]); x.SSN() != u32&0xffffff || x.Index() != ^u32&0xffffff || b[7] != 0 || b[8] != 0 {
			t.Fatal("SETH")
		}
		guard("SETH", b, g0, g1)
		b = raw(8)
		g0, g1 = b[0], b[len(b)-1]
		rocev2.AtomicAck(b[1:9]).Set(u64)
		rocev2.ImmDt(b[1:5]).Set(u32)
		if rocev2.ImmDt(b[1:5]).Value() != u32 || binary.BigEndian.Uint32(b[5:9]) != uint32(u64) {
			t.Fatal("ImmDt over AtomicAck")
		}
		rocev2.IETH(b[1:5]).Set(^u32)
		rocev2.FETH(b[5:9]).Set(u32)
		if rocev2.IETH(b[1:5]).RKey() != ^u32 || rocev2.FETH(b[5:9]).Selectivity() != u32 {
			t.Fatal("IETH, FETH")
		}
		guard("ImmDt/IETH/FETH", b, g0, g1)

		// IPv4: the setters keep the checksum valid and the other fields.
		v4 := raw(rocev2.IPv4MinLen)
		g0, g1 = v4[0], v4[len(v4)-1]
		ip := rocev2.IPv4(v4[1 : 1+rocev2.IPv4MinLen])
		ip[0] = 0x45
		ip.SetChecksum()
		tos, ttl, tl := ip.TOS(), ip.TTL(), ip.TotalLen()
		for k := 0; k < 8; k++ {
			switch v := r.u16(); v % 5 {
			case 0:
				tos = uint8(v >> 8)
				ip.SetTOS(tos)
			case 1:
				ttl = uint8(v >> 8)
				ip.SetTTL(ttl)
			case 2:
				tl = int(v)
				ip.SetTotalLen(tl)
			case 3:
				ip.SetDSCP(uint8(v>>8) & 63)
				tos = uint8(v>>8)&63<<2 | tos&3
			case 4:
				ip.SetECN(uint8(v >> 8))
				tos = tos&^3 | uint8(v>>8)&3
			}
			if !ip.ChecksumValid() || ip.TOS() != tos || ip.TTL() != ttl || ip.TotalLen() != tl || ip.HeaderLen() != 20 {
				t.Fatalf("IPv4 after a setter: TOS %#x/%#x TTL %d/%d len %d/%d valid %v", ip.TOS(), tos, ip.TTL(), ttl, ip.TotalLen(), tl, ip.ChecksumValid())
			}
		}
		guard("IPv4", v4, g0, g1)

		// IPv6: traffic class setters keep version and flow label.
		v6 := raw(rocev2.IPv6Len)
		g0, g1 = v6[0], v6[len(v6)-1]
		ip6 := rocev2.IPv6(v6[1 : 1+rocev2.IPv6Len])
		ver, flow := ip6.Version(), ip6.FlowLabel()
		tc := r.u8()
		ip6.SetTrafficClass(tc)
		ip6.SetDSCP(tc >> 2)
		ip6.SetECN(tc)
		if ip6.TrafficClass() != tc || ip6.Version() != ver || ip6.FlowLabel() != flow || ip6.DSCP() != tc>>2 || ip6.ECN() != tc&3 {
			t.Fatalf("IPv6 traffic class %#x, want %#x", ip6.TrafficClass(), tc)
		}
		guard("IPv6", v6, g0, g1)
	})
}

// FuzzMACControl round-trips PFC and PAUSE frames through Classify and the
// MACControl view, and PauseQuanta against math/big.
func FuzzMACControl(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 0, 1}, uint8(0xff), []byte{0xff, 0xff, 0, 1}, uint16(0xffff), uint64(100e9))
	f.Add([]byte{}, uint8(0), []byte{}, uint16(0), uint64(0))
	f.Add([]byte{1, 2, 3}, uint8(0x81), bytes.Repeat([]byte{0x12}, 16), uint16(1), uint64(1))
	f.Fuzz(func(t *testing.T, src []byte, enable uint8, tb []byte, quanta uint16, bps uint64) {
		var mac rocev2.MAC
		copy(mac[:], src)
		var times [8]uint16
		for i := range times {
			if 2*i+1 < len(tb) {
				times[i] = binary.BigEndian.Uint16(tb[2*i:])
			}
		}
		buf := bytes.Repeat([]byte{0xee}, 64)
		n, err := rocev2.BuildPFC(buf, mac, enable, times)
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(buf[:n], &m)
		c := rocev2.MACControl(buf[rocev2.EthernetLen:n])
		if err != nil || n != 60 || m.Kind != rocev2.KindMACControl || m.Reason != rocev2.ReasonNone ||
			c.Opcode() != rocev2.MACControlPFC || c.ClassEnable() != enable || rocev2.Ethernet(buf).Src() != mac || buf[60] != 0xee {
			t.Fatalf("PFC: %v %d %+v", err, n, m)
		}
		for i, w := range times {
			if c.Time(i) != w {
				t.Fatalf("PFC time %d = %d, want %d", i, c.Time(i), w)
			}
		}
		n, err = rocev2.BuildPause(buf, mac, quanta)
		rocev2.Classifier{}.Classify(buf[:n], &m)
		if err != nil || n != 60 || m.Kind != rocev2.KindMACControl || m.Reason != rocev2.ReasonNone ||
			rocev2.MACControl(buf[14:]).Opcode() != rocev2.MACControlPause || rocev2.MACControl(buf[14:]).PauseTime() != quanta {
			t.Fatalf("PAUSE: %v %d %+v", err, n, m)
		}
		want := uint64(0)
		if bps != 0 {
			x := new(big.Int).Mul(big.NewInt(int64(quanta)), big.NewInt(512e9))
			want = x.Div(x, new(big.Int).SetUint64(bps)).Uint64()
		}
		if got := rocev2.PauseQuanta(quanta, bps); got != want {
			t.Fatalf("PauseQuanta(%d, %d) = %d, want %d", quanta, bps, got, want)
		}
	})
}
