package netrt

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// byQP forwards what comes from a host port (port 0) to fabric port
// 1 + QP mod (ports-1), and what comes from the fabric to port 0: a
// stand-in for fwd with several fabric ports.
type byQP struct{ ports int }

func (byQP) Name() string { return "by-qp" }
func (r byQP) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		out := uint16(0)
		if p.In == 0 {
			out = 1 + uint16(p.Meta.Flow.QP%uint32(r.ports-1))
		}
		p.Forward(out, 2)
	}
}

// frame is a transmitted frame and the rig time it left at.
type frame struct {
	at int64
	b  []byte
}

// srig is rig with any number of ports and egress configurations: port 0
// faces the hosts, the others the fabric, routed by byQP. It keeps the
// time each frame was sent, for pacing and PFC tests.
type srig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	sent  [][]frame
	now   int64
}

// newSrcRig builds an srig whose port i has egress eg[i], running byQP and
// then s.
func newSrcRig(t testing.TB, eg []dataplane.EgressConfig, s dataplane.Stage) *srig {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &srig{t: t, mem: mem, sent: make([][]frame, len(eg))}
	var ports []dataplane.Port
	for i := range eg {
		p := dataplane.NewMemPort(string(rune('a'+i)), rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 4096)
		p.OnTransmit = func(f []byte) { r.sent[i] = append(r.sent[i], frame{r.now, append([]byte(nil), f...)}) }
		r.ports = append(r.ports, p)
		ports = append(ports, p)
	}
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: eg,
		Stages: []dataplane.Stage{byQP{len(eg)}, s}, Classifier: rocev2.Classifier{VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newSrcN returns an srig of n unshaped ports (0 host, the rest fabric)
// running a SrcToR with configuration c.
func newSrcN(t testing.TB, n int, c Config) (*srig, *SrcToR) {
	t.Helper()
	c.Fabric = (1<<n - 1) &^ 1
	s, err := NewSrcToR(c)
	if err != nil {
		t.Fatal(err)
	}
	eg := make([]dataplane.EgressConfig, n)
	for i := range eg {
		eg[i] = dataplane.DefaultEgress(0, 8<<20)
	}
	return newSrcRig(t, eg, s), s
}

func (r *srig) inject(port int, f []byte) {
	r.t.Helper()
	if !r.ports[port].Inject(f) {
		r.t.Fatal("inject refused")
	}
}

// step advances the clock by dt and runs one worker loop.
func (r *srig) step(dt int64) {
	r.now += dt
	r.w.Step(r.now)
}

// until steps the clock to t in steps of at most dt.
func (r *srig) until(t, dt int64) {
	for r.now < t {
		r.step(min(dt, t-r.now))
	}
}

// settle runs loops 1 µs apart until nothing is pending or queued.
func (r *srig) settle() {
	r.t.Helper()
	for i := 0; i < 100000; i++ {
		busy := false
		for k, p := range r.ports {
			busy = busy || p.Pending() > 0 || r.w.Egress(k).Backlog() > 0
		}
		if !busy {
			return
		}
		r.step(1000)
	}
	r.t.Fatal("rig does not settle")
}

// send injects data PSNs a..b-1 of flow qp from the host, one loop each.
func (r *srig) send(qp, a, b uint32) {
	for n := a; n < b; n++ {
		r.inject(0, data(r.t, qp, n))
		r.settle()
	}
}

// take returns and forgets the frames sent on port i.
func (r *srig) take(i int) []frame {
	f := r.sent[i]
	r.sent[i] = nil
	return f
}

func (r *srig) noLeak(s *SrcToR) {
	r.t.Helper()
	r.settle()
	s.Close()
	if n := r.mem.InUse(); n != 0 {
		r.t.Fatalf("%d frames leaked", n)
	}
}

// pfcFrame returns the MAC control payload of f if f is a PFC frame.
func pfcFrame(f []byte) (rocev2.MACControl, bool) {
	e := rocev2.Ethernet(f)
	if len(f) < 14+rocev2.PFCLen || e.Type() != rocev2.EtherTypeMACControl || e.Dst() != rocev2.MACControlDst {
		return nil, false
	}
	c := rocev2.MACControl(f[14:])
	return c, c.Opcode() == rocev2.MACControlPFC
}

// sortOut separates the data frames among fs (their send times and
// PSNs) from PFC frames, failing on anything else.
func sortOut(t testing.TB, fs []frame) (at []int64, ids []uint32, pfc []frame) {
	t.Helper()
	for _, f := range fs {
		if _, ok := pfcFrame(f.b); ok {
			pfc = append(pfc, f)
			continue
		}
		m := meta(t, f.b)
		if !isData(&m) {
			t.Fatalf("frame with opcode %v where data or PFC was expected", m.Opcode)
		}
		at = append(at, f.at)
		ids = append(ids, m.Flow.QP*100+uint32(m.PSN))
	}
	return at, ids, pfc
}
