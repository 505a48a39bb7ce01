package netrt

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// steer is the part of fwd a ToR with several hosts needs: a packet from
// port 0 (the fabric) goes to host port 1+QP%hosts, any other to port 0.
type steer struct{ hosts int }

func (steer) Name() string { return "steer" }
func (s steer) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		switch {
		case p.Verdict != dataplane.Forward:
		case p.In != 0:
			p.Forward(0, 2)
		default:
			p.Forward(uint16(1+p.Meta.Flow.QP%uint32(s.hosts)), 2)
		}
	}
}

// mrig is a worker with a fabric port p0 and hosts host ports p1…,
// running steer and a DstToR, clocked by the test. Transmitted frames
// are kept per port.
type mrig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	sent  [][][]byte
	now   int64
}

// newDstRig returns an mrig with hosts host ports and its DstToR, p0
// facing the fabric.
func newDstRig(t testing.TB, hosts int, c Config) (*mrig, *DstToR) {
	t.Helper()
	c.Fabric = 1
	d, err := NewDstToR(c)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := dataplane.NewMem(make([]byte, 8192*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &mrig{t: t, mem: mem, sent: make([][][]byte, hosts+1)}
	var ports []dataplane.Port
	var eg []dataplane.EgressConfig
	for i := 0; i <= hosts; i++ {
		p := dataplane.NewMemPort("p"+string(rune('0'+i)), rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 4096)
		p.OnTransmit = func(f []byte) { r.sent[i] = append(r.sent[i], append([]byte(nil), f...)) }
		r.ports = append(r.ports, p)
		ports = append(ports, p)
		eg = append(eg, dataplane.DefaultEgress(0, 8<<20))
	}
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: eg,
		Stages: []dataplane.Stage{steer{hosts}, d}, Classifier: rocev2.Classifier{VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

func (r *mrig) inject(f []byte) {
	r.t.Helper()
	if !r.ports[0].Inject(f) {
		r.t.Fatal("inject refused")
	}
}

// step advances the clock by dt, runs one worker loop, then loops at the
// same time until every egress queue is empty: the frames the step
// produced are all sent, and no timer runs twice.
func (r *mrig) step(dt int64) {
	r.t.Helper()
	r.now += dt
	r.w.Step(r.now)
	for i := 0; i < 1000; i++ {
		busy := false
		for k := range r.ports {
			busy = busy || r.w.Egress(k).Backlog() > 0
		}
		if !busy {
			return
		}
		r.w.Step(r.now)
	}
	r.t.Fatal("egress does not drain")
}

// take returns and forgets the frames sent on port i.
func (r *mrig) take(i int) [][]byte {
	f := r.sent[i]
	r.sent[i] = nil
	return f
}

// noLeak closes d and checks that no frame is left in use.
func (r *mrig) noLeak(d *DstToR) {
	r.t.Helper()
	r.step(0)
	d.Close()
	if n := r.mem.InUse(); n != 0 {
		r.t.Fatalf("%d frames leaked", n)
	}
}

// dataFrom returns an RDMA Write Middle of flow src→dstIP, QP qp, PSN n,
// with size bytes of payload.
func dataFrom(t testing.TB, src netip.Addr, qp, n uint32, size int) []byte {
	return build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: src, DstIP: dstIP,
		Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(n), Payload: make([]byte, size)})
}

// keyOf returns the flow key of srcIP→dstIP, QP qp.
func keyOf(t testing.TB, qp uint32) rocev2.FlowKey { return meta(t, data(t, qp, 0)).Flow }

// flow returns the entry of srcIP→dstIP, QP qp, failing if there is none.
func (d *DstToR) flow(t testing.TB, qp uint32) *dflow {
	t.Helper()
	k := keyOf(t, qp)
	i := d.index.find(d.flows, &k)
	if i < 0 {
		t.Fatalf("no entry for QP %d", qp)
	}
	return &d.flows[i]
}

// expect checks the state, ePSN and bitmap of srcIP→dstIP, QP qp.
func (d *DstToR) expect(t testing.TB, qp uint32, state uint8, epsn uint32, bm rocev2.Bitmap128) {
	t.Helper()
	f := d.flow(t, qp)
	if f.state != state || f.epsn != psn.New(epsn) || f.bm != bm {
		t.Fatalf("QP %d: state %d ePSN %d bitmap %+v, want %d, %d, %+v", qp, f.state, f.epsn, f.bm, state, epsn, bm)
	}
}

// requests parses frames that must all be retransmission requests and
// returns their ePSNs and bitmaps.
func requests(t testing.TB, fs [][]byte) (epsns []uint32, bms []rocev2.Bitmap128) {
	t.Helper()
	for _, f := range fs {
		_, n := message(t, f)
		if n.Type() != rocev2.NetRTRequest {
			t.Fatalf("message type %d, want a request", n.Type())
		}
		epsns = append(epsns, uint32(n.PSN()))
		bms = append(bms, n.Bitmap())
	}
	return epsns, bms
}
