package trim

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// toLast forwards every packet to the last port, on queue q (2 is
// "data" in DefaultEgress): the part of fwd the tests need.
type toLast struct{ q uint8 }

func (toLast) Name() string { return "fwd" }
func (s *toLast) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(uint16(c.NumPorts()-1), s.q)
		}
	}
}

// rig is a worker with n in-memory ports p0…p(n−1), routing everything
// to the last one, then the trim stage; its egress is DefaultEgress with
// Config.WRR on the trimming ports. The test clocks it.
type rig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	route *toLast
	st    *Stage
	now   int64
	sent  [][]byte // frames transmitted on the last port, when keep
	keep  bool
	data  int // queue indices
	ctrl  int
}

type rigOpt struct {
	ports  int             // 0 means 2
	rate   uint64          // egress rate of every port, bit/s; 0 unshaped
	limit  int             // queue budget; 0 means 4 MiB
	frames int             // Mem frames; 0 means 8192
	before dataplane.Stage // runs before trimming (after the route), if set
}

// stages returns ss without its nil ones.
func stages(ss ...dataplane.Stage) []dataplane.Stage {
	var out []dataplane.Stage
	for _, s := range ss {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

func portName(i int) string { return "p" + string(rune('0'+i)) }

func newRig(t testing.TB, cfg Config, o rigOpt) *rig {
	t.Helper()
	if o.ports == 0 {
		o.ports = 2
	}
	if o.limit == 0 {
		o.limit = 4 << 20
	}
	if o.frames == 0 {
		o.frames = 8192
	}
	mem, err := dataplane.NewMem(make([]byte, o.frames*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, mem: mem, route: &toLast{q: 2}, keep: true}
	r.st, err = NewStage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ports []dataplane.Port
	var egs []dataplane.EgressConfig
	for i := 0; i < o.ports; i++ {
		p := dataplane.NewMemPort(portName(i), rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 4096)
		r.ports = append(r.ports, p)
		ports = append(ports, p)
		eg := dataplane.DefaultEgress(o.rate, o.limit)
		if cfg.Trims(p.Name()) {
			if eg, err = cfg.WRR(eg); err != nil {
				t.Fatal(err)
			}
		}
		egs = append(egs, eg)
	}
	r.ports[o.ports-1].OnTransmit = func(f []byte) {
		if r.keep {
			r.sent = append(r.sent, append([]byte(nil), f...))
		}
	}
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: egs,
		Stages: stages(r.route, o.before, r.st), Classifier: rocev2.Classifier{DCP: true, VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	e := r.w.Egress(o.ports - 1)
	r.data, r.ctrl = e.QueueIndex(DataQueue), e.QueueIndex(ControlQueue)
	return r
}

// out is the egress of the last port.
func (r *rig) out() *dataplane.Egress { return r.w.Egress(len(r.ports) - 1) }

func (r *rig) depth(q int) int { d, _ := r.out().Depth(q); return d }

// hold stops (or restarts) transmission on the last port, so that its
// queues only grow.
func (r *rig) hold(on bool) {
	n := dataplane.BatchSize
	if on {
		n = 0
	}
	r.ports[len(r.ports)-1].SetTxRoom(n)
}

// preload puts n bytes of filler frames on queue q of the last port.
func (r *rig) preload(q, n int) {
	r.t.Helper()
	for n > 0 {
		k := min(n, 1500)
		if k < 60 && n > 60 { // keep every filler a plausible frame
			k = 60
		}
		addr, ok := r.mem.Alloc()
		if !ok || !r.out().Enqueue(q, addr, k) {
			r.t.Fatalf("preload of queue %d refused", q)
		}
		n -= k
	}
}

// send injects frames on port 0 and runs one worker step per batch.
func (r *rig) send(frames ...[]byte) {
	r.t.Helper()
	for _, f := range frames {
		if !r.ports[0].Inject(f) {
			r.t.Fatal("inject refused")
		}
	}
	for r.ports[0].Pending() > 0 {
		r.step(1000)
	}
}

func (r *rig) step(dt int64) {
	r.now += dt
	r.w.Step(r.now)
}

// drops returns the worker's published count of reason.
func (r *rig) drops(reason dataplane.Reason) uint64 {
	r.step(2e6)
	return r.w.Snapshot().Drops[reason]
}

// port returns the stage's live counters for the last port.
func (r *rig) port() PortStats { return r.st.Stats().Ports[len(r.ports)-1] }

// frame kinds by DCP tag.
var (
	srcIP = netip.MustParseAddr("10.0.1.2")
	dstIP = netip.MustParseAddr("10.0.2.3")
)

// dcpData is a DCP WRITE middle carrying payload bytes (tag 10 in DSCP 26).
func dcpData(t testing.TB, seq uint32, payload int) []byte {
	return build(t, &rocev2.Spec{DCP: true, DSCP: 26, Opcode: rocev2.RCWriteMiddle, DestQP: 0xd0d, PSN: psn.New(seq),
		MSN: 17, Retry: 1, SSN: 5, VA: 0x10000, RKey: 0xd0d0, DMALen: 1 << 20, Payload: make([]byte, payload)})
}

// dcpAck is a DCP ACK (tag 01 in DSCP 25).
func dcpAck(t testing.TB) []byte {
	return build(t, &rocev2.Spec{DCP: true, DSCP: 25, Opcode: rocev2.RCAck, DestQP: 0xd0e, PSN: 9,
		MSN: 3, Syndrome: rocev2.ACKSyndrome(31), AckMSN: 3})
}

// plain is standard RoCEv2 data in DSCP 24 (tag 00: not DCP).
func plain(t testing.TB, payload int) []byte {
	return build(t, &rocev2.Spec{DSCP: 24, Opcode: rocev2.RCWriteMiddle, DestQP: 0xd0f, PSN: 1, Payload: make([]byte, payload)})
}

// headerOnly is a DCP data packet trimmed upstream (tag 11).
func headerOnly(t testing.TB) []byte {
	t.Helper()
	b := dcpData(t, 77, 1024)
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(b, &m)
	n, err := rocev2.Trim(b, &m)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

func build(t testing.TB, s *rocev2.Spec) []byte {
	t.Helper()
	if s.Src == (rocev2.MAC{}) {
		s.Src, s.Dst = rocev2.MAC{2, 0, 0, 0, 0, 0x0a}, rocev2.MAC{2, 0, 0, 0, 0, 0x0b}
	}
	if !s.SrcIP.IsValid() {
		s.SrcIP, s.DstIP = srcIP, dstIP
	}
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// classify parses f as the rig's worker does.
func classify(f []byte) rocev2.Meta {
	var m rocev2.Meta
	rocev2.Classifier{DCP: true, VerifyICRC: true}.Classify(f, &m)
	return m
}
