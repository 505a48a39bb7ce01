package trust

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// toLast forwards every packet to the last port, queue "data": the part
// of fwd the tests need.
type toLast struct{}

func (toLast) Name() string { return "fwd" }
func (toLast) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(uint16(c.NumPorts()-1), 2)
		}
	}
}

// rig: port 0 faces a host, ports 1 and 2 the fabric; everything that
// passes the stage goes out of port 2.
type rig struct {
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	st    *Stage
	sent  int
	now   int64
}

func newRig(t testing.TB, c Config) *rig {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, 2048*1024), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{mem: mem, st: NewStage(c)}
	var ports []dataplane.Port
	var egs []dataplane.EgressConfig
	for i := 0; i < 3; i++ {
		p := dataplane.NewMemPort([]string{"h0", "f1", "f2"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 256)
		r.ports = append(r.ports, p)
		ports = append(ports, p)
		egs = append(egs, dataplane.DefaultEgress(0, 1<<20))
	}
	r.ports[2].OnTransmit = func([]byte) { r.sent++ }
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: egs,
		Stages: []dataplane.Stage{r.st, toLast{}}, Classifier: rocev2.Classifier{DCP: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send injects f on port in and runs the worker until it is done.
func (r *rig) send(in int, f []byte) {
	r.ports[in].Inject(f)
	for range 4 {
		r.now += 1000
		r.w.Step(r.now)
	}
	r.now += 2e6 // the worker publishes its counters every millisecond
	r.w.Step(r.now)
}

func build(t testing.TB, s rocev2.Spec) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &s)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

var (
	local  = netip.MustParseAddr("10.0.1.2") // a host behind this ToR
	remote = netip.MustParseAddr("10.0.2.2") // a host behind a NetRT peer
	other  = netip.MustParseAddr("10.0.9.2") // a host behind a ToR that is no peer
	peers  = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
)

func request(t testing.TB, src, dst netip.Addr) []byte {
	return build(t, rocev2.Spec{SrcIP: src, DstIP: dst, Opcode: rocev2.NetRTOpcode, DestQP: 0x11,
		NetRTType: rocev2.NetRTRequest, NetRTPSN: psn.New(5), Bitmap: rocev2.Bitmap128{Lo: 0xff}})
}

func write(t testing.TB, src, dst netip.Addr) []byte {
	return build(t, rocev2.Spec{SrcIP: src, DstIP: dst, Opcode: rocev2.RCWriteMiddle, DestQP: 0x11,
		PSN: psn.New(5), Payload: make([]byte, 256)})
}

// shimmed returns f with a link shim of type typ inserted after the
// addresses, as an llr sender would send it.
func shimmed(f []byte, typ uint8) []byte {
	out := make([]byte, 0, len(f)+rocev2.ShimLen)
	out = append(out, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, rocev2.EtherTypeShim)
	sh := make([]byte, rocev2.ShimLen)
	rocev2.Shim(sh).Set(psn.LinkOf(7, false), typ, 1, binary.BigEndian.Uint16(f[12:14]))
	out = append(out, sh...)
	return append(out, f[14:]...)
}

// linkCtrl is a bare link control frame (no inner frame) of type typ.
func linkCtrl(typ uint8) []byte {
	f := make([]byte, 64)
	f[0], f[6] = 2, 2
	binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
	rocev2.Shim(f[14:]).Set(psn.LinkOf(7, false), typ, 1, 0)
	return f
}

// trimmed is a DCP data packet as a trimming switch upstream leaves it
// (rocev2.Trim).
func trimmed(t testing.TB) []byte {
	f := build(t, rocev2.Spec{SrcIP: remote, DstIP: local, DCP: true, DSCP: rocev2.WithTag(24, rocev2.DCPData),
		Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: psn.New(5), MSN: 1, Payload: make([]byte, 1021)})
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(f, &m)
	n, err := rocev2.Trim(f, &m)
	if err != nil {
		t.Fatal(err)
	}
	return f[:n]
}

func ho(t testing.TB, payload int) []byte {
	return build(t, rocev2.Spec{SrcIP: remote, DstIP: local, DCP: true, DSCP: rocev2.WithTag(24, rocev2.DCPHeaderOnly),
		Opcode: rocev2.RCAck, DestQP: 0x11, PSN: psn.New(5), MSN: 1, Payload: make([]byte, payload)})
}

// TestStageRefuses forges each kind of control frame the stage guards
// from each side of its boundaries and checks the verdict, the reason
// and the per-port counter; what it lets pass reaches the next stage.
func TestStageRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		netrt  bool
		in     int
		frame  func(testing.TB) []byte
		reason dataplane.Reason // 0: passes
		count  func(*PortStats) uint64
	}{
		{"request from a host", true, 0, func(t testing.TB) []byte { return request(t, local, local) }, ReasonNetRTHost, func(p *PortStats) uint64 { return p.NetRTHost }},
		{"request from a host, no NetRT here", false, 0, func(t testing.TB) []byte { return request(t, local, remote) }, ReasonNetRTHost, func(p *PortStats) uint64 { return p.NetRTHost }},
		{"request from a peer", true, 1, func(t testing.TB) []byte { return request(t, remote, local) }, 0, nil},
		{"request from no peer", true, 1, func(t testing.TB) []byte { return request(t, other, local) }, ReasonNetRTPeer, func(p *PortStats) uint64 { return p.NetRTPeer }},
		{"request in transit, no NetRT here", false, 1, func(t testing.TB) []byte { return request(t, other, local) }, 0, nil},
		{"original shim from a host", true, 0, func(t testing.TB) []byte { return shimmed(write(t, local, remote), rocev2.ShimOriginal) }, ReasonLLR, func(p *PortStats) uint64 { return p.LLR }},
		{"retransmit shim from the fabric", true, 1, func(t testing.TB) []byte { return shimmed(write(t, remote, local), rocev2.ShimRetransmit) }, ReasonLLR, func(p *PortStats) uint64 { return p.LLR }},
		{"loss notice from a host", true, 0, func(testing.TB) []byte { return linkCtrl(rocev2.ShimLoss) }, ReasonLLR, func(p *PortStats) uint64 { return p.LLR }},
		{"protection request from the fabric", true, 1, func(testing.TB) []byte { return linkCtrl(rocev2.ShimProtect) }, ReasonLLR, func(p *PortStats) uint64 { return p.LLR }},
		{"ACK from a host", true, 0, func(testing.TB) []byte { return linkCtrl(rocev2.ShimAck) }, ReasonLLR, func(p *PortStats) uint64 { return p.LLR }},
		{"header-only packet returned by a host", true, 0, func(t testing.TB) []byte { return ho(t, 0) }, 0, nil},
		{"header-only packet trimmed upstream", true, 1, trimmed, 0, nil},
		{"header-only packet with payload from a host", true, 0, func(t testing.TB) []byte { return ho(t, 512) }, ReasonDCPPayload, func(p *PortStats) uint64 { return p.DCPPayload }},
		{"data from a host", true, 0, func(t testing.TB) []byte { return write(t, local, remote) }, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, Config{Hosts: 1 << 0, NetRT: c.netrt, Peers: peers})
			r.send(c.in, c.frame(t))
			snap := r.w.Snapshot()
			st := r.st.Stats()
			if c.reason == 0 {
				if r.sent != 1 || st.Sum().Total() != 0 {
					t.Fatalf("sent %d, refused %+v: want it to pass", r.sent, st.Sum())
				}
				return
			}
			if r.sent != 0 || snap.Drops[c.reason] != 1 || c.count(&st.Ports[c.in]) != 1 || st.Sum().Total() != 1 {
				t.Fatalf("sent %d, %s drops %d, port %d counted %+v: want it refused once",
					r.sent, c.reason, snap.Drops[c.reason], c.in, st.Ports[c.in])
			}
			if r.mem.InUse() != 0 {
				t.Fatalf("%d frames leaked", r.mem.InUse())
			}
		})
	}
}

// TestStageAllocs holds the stage to the house rule: nothing allocated
// per packet, refused or passed.
func TestStageAllocs(t *testing.T) {
	r := newRig(t, Config{Hosts: 1, NetRT: true, Peers: peers})
	frames := [][]byte{request(t, other, local), request(t, local, remote), write(t, local, remote), linkCtrl(rocev2.ShimLoss), ho(t, 512)}
	if n := testing.AllocsPerRun(100, func() {
		for i, f := range frames {
			r.ports[i%2].Inject(f)
		}
		r.now += 1000
		r.w.Step(r.now)
		r.now += 1000
		r.w.Step(r.now)
	}); n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}
