package netrt

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// cross forwards every packet from port i to port 1-i, queue "data": the
// part of fwd the tests need, so the NetRT stages can run after it.
type cross struct{}

func (cross) Name() string { return "cross" }
func (cross) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(1-p.In, 2)
		}
	}
}

// rig is a two-port worker, p0 and p1, running cross and then the given
// stages, clocked by the test. Transmitted frames are kept per port.
type rig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports [2]*dataplane.MemPort
	sent  [2][][]byte
	now   int64
	other uint32 // next PSN of alive's flow
}

var (
	srcIP   = netip.MustParseAddr("10.0.0.1")
	dstIP   = netip.MustParseAddr("10.0.1.1")
	hostMAC = rocev2.MAC{2, 0, 0, 0, 0xaa, 1}
	peerMAC = rocev2.MAC{2, 0, 0, 0, 0xbb, 1}
)

func newRig(t testing.TB, stages ...dataplane.Stage) *rig {
	t.Helper()
	return newRigTimers(t, 0, stages...)
}

// newRigTimers is newRig with a worker that arms at most timers timers
// (0: the worker's default).
func newRigTimers(t testing.TB, timers int, stages ...dataplane.Stage) *rig {
	t.Helper()
	return newRigWrapped(t, timers, nil, stages...)
}

// newRigWrapped is newRigTimers whose worker polls wrap(i, port i) in
// place of port i (nil: the ports themselves).
func newRigWrapped(t testing.TB, timers int, wrap func(int, dataplane.Port, *dataplane.Mem) dataplane.Port,
	stages ...dataplane.Stage) *rig {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	mem.EnableHolds() // for a SrcToR that pools in place (Config.InPlace)
	r := &rig{t: t, mem: mem}
	for i := range r.ports {
		r.ports[i] = dataplane.NewMemPort([]string{"p0", "p1"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 4096)
		r.ports[i].OnTransmit = func(f []byte) { r.sent[i] = append(r.sent[i], append([]byte(nil), f...)) }
	}
	eg := dataplane.DefaultEgress(0, 8<<20)
	ports := []dataplane.Port{r.ports[0], r.ports[1]}
	for i := range ports {
		if wrap != nil {
			ports[i] = wrap(i, ports[i], mem)
		}
	}
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem,
		Ports:  ports,
		Egress: []dataplane.EgressConfig{eg, eg}, Stages: append([]dataplane.Stage{cross{}}, stages...), TimerCap: timers,
		Classifier: rocev2.Classifier{VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) inject(port int, f []byte) {
	r.t.Helper()
	if !r.ports[port].Inject(f) {
		r.t.Fatal("inject refused")
	}
}

// step advances the clock by dt and runs one worker loop.
func (r *rig) step(dt int64) {
	r.now += dt
	r.w.Step(r.now)
}

// settle runs loops 1 µs apart until nothing is pending or queued.
func (r *rig) settle() {
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

// take returns and forgets the frames sent on port i.
func (r *rig) take(i int) [][]byte {
	f := r.sent[i]
	r.sent[i] = nil
	return f
}

func build(t testing.TB, s *rocev2.Spec) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// data returns an RDMA Write Middle of flow srcIP→dstIP, QP qp.
func data(t testing.TB, qp uint32, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: srcIP, DstIP: dstIP,
		Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(n), Payload: make([]byte, 256)})
}

// request returns the request a DstToR sends for flow srcIP→dstIP, qp.
func request(t testing.TB, qp uint32, epsn uint32, bm rocev2.Bitmap128) []byte {
	return build(t, &rocev2.Spec{Src: peerMAC, Dst: hostMAC, SrcIP: dstIP, DstIP: srcIP,
		Opcode: rocev2.NetRTOpcode, DestQP: qp, NetRTType: rocev2.NetRTRequest, NetRTPSN: psn.New(epsn), Bitmap: bm})
}

// unfulfilled returns the notice a SrcToR sends for flow srcIP→dstIP, qp.
func unfulfilled(t testing.TB, qp uint32, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: peerMAC, Dst: hostMAC, SrcIP: srcIP, DstIP: dstIP,
		Opcode: rocev2.NetRTOpcode, DestQP: qp, NetRTType: rocev2.NetRTUnfulfilled, NetRTPSN: psn.New(n)})
}

// ack returns an RC ACK of PSN n for flow srcIP→dstIP, qp (same QP
// number at both ends).
func ack(t testing.TB, qp uint32, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: peerMAC, Dst: hostMAC, SrcIP: dstIP, DstIP: srcIP,
		Opcode: rocev2.RCAck, DestQP: qp, PSN: psn.New(n), Syndrome: rocev2.ACKSyndrome(31)})
}

func meta(t testing.TB, f []byte) rocev2.Meta {
	t.Helper()
	var m rocev2.Meta
	rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
	if m.Reason != rocev2.ReasonNone {
		t.Fatalf("sent frame malformed: %v", m.Reason)
	}
	return m
}

// psns returns the PSNs of the data frames among fs, failing on any
// other frame.
func psns(t testing.TB, fs [][]byte) []uint32 {
	t.Helper()
	var out []uint32
	for _, f := range fs {
		m := meta(t, f)
		if !isData(&m) {
			t.Fatalf("frame with opcode %v where only data was expected", m.Opcode)
		}
		out = append(out, uint32(m.PSN))
	}
	return out
}

// message parses a NetRT message.
func message(t testing.TB, f []byte) (rocev2.Meta, rocev2.NetRT) {
	t.Helper()
	m := meta(t, f)
	if m.Opcode != rocev2.NetRTOpcode {
		t.Fatalf("opcode %v, want a NetRT message", m.Opcode)
	}
	return m, rocev2.NetRT(f[m.ExtOff(rocev2.ExtNetRT):])
}

func seq(a, b uint32) []uint32 {
	var s []uint32
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func addrOf(a [16]byte) netip.Addr { return netip.AddrFrom16(a).Unmap() }

func rocev2PSN(n uint32) psn.PSN { return psn.New(n) }

// split separates the data frames among fs (as QP×100+PSN) from NetRT
// messages.
func split(t testing.TB, fs [][]byte) (ids []uint32, msgs [][]byte) {
	t.Helper()
	for _, f := range fs {
		m := meta(t, f)
		if m.Opcode == rocev2.NetRTOpcode {
			msgs = append(msgs, f)
			continue
		}
		ids = append(ids, m.Flow.QP*100+uint32(m.PSN))
	}
	return ids, msgs
}
