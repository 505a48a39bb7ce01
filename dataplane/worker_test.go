package dataplane

import (
	"context"
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"
	"time"

	"rocetor/rocev2"
)

// cross forwards every packet from port i to port 1-i, queue "data".
type cross struct{ q uint8 }

func (cross) Name() string { return "cross" }
func (c cross) Process(_ *Ctx, b *Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == Forward {
			p.Forward(1-p.In, c.q)
		}
	}
}

type rig struct {
	w     *Worker
	mem   *Mem
	ports [2]*MemPort
	sent  [2][][]byte
}

func newRig(t testing.TB, eg EgressConfig, stages ...Stage) *rig {
	t.Helper()
	mem, err := NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{mem: mem}
	for i := range r.ports {
		i := i
		r.ports[i] = NewMemPort([]string{"p0", "p1"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 1024)
		r.ports[i].OnTransmit = func(f []byte) { r.sent[i] = append(r.sent[i], append([]byte(nil), f...)) }
	}
	if len(stages) == 0 {
		stages = []Stage{cross{q: uint8(DefaultEgress(0, 1).Queues[2].Level - 1)}}
	}
	r.w, err = NewWorker(WorkerConfig{Mem: mem, Ports: []Port{r.ports[0], r.ports[1]},
		Egress: []EgressConfig{eg, eg}, Stages: stages, Classifier: rocev2.Classifier{VerifyICRC: true}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func roceFrame(t testing.TB, psn uint32, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"),
		Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: rocev2PSN(psn), Payload: make([]byte, payload),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

func TestWorkerForwards(t *testing.T) {
	eg := DefaultEgress(0, 1<<20)
	r := newRig(t, eg, cross{q: 2})
	for i := 0; i < 100; i++ {
		if !r.ports[0].Inject(roceFrame(t, uint32(i), 1024)) {
			t.Fatal("inject refused")
		}
	}
	for now := int64(0); r.ports[0].Pending() > 0 || r.w.Egress(1).Backlog() > 0; now += 1000 {
		r.w.Step(now)
	}
	if len(r.sent[1]) != 100 || len(r.sent[0]) != 0 {
		t.Fatalf("sent %d on p1 and %d on p0, want 100 and 0", len(r.sent[1]), len(r.sent[0]))
	}
	var m rocev2.Meta
	for i, f := range r.sent[1] {
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
		if m.Reason != rocev2.ReasonNone || uint32(m.PSN) != uint32(i) {
			t.Fatalf("frame %d: reason %v psn %d: order or content changed", i, m.Reason, m.PSN)
		}
	}
	r.w.publish(1e9)
	s := r.w.Snapshot()
	if s.Ports[0].RxPackets != 100 || s.Ports[1].TxPackets != 100 || s.Ports[1].TxBytes != s.Ports[0].RxBytes {
		t.Fatalf("counters %+v", s.Ports)
	}
	if s.FramesUse != 0 {
		t.Fatalf("%d frames still in use after everything was sent", s.FramesUse)
	}
}

func TestWorkerDropsMalformedAndUnrouted(t *testing.T) {
	r := newRig(t, DefaultEgress(0, 1<<20), dropAll{})
	f := roceFrame(t, 1, 100)
	f[len(f)-1] ^= 0xff // break the ICRC
	r.ports[0].Inject(f)
	r.ports[0].Inject(roceFrame(t, 2, 100))
	r.w.Step(0)
	r.w.publish(1e9)
	s := r.w.Snapshot()
	if s.Drops[Malformed(rocev2.ReasonBadICRC)] != 1 || s.Drops[ReasonUnrouted] != 1 {
		t.Fatalf("drops: bad_icrc %d unrouted %d, want 1 and 1",
			s.Drops[Malformed(rocev2.ReasonBadICRC)], s.Drops[ReasonUnrouted])
	}
	if r.mem.InUse() != 0 {
		t.Fatalf("%d frames leaked", r.mem.InUse())
	}
}

// dropAll leaves every packet unrouted.
type dropAll struct{}

func (dropAll) Name() string         { return "none" }
func (dropAll) Process(*Ctx, *Batch) {}

// pfcSender sends one PFC frame out of port 0 and forwards like cross.
type pfcSender struct{ sent bool }

func (p *pfcSender) Name() string { return "pfc" }
func (p *pfcSender) Process(c *Ctx, b *Batch) {
	if !p.sent {
		p.sent = c.SendPFC(0, 1<<3, [8]uint16{3: 100})
	}
	cross{q: 2}.Process(c, b)
}

// TestWorkerPFC checks both directions: a received PFC frame stops the
// paused priority on that port, and a stage's SendPFC puts a real PFC
// frame on the wire ahead of queued data.
func TestWorkerPFC(t *testing.T) {
	r := newRig(t, DefaultEgress(10e9, 1<<20), &pfcSender{})
	pfc := make([]byte, 64)
	n, _ := rocev2.BuildPFC(pfc, rocev2.MAC{2, 0, 0, 0, 0, 9}, 1<<3, [8]uint16{3: 0xffff})
	r.ports[1].Inject(pfc[:n])
	r.w.Step(0) // p1 now paused for priority 3 (data) for 3.3 ms
	r.ports[0].Inject(roceFrame(t, 1, 100))
	r.w.Step(1000)
	if len(r.sent[1]) != 0 {
		t.Fatal("data left a port paused by PFC")
	}
	if len(r.sent[0]) != 1 {
		t.Fatalf("p0 sent %d frames, want the one PFC frame", len(r.sent[0]))
	}
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(r.sent[0][0], &m)
	c := rocev2.MACControl(r.sent[0][0][m.L3Off:])
	if m.Kind != rocev2.KindMACControl || c.Opcode() != rocev2.MACControlPFC || c.ClassEnable() != 1<<3 || c.Time(3) != 100 {
		t.Fatalf("sent frame is not the PFC frame asked for: kind %v", m.Kind)
	}
	r.w.Step(3_400_000)
	if len(r.sent[1]) != 1 {
		t.Fatal("data must go once the pause expires")
	}
	r.w.publish(1e9)
	if s := r.w.Snapshot(); s.Ports[1].PFCRx != 1 || s.Ports[0].PFCTx != 1 {
		t.Fatalf("pfc counters %+v", s.Ports)
	}
}

// TestWorkerRefusePFC checks the trust knob: PFC and PAUSE frames on a
// port that does not honour them are dropped as trust_pfc, counted on
// the port, and pause nothing, while the other port still honours them.
func TestWorkerRefusePFC(t *testing.T) {
	r := newRig(t, DefaultEgress(10e9, 1<<20), cross{q: 2})
	r.w.cfg.RefusePFC = []bool{false, true}
	pfc := make([]byte, 64)
	n, _ := rocev2.BuildPFC(pfc, rocev2.MAC{2, 0, 0, 0, 0, 9}, 0xff, [8]uint16{0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff})
	pause := append([]byte(nil), pfc[:n]...)
	binary.BigEndian.PutUint16(pause[14:], rocev2.MACControlPause)
	r.ports[1].Inject(pfc[:n])
	r.ports[1].Inject(pause)
	r.w.Step(0)
	r.ports[0].Inject(roceFrame(t, 1, 100))
	r.w.Step(1000)
	if len(r.sent[1]) != 1 {
		t.Fatal("a refused PFC frame paused the port")
	}
	r.w.publish(1e9)
	s := r.w.Snapshot()
	if s.Ports[1].PFCRefused != 2 || s.Ports[1].PFCRx != 0 || s.Ports[1].PauseRx != 0 || s.Drops[ReasonPFCRefused] != 2 {
		t.Fatalf("counters %+v, trust_pfc drops %d: want 2 refused, none honoured", s.Ports[1], s.Drops[ReasonPFCRefused])
	}
	// Port 0 still honours them.
	r.ports[0].Inject(pfc[:n])
	r.w.Step(2000)
	r.ports[1].Inject(roceFrame(t, 2, 100))
	r.w.Step(3000)
	if len(r.sent[0]) != 0 {
		t.Fatal("port 0 honours PFC, yet sent data while paused")
	}
	if r.mem.InUse() != 1 {
		t.Fatalf("%d frames in use, want the one paused on port 0", r.mem.InUse())
	}
}

type timerStage struct{ fired []int64 }

func (s *timerStage) Name() string { return "timer" }
func (s *timerStage) Process(c *Ctx, b *Batch) {
	for i := 0; i < b.N; i++ {
		b.Pkts[i].Verdict = Taken
		c.Discard(&b.Pkts[i], ReasonUnrouted)
		c.After(5000, uint64(c.Now))
	}
}
func (s *timerStage) Timer(c *Ctx, arg uint64) { s.fired = append(s.fired, c.Now-int64(arg)) }

func TestWorkerTimers(t *testing.T) {
	ts := &timerStage{}
	r := newRig(t, DefaultEgress(0, 1<<20), ts)
	r.ports[0].Inject(roceFrame(t, 1, 10))
	for now := int64(0); now < 10000; now += 1000 {
		r.w.Step(now)
	}
	if len(ts.fired) != 1 || ts.fired[0] != 5000 {
		t.Fatalf("timer fired after %v ns, want once after 5000", ts.fired)
	}
}

// TestWorkerOverload drives a port shaped to 1 Gb/s with 4 Gb/s of
// frames: the queue must stay within its budget, every excess frame must
// be a counted drop, and no frame may leak.
func TestWorkerOverload(t *testing.T) {
	const limit = 64 << 10
	r := newRig(t, DefaultEgress(1e9, limit), cross{q: 2})
	r.ports[1].OnTransmit = nil
	f := roceFrame(t, 1, 1000)
	// The drop hook sees each drop once, with its ports and its bytes.
	seen := 0
	r.w.SetDropHook(func(frame []byte, in, out uint16, why Reason) {
		if why != ReasonQueueFull || in != 0 || out != 1 || string(frame) != string(f) {
			t.Fatalf("drop hook saw %d bytes from port %d to %d under %v", len(frame), in, out, why)
		}
		seen++
	})
	injected := 0
	for now := int64(0); now < 10e6; now += 2000 { // 10 ms, one frame per 2 µs each way
		if r.ports[0].Inject(f) {
			injected++
		}
		r.w.Step(now)
		if d, _ := r.w.Egress(1).Depth(2); d > limit {
			t.Fatalf("queue depth %d exceeds its %d-byte budget", d, limit)
		}
	}
	r.w.publish(1e12)
	s := r.w.Snapshot()
	q := s.Queues[1][2]
	if uint64(injected) != s.Ports[1].TxPackets+s.Drops[ReasonQueueFull]+uint64(q.DepthPackets) {
		t.Fatalf("injected %d = sent %d + dropped %d + queued %d does not add up",
			injected, s.Ports[1].TxPackets, s.Drops[ReasonQueueFull], q.DepthPackets)
	}
	if s.Drops[ReasonQueueFull] == 0 || q.Drops != s.Drops[ReasonQueueFull] || uint64(seen) != q.Drops {
		t.Fatalf("overload produced %d queue_full drops, queue counted %d, drop hook saw %d", s.Drops[ReasonQueueFull], q.Drops, seen)
	}
	if r.mem.InUse() != q.DepthPackets {
		t.Fatalf("%d frames in use, %d queued: frames leaked", r.mem.InUse(), q.DepthPackets)
	}
}

func TestWorkerStepAllocs(t *testing.T) {
	r := newRig(t, DefaultEgress(0, 1<<20), cross{q: 2})
	r.ports[1].OnTransmit = nil
	f := roceFrame(t, 1, 1000)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		for i := 0; i < 32; i++ {
			r.ports[0].Inject(f)
		}
		now += 1000
		r.w.Step(now)
	})
	if allocs != 0 {
		t.Fatalf("Step allocates %.1f times per batch", allocs)
	}
}

// BenchmarkWorkerForward forwards 1 KB RoCEv2 frames between two
// in-memory ports, ICRC verified: "plain" frames are Not-ECT; the ecn=
// cases send ECT(0) frames through a data queue without a profile
// (off) and with one that draws for nearly every frame at either
// marking point (benchRig), so their difference is what marking costs.
func BenchmarkWorkerForward(b *testing.B) {
	for _, c := range []struct {
		name string
		ecn  uint8
		at   MarkPoint
		on   bool
	}{{"plain", 0, MarkDequeue, false}, {"ecn=off", 2, MarkDequeue, false},
		{"ecn=dequeue", 2, MarkDequeue, true}, {"ecn=enqueue", 2, MarkEnqueue, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := benchRig(b, c.at, c.on)
			f := ecnFrame(b, c.ecn, false)
			now := int64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += BatchSize {
				for k := 0; k < BatchSize; k++ {
					r.ports[0].Inject(f)
				}
				now += 1000
				r.w.Step(now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			if s := r.w.Egress(1).Stats(2); c.on && s.Marked == 0 {
				b.Fatal("nothing marked")
			}
		})
	}
}

// BenchmarkWorkerForwardParts splits BenchmarkWorkerForward/plain, in
// the same run, into what it is made of: "harness" is the benchmark's
// own work without a worker (Inject copies each 1000-byte frame into
// frame memory; the frames are then received and freed), "unverified"
// is plain with a classifier that does not check the ICRC (tord's
// default, verify_icrc: false), so plain − unverified is the ICRC and
// unverified − harness the worker's own cost. "preloaded" is plain
// with frames delivered as a NIC's DMA would leave them, without the
// harness's copy: every frame slot holds the frame from the start, and
// each iteration queues 32 of them (MemPort.Deliver) — the ICRC
// verified, the worker unchanged, since nothing on plain's path
// rewrites the frame. plain − preloaded is what the copy costs.
func BenchmarkWorkerForwardParts(b *testing.B) {
	f := ecnFrame(b, 0, false)
	b.Run("preloaded", func(b *testing.B) {
		r := benchRig(b, MarkDequeue, false)
		preload(r.mem, f)
		now := int64(0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += BatchSize {
			for k := 0; k < BatchSize; k++ {
				addr, _ := r.mem.Alloc()
				r.ports[0].Deliver(addr, len(f))
			}
			now += 1000
			r.w.Step(now)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		if r.w.st.Ports[1].TxPackets == 0 || r.w.st.Drops[Malformed(rocev2.ReasonBadICRC)] != 0 {
			b.Fatal("nothing forwarded, or a frame found corrupt")
		}
	})
	b.Run("harness", func(b *testing.B) {
		r := benchRig(b, MarkDequeue, false)
		var bt Batch
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += BatchSize {
			for k := 0; k < BatchSize; k++ {
				r.ports[0].Inject(f)
			}
			bt.N = 0
			r.ports[0].Receive(&bt)
			for k := 0; k < bt.N; k++ {
				r.mem.Release(bt.Pkts[k].Addr)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
	})
	b.Run("unverified", func(b *testing.B) {
		r := benchRig(b, MarkDequeue, false)
		r.w.cfg.Classifier.VerifyICRC = false
		now := int64(0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += BatchSize {
			for k := 0; k < BatchSize; k++ {
				r.ports[0].Inject(f)
			}
			now += 1000
			r.w.Step(now)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		if r.w.st.Ports[1].TxPackets == 0 {
			b.Fatal("nothing forwarded")
		}
	})
}

// preload copies f into every frame slot of m, all free again after.
func preload(m *Mem, f []byte) {
	var addrs []uint64
	for {
		addr, ok := m.Alloc()
		if !ok {
			break
		}
		copy(m.Room(addr), f)
		addrs = append(addrs, addr)
	}
	for _, a := range addrs {
		m.Release(a)
	}
}

// counter is a Source that emits one frame per poll onto port 1 until it
// has made n, and counts its timer.
type counter struct {
	n, made int
}

func (s *counter) Name() string         { return "src" }
func (s *counter) Process(*Ctx, *Batch) {}
func (s *counter) Poll(c *Ctx) int {
	if s.made == s.n {
		return 0
	}
	addr, room, ok := c.Alloc()
	if !ok {
		return 0
	}
	n, _ := rocev2.BuildPFC(room, rocev2.MAC{}, 0, [8]uint16{})
	p := Packet{Addr: addr, Len: uint16(n), Out: 1, Queue: 2}
	if c.Emit(&p) {
		s.made++
	}
	return 1
}

func TestWorkerSource(t *testing.T) {
	src := &counter{n: 5}
	r := newRig(t, DefaultEgress(0, 1<<20), src)
	for now := int64(0); now < 10; now++ {
		r.w.Step(now)
	}
	if len(r.sent[1]) != 5 {
		t.Fatalf("source frames sent: %d, want 5", len(r.sent[1]))
	}
	if r.mem.InUse() != 0 {
		t.Fatalf("%d frames leaked", r.mem.InUse())
	}
}

// TestWorkerRunReleasesQueued stops a worker whose egress is paused with
// frames queued: Run must give them back to Mem.
func TestWorkerRunReleasesQueued(t *testing.T) {
	r := newRig(t, DefaultEgress(10e9, 1<<20), cross{q: 2})
	r.w.Egress(1).Pause(0, 1<<3, &[8]uint16{3: 0xffff})
	for i := 0; i < 10; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 100))
	}
	r.w.Step(0)
	if r.mem.InUse() != 10 {
		t.Fatalf("%d frames in use, want the 10 queued", r.mem.InUse())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.w.Run(ctx)
	if r.mem.InUse() != 0 {
		t.Fatalf("%d frames still in use after Run returned", r.mem.InUse())
	}
}

// builder is a Source that emits the RoCE frames of psns onto port 1,
// queue 2, one per poll, without filling Meta.
type builder struct {
	psns []uint32
	next int
}

func (s *builder) Name() string         { return "builder" }
func (s *builder) Process(*Ctx, *Batch) {}
func (s *builder) Poll(c *Ctx) int {
	if s.next == len(s.psns) {
		return 0
	}
	addr, room, ok := c.Alloc()
	if !ok {
		return 0
	}
	n, _ := rocev2.Build(room, &rocev2.Spec{
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"),
		Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: rocev2PSN(s.psns[s.next]), Payload: make([]byte, 64),
	})
	s.next++
	p := Packet{Addr: addr, Len: uint16(n), Out: 1, Queue: 2}
	c.Emit(&p)
	return 1
}

// odd drops the packets of odd PSN and remembers the PSNs it saw.
type odd struct{ seen []uint32 }

func (*odd) Name() string { return "odd" }
func (s *odd) Process(_ *Ctx, b *Batch) {
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != Forward {
			continue
		}
		s.seen = append(s.seen, uint32(p.Meta.PSN))
		if p.Meta.PSN%2 == 1 {
			p.Drop(ReasonUnrouted)
		}
	}
}

// TestEmitPassesLaterStages: a frame a stage builds and emits from its
// poll meets the stages after it, classified, and their verdict holds
// (before, emitted frames skipped later stages: an llr port never numbered
// NetRT's retransmissions).
func TestEmitPassesLaterStages(t *testing.T) {
	src, later := &builder{psns: []uint32{1, 2, 3, 4}}, &odd{}
	r := newRig(t, DefaultEgress(0, 1<<20), src, later)
	for now := int64(0); now < 10; now++ {
		r.w.Step(now)
	}
	if len(later.seen) != 4 || later.seen[0] != 1 || later.seen[3] != 4 {
		t.Fatalf("later stage saw PSNs %v, want [1 2 3 4]", later.seen)
	}
	if len(r.sent[1]) != 2 {
		t.Fatalf("sent %d frames, want the 2 of even PSN", len(r.sent[1]))
	}
	if d := r.w.st.Drops[ReasonUnrouted]; d != 2 {
		t.Fatalf("%d drops counted, want 2", d)
	}
	if r.mem.InUse() != 0 {
		t.Fatalf("%d frames leaked", r.mem.InUse())
	}
	src.psns, src.next = []uint32{2}, 0
	r.ports[1].OnTransmit = nil
	allocs := testing.AllocsPerRun(100, func() {
		src.next = 0
		later.seen = later.seen[:0]
		r.w.Step(0)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per emitted frame, want 0", allocs)
	}
}

// holdingPort holds a frame due at a fixed time (as an impairing port
// does) and stops the worker once it is polled after a sleep.
type holdingPort struct {
	*MemPort
	polls int
	stop  func()
}

func (p *holdingPort) Deadline() (int64, bool) { return int64(time.Millisecond), true }
func (p *holdingPort) Receive(b *Batch) int {
	if p.polls++; p.polls == 2 {
		p.stop()
	}
	return 0
}

// outerPort wraps another port, as llr's receiver wraps an impairing one.
type outerPort struct{ Port }

func (p outerPort) Inner() Port { return p.Port }

// TestWorkerSleepWakesForHeld: a worker with nothing to do sleeps no
// longer than until the deadline of a frame a port holds, even under an
// outer wrapper, not for MaxSleep (an hour here).
func TestWorkerSleepWakesForHeld(t *testing.T) {
	mem, err := NewMem(make([]byte, 16*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hp := &holdingPort{MemPort: NewMemPort("p0", rocev2.MAC{2}, mem, 4), stop: cancel}
	w, err := NewWorker(WorkerConfig{Mem: mem, Ports: []Port{outerPort{hp}}, Egress: []EgressConfig{DefaultEgress(0, 1<<20)},
		Mode: Interrupt, MaxSleep: time.Hour, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker slept past the held frame's deadline")
	}
	if s := w.Snapshot(); s.Sleeps == 0 || hp.polls != 2 {
		t.Fatalf("%d sleeps, %d polls; want a sleep between two polls", s.Sleeps, hp.polls)
	}
}

// TestWorkerNext: a worker stepped only at the times Next names does
// what one stepped every nanosecond does — received frames at once, a
// timer at its time, a shaped queue at its tokens — and says when
// nothing is pending.
func TestWorkerNext(t *testing.T) {
	ts := &timerStage{}
	r := newRig(t, DefaultEgress(0, 1<<20), ts)
	if _, ok := r.w.Next(0); ok {
		t.Fatal("an idle worker has something due")
	}
	r.ports[0].Inject(roceFrame(t, 1, 10))
	if at, ok := r.w.Next(100); !ok || at != 100 {
		t.Fatalf("a pending frame is due at %d (%v), want now", at, ok)
	}
	r.w.Step(100)
	at, ok := r.w.Next(100)
	if !ok || at != 5100 {
		t.Fatalf("next = %d (%v), want the timer at 5100", at, ok)
	}
	r.w.Step(at)
	if len(ts.fired) != 1 || ts.fired[0] != 5000 {
		t.Fatalf("timer fired after %v", ts.fired)
	}
	if _, ok := r.w.Next(at); ok {
		t.Fatal("something due after the timer fired")
	}

	// A queue shaped to 1 Gb/s with a 1-frame burst: each frame waits
	// for its tokens, and Next says when.
	eg := DefaultEgress(1e9, 1<<20)
	eg.BurstBytes = 1
	r = newRig(t, eg)
	for i := 0; i < 3; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1000))
	}
	now, steps := int64(0), 0
	for ; steps < 100; steps++ {
		r.w.Step(now)
		next, ok := r.w.Next(now)
		if !ok {
			break
		}
		if next < now {
			t.Fatalf("next %d before now %d", next, now)
		}
		now = next
	}
	if len(r.sent[1]) != 3 {
		t.Fatalf("sent %d frames in %d steps, want 3", len(r.sent[1]), steps)
	}
	if steps > 10 {
		t.Fatalf("%d steps for 3 shaped frames: Next polls", steps)
	}
}

// newPFCRig is a rig whose worker pauses port 0's peer past 8 KiB
// queued on its behalf (XOn 4 KiB, 1000 quanta), with port 1 paused by
// its own peer, so that what port 0 receives for port 1 stays queued.
func newPFCRig(t *testing.T) *rig {
	r := newRig(t, DefaultEgress(1e9, 1<<20), cross{q: 2})
	r.w.cfg.PFC = &IngressPFC{XOff: 8 << 10, XOn: 4 << 10, Quanta: 1000}
	r.w.pfc = newPFCState(*r.w.cfg.PFC, r.w.egress)
	r.peerPFC(1, 0xffff)
	r.w.Step(0)
	return r
}

// peerPFC has port's peer send a PFC frame for priority 3 with time
// quanta (0: a resume).
func (r *rig) peerPFC(port int, quanta uint16) {
	pfc := make([]byte, 64)
	n, _ := rocev2.BuildPFC(pfc, rocev2.MAC{2, 0, 0, 0, 0, 9}, 1<<3, [8]uint16{3: quanta})
	r.ports[port].Inject(pfc[:n])
}

// pfcTimes returns the pause times of the PFC frames for priority 3
// that port 0 sent so far, and how many other frames it sent.
func (r *rig) pfcTimes() (times []uint16, other int) {
	var m rocev2.Meta
	for _, f := range r.sent[0] {
		rocev2.Classifier{}.Classify(f, &m)
		if c := rocev2.MACControl(f[m.L3Off:]); m.Kind == rocev2.KindMACControl && c.ClassEnable() == 1<<3 {
			times = append(times, c.Time(3))
		} else {
			other++
		}
	}
	return times, other
}

// TestWorkerIngressPFC checks PFC on buffer thresholds: the bytes port 0
// put in port 1's data queue pause port 0's peer past XOff, the pause is
// sent again at half its length while they stay above XOn (Next says
// when), and a resume (time 0) goes once they fall to XOn.
func TestWorkerIngressPFC(t *testing.T) {
	r := newPFCRig(t)
	pfcs := func() []uint16 {
		times, other := r.pfcTimes()
		if other != 0 {
			t.Fatalf("port 0 sent a frame that is not a PFC frame for priority 3")
		}
		return times
	}
	for i := 0; i < 6; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.w.Step(1000)
	if got := pfcs(); len(got) != 0 {
		t.Fatalf("paused at %d queued bytes, under XOff", r.w.Egress(1).Backlog())
	}
	for i := 6; i < 10; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.w.Step(2000)
	if got := pfcs(); len(got) != 1 || got[0] != 1000 {
		t.Fatalf("PFC frames %v past XOff, want one pause of 1000 quanta", got)
	}
	// 1000 quanta at 1 Gbit/s: 512 µs; sent again 256 µs on.
	if at, ok := r.w.Next(2000); !ok || at != 2000+256_000 {
		t.Fatalf("Next = %d, %v: want the pause's repetition at %d", at, ok, 2000+256_000)
	}
	r.w.Step(2000 + 256_000)
	if got := pfcs(); len(got) != 2 || got[1] != 1000 {
		t.Fatalf("PFC frames %v: want the pause sent again", got)
	}
	// Port 1 resumes and drains: a resume once XOn is reached, no more.
	r.peerPFC(1, 0)
	for now := int64(300_000); r.w.Egress(1).Backlog() > 0 || r.w.Egress(0).Backlog() > 0 || r.ports[1].Pending() > 0; now += 10_000 {
		r.w.Step(now)
	}
	if got := pfcs(); len(got) != 3 || got[2] != 0 {
		t.Fatalf("PFC frames %v: want a resume after the drain (%d bytes, sent %d)", got, r.w.pfc.bytes[0][3], len(r.sent[1]))
	}
	if len(r.sent[1]) != 10 {
		t.Fatalf("port 1 sent %d frames, want 10", len(r.sent[1]))
	}
	if _, ok := r.w.Next(1e9); ok {
		t.Fatal("Next still reports work with nothing paused or queued")
	}
	if r.w.pfc.bytes[0][3] != 0 {
		t.Fatalf("%d bytes still counted against port 0", r.w.pfc.bytes[0][3])
	}
}

// TestWorkerIngressPFCRetry: a resume that finds port 0's control queue
// full is not lost: the port stays counted as paused and the resume goes
// at the pause's next repetition, with no pause after it.
func TestWorkerIngressPFCRetry(t *testing.T) {
	r := newPFCRig(t)
	times := func() []uint16 {
		ts, _ := r.pfcTimes()
		return ts
	}
	for i := 0; i < 10; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.w.Step(1000)
	if got := times(); len(got) != 1 || got[0] != 1000 {
		t.Fatalf("PFC frames %v, want one pause", got)
	}
	// Port 0's wire stops and its control queue fills with other frames.
	r.ports[0].SetTxRoom(0)
	for {
		addr, ok := r.mem.Alloc()
		if !ok {
			t.Fatal("no frame")
		}
		k, _ := rocev2.BuildPFC(r.mem.Room(addr), r.ports[0].MAC(), 1<<5, [8]uint16{})
		if !r.w.Egress(0).EnqueueControl(addr, k) {
			r.mem.Release(addr)
			break
		}
	}
	r.peerPFC(1, 0) // port 1 resumes and drains
	for now := int64(2000); r.w.Egress(1).Backlog() > 0 || r.ports[1].Pending() > 0; now += 10_000 {
		r.w.Step(now)
	}
	if r.w.pfc.on[0] == 0 {
		t.Fatal("the resume found no room, yet the port is no longer counted as paused")
	}
	r.ports[0].SetTxRoom(1024)
	for r.w.Egress(0).Backlog() > 0 {
		r.w.Step(200_000) // the other control frames go
	}
	at, ok := r.w.Next(200_000)
	if !ok || at != 1000+256_000 {
		t.Fatalf("Next = %d, %v: want the repetition at %d", at, ok, 1000+256_000)
	}
	for now := at; now < at+600_000; now += 50_000 {
		r.w.Step(now)
	}
	if got := times(); len(got) != 2 || got[1] != 0 {
		t.Fatalf("PFC frames %v: want the pause, then its resume at the repetition, nothing more", got)
	}
	if r.w.pfc.on[0] != 0 {
		t.Fatal("still counted as paused after the resume went")
	}
}

// rxTimes records the times RxTime gives each packet of a batch.
type rxTimes struct{ got []int64 }

func (*rxTimes) Name() string { return "rxtimes" }

func (s *rxTimes) Process(c *Ctx, b *Batch) {
	for i := 0; i < b.N; i++ {
		s.got = append(s.got, c.RxTime(i, b.N))
		b.Pkts[i].Drop(ReasonUnrouted)
	}
}

// TestRxTime: a batch is spread over the interval since the worker's
// previous loop, its last frame at the loop's time; the first loop has
// no interval, so its frames all get its time.
func TestRxTime(t *testing.T) {
	st := &rxTimes{}
	r := newRig(t, DefaultEgress(0, 1<<20), st)
	step := func(now int64, n int) []int64 {
		st.got = nil
		for i := range n {
			r.ports[0].Inject(roceFrame(t, uint32(i), 64))
		}
		r.w.Step(now)
		return st.got
	}
	if got := step(1000, 2); !slices.Equal(got, []int64{1000, 1000}) {
		t.Errorf("first loop: %v", got)
	}
	r.w.Step(2000) // nothing received: the interval starts here
	if got := step(6000, 4); !slices.Equal(got, []int64{3000, 4000, 5000, 6000}) {
		t.Errorf("4 frames over (2000, 6000]: %v", got)
	}
	if got := step(6000, 1); !slices.Equal(got, []int64{6000}) {
		t.Errorf("a loop at the same time: %v", got)
	}
}

// stoppingPort is an idle port that stops the worker at its 100th poll.
type stoppingPort struct {
	*MemPort
	polls int
	stop  func()
}

func (p *stoppingPort) Receive(b *Batch) int {
	if p.polls++; p.polls == 100 {
		p.stop()
	}
	return 0
}

// TestWorkerBusyYields: a busy worker yields the CPU on every loop that
// finds nothing to do, and only then; a spinning one never does.
func TestWorkerBusyYields(t *testing.T) {
	for _, c := range []struct {
		mode PollMode
		want func(idle uint64) uint64
	}{
		{Busy, func(idle uint64) uint64 { return idle }},
		{BusySpin, func(uint64) uint64 { return 0 }},
	} {
		mem, err := NewMem(make([]byte, 16*2048), 2048)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := &stoppingPort{MemPort: NewMemPort("p0", rocev2.MAC{2}, mem, 4), stop: cancel}
		w, err := NewWorker(WorkerConfig{Mem: mem, Ports: []Port{p}, Egress: []EgressConfig{DefaultEgress(0, 1<<20)},
			Mode: c.mode, Clock: func() int64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		w.Run(ctx)
		s := w.Snapshot()
		if s.IdlePolls != 100 || s.Yields != c.want(s.IdlePolls) {
			t.Errorf("%v: %d idle loops, %d yields; want 100 and %d", c.mode, s.IdlePolls, s.Yields, c.want(100))
		}
	}
}
