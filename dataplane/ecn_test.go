package dataplane

import (
	"fmt"
	"math"
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

func TestDefaultECNProfile(t *testing.T) {
	for _, c := range []struct {
		rate     uint64
		min, max int
	}{
		{100e9, 400_000, 1_600_000}, // ns-3 HPCC's 100 Gbit/s values
		{25e9, 100_000, 400_000},    // and its 25 Gbit/s ones
		{0, 40_000, 160_000},        // unshaped: taken as 10 Gbit/s
		{10e9, 40_000, 160_000},
		{1e9, ECNMinFloor, 4 * ECNMinFloor}, // 4 KB would be four frames
		{2.5e9, 10_000, 40_000},
	} {
		p := DefaultECNProfile(c.rate)
		if p.MinBytes != c.min || p.MaxBytes != c.max || p.PMax != 0.2 {
			t.Errorf("DefaultECNProfile(%g) = %+v, want %d/%d/0.2", float64(c.rate), p, c.min, c.max)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("DefaultECNProfile(%g): %v", float64(c.rate), err)
		}
	}
}

func TestECNProfileValidate(t *testing.T) {
	for _, p := range []ECNProfile{
		{MinBytes: 10, MaxBytes: 5, PMax: 0.1},
		{MinBytes: -1, MaxBytes: 5, PMax: 0.1},
		{MinBytes: 1, MaxBytes: 5, PMax: 1.5},
		{MinBytes: 1, MaxBytes: 5, PMax: math.NaN()},
		{MinBytes: 1, MaxBytes: 0, PMax: 0.5},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v validated", p)
		}
		eg := DefaultEgress(0, 1<<20)
		eg.Queues[2].ECN = p
		if _, err := NewEgress(eg); err == nil {
			t.Errorf("egress with %+v built", p)
		}
	}
	for _, p := range []ECNProfile{{}, {MinBytes: 5, MaxBytes: 5}, {MaxBytes: 1, PMax: 1}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// ecnFrame builds a 1000-byte RoCEv2 frame with the given ECN bits.
func ecnFrame(t testing.TB, ecn uint8, v6 bool) []byte {
	t.Helper()
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.1")
	if v6 {
		src, dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	}
	b := make([]byte, 2048)
	s := &rocev2.Spec{SrcIP: src, DstIP: dst, ECN: ecn, DSCP: 26,
		Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: rocev2PSN(1)}
	n, err := rocev2.Build(b, s)
	if err != nil {
		t.Fatal(err)
	}
	s.Payload = make([]byte, 1000-n)
	if n, err = rocev2.Build(b, s); err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// ecnRig is one port's egress over frame memory, driven by hand.
type ecnRig struct {
	t   testing.TB
	mem *Mem
	e   *Egress
	out [1]Packet
	cls rocev2.Classifier
}

func newECNRig(t testing.TB, at MarkPoint, p ECNProfile) *ecnRig {
	mem, err := NewMem(make([]byte, 2048*1024), 2048)
	if err != nil {
		t.Fatal(err)
	}
	eg := DefaultEgress(0, 1<<20)
	eg.MarkAt, eg.Queues[2].ECN = at, p
	e, err := NewEgress(eg)
	if err != nil {
		t.Fatal(err)
	}
	e.UseMem(mem)
	e.seedECN(1)
	return &ecnRig{t: t, mem: mem, e: e, cls: rocev2.Classifier{VerifyICRC: true}}
}

// push copies f into a fresh frame and queues it on the data queue.
func (r *ecnRig) push(f []byte) {
	addr, ok := r.mem.Alloc()
	if !ok {
		r.t.Fatal("out of frames")
	}
	n := copy(r.mem.Room(addr), f)
	p := Packet{Addr: addr, Len: uint16(n), Queue: 2}
	r.cls.Classify(r.mem.Frame(&p), &p.Meta)
	if !r.e.EnqueuePacket(&p) {
		r.t.Fatal("queue full")
	}
}

// pop releases the head frame and returns its ECN bits, checking that
// the frame is still well formed: IPv4 checksum and ICRC.
func (r *ecnRig) pop() uint8 {
	if r.e.Dequeue(0, r.out[:]) != 1 {
		r.t.Fatal("nothing dequeued")
	}
	var m rocev2.Meta
	r.cls.Classify(r.mem.Frame(&r.out[0]), &m)
	if m.Reason != rocev2.ReasonNone {
		r.t.Fatalf("dequeued frame malformed: %v", m.Reason)
	}
	r.mem.Release(r.out[0].Addr)
	return m.ECN
}

// TestMarkingCurve measures the fraction of ECT frames marked at queue
// depths across the profile, at either marking point, and checks it
// against the profile's probability: exactly 0 up to Kmin and 1 beyond
// Kmax, within 4.5 standard deviations of the binomial between.
func TestMarkingCurve(t *testing.T) {
	const trials = 4000
	for _, at := range []MarkPoint{MarkDequeue, MarkEnqueue} {
		for _, v6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/v6=%v", at, v6), func(t *testing.T) {
				f := ecnFrame(t, 2, v6) // ECT(0)
				size := len(f)
				prof := ECNProfile{MinBytes: 10 * size, MaxBytes: 50 * size, PMax: 0.5}
				for _, k := range []int{0, 5, 10, 11, 20, 30, 40, 50, 51, 80} {
					depth := k * size
					r := newECNRig(t, at, prof)
					// In steady state the frame's marking point sees
					// depth bytes: enqueue with depth/size frames
					// queued, dequeue with as many left behind.
					n := depth / size
					if at == MarkDequeue {
						n++
					}
					for i := 0; i < n; i++ {
						r.push(f)
					}
					s0 := r.e.Stats(2)
					ce := 0
					for i := 0; i < trials; i++ {
						if at == MarkEnqueue {
							r.push(f)
							if r.pop() == 3 {
								ce++
							}
						} else {
							if r.pop() == 3 {
								ce++
							}
							r.push(f)
						}
					}
					s := r.e.Stats(2)
					marked, ect := s.Marked-s0.Marked, s.ECT-s0.ECT
					if ect != trials {
						t.Fatalf("depth %d: %d ECT frames counted, want %d", depth, ect, trials)
					}
					if at == MarkDequeue && uint64(ce) != marked {
						t.Fatalf("depth %d: %d CE frames left, %d counted marked", depth, ce, marked)
					}
					p := prof.Probability(depth)
					got := float64(marked) / trials
					tol := 4.5 * math.Sqrt(p*(1-p)/trials)
					if math.Abs(got-p) > tol {
						t.Errorf("depth %d: marked %.4f, profile says %.4f ± %.4f", depth, got, p, tol)
					}
					t.Logf("depth %6d: marked %.4f, profile %.4f", depth, got, p)
				}
			})
		}
	}
}

