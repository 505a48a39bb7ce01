package inband

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// toLast forwards every packet to the last port's queue q.
type toLast struct{ q uint8 }

func (toLast) Name() string { return "fwd" }
func (s *toLast) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(uint16(c.NumPorts()-1), s.q)
		}
	}
}

// rig is a worker with two in-memory ports routing p0 → p1 on the data
// queue, then the INT stage; p1's egress runs at 10 Gb/s and keeps what
// it transmits.
type rig struct {
	t     testing.TB
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	st    *Stage
	now   int64
	sent  [][]byte
}

func newRig(t testing.TB, c Config) *rig {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, mem: mem, st: NewStage(c)}
	var ports []dataplane.Port
	var egs []dataplane.EgressConfig
	for i := range 2 {
		p := dataplane.NewMemPort("p"+string(rune('0'+i)), rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 4096)
		r.ports, ports = append(r.ports, p), append(ports, p)
		egs = append(egs, dataplane.DefaultEgress(10e9, 4<<20))
	}
	r.ports[1].OnTransmit = func(f []byte) { r.sent = append(r.sent, append([]byte(nil), f...)) }
	q := uint8(egs[1].QueueIndexByName("data"))
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: egs,
		Stages: []dataplane.Stage{&toLast{q: q}, r.st}, Classifier: rocev2.Classifier{VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send injects frames on p0 and runs one step.
func (r *rig) send(frames ...[]byte) {
	r.t.Helper()
	for _, f := range frames {
		if !r.ports[0].Inject(f) {
			r.t.Fatal("inject refused")
		}
	}
	r.now += 1000
	r.w.Step(r.now)
}

// write returns a 1 KiB WRITE with an INT tail of max records (0: none)
// and hops already filled.
func write(t testing.TB, max, hops int) []byte {
	t.Helper()
	s := &rocev2.Spec{Src: rocev2.MAC{2, 0, 0, 0, 0, 0xa}, Dst: rocev2.MAC{2, 0, 0, 0, 0, 0xb},
		SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.3"),
		Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: 1, Payload: make([]byte, 1024)}
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatal(err)
	}
	if max > 0 {
		n += rocev2.PutINT(b[n:], max)
		tl, _ := rocev2.FindINT(b[:n], n-rocev2.INTLen(max))
		for range hops {
			tl.Push(rocev2.INTHop{TS: 1})
		}
	}
	return b[:n]
}

// TestStamp: a frame with a request tail leaves with one more record —
// the stage's clock, the bytes queued ahead of it on the data queue
// (the earlier frames of its batch), the port's bytes sent and its
// 10 Gb/s — and a valid ICRC; a frame without a tail, a full tail, an
// echo and a malformed tail leave byte for byte as they came, counted.
func TestStamp(t *testing.T) {
	r := newRig(t, Config{})
	plain, req := write(t, 0, 0), write(t, 3, 1)
	full := write(t, 2, 2)
	echo := append([]byte(nil), req...)
	echo[len(plain)+2] |= 1
	bad := append([]byte(nil), req[:len(req)-1]...)
	r.send(plain, req, full, echo, bad)
	r.now += 1e6
	r.w.Step(r.now)
	if len(r.sent) != 5 {
		t.Fatalf("sent %d frames, want 5", len(r.sent))
	}
	for i, f := range [][]byte{plain, nil, full, echo, bad} {
		if f != nil && string(r.sent[i]) != string(f) {
			t.Errorf("frame %d changed", i)
		}
	}
	var m rocev2.Meta
	rocev2.Classifier{VerifyICRC: true}.Classify(r.sent[1], &m)
	tl, _ := rocev2.FindINT(r.sent[1], int(m.End))
	if m.Reason != rocev2.ReasonNone || tl == nil || tl.Hops() != 2 {
		t.Fatalf("stamped frame: %v, tail %v", m.Reason, tl)
	}
	h := tl.Hop(1)
	if h.TS != 1000 || h.QLen != uint32(len(plain)) || h.TxBytes != 0 || h.RateMbps != 10000 {
		t.Errorf("record %+v: want ts 1000, qlen %d (the frame ahead), tx 0, 10000 Mb/s", h, len(plain))
	}
	ps := r.st.Stats().Ports[1]
	if ps != (PortStats{Stamped: 1, Full: 1, Malformed: 1, Echoes: 1}) {
		t.Errorf("stats %+v", ps)
	}
	// A second request: tx now counts the five frames sent.
	r.sent = nil
	r.send(write(t, 3, 0))
	r.now += 1e6
	r.w.Step(r.now)
	tl, _ = rocev2.FindINT(r.sent[0], int(m.End))
	var want uint32
	for _, f := range [][]byte{plain, req, full, echo, bad} {
		want += uint32(len(f))
	}
	if got := tl.Hop(0).TxBytes; got != want {
		t.Errorf("tx %d, want %d", got, want)
	}
}

// TestPorts: a stage that stamps at p0 only leaves what goes to p1
// alone.
func TestPorts(t *testing.T) {
	r := newRig(t, Config{Ports: 1 << 0})
	f := write(t, 3, 0)
	r.send(f)
	r.now += 1e6
	r.w.Step(r.now)
	if len(r.sent) != 1 || string(r.sent[0]) != string(f) || r.st.Stats().Sum() != (PortStats{}) {
		t.Fatalf("a port that does not stamp changed the frame or counted: %+v", r.st.Stats().Sum())
	}
	if _, err := PortMask([]string{"s9"}, []string{"s1"}); err == nil {
		t.Error("PortMask took a port that is not there")
	}
}

// TestStageAllocs: stamping a batch allocates nothing.
func TestStageAllocs(t *testing.T) {
	r := newRig(t, Config{})
	r.ports[1].OnTransmit = nil
	frames := make([][]byte, 32)
	for i := range frames {
		frames[i] = write(t, 8, 0)
	}
	if n := testing.AllocsPerRun(200, func() { r.send(frames...); r.now += 1e6; r.w.Step(r.now) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
	if r.st.Stats().Sum().Stamped == 0 {
		t.Fatal("nothing stamped")
	}
}

// BenchmarkStage stamps batches of 64 requests through a worker (the
// worker's receive, classify and transmit included).
func BenchmarkStage(b *testing.B) {
	r := newRig(b, Config{})
	r.ports[1].OnTransmit = nil
	frames := make([][]byte, dataplane.BatchSize)
	for i := range frames {
		frames[i] = write(b, rocev2.INTDefaultMax, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.send(frames...)
		r.now += 1e6
		r.w.Step(r.now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(frames)), "ns/pkt")
}
