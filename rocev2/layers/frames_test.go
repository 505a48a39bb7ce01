package layers

import (
	"fmt"
	"net/netip"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// A frame the tests decode: the bytes, and the Spec they were built from
// (nil for frames that are not RoCEv2).
type frame struct {
	name string
	b    []byte
	spec *rocev2.Spec
	dcp  bool // decode with DCP set
	shim *shimSpec
}

type shimSpec struct {
	seq   psn.Link
	typ   uint8
	ack   psn.Link
	count uint8
}

var (
	macA = rocev2.MAC{0x02, 0, 0, 0, 0, 0x0a}
	macB = rocev2.MAC{0x02, 0, 0, 0, 0, 0x0b}
	v4A  = netip.MustParseAddr("10.0.0.1")
	v4B  = netip.MustParseAddr("10.0.0.2")
	v6A  = netip.MustParseAddr("fd00::1")
	v6B  = netip.MustParseAddr("fd00::2")
)

// specFor fills every field any opcode may carry with distinct values, so
// that a header decoded from the wrong offset shows.
func specFor(op rocev2.Opcode, src, dst netip.Addr) *rocev2.Spec {
	s := &rocev2.Spec{
		Src: macA, Dst: macB, SrcIP: src, DstIP: dst,
		DSCP: 24, ECN: 1, FlowLabel: 0x12345,
		Opcode: op, SE: op&1 == 1, MigReq: true, FECN: op&2 == 2, BECN: op&4 == 4,
		PKey: 0x8001, DestQP: 0x000012, AckReq: op&1 == 0, PSN: psn.New(100 + uint32(op)),
		VA: 0x1122334455667788, RKey: 0xabcdef01, DMALen: 4096,
		Syndrome: rocev2.ACKSyndrome(31), AckMSN: 0x0a0b0c, Imm: 0xdeadbeef,
		QKey: 0x11111111, SrcQP: 0x654321, SwapAdd: 0x5555, Compare: 0x6666,
		OrigData: 0x7777, FETH: 0x3,
		NetRTType: rocev2.NetRTRequest, NetRTPSN: 0xfffffe,
		Bitmap: rocev2.Bitmap128{Hi: 0x8000000000000001, Lo: 0xf0f0},
	}
	if op.HasPayload() {
		s.Payload = []byte("hello, rdma!!") // 13 bytes: three pad bytes
	}
	return s
}

func build(t testing.TB, s *rocev2.Spec) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatalf("build %v: %v", s.Opcode, err)
	}
	return b[:n]
}

// withShim inserts a link shim after the Ethernet header (and tag) of f.
func withShim(f []byte, sh shimSpec) []byte {
	e := rocev2.Ethernet(f)
	l2 := e.HeaderLen()
	out := make([]byte, 0, len(f)+rocev2.ShimLen)
	out = append(out, f[:l2]...)
	out = append(out, make([]byte, rocev2.ShimLen)...)
	out = append(out, f[l2:]...)
	s := rocev2.Shim(out[l2:])
	s.Set(sh.seq, sh.typ, sh.count, e.InnerType())
	s.SetAck(sh.ack)
	rocev2.Ethernet(out).SetInnerType(rocev2.EtherTypeShim)
	return out
}

// shimOnly builds a dummy, ACK or loss-notice frame: a shim and padding.
func shimOnly(sh shimSpec) []byte {
	b := make([]byte, rocev2.MinFrameLen)
	e := rocev2.Ethernet(b)
	e.SetDst(macB)
	e.SetSrc(macA)
	e.SetType(rocev2.EtherTypeShim)
	s := rocev2.Shim(b[rocev2.EthernetLen:])
	s.Set(sh.seq, sh.typ, sh.count, 0)
	s.SetAck(sh.ack)
	return b
}