// TestMarkingSkips: Not-ECT frames are never marked nor dropped early,
// CE frames stay CE and count as ECT but not as marked, DCP header-only
// packets are left alone, and a queue without a profile only counts.
func TestMarkingSkips(t *testing.T) {
	always := ECNProfile{MinBytes: 0, MaxBytes: 1}
	r := newECNRig(t, MarkEnqueue, always)
	for i := 0; i < 10; i++ {
		r.push(ecnFrame(t, 0, false))
	}
	for i := 0; i < 10; i++ {
		if got := r.pop(); got != 0 {
			t.Fatalf("Not-ECT frame left with ECN %d", got)
		}
	}
	if s := r.e.Stats(2); s.ECT != 0 || s.Marked != 0 || s.Drops != 0 {
		t.Fatalf("Not-ECT frames counted: %+v", s)
	}
	for i := 0; i < 10; i++ {
		r.push(ecnFrame(t, 3, false))
	}
	for i := 0; i < 10; i++ {
		r.pop()
	}
	if s := r.e.Stats(2); s.ECT != 10 || s.Marked != 0 {
		t.Fatalf("CE frames: %d ECT, %d marked; want 10 and 0", s.ECT, s.Marked)
	}
	// A header-only packet: the classifier's view, forced.
	for i := 0; i < 10; i++ {
		f := ecnFrame(t, 1, false)
		addr, _ := r.mem.Alloc()
		n := copy(r.mem.Room(addr), f)
		p := Packet{Addr: addr, Len: uint16(n), Queue: 2}
		r.cls.Classify(r.mem.Frame(&p), &p.Meta)
		p.Meta.Tag, p.Meta.Ext = rocev2.DCPHeaderOnly, p.Meta.Ext|rocev2.ExtDCP
		r.e.EnqueuePacket(&p)
	}
	for i := 0; i < 10; i++ {
		if got := r.pop(); got != 1 {
			t.Fatalf("header-only packet left with ECN %d, want its ECT(1)", got)
		}
	}
	// no profile: counted, never marked
	r = newECNRig(t, MarkDequeue, ECNProfile{})
	for i := 0; i < 100; i++ {
		r.push(ecnFrame(t, 2, false))
	}
	for i := 0; i < 100; i++ {
		if r.pop() != 2 {
			t.Fatal("a queue without profile marked")
		}
	}
	if s := r.e.Stats(2); s.ECT != 100 || s.Marked != 0 {
		t.Fatalf("no profile: %d ECT, %d marked; want 100 and 0", s.ECT, s.Marked)
	}
}

