package main

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
	"rocetor/tor/trim"
	"rocetor/tor/trust"
)

// The switch of the trust tests: hosts h1 (10.0.1.2) and h2 (10.0.1.3),
// fabric ports s1 and s2 toward the NetRT peer's hosts 10.0.2.0/24
// (ECMP over both), llr on s2, trimming on s1 and s2 in a DCP fabric,
// PFC honoured on the fabric ports only. 10.0.9.0/24 lies behind a ToR
// that is no NetRT peer.
var (
	h1Addr    = netip.MustParseAddr("10.0.1.2")
	h2Addr    = netip.MustParseAddr("10.0.1.3")
	peerAddr  = netip.MustParseAddr("10.0.2.2")
	otherAddr = netip.MustParseAddr("10.0.9.2")
)

const (
	portH1 = iota
	portH2
	portS1
	portS2
)

func trustConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Ports = []string{"h1", "h2", "s1", "s2"}
	cfg.XDP.Frames = 32768
	cfg.DCP = true
	cfg.NetRT.Fabric = []string{"s1", "s2"}
	cfg.NetRT.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
	cfg.NetRT.Hold = 10e6            // nothing expires during a test
	cfg.NetRT.RequestInterval = 10e6 // one request per hole
	cfg.Trim = &trim.Config{Ports: []string{"s1", "s2"}}
	cfg.LLR.Ports = []string{"s2"}
	pfc := []string{"s1", "s2"}
	cfg.Trust.PFCPorts = &pfc
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func trustTable() *fwd.TableConfig {
	gw1, gw2 := netip.MustParseAddr("10.9.1.1"), netip.MustParseAddr("10.9.2.1")
	return &fwd.TableConfig{
		Routes: []fwd.Route{
			{Prefix: netip.PrefixFrom(h1Addr, 32), NextHops: []fwd.NextHop{{Port: portH1}}},
			{Prefix: netip.PrefixFrom(h2Addr, 32), NextHops: []fwd.NextHop{{Port: portH2}}},
			{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{{Port: portS1, Gateway: gw1}, {Port: portS2, Gateway: gw2}}},
			{Prefix: netip.MustParsePrefix("10.0.9.0/24"), NextHops: []fwd.NextHop{{Port: portS1, Gateway: gw1}}},
		},
		Neighbours: []fwd.Neighbour{
			{Port: portH1, Addr: h1Addr, MAC: rocev2.MAC{2, 1, 0, 0, 0, 1}},
			{Port: portH2, Addr: h2Addr, MAC: rocev2.MAC{2, 1, 0, 0, 0, 2}},
			{Port: portS1, Addr: gw1, MAC: rocev2.MAC{2, 9, 1}},
			{Port: portS2, Addr: gw2, MAC: rocev2.MAC{2, 9, 2}},
		},
	}
}

// trustRig is a memSwitch that counts what each port sends.
type trustRig struct {
	*memSwitch
	tx []int
}

func newTrustRig(t testing.TB, cfg Config) *trustRig {
	r := &trustRig{memSwitch: newMemSwitch(t.(*testing.T), cfg, trustTable()), tx: make([]int, len(cfg.Ports))}
	for i, p := range r.ports {
		p.OnTransmit = func([]byte) { r.tx[i]++ }
	}
	return r
}

// run injects frames on port in and steps the switch until they are
// through.
func (r *trustRig) run(in int, frames ...[]byte) {
	for _, f := range frames {
		r.ports[in].Inject(f)
	}
	for range 8 {
		r.now += 1000
		r.w.Step(r.now)
	}
}

func spec(t testing.TB, s rocev2.Spec) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &s)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

func writeFrame(t testing.TB, src, dst netip.Addr, qp, n uint32) []byte {
	return spec(t, rocev2.Spec{SrcIP: src, DstIP: dst, DSCP: rocev2.WithTag(24, rocev2.DCPData), DCP: true, MSN: 1,
		Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(n), Payload: make([]byte, 512)})
}

// netrtMsg is a NetRT message from src to dst about QP qp.
func netrtMsg(t testing.TB, typ uint8, src, dst netip.Addr, qp, n uint32, bm rocev2.Bitmap128) []byte {
	return spec(t, rocev2.Spec{SrcIP: src, DstIP: dst, Opcode: rocev2.NetRTOpcode, DestQP: qp,
		NetRTType: typ, NetRTPSN: psn.New(n), Bitmap: bm})
}

// everything is the request for PSNs n…n+9: bit 9 set (n+10 arrived),
// the nine below it clear.
var everything = rocev2.Bitmap128{Lo: 1 << 9}

