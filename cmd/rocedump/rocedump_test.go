package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestMain lets the test binary stand in for rocedump, so that the live
// test can run it inside a network namespace without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("ROCEDUMP_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var (
	macA = rocev2.MAC{0x02, 0, 0, 0, 0, 0x0a}
	macB = rocev2.MAC{0x02, 0, 0, 0, 0, 0x0b}
	v4A  = netip.MustParseAddr("10.0.0.1")
	v4B  = netip.MustParseAddr("10.0.0.2")
	v6A  = netip.MustParseAddr("fd00::1")
	v6B  = netip.MustParseAddr("fd00::2")
)

func build(t testing.TB, s *rocev2.Spec) []byte {
	t.Helper()
	if s.Src == (rocev2.MAC{}) {
		s.Src, s.Dst = macA, macB
	}
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatalf("build %v: %v", s.Opcode, err)
	}
	return b[:n]
}

// writeFirst is the frame the examples in the package doc show.
func writeFirst() *rocev2.Spec {
	return &rocev2.Spec{
		SrcIP: v4A, DstIP: v4B, SrcPort: 49170, Opcode: rocev2.RCWriteFirst, DestQP: 0x12, PSN: 100,
		VA: 0x1000, RKey: 0x77, DMALen: 8192, Payload: []byte("thirteen byte"),
	}
}

// A test frame and what rocedump -json -dcp must say about it.
type want struct {
	name   string
	b      []byte
	fields map[string]any // JSON values: numbers as float64, null as nil
}

