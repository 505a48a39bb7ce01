package impair

import (
	"encoding/binary"
	"math"
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// cross forwards every packet from port i to port 1-i, queue "data": the
// part of fwd the tests need, so impair can run after it.
type cross struct{}

func (cross) Name() string { return "cross" }
func (cross) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(1-p.In, 2)
		}
	}
}

// rig is a two-port worker, p0 and p1, each an impaired Port on an
// in-memory port, running cross (and any stages the test adds), clocked
// by the test. Every frame carries a sequence number in its last four
// bytes, which the classifier does not check (ICRC verification is off);
// transmitted sequence numbers and times are recorded per port.
type rig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports [2]*dataplane.MemPort
	ip    [2]*Port
	ctl   *Control
	now   int64
	seq   [2][]uint32 // sequence numbers sent per port
	at    [2][]int64  // when
	keep  bool        // keep whole frames in frames
	frame [2][][]byte
	sent  int // frames injected
}

type rigOpt struct {
	dcp    bool // the classifier parses DCP (Classifier.DCP)
	worker int
	frames int // Mem frames; 0 means 4096
	// stages run after cross.
	stages []dataplane.Stage
	// outer, if set, wraps each impaired port, as llr's receiver does.
	outer func(dataplane.Port) dataplane.Port
}

func newRig(t testing.TB, cfg Config, o rigOpt) *rig {
	t.Helper()
	if o.frames == 0 {
		o.frames = 4096
	}
	mem, err := dataplane.NewMem(make([]byte, o.frames*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, mem: mem}
	r.ctl, err = NewControl(cfg, []string{"p0", "p1"})
	if err != nil {
		t.Fatal(err)
	}
	cls := rocev2.Classifier{DCP: o.dcp}
	var ports []dataplane.Port
	for i := range r.ports {
		r.ports[i] = dataplane.NewMemPort([]string{"p0", "p1"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 8192)
		r.ports[i].OnTransmit = func(f []byte) {
			r.seq[i] = append(r.seq[i], seqOf(f))
			r.at[i] = append(r.at[i], r.now)
			if r.keep {
				r.frame[i] = append(r.frame[i], append([]byte(nil), f...))
			}
		}
		r.ip[i] = r.ctl.Wrap(r.ports[i], PortConfig{Worker: o.worker, Mem: mem, Clock: r.clock, Classifier: cls})
		ports = append(ports, r.ip[i])
		if o.outer != nil {
			ports[i] = o.outer(r.ip[i])
		}
	}
	stages := append([]dataplane.Stage{cross{}}, o.stages...)
	eg := dataplane.DefaultEgress(0, 8<<20)
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{ID: o.worker, Mem: mem, Ports: ports,
		Egress: []dataplane.EgressConfig{eg, eg}, Stages: stages, Classifier: cls, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) clock() int64 { return r.now }

// dir returns the counters of port i in direction d.
func (r *rig) dir(i int, d Direction) DirStats { return r.ip[i].Counters().Dir[d] }

// held returns the frames both ports hold.
func (r *rig) held() int { return r.ip[0].Counters().Held + r.ip[1].Counters().Held }

// quiet stops recording, for allocation tests and benchmarks.
func (r *rig) quiet() {
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
}

func seqOf(f []byte) uint32 { return binary.BigEndian.Uint32(f[len(f)-4:]) }

// inject sends frame f with sequence number seq into port i.
func (r *rig) inject(i int, f []byte, seq uint32) {
	r.t.Helper()
	binary.BigEndian.PutUint32(f[len(f)-4:], seq)
	if !r.ports[i].Inject(f) {
		r.t.Fatalf("inject %d refused", seq)
	}
	r.sent++
}

// step advances the clock by dt and runs one worker loop.
func (r *rig) step(dt int64) {
	r.now += dt
	r.w.Step(r.now)
}

// drain steps until nothing is pending, queued or held.
func (r *rig) drain() {
	r.t.Helper()
	for i := 0; i < 1e7; i++ {
		busy := r.held() > 0
		for k, p := range r.ports {
			busy = busy || p.Pending() > 0 || r.w.Egress(k).Backlog() > 0
		}
		if !busy {
			return
		}
		r.step(1000)
	}
	r.t.Fatal("rig does not drain")
}

// snapshot returns the worker's counters, published by a step far ahead.
func (r *rig) snapshot() dataplane.Snapshot {
	r.step(int64(2e6))
	return r.w.Snapshot()
}

// noLeak checks that every frame went back to Mem.
func (r *rig) noLeak() {
	r.t.Helper()
	r.drain()
	if n := r.mem.InUse(); n != 0 {
		r.t.Fatalf("%d frames leaked", n)
	}
}

// stream injects n frames into p0, k per step of dt.
func (r *rig) stream(f []byte, n, k int, dt int64) {
	r.t.Helper()
	for s := 0; s < n; {
		for j := 0; j < k && s < n; j++ {
			r.inject(0, f, uint32(s))
			s++
		}
		r.step(dt)
	}
	r.drain()
}

var (
	srcIP = netip.MustParseAddr("10.0.0.1")
	dstIP = netip.MustParseAddr("10.0.1.1")
)

// roce returns a RoCEv2 frame with the given opcode, DSCP and payload.
func roce(t testing.TB, op rocev2.Opcode, dscp uint8, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: srcIP, DstIP: dstIP, DSCP: dscp,
		Opcode: op, DestQP: 7, PSN: psn.New(1), Payload: make([]byte, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// udp returns an IPv4 UDP frame that is not RoCE: a RoCE frame with
// another destination port.
func udp(t testing.TB) []byte {
	f := roce(t, rocev2.RCWriteMiddle, 0, 64)
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(f, &m)
	binary.BigEndian.PutUint16(f[m.L4Off+2:], 9000)
	rocev2.Classifier{}.Classify(f, &m)
	if m.Kind != rocev2.KindIP {
		t.Fatalf("udp frame classified %v", m.Kind)
	}
	return f
}

// lldp returns a non-IP frame.
func lldp() []byte {
	f := make([]byte, 64)
	copy(f, []byte{0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0, 9, 0x88, 0xcc})
	return f
}

// within fails unless |got-want| ≤ margin.
func within(t testing.TB, what string, got, want, margin float64) {
	t.Helper()
	if math.Abs(got-want) > margin {
		t.Fatalf("%s = %.5g, want %.5g ± %.3g", what, got, want, margin)
	}
	t.Logf("%s = %.5g (want %.5g ± %.3g)", what, got, want, margin)
}

// losses returns, for a stream of n sequence numbers of which got
// arrived (in order), the lost fraction and the lengths of the runs of
// consecutive losses.
func losses(got []uint32, n int) (rate float64, runs []int) {
	seen := make([]bool, n)
	for _, s := range got {
		seen[s] = true
	}
	lost, run := 0, 0
	for _, ok := range seen {
		if ok {
			if run > 0 {
				runs = append(runs, run)
			}
			run = 0
			continue
		}
		lost++
		run++
	}
	if run > 0 {
		runs = append(runs, run)
	}
	return float64(lost) / float64(n), runs
}

func mean(v []int) float64 {
	s := 0
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
}