func linkFrame(typ, count uint8) []byte {
	f := make([]byte, 64)
	f[0], f[6] = 2, 2
	binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
	rocev2.Shim(f[14:]).Set(psn.LinkOf(3, false), typ, count, 0)
	return f
}

func withShim(f []byte, typ uint8) []byte {
	out := append([]byte(nil), f[:12]...)
	out = binary.BigEndian.AppendUint16(out, rocev2.EtherTypeShim)
	sh := make([]byte, rocev2.ShimLen)
	rocev2.Shim(sh).Set(psn.LinkOf(0, false), typ, 0, binary.BigEndian.Uint16(f[12:14]))
	return append(append(out, sh...), f[14:]...)
}

func pfcFrame(pause bool) []byte {
	f := make([]byte, 64)
	if pause {
		n, _ := rocev2.BuildPause(f, rocev2.MAC{2, 1}, 0xffff)
		return f[:n]
	}
	n, _ := rocev2.BuildPFC(f, rocev2.MAC{2, 1}, 0xff, [8]uint16{0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff})
	return f[:n]
}

// setup gives the switch state worth protecting: h1's flow 0x11 to the
// peer pooled (PSNs 0–9), and the peer's flow 0x22 to h1 in ReTx with
// PSN 1 missing and 2, 3 held.
func (r *trustRig) setup(t testing.TB) {
	for n := uint32(0); n < 10; n++ {
		r.run(portH1, writeFrame(t, h1Addr, peerAddr, 0x11, n))
	}
	for _, n := range []uint32{0, 2, 3} {
		r.run(portS1, writeFrame(t, peerAddr, h1Addr, 0x22, n))
	}
}

// follow is what happens after the forged frame in both twins: the hole
// fills, h1 sends on, and the peer's flow carries on.
func (r *trustRig) follow(t testing.TB) {
	r.run(portS1, writeFrame(t, peerAddr, h1Addr, 0x22, 1))
	r.run(portH1, writeFrame(t, h1Addr, peerAddr, 0x11, 10))
	r.run(portS1, writeFrame(t, peerAddr, h1Addr, 0x22, 4))
	r.now += 2e6 // every counter published
	r.w.Step(r.now)
}

// state is everything a forged frame must leave as it was.
type trustState struct {
	src            netrt.SrcStats
	dst            netrt.DstStats
	trim           trim.Stats
	llr            llr.Stats
	tx             []int
	pfcRx, pauseRx []uint64
	paused         []bool
	drops          [dataplane.MaxReasons]uint64
	flows          []netrt.FlowInfo
}

func (r *trustRig) state() trustState {
	s := trustState{src: r.Src.Stats(), dst: r.Dst.Stats(), trim: r.Trim.Stats(), llr: r.LLR.Stats(),
		tx: append([]int(nil), r.tx...), flows: r.Dst.Busiest()}
	s.src.Calls, s.dst.Calls = 0, 0 // the forged frame's batch was handed to them
	snap := r.w.Snapshot()
	s.drops = snap.Drops
	for i, p := range snap.Ports {
		s.pfcRx, s.pauseRx = append(s.pfcRx, p.PFCRx), append(s.pauseRx, p.PauseRx)
		for _, q := range snap.Queues[i] {
			s.paused = append(s.paused, q.Paused)
		}
	}
	return s
}