func frames(t *testing.T) []want {
	var ws []want
	add := func(name string, b []byte, kv ...any) {
		f := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			f[kv[i].(string)] = kv[i+1]
		}
		ws = append(ws, want{name, b, f})
	}
	add("write first", build(t, writeFirst()),
		"kind", "roce", "opcode", 6.0, "opcode_name", "RC_RDMA_WRITE_FIRST", "dqpn", 18.0, "psn", 100.0,
		"src", "10.0.0.1", "dst", "10.0.0.2", "sport", 49170.0, "icrc_ok", true, "payload_len", 13.0,
		"va", 4096.0, "rkey", 119.0, "dma_len", 8192.0, "ext", "RETH")
	add("ack v6", build(t, &rocev2.Spec{SrcIP: v6B, DstIP: v6A, Opcode: rocev2.RCAck, DestQP: 0x34, PSN: 0xffffff,
		Syndrome: rocev2.NAKSyndrome(rocev2.NakPSNSeqError), AckMSN: 5}),
		"kind", "roce", "opcode_name", "RC_ACKNOWLEDGE", "src", "fd00::2", "dst", "fd00::1", "psn", 16777215.0,
		"syndrome", "NAK(PSN_SEQ_ERROR)", "aeth_msn", 5.0, "icrc_ok", true)

	dcp := &rocev2.Spec{SrcIP: v4A, DstIP: v4B, Opcode: rocev2.RCWriteMiddle, DestQP: 0x12, PSN: 101,
		DSCP: rocev2.WithTag(24, rocev2.DCPData), DCP: true, MSN: 7, Retry: 2, VA: 0x2000, RKey: 0x77, DMALen: 8192,
		Payload: []byte("middle")}
	add("dcp data", build(t, dcp), "kind", "roce", "dcp_tag", "data", "msn", 7.0, "retry", 2.0, "ssn", 0.0,
		"ext", "DCPETH+RETH", "va", 8192.0, "payload_len", 6.0, "icrc_ok", true)
	ho := build(t, dcp)
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(ho, &m)
	n, err := rocev2.Trim(ho, &m)
	if err != nil {
		t.Fatal(err)
	}
	add("dcp header-only", ho[:n], "kind", "roce", "dcp_tag", "header-only", "msn", 7.0, "psn", 101.0,
		"ext", "DCPETH", "payload_len", 0.0, "icrc_ok", true)
	add("dcp ack", build(t, &rocev2.Spec{SrcIP: v4B, DstIP: v4A, Opcode: rocev2.RCAck, DCP: true,
		DSCP: rocev2.WithTag(24, rocev2.DCPAck), MSN: 8, Retry: 1, Syndrome: rocev2.ACKSyndrome(31)}),
		"dcp_tag", "ack", "msn", 8.0, "retry", 1.0, "syndrome", "ACK(credits=31)", "icrc_ok", true)

	bm := rocev2.Bitmap128{}.Set(0).Set(127)
	add("netrt request", build(t, &rocev2.Spec{SrcIP: v4B, DstIP: v4A, Opcode: rocev2.NetRTOpcode, DestQP: 0x12,
		NetRTType: rocev2.NetRTRequest, NetRTPSN: 200, Bitmap: bm}),
		"opcode", 192.0, "opcode_name", "NETRT", "netrt_type", "request", "epsn", 200.0,
		"bitmap", "80000000000000000000000000000001", "icrc_ok", true)
	add("netrt unfulfilled", build(t, &rocev2.Spec{SrcIP: v4B, DstIP: v4A, Opcode: rocev2.NetRTOpcode, DestQP: 0x12,
		NetRTType: rocev2.NetRTUnfulfilled, NetRTPSN: 150}),
		"netrt_type", "unfulfilled", "unfulfilled_psn", 150.0, "icrc_ok", true)

	add("shim original", withShim(build(t, writeFirst()), psn.LinkOf(7, true), rocev2.ShimOriginal, psn.LinkOf(3, false)),
		"kind", "roce", "shim_type", "original", "link_seq", 7.0, "link_era", true, "link_ack", 3.0,
		"link_ack_era", false, "psn", 100.0, "icrc_ok", true)
	add("shim ack", shimOnly(psn.LinkOf(9, false), rocev2.ShimAck, psn.LinkOf(65535, true)),
		"kind", "link-ctrl", "shim_type", "ack", "link_seq", 9.0, "link_ack", 65535.0, "icrc_ok", nil)

	pfc := make([]byte, rocev2.MinFrameLen)
	rocev2.BuildPFC(pfc, macA, 0x03, [8]uint16{100, 200})
	add("pfc", pfc, "kind", "mac-control", "pfc_enable", 3.0,
		"pfc_times", []any{100.0, 200.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, "icrc_ok", nil)
	pause := make([]byte, rocev2.MinFrameLen)
	rocev2.BuildPause(pause, macA, 0xffff)
	add("pause", pause, "kind", "mac-control", "pause_time", 65535.0)

	add("arp", arp(), "kind", "other", "ethertype", "0x0806", "ethertype_name", "arp", "icrc_ok", nil, "len", 42.0)
	dns := build(t, writeFirst())
	rocev2.UDP(dns[34:]).SetDstPort(53)
	add("plain udp", dns, "kind", "ip", "proto", 17.0, "src", "10.0.0.1", "icrc_ok", nil)

	rd := build(t, writeFirst())
	rd[42] = 0x40 // an RD opcode: no RoCE NIC sends them
	add("rd opcode", rd, "kind", "roce", "reason", "unknown_opcode", "opcode_name", "OPCODE_0x40", "icrc_ok", nil)
	add("truncated", build(t, writeFirst())[:50], "kind", "ip", "reason", "bad_ip_length", "icrc_ok", nil)
	add("oversized", oversized(t), "kind", "ip", "reason", "bad_ip_length")
	return ws
}

// withShim inserts a link shim after the Ethernet header.
func withShim(f []byte, seq psn.Link, typ uint8, ack psn.Link) []byte {
	out := append(append(append([]byte(nil), f[:14]...), make([]byte, rocev2.ShimLen)...), f[14:]...)
	s := rocev2.Shim(out[14:])
	s.Set(seq, typ, 0, rocev2.Ethernet(f).Type())
	s.SetAck(ack)
	rocev2.Ethernet(out).SetType(rocev2.EtherTypeShim)
	return out
}

// shimOnly builds a link-control frame: a shim and padding.
func shimOnly(seq psn.Link, typ uint8, ack psn.Link) []byte {
	b := make([]byte, rocev2.MinFrameLen)
	e := rocev2.Ethernet(b)
	e.SetDst(macB)
	e.SetSrc(macA)
	e.SetType(rocev2.EtherTypeShim)
	s := rocev2.Shim(b[14:])
	s.Set(seq, typ, 0, 0)
	s.SetAck(ack)
	return b
}