// markRig is a worker forwarding ECT(0) frames p0 → p1 with marking on
// the data queue, whose depth builds because p1 takes 8 frames a step.
func markRig(t testing.TB, seed uint64, at MarkPoint) *rig {
	eg := DefaultEgress(0, 1<<20)
	eg.MarkAt = at
	eg.Queues[2].ECN = ECNProfile{MinBytes: 2_000, MaxBytes: 60_000, PMax: 0.3}
	r := newRig(t, eg, cross{q: 2})
	w, err := NewWorker(WorkerConfig{Mem: r.mem, Ports: []Port{r.ports[0], r.ports[1]},
		Egress: []EgressConfig{eg, eg}, Stages: []Stage{cross{q: 2}}, Classifier: rocev2.Classifier{VerifyICRC: true}, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	r.ports[1].SetTxRoom(8)
	return r
}

// runMarks feeds the rig 40 steps of 16 frames, drains its queue and
// returns the indices of the frames p1 sent marked.
func runMarks(t *testing.T, r *rig) (marks []int) {
	f := ecnFrame(t, 2, false)
	now := int64(0)
	for ; now < 40; now++ {
		for k := 0; k < 16; k++ {
			r.ports[0].Inject(f)
		}
		r.w.Step(now * 1000)
	}
	for ; r.w.Egress(1).Backlog() > 0; now++ {
		r.w.Step(now * 1000)
	}
	for i, g := range r.sent[1] {
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(g, &m)
		if m.Reason != rocev2.ReasonNone {
			t.Fatalf("frame %d sent malformed: %v", i, m.Reason)
		}
		if m.ECN == 3 {
			marks = append(marks, i)
		}
	}
	r.sent[1] = nil
	return marks
}

// TestWorkerMarking: marks through the worker repeat by seed, differ
// across seeds, show in the snapshot, and SetMarking switches them off
// at the next step.
func TestWorkerMarking(t *testing.T) {
	for _, at := range []MarkPoint{MarkDequeue, MarkEnqueue} {
		a, b, c := markRig(t, 1, at), markRig(t, 1, at), markRig(t, 2, at)
		ma, mb, mc := runMarks(t, a), runMarks(t, b), runMarks(t, c)
		if len(ma) == 0 || fmt.Sprint(ma) != fmt.Sprint(mb) {
			t.Fatalf("%v: seed 1 marked %v, then %v", at, ma, mb)
		}
		if fmt.Sprint(ma) == fmt.Sprint(mc) {
			t.Fatalf("%v: seeds 1 and 2 marked the same frames", at)
		}
		t.Logf("%v: %d of 640 frames marked", at, len(ma))
		a.w.publish(0)
		q := a.w.Snapshot().Queues[1][2]
		if q.Marked != uint64(len(ma)) || q.ECT != 640 || q.ECN.MaxBytes != 60_000 || q.MarkAt != at {
			t.Fatalf("%v: snapshot %+v, want 640 ECT, %d marked", at, q, len(ma))
		}
		if err := a.w.SetMarking(Marking{At: at, Profiles: [][]ECNProfile{nil, {2: {}}}}); err != nil {
			t.Fatal(err)
		}
		if got := runMarks(t, a); len(got) != 0 {
			t.Fatalf("%v: %d frames marked after marking was switched off", at, len(got))
		}
		if err := a.w.SetMarking(Marking{Profiles: [][]ECNProfile{nil, {2: {MinBytes: 5, MaxBytes: 1, PMax: 1}}}}); err == nil {
			t.Fatal("SetMarking took a bad profile")
		}
	}
}

func TestWorkerMarkingAllocs(t *testing.T) {
	for _, at := range []MarkPoint{MarkDequeue, MarkEnqueue} {
		r := benchRig(t, at, true)
		f := ecnFrame(t, 2, false)
		now := int64(0)
		allocs := testing.AllocsPerRun(1000, func() {
			for i := 0; i < BatchSize; i++ {
				r.ports[0].Inject(f)
			}
			now += 1000
			r.w.Step(now)
		})
		if allocs != 0 {
			t.Fatalf("%v: Step with marking allocates %.1f times per batch", at, allocs)
		}
		if s := r.w.Egress(1).Stats(2); s.Marked == 0 || s.Marked == s.ECT {
			t.Fatalf("%v: %d of %d marked: the benchmark would not measure the draw", at, s.Marked, s.ECT)
		}
	}
}

// benchRig forwards ECT frames p0 → p1 on the data queue. With marking,
// the profile draws for nearly every frame: a batch of 64 1 KB frames
// fills the queue from 0 to 64 KB and empties it in the same step, and
// Kmin 0, Kmax 64 KB put every depth on the ramp.
func benchRig(t testing.TB, at MarkPoint, on bool) *rig {
	eg := DefaultEgress(0, 1<<20)
	eg.MarkAt = at
	if on {
		eg.Queues[2].ECN = ECNProfile{MinBytes: 0, MaxBytes: 64 << 10, PMax: 1}
	}
	r := newRig(t, eg, cross{q: 2})
	r.ports[1].OnTransmit = nil
	return r
}

// BenchmarkEgressMarking isolates what marking adds to a frame's way
// through an egress: 64 classified ECT(0) 1 KB frames enqueued, then
// dequeued, with no profile (off) and with one that draws for nearly
// every frame (benchRig's) at either point.
func BenchmarkEgressMarking(b *testing.B) {
	for _, c := range []struct {
		name string
		at   MarkPoint
		on   bool
	}{{"off", MarkDequeue, false}, {"dequeue", MarkDequeue, true}, {"enqueue", MarkEnqueue, true}} {
		b.Run(c.name, func(b *testing.B) {
			p := ECNProfile{}
			if c.on {
				p = ECNProfile{MinBytes: 0, MaxBytes: 64 << 10, PMax: 1}
			}
			r := newECNRig(b, c.at, p)
			f := ecnFrame(b, 2, false)
			var pkts [BatchSize]Packet
			for i := range pkts {
				addr, _ := r.mem.Alloc()
				n := copy(r.mem.Room(addr), f)
				pkts[i] = Packet{Addr: addr, Len: uint16(n), Queue: 2}
				r.cls.Classify(r.mem.Frame(&pkts[i]), &pkts[i].Meta)
			}
			var out [BatchSize]Packet
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += BatchSize {
				for k := range pkts {
					r.e.EnqueuePacket(&pkts[k])
				}
				r.e.Dequeue(0, out[:])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			if s := r.e.Stats(2); c.on && s.Marked == 0 {
				b.Fatal("nothing marked")
			}
		})
	}
}