// TestTrustForged forges each kind of control frame the switch acts on,
// from a host port and from a fabric source that is no NetRT peer (or a
// port llr does not protect), into a switch with every stage on and
// state worth attacking. Each must be dropped with its reason, counted
// on its port, and change nothing: a twin switch fed the same traffic
// without the forged frame ends in the same state. The first cases are
// the controls: the same messages from the configured peer act.
func TestTrustForged(t *testing.T) {
	cases := []struct {
		name   string
		in     int
		frame  func(testing.TB) []byte
		reason dataplane.Reason // 0: the control case, which must act
		acted  func(before, after trustState) bool
	}{
		{"request from the peer (control)", portS1, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTRequest, peerAddr, h1Addr, 0x11, 0, everything)
		}, 0, func(_, a trustState) bool { return a.src.Sum().Retrans == 10 }},
		{"notice from the peer (control)", portS1, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTUnfulfilled, peerAddr, h1Addr, 0x22, 1, rocev2.Bitmap128{})
		}, 0, func(_, a trustState) bool { return a.dst.Sum().WaitUnfulfilled == 1 }},
		{"request from a host naming another host's flow", portH2, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTRequest, peerAddr, h1Addr, 0x11, 0, everything)
		}, trust.ReasonNetRTHost, nil},
		{"request from a fabric source that is no peer", portS1, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTRequest, otherAddr, h1Addr, 0x11, 0, everything)
		}, trust.ReasonNetRTPeer, nil},
		{"unfulfilled notice from a host", portH1, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTUnfulfilled, peerAddr, h1Addr, 0x22, 1, rocev2.Bitmap128{})
		}, trust.ReasonNetRTHost, nil},
		{"unfulfilled notice from a fabric source that is no peer", portS1, func(t testing.TB) []byte {
			return netrtMsg(t, rocev2.NetRTUnfulfilled, otherAddr, h1Addr, 0x22, 1, rocev2.Bitmap128{})
		}, trust.ReasonNetRTPeer, nil},
		{"llr loss notice from a host", portH1, func(testing.TB) []byte { return linkFrame(rocev2.ShimLoss, 100) }, trust.ReasonLLR, nil},
		{"llr ACK from a host", portH2, func(testing.TB) []byte { return linkFrame(rocev2.ShimAck, 0) }, trust.ReasonLLR, nil},
		{"llr protection request from an unprotected fabric port", portS1, func(testing.TB) []byte { return linkFrame(rocev2.ShimProtect, 40) }, trust.ReasonLLR, nil},
		{"llr sync from an unprotected fabric port", portS1, func(testing.TB) []byte {
			f := linkFrame(rocev2.ShimSync, 0)
			rocev2.Shim(f[14:]).SetSync(psn.LinkOf(0, false), 0, 0, 77)
			return f
		}, trust.ReasonLLR, nil},
		{"llr-numbered data from a host", portH1, func(t testing.TB) []byte {
			return withShim(writeFrame(t, h1Addr, peerAddr, 0x33, 0), rocev2.ShimOriginal)
		}, trust.ReasonLLR, nil},
		{"header-only packet with payload from a host", portH1, func(t testing.TB) []byte {
			return spec(t, rocev2.Spec{SrcIP: h1Addr, DstIP: peerAddr, DCP: true, DSCP: rocev2.WithTag(24, rocev2.DCPHeaderOnly),
				Opcode: rocev2.RCWriteMiddle, DestQP: 0x44, PSN: psn.New(0), MSN: 1, Payload: make([]byte, 1024)})
		}, trust.ReasonDCPPayload, nil},
		{"header-only packet with payload from the fabric", portS1, func(t testing.TB) []byte {
			return spec(t, rocev2.Spec{SrcIP: peerAddr, DstIP: h1Addr, DCP: true, DSCP: rocev2.WithTag(24, rocev2.DCPHeaderOnly),
				Opcode: rocev2.RCWriteMiddle, DestQP: 0x22, PSN: psn.New(9), MSN: 1, Payload: make([]byte, 1024)})
		}, trust.ReasonDCPPayload, nil},
		{"PFC from a host", portH1, func(testing.TB) []byte { return pfcFrame(false) }, dataplane.ReasonPFCRefused, nil},
		{"PAUSE from a host", portH2, func(testing.TB) []byte { return pfcFrame(true) }, dataplane.ReasonPFCRefused, nil},
	}
	cfg := trustConfig(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forged, clean := newTrustRig(t, cfg), newTrustRig(t, cfg)
			for _, r := range []*trustRig{forged, clean} {
				r.setup(t)
			}
			before := forged.state()
			forged.run(c.in, c.frame(t))
			clean.run(c.in)
			if c.reason == 0 {
				forged.follow(t)
				if a := forged.state(); !c.acted(before, a) {
					t.Fatalf("the peer's message did nothing: %+v", a.src.Sum())
				}
				return
			}
			forged.follow(t)
			clean.follow(t)
			f, cl := forged.state(), clean.state()
			if f.drops[c.reason] != 1 || cl.drops[c.reason] != 0 {
				t.Errorf("%s drops: %d forged, %d clean; want 1 and 0", c.reason, f.drops[c.reason], cl.drops[c.reason])
			}
			ts := forged.Trust.Stats()
			if c.reason == dataplane.ReasonPFCRefused {
				if n := forged.w.Snapshot().Ports[c.in].PFCRefused; n != 1 {
					t.Errorf("port %s counted %d refused PFC frames, want 1", cfg.Ports[c.in], n)
				}
			} else if n := ts.Ports[c.in].Total(); n != 1 {
				t.Errorf("port %s counted %d refusals, want 1: %+v", cfg.Ports[c.in], n, ts.Ports[c.in])
			}
			f.drops[c.reason] = 0
			if !reflect.DeepEqual(f, cl) {
				t.Errorf("the forged frame changed the switch:\nforged %+v\nclean  %+v", f, cl)
			}
		})
	}
}