// roceFrames returns every known opcode over IPv4 and IPv6, both NetRT
// messages, DCP data, header-only and ACK packets, a tagged frame and
// shim-wrapped frames.
func roceFrames(t testing.TB) []frame {
	var fs []frame
	for op := 0; op < 256; op++ {
		o := rocev2.Opcode(op)
		if !o.Known() {
			continue
		}
		for _, af := range [][2]netip.Addr{{v4A, v4B}, {v6A, v6B}} {
			s := specFor(o, af[0], af[1])
			fs = append(fs, frame{name: fmt.Sprintf("%v/v%d", o, 4+2*btoi(af[0].Is6())), b: build(t, s), spec: s})
		}
	}
	u := specFor(rocev2.NetRTOpcode, v4B, v4A)
	u.NetRTType, u.NetRTPSN = rocev2.NetRTUnfulfilled, 4242
	fs = append(fs, frame{name: "netrt-unfulfilled", b: build(t, u), spec: u})

	for _, d := range []struct {
		op  rocev2.Opcode
		tag rocev2.DCPTag
		v6  bool
	}{
		{rocev2.RCWriteFirst, rocev2.DCPData, false},
		{rocev2.RCWriteMiddle, rocev2.DCPData, true},
		{rocev2.RCWriteLastImm, rocev2.DCPData, false},
		{rocev2.RCSendOnly, rocev2.DCPData, false},
		{rocev2.RCWriteMiddle, rocev2.DCPHeaderOnly, false},
		{rocev2.RCAck, rocev2.DCPAck, false},
		{rocev2.RCAck, rocev2.DCPAck, true},
	} {
		src, dst := v4A, v4B
		if d.v6 {
			src, dst = v6A, v6B
		}
		s := specFor(d.op, src, dst)
		s.DCP, s.DSCP = true, rocev2.WithTag(24, d.tag)
		s.MSN, s.Retry, s.SSN = 0x010203, 2, 0x040506
		if d.tag == rocev2.DCPHeaderOnly {
			s.Payload = nil
		}
		fs = append(fs, frame{name: fmt.Sprintf("dcp-%v/%v/v%d", d.tag, d.op, 4+2*btoi(d.v6)), b: build(t, s), spec: s, dcp: true})
	}

	// A data packet trimmed by rocev2.Trim, as the switch makes them.
	s := specFor(rocev2.RCWriteMiddle, v4A, v4B)
	s.DCP, s.DSCP = true, rocev2.WithTag(24, rocev2.DCPData)
	s.MSN, s.Retry = 9, 1
	b := build(t, s)
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(b, &m)
	n, err := rocev2.Trim(b, &m)
	if err != nil {
		t.Fatalf("trim: %v", err)
	}
	ho := *s
	ho.DSCP, ho.Payload = rocev2.WithTag(24, rocev2.DCPHeaderOnly), nil
	fs = append(fs, frame{name: "dcp-trimmed", b: b[:n], spec: &ho, dcp: true})

	v := specFor(rocev2.RCSendOnlyImm, v4A, v4B)
	v.VLAN, v.VID, v.PCP = true, 100, 3
	fs = append(fs, frame{name: "vlan", b: build(t, v), spec: v})

	for i, sh := range []shimSpec{
		{seq: psn.LinkOf(7, false), typ: rocev2.ShimOriginal, ack: psn.LinkOf(3, true)},
		{seq: psn.LinkOf(65535, true), typ: rocev2.ShimRetransmit, ack: psn.LinkOf(0, false)},
	} {
		w := specFor(rocev2.RCWriteFirst, v4A, v4B)
		if i == 1 {
			w = specFor(rocev2.RCReadResponseOnly, v6A, v6B)
		}
		fs = append(fs, frame{name: "shim-" + rocev2.ShimTypeName(sh.typ), b: withShim(build(t, w), sh), spec: w, shim: &sh})
	}
	return fs
}

// otherFrames returns the frames without a BTH: shim-only link control,
// PFC and PAUSE.
func otherFrames(t testing.TB) []frame {
	var fs []frame
	for _, sh := range []shimSpec{
		{seq: psn.LinkOf(10, false), typ: rocev2.ShimDummy, ack: psn.LinkOf(9, false)},
		{seq: psn.LinkOf(11, true), typ: rocev2.ShimAck, ack: psn.LinkOf(65000, true)},
		{seq: psn.LinkOf(12, false), typ: rocev2.ShimLoss, ack: psn.LinkOf(5, false), count: 4},
	} {
		fs = append(fs, frame{name: "shim-" + rocev2.ShimTypeName(sh.typ), b: shimOnly(sh), shim: &sh})
	}
	pfc := make([]byte, rocev2.MinFrameLen)
	if _, err := rocev2.BuildPFC(pfc, macA, 0x09, [8]uint16{100, 0, 0, 0xffff, 0, 0, 0, 7}); err != nil {
		t.Fatal(err)
	}
	pause := make([]byte, rocev2.MinFrameLen)
	if _, err := rocev2.BuildPause(pause, macA, 0x1234); err != nil {
		t.Fatal(err)
	}
	return append(fs, frame{name: "pfc", b: pfc}, frame{name: "pause", b: pause})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