func arp() []byte {
	buf := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(buf, gopacket.SerializeOptions{},
		&layers.Ethernet{SrcMAC: macA[:], DstMAC: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: macA[:], SourceProtAddress: v4A.AsSlice(),
			DstHwAddress: make([]byte, 6), DstProtAddress: v4B.AsSlice()})
	return buf.Bytes()[:42] // without the Ethernet padding, as a sender's capture has it
}

// oversized is a GRO-merged capture: a 65532-byte IPv4 datagram in a frame
// longer than 65535 bytes.
func oversized(t *testing.T) []byte {
	s := writeFirst()
	s.Payload = make([]byte, 1000)
	f := build(t, s)
	b := append(f, make([]byte, 65546-len(f))...)
	h := rocev2.IPv4(b[14:])
	h.SetTotalLen(65532)
	return b
}

// writeCapture writes frames 1 ms apart as pcap, or pcapng when ng.
func writeCapture(t *testing.T, frames [][]byte, ng bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capture")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Unix(1700000000, 0)
	var write func(gopacket.CaptureInfo, []byte) error
	var flush func() error = func() error { return nil }
	if ng {
		w, err := pcapgo.NewNgWriter(f, layers.LinkTypeEthernet)
		if err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, w.Flush
	} else {
		w := pcapgo.NewWriter(f)
		if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		write = w.WritePacket
	}
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(b), Length: len(b)}
		if err := write(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// rocedump runs rocedump with args and returns stdout lines, stderr and
// the exit code.
func rocedump(args ...string) (lines []string, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	s := strings.TrimSuffix(out.String(), "\n")
	if s != "" {
		lines = strings.Split(s, "\n")
	}
	return lines, errb.String(), code
}

func decodeLines(t *testing.T, lines []string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, l := range lines {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestJSON dumps a pcap of every kind of frame and checks what each JSON
// line says about its frame.
func TestJSON(t *testing.T) {
	ws := frames(t)
	var bs [][]byte
	for _, w := range ws {
		bs = append(bs, w.b)
	}
	path := writeCapture(t, bs, false)
	lines, stderr, code := rocedump("-r", path, "-json", "-dcp")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	objs := decodeLines(t, lines)
	if len(objs) != len(ws) {
		t.Fatalf("%d lines for %d frames", len(objs), len(ws))
	}
	for i, w := range ws {
		o := objs[i]
		if o["frame"] != float64(i+1) {
			t.Errorf("%s: frame %v, want %d", w.name, o["frame"], i+1)
		}
		if _, ok := o["icrc_ok"]; !ok {
			t.Errorf("%s: no icrc_ok key (must be null when not RoCE)", w.name)
		}
		if _, ok := w.fields["reason"]; !ok && o["reason"] != nil {
			t.Errorf("%s: unexpected reason %v", w.name, o["reason"])
		}
		for k, v := range w.fields {
			got, ok := o[k]
			if !ok || !equalJSON(got, v) {
				t.Errorf("%s: %s = %v (present %v), want %v\n  line: %s", w.name, k, got, ok, v, lines[i])
			}
		}
	}
	// Frame times are relative to the first frame.
	if objs[2]["time"] != 0.002 {
		t.Errorf("time of frame 3: %v, want 0.002", objs[2]["time"])
	}

	// Without -dcp the tag bits mean nothing: the DCP data packet is a
	// plain middle WRITE whose payload includes the DCP header and RETH.
	lines, _, _ = rocedump("-r", path, "-json")
	o := decodeLines(t, lines)[2]
	if _, ok := o["dcp_tag"]; ok || o["payload_len"] != float64(rocev2.DCPLen+rocev2.RETHLen+6) {
		t.Errorf("without -dcp: %s", lines[2])
	}

	lines, _, code = rocedump("-r", path, "-json", "-c", "3")
	if code != 0 || len(lines) != 3 {
		t.Errorf("-c 3: exit %d, %d lines", code, len(lines))
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestPcapngText reads a pcapng file and checks the text lines.
func TestPcapngText(t *testing.T) {
	pfc := make([]byte, rocev2.MinFrameLen)
	rocev2.BuildPFC(pfc, macA, 0x03, [8]uint16{100, 200})
	frames := [][]byte{
		build(t, writeFirst()),
		withShim(build(t, writeFirst()), psn.LinkOf(7, true), rocev2.ShimRetransmit, psn.LinkOf(3, false)),
		pfc,
		arp(),
		build(t, &rocev2.Spec{SrcIP: v6A, DstIP: v6B, SrcPort: 1000, Opcode: rocev2.NetRTOpcode, DestQP: 0xabcdef,
			PSN: 5, NetRTType: rocev2.NetRTRequest, NetRTPSN: 200, Bitmap: rocev2.Bitmap128{Lo: 0x5}}),
	}
	lines, stderr, code := rocedump("-r", writeCapture(t, frames, true))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := []string{
		"1 0.000000 10.0.0.1:49170 > 10.0.0.2 RC_RDMA_WRITE_FIRST qp=0x000012 psn=100 len=13 icrc=ok va=0x1000 rkey=0x77 dlen=8192",
		"2 0.001000 10.0.0.1:49170 > 10.0.0.2 RC_RDMA_WRITE_FIRST qp=0x000012 psn=100 len=13 icrc=ok va=0x1000 rkey=0x77 dlen=8192 shim=retransmit seq=7 era=1 ack=3 ack_era=0",
		"3 0.002000 pfc enable=0x03 times=[100 200 0 0 0 0 0 0]",
		"4 0.003000 other ethertype=0x0806(arp) length=42",
		"5 0.004000 [fd00::1]:1000 > fd00::2 NETRT qp=0xabcdef psn=5 len=0 icrc=ok netrt=request epsn=200 bitmap=00000000000000000000000000000005",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestBadICRC checks that one flipped payload bit gives icrc_ok=false and
// reason bad_icrc, while a rewritten ECN bit, which the ICRC masks, does not.
func TestBadICRC(t *testing.T) {
	good := build(t, writeFirst())
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(good, &m)
	bad := bytes.Clone(good)
	bad[m.PayloadOff+3] ^= 0x01
	marked := bytes.Clone(good)
	rocev2.IPv4(marked[m.L3Off:]).SetECN(3) // CE, as a congested switch marks it
	lines, _, code := rocedump("-r", writeCapture(t, [][]byte{good, bad, marked}, false), "-json")
	objs := decodeLines(t, lines)
	if code != 0 || len(objs) != 3 {
		t.Fatalf("exit %d, %d lines", code, len(objs))
	}
	for i, c := range []struct {
		ok     bool
		reason any
	}{{true, nil}, {false, "bad_icrc"}, {true, nil}} {
		if objs[i]["icrc_ok"] != c.ok || objs[i]["reason"] != c.reason {
			t.Errorf("frame %d: icrc_ok=%v reason=%v, want %v %v", i+1, objs[i]["icrc_ok"], objs[i]["reason"], c.ok, c.reason)
		}
	}
	text, _, _ := rocedump("-r", writeCapture(t, [][]byte{bad}, false))
	if len(text) != 1 || !strings.Contains(text[0], " icrc=bad") || strings.Contains(text[0], "malformed") {
		t.Errorf("text: %q, want icrc=bad", text)
	}
}

// TestUsage checks the exit codes and messages of bad invocations.
func TestUsage(t *testing.T) {
	capture := writeCapture(t, [][]byte{arp()}, false)
	notCapture := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notCapture, []byte("hello, this is text"), 0o644)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 2, "exactly one of -r FILE and -i IFACE"},
		{[]string{"-r", capture, "-i", "lo"}, 2, "exactly one of"},
		{[]string{"-r", capture, "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-r", capture, "-c", "-1"}, 2, "-c must not be negative"},
		{[]string{"-r", capture, "-c", "x"}, 2, "invalid value"},
		{[]string{"-r", capture, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-r", filepath.Join(t.TempDir(), "missing.pcap")}, 1, "no such file"},
		{[]string{"-r", notCapture}, 1, "not a pcap or pcapng file"},
		{[]string{"-r", empty}, 1, "not a capture file"},
		{[]string{"-i", "no-such-if0"}, 1, "no-such-if0"},
		{[]string{"-h"}, 0, "usage: rocedump"},
	} {
		lines, stderr, code := rocedump(c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) || len(lines) != 0 {
			t.Errorf("rocedump %q: exit %d, stderr %q, stdout %q; want exit %d and %q", c.args, code, stderr, lines, c.code, c.stderr)
		}
	}
}
