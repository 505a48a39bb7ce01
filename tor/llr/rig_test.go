package llr

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// cross forwards port 0 (host) to port 1 (the protected link) on the
// data queue and back: the part of fwd the tests need.
type cross struct{}

func (cross) Name() string { return "fwd" }
func (cross) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(1-p.In, 2) // "data" in DefaultEgress
		}
	}
}

// side is one switch: port 0 faces a host, port 1 the protected link.
type side struct {
	w          *dataplane.Worker
	mem        *dataplane.Mem
	host, link *dataplane.MemPort
	lp         *Port
	st         *Stage
}

// rig is two switches back to back over an in-memory wire that the test
// may make lossy: a and b, each with its host port. The test clocks both.
type rig struct {
	t    testing.TB
	a, b side
	now  int64
	// start marks when a test's phase began, for lose functions.
	start int64
	// lose says whether the wire loses frame f going from a to b (dir
	// 0) or from b to a (dir 1); dup whether it delivers it twice.
	lose, dup func(dir int, f []byte) bool
	// PSNs of the RoCEv2 frames delivered to each host: toB from a's
	// host to b's, toA the other way.
	toB, toA []uint32
	keep     bool
	// stepped, if set, is called after every step.
	stepped func()
}

const rigFrameSize = 2048

func newSide(t testing.TB, cfg Config, name byte, frames int) side {
	t.Helper()
	return newShapedSide(t, cfg, name, frames, 0)
}

// newShapedSide is newSide with the link's egress shaped to rateBps (0:
// unshaped).
func newShapedSide(t testing.TB, cfg Config, name byte, frames int, rateBps uint64) side {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, frames*rigFrameSize), rigFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	s := side{mem: mem}
	s.host = dataplane.NewMemPort("h", rocev2.MAC{2, 0, 0, 0, name, 1}, mem, 4096)
	s.link = dataplane.NewMemPort("l", rocev2.MAC{2, 0, 0, 0, name, 2}, mem, 8192)
	cfg.Ports = 1 << 1
	if s.st, err = NewStage(cfg); err != nil {
		t.Fatal(err)
	}
	if s.lp, err = s.st.Wrap(1, s.link, mem); err != nil {
		t.Fatal(err)
	}
	eg := dataplane.DefaultEgress(0, 4<<20)
	s.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: []dataplane.Port{s.host, s.lp},
		Egress: []dataplane.EgressConfig{eg, dataplane.DefaultEgress(rateBps, 4<<20)}, Stages: []dataplane.Stage{cross{}, s.st}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, keep: true}
	r.a = newSide(t, cfg, 0xa, 16384)
	r.b = newSide(t, cfg, 0xb, 16384)
	r.wire()
	r.handshake()
	return r
}

// wire connects the two sides' links and hosts to the rig.
func (r *rig) wire() {
	wire := func(dir int, to *dataplane.MemPort) func([]byte) {
		return func(f []byte) {
			if r.lose != nil && r.lose(dir, f) {
				return
			}
			to.Inject(f)
			if r.dup != nil && r.dup(dir, f) {
				to.Inject(f)
			}
		}
	}
	r.a.link.OnTransmit = wire(0, r.b.link)
	r.b.link.OnTransmit = wire(1, r.a.link)
	var m rocev2.Meta
	host := func(into *[]uint32) func([]byte) {
		return func(f []byte) {
			if !r.keep {
				return
			}
			rocev2.Classifier{}.Classify(f, &m)
			if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone {
				r.t.Errorf("host got a frame of kind %v, reason %v: % x", m.Kind, m.Reason, f[:min(len(f), 40)])
				return
			}
			*into = append(*into, uint32(m.PSN))
		}
	}
	r.b.host.OnTransmit = host(&r.toB)
	r.a.host.OnTransmit = host(&r.toA)
}

// handshake steps until both sides have their session, as tord does
// before traffic comes; it fails the test after 10 ms of rig time.
func (r *rig) handshake() {
	r.t.Helper()
	for end := r.now + 10e6; !r.a.lp.l.established || !r.b.lp.l.established; r.step(1000) {
		if r.now >= end {
			r.t.Fatalf("no session after 10 ms: a %v, b %v", r.a.lp.l.established, r.b.lp.l.established)
		}
	}
}

// restart replaces side s (&r.a or &r.b) with a fresh switch on the same
// wires, with an epoch other than the old one (one restart in 65535
// draws the same: see the package doc).
func (r *rig) restart(s *side, cfg Config) {
	old := s.lp.l.epoch
	name := byte(0xa)
	if s == &r.b {
		name = 0xb
	}
	*s = newSide(r.t, cfg, name, 16384)
	if s.lp.l.epoch == old {
		s.lp.l.epoch = old%0xffff + 1
	}
	r.wire()
}

// step runs both workers once, dt nanoseconds after the last step.
func (r *rig) step(dt int64) {
	r.now += dt
	r.a.w.Step(r.now)
	r.b.w.Step(r.now)
	if r.stepped != nil {
		r.stepped()
	}
}

// run steps until both sides are quiet (nothing queued, nothing pending,
// nothing held) or limit nanoseconds of rig time pass.
func (r *rig) run(limit int64) {
	end := r.now + limit
	for r.now < end {
		r.step(1000)
		if r.quiet() {
			return
		}
	}
}

func (r *rig) quiet() bool {
	for _, s := range []*side{&r.a, &r.b} {
		l := s.lp.l
		if s.host.Pending() > 0 || s.link.Pending() > 0 || s.w.Egress(0).Backlog() > 0 || s.w.Egress(1).Backlog() > 0 ||
			l.inflight() > 0 || l.has(l.ackNo) || l.reqN > 0 || l.fresh > 0 || l.pending || !l.established || l.syncAsk {
			return false
		}
		if l.rx != nil && l.rx.records() > 0 {
			return false
		}
	}
	return true
}

var (
	srcIP = netip.MustParseAddr("10.0.0.1")
	dstIP = netip.MustParseAddr("10.0.1.1")
)

// frame is a RoCEv2 WRITE Middle with PSN seq and payload bytes.
func frame(t testing.TB, seq uint32, payload int) []byte {
	t.Helper()
	b := make([]byte, rigFrameSize)
	n, err := rocev2.Build(b, &rocev2.Spec{Src: rocev2.MAC{2, 0, 0, 0, 0, 0x0a}, Dst: rocev2.MAC{2, 0, 0, 0, 0, 0x0b},
		SrcIP: srcIP, DstIP: dstIP, Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: psn.New(seq), Payload: make([]byte, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// send injects frames with PSNs from, from+1, … into a's host port,
// stepping whenever the port's queue is full, and returns the next PSN.
func (r *rig) send(from uint32, n, payload int) uint32 {
	f := frame(r.t, 0, payload)
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(f, &m)
	for i := 0; i < n; i++ {
		rocev2.BTH(f[m.BTHOff:]).SetPSN(psn.New(from))
		from++
		// Keep a's data queue short, as a sending host's flow control
		// would: what the queue refuses is lost before the link.
		for d, _ := r.a.w.Egress(1).Depth(2); d > 256<<10 || !r.a.host.Inject(f); d, _ = r.a.w.Egress(1).Depth(2) {
			r.step(1000)
		}
		if i%dataplane.BatchSize == dataplane.BatchSize-1 {
			r.step(1000)
		}
	}
	return from
}

// shimOf returns the shim of a wire frame, or nil.
func shimOf(f []byte) rocev2.Shim {
	if off := shimAt(f); off != 0 {
		return rocev2.Shim(f[off : off+rocev2.ShimLen])
	}
	return nil
}

// isType reports whether wire frame f is a shim of type typ.
func isType(f []byte, typ uint8) bool {
	s := shimOf(f)
	return s != nil && s.Type() == typ
}

// inOrder checks that got is exactly from, from+1, …, from+n−1.
func inOrder(t testing.TB, got []uint32, from uint32, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("delivered %d frames, want %d", len(got), n)
	}
	for i, g := range got {
		if g != (from+uint32(i))&psn.Mask {
			t.Fatalf("frame %d has PSN %d, want %d (first frames %v)", i, g, from+uint32(i), got[:min(i+3, len(got))])
		}
	}
}

// once checks that got holds each of from … from+n−1 exactly once.
func once(t testing.TB, got []uint32, from uint32, n int) {
	t.Helper()
	seen := make(map[uint32]int, n)
	for _, g := range got {
		seen[g]++
	}
	for i := 0; i < n; i++ {
		if c := seen[(from+uint32(i))&psn.Mask]; c != 1 {
			t.Fatalf("PSN %d delivered %d times", from+uint32(i), c)
		}
	}
	if len(got) != n {
		t.Fatalf("delivered %d frames, want %d", len(got), n)
	}
}

func (r *rig) stats(s *side) PortStats { return s.st.Stats().Ports[1] }
