package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rocetor/rocev2"
)

// pairRig is a switch of n workers over two in-memory ports each (queue
// w of p0 and p1), frame memory shared through a Handoff.
type pairRig struct {
	h     *Handoff
	mems  []*Mem
	ws    []*Worker
	ports [][2]*MemPort
	sent  [2]int
	bytes [2]int
}

// newPairRig builds it with owner steering every fresh frame and
// portOwner owning each port's egress (nil: no handoff at all).
func newPairRig(t testing.TB, n int, owner func(*Packet, []byte) int, portOwner []int, stages func() []Stage) *pairRig {
	t.Helper()
	h, err := NewHandoff(n, HandoffRing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r := &pairRig{h: h}
	if r.mems, err = SharedMems(make([]byte, n*4096*2048), 2048, h); err != nil {
		t.Fatal(err)
	}
	eg := DefaultEgress(0, 1<<20)
	for w := range n {
		var ps [2]*MemPort
		for i := range ps {
			ps[i] = NewMemPort([]string{"p0", "p1"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, r.mems[w], 1024)
			ps[i].OnTransmit = func(f []byte) { r.sent[i]++; r.bytes[i] += len(f) }
		}
		r.ports = append(r.ports, ps)
		var st []Stage
		if stages != nil {
			st = stages()
		} else {
			st = []Stage{cross{q: 2}}
		}
		wk, err := NewWorker(WorkerConfig{ID: w, Mem: r.mems[w], Ports: []Port{ps[0], ps[1]}, Egress: []EgressConfig{eg, eg},
			Stages: st, Classifier: rocev2.Classifier{VerifyICRC: true}, Handoff: h, Owner: owner, PortOwner: portOwner, EgressStage: len(st)})
		if err != nil {
			t.Fatal(err)
		}
		r.ws = append(r.ws, wk)
	}
	return r
}

// settle steps every worker in order until a whole round does nothing.
func (r *pairRig) settle(now int64) {
	for {
		work := 0
		for _, w := range r.ws {
			work += w.Step(now)
		}
		if work == 0 {
			return
		}
	}
}

func TestHandoffToOwner(t *testing.T) {
	// Every frame belongs to worker 1 and port 1 to worker 0: a frame
	// injected at worker 0 goes 0 → 1 (flow) → 0 (egress).
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, []int{1, 0}, nil)
	f := roceFrame(t, 1, 1000)
	for i := 0; i < 100; i++ {
		r.ports[i%2][0].Inject(f)
	}
	r.settle(1000)
	if r.sent[1] != 100 || r.sent[0] != 0 {
		t.Fatalf("sent %v, want 100 on p1", r.sent)
	}
	if r.ports[0][1].Stats().TxRefused != 0 {
		t.Fatal("refused")
	}
	s0, s1 := r.ws[0].Snapshot(), r.ws[1].Snapshot()
	r.ws[0].Publish(1000)
	r.ws[1].Publish(1000)
	s0, s1 = r.ws[0].Snapshot(), r.ws[1].Snapshot()
	if s0.Handed[1] != 50 || s1.Handed[0] != 100 {
		t.Fatalf("handed 0→1 %d, 1→0 %d; want 50 and 100", s0.Handed[1], s1.Handed[0])
	}
	if s0.Ports[1].TxPackets != 100 || s1.Ports[1].TxPackets != 0 {
		t.Fatalf("port 1 sent %d by worker 0 and %d by worker 1: its owner must send all", s0.Ports[1].TxPackets, s1.Ports[1].TxPackets)
	}
	// Every stage counted each frame once, on the worker that ran it.
	if got := s0.Stages[0].Packets + s1.Stages[0].Packets; got != 100 {
		t.Fatalf("stage saw %d packets, want 100", got)
	}
	// Frames worker 0 transmitted went back to the worker that
	// allocated them.
	r.settle(2000)
	for w, m := range r.mems {
		if m.InUse() != 0 {
			t.Fatalf("worker %d: %d frames in use after the run", w, m.InUse())
		}
	}
}

// A worker drains in one loop what a peer handed it in one loop, also
// when the frames wrap round the end of the ring, which the drain reads
// in place (spsc.peek) in two parts.
func TestHandoffDrainsAcrossWrap(t *testing.T) {
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, []int{1, 1}, nil)
	f := roceFrame(t, 1, 1000)
	hand := func(bursts, n int) {
		for range bursts {
			for range n {
				r.ports[0][0].Inject(f)
			}
			r.ws[0].Step(1000)
		}
	}
	// 150 of the ring's 256 places go round first; then 128 more, 106
	// before its end and 22 after.
	hand(3, 50)
	r.ws[1].Step(1000)
	hand(2, 64)
	if got := r.h.Waiting(0, 1); got != 128 {
		t.Fatalf("%d frames on the ring, want 128", got)
	}
	r.ws[1].Step(1000)
	if got := r.h.Waiting(0, 1); got != 0 {
		t.Fatalf("%d frames left on the ring after a loop of its consumer, want 0", got)
	}
	r.settle(2000)
	if r.sent[1] != 278 {
		t.Fatalf("sent %d on p1, want 278", r.sent[1])
	}
}

// TestHandoffSharedPort: a port whose PortOwner is -1 is shared, as
// every port is without port owners: a frame bound for it is queued
// and sent by the worker that runs its flow, on that worker's share,
// never handed; a port with an owner still gets its frames through the
// owner. A pause received on either worker's share of the shared port
// stops both shares, counted once.
func TestHandoffSharedPort(t *testing.T) {
	// Every frame is worker 1's; p1 is shared, p0 worker 0's.
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, []int{0, -1}, nil)
	f := roceFrame(t, 1, 1000)
	for i := range 100 {
		r.ports[i%2][0].Inject(f) // p0 → p1, the shared port
		r.ports[i%2][1].Inject(f) // p1 → p0, worker 0's
	}
	r.settle(1000)
	if r.sent != [2]int{100, 100} {
		t.Fatalf("sent %v, want 100 on each port", r.sent)
	}
	r.ws[0].Publish(1000)
	r.ws[1].Publish(1000)
	s0, s1 := r.ws[0].Snapshot(), r.ws[1].Snapshot()
	// Worker 0 hands its 100 received frames to the flow's owner,
	// which queues the 100 bound for the shared p1 itself and hands
	// the 100 bound for p0 back.
	if s0.Handed[1] != 100 || s1.Handed[0] != 100 {
		t.Fatalf("handed 0→1 %d, 1→0 %d; want 100 and 100", s0.Handed[1], s1.Handed[0])
	}
	if s0.Ports[1].TxPackets != 0 || s1.Ports[1].TxPackets != 100 || s0.Ports[0].TxPackets != 100 {
		t.Fatalf("p1 sent %d by worker 0 and %d by worker 1, p0 %d by worker 0: want 0, 100, 100",
			s0.Ports[1].TxPackets, s1.Ports[1].TxPackets, s0.Ports[0].TxPackets)
	}
	// Each share reports its own budgets on the shared port, which the
	// collector sums; the owned port's are its owner's alone.
	if s0.Queues[1][2].LimitBytes == 0 || s1.Queues[1][2].LimitBytes == 0 || s1.Queues[0][2].LimitBytes != 0 {
		t.Fatalf("limits of p1 %d and %d, of p0 on worker 1 %d: want both shares', and 0",
			s0.Queues[1][2].LimitBytes, s1.Queues[1][2].LimitBytes, s1.Queues[0][2].LimitBytes)
	}
	pause := make([]byte, 64)
	for w, op := range []string{"pfc", "pause"} {
		var n int
		if op == "pfc" {
			n, _ = rocev2.BuildPFC(pause, rocev2.MAC{2, 0, 0, 0, 0, 9}, 1<<3, [8]uint16{3: 0xffff})
		} else {
			n, _ = rocev2.BuildPause(pause, rocev2.MAC{2, 0, 0, 0, 0, 9}, 0xffff)
		}
		now := int64(10000 * (w + 1))
		r.ports[w][1].Inject(pause[:n])
		r.settle(now)
		for o, wk := range r.ws {
			if !wk.Egress(1).Paused(now, 2) {
				t.Errorf("%s received by worker %d: worker %d's share of the shared port not paused", op, w, o)
			}
			if wk.Egress(0).Paused(now, 2) {
				t.Errorf("%s on p1 paused p0 of worker %d", op, o)
			}
		}
	}
	r.ws[0].Publish(30000)
	r.ws[1].Publish(30000)
	s0, s1 = r.ws[0].Snapshot(), r.ws[1].Snapshot()
	if got := s0.Ports[1].PFCRx + s1.Ports[1].PFCRx; got != 1 {
		t.Errorf("%d PFC frames counted on p1, want 1", got)
	}
	if got := s0.Ports[1].PauseRx + s1.Ports[1].PauseRx; got != 1 {
		t.Errorf("%d PAUSE frames counted on p1, want 1", got)
	}
	r.settle(1 << 40)
	for w, m := range r.mems {
		if m.InUse() != 0 {
			t.Fatalf("worker %d: %d frames in use after the run", w, m.InUse())
		}
	}
}

func TestHandoffStaysWithoutOwner(t *testing.T) {
	r := newPairRig(t, 2, func(*Packet, []byte) int { return -1 }, nil, nil)
	f := roceFrame(t, 1, 1000)
	for i := 0; i < 10; i++ {
		r.ports[i%2][0].Inject(f)
	}
	r.settle(1000)
	r.ws[0].Publish(1000)
	if s := r.ws[0].Snapshot(); s.Handed[1] != 0 || s.Ports[1].TxPackets != 5 || r.sent[1] != 10 {
		t.Fatalf("handed %d, worker 0 sent %d, all %d: a frame without an owner stays", s.Handed[1], s.Ports[1].TxPackets, r.sent[1])
	}
}

func TestHandoffRingFull(t *testing.T) {
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, nil, nil)
	f := roceFrame(t, 1, 100)
	// Worker 1 does not run: the ring takes HandoffRing frames.
	for i := 0; i < HandoffRing+10; i++ {
		r.ports[0][0].Inject(f)
		if i%BatchSize == 0 {
			r.ws[0].Step(0)
		}
	}
	for r.ws[0].Step(0) > 0 {
	}
	r.ws[0].Publish(0)
	s := r.ws[0].Snapshot()
	if s.Handed[1] != HandoffRing || s.Drops[ReasonHandoffFull] != 10 {
		t.Fatalf("handed %d, dropped %d; want %d and 10", s.Handed[1], s.Drops[ReasonHandoffFull], HandoffRing)
	}
	r.settle(0)
	if r.sent[1] != HandoffRing {
		t.Fatalf("sent %d, want %d", r.sent[1], HandoffRing)
	}
}

// TestHandoffWakesSleeper runs two workers on their own threads in
// interrupt mode: worker 1 sleeps until worker 0 hands it frames.
func TestHandoffWakesSleeper(t *testing.T) {
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, []int{1, 1}, nil)
	for _, w := range r.ws {
		w.cfg.Mode, w.cfg.MaxSleep = Interrupt, time.Hour
	}
	var mu sync.Mutex
	for _, ps := range r.ports {
		ps[1].OnTransmit = func([]byte) { mu.Lock(); r.sent[1]++; mu.Unlock() }
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.ws[1].Run(ctx) }()
	// Let worker 1 fall asleep, then hand it a frame from worker 0,
	// stepped here (its port cannot be injected into from another
	// thread).
	deadline := time.Now().Add(5 * time.Second)
	for r.h.sleeping[1].Load() == false && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	r.ports[0][0].Inject(roceFrame(t, 1, 100))
	r.ws[0].Step(0)
	for {
		mu.Lock()
		n := r.sent[1]
		mu.Unlock()
		if n == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	r.h.wake(1)
	wg.Wait()
	if r.sent[1] != 1 || r.h.Wakeups(1) == 0 {
		t.Fatalf("sent %d after %d wakeups; want 1 frame sent by the woken worker", r.sent[1], r.h.Wakeups(1))
	}
}

func TestHandoffStepAllocs(t *testing.T) {
	r := newPairRig(t, 2, func(*Packet, []byte) int { return 1 }, []int{0, 0}, nil)
	f := roceFrame(t, 1, 1000)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		for i := 0; i < 32; i++ {
			r.ports[0][0].Inject(f)
		}
		now += 1000
		r.ws[0].Step(now)
		r.ws[1].Step(now)
		r.ws[0].Step(now)
	})
	if allocs != 0 {
		t.Fatalf("a handed batch allocates %.1f times", allocs)
	}
}

// BenchmarkWorkerHandoff forwards 1 KB RoCEv2 frames from p0 to p1:
// "none" on one worker, "handoff" arriving at worker 0 and owned by
// worker 1 (flow and egress), which forwards them; ns/pkt counts both
// workers' time on one thread, so the difference is the handoff's cost.
func BenchmarkWorkerHandoff(b *testing.B) {
	for _, c := range []struct {
		name  string
		owner func(*Packet, []byte) int
	}{{"none", func(*Packet, []byte) int { return 0 }}, {"handoff", func(*Packet, []byte) int { return 1 }}} {
		b.Run(c.name, func(b *testing.B) {
			r := newPairRig(b, 2, c.owner, nil, nil)
			f := roceFrame(b, 1, 1000)
			now := int64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += BatchSize {
				for k := 0; k < BatchSize; k++ {
					r.ports[0][0].Inject(f)
				}
				now += 1000
				r.ws[0].Step(now)
				r.ws[1].Step(now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			if r.sent[1] == 0 {
				b.Fatal("nothing sent")
			}
		})
	}
}

// TestHandoffDefaultRing: by default the rings into one worker share
// handoffBurst packets, each at least HandoffRing.
func TestHandoffDefaultRing(t *testing.T) {
	for _, c := range []struct{ n, want int }{{2, 4096}, {3, 2048}, {5, 1024}, {17, HandoffRing}, {64, HandoffRing}} {
		h, err := NewHandoff(c.n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(h.rings[0][1].buf); got != c.want {
			t.Errorf("%d workers: rings of %d packets, want %d", c.n, got, c.want)
		}
		h.Close()
	}
}

// TestHandoffDrainOnStop stops two workers with frames on a handoff ring
// and in an Inbox. Worker 0 owns port p0's link, worker 1 every flow:
// frames from worker 1's queue of p0 go raw to worker 0's Inbox, which
// classifies them and hands them to worker 1, which sends them on p1.
// DrainHandoff drops what was handed and not taken as "shutdown" on the
// worker it was handed to, so every handed frame was delivered (received
// through the Inbox, or resumed and sent) or dropped with a reason, and
// every frame goes back to the Mem that allocated it.
func TestHandoffDrainOnStop(t *testing.T) {
	h, err := NewHandoff(2, HandoffRing)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mems, err := SharedMems(make([]byte, 2*4096*2048), 2048, h)
	if err != nil {
		t.Fatal(err)
	}
	eg := DefaultEgress(0, 1<<20)
	sent := 0
	var ws []*Worker
	var wire []*MemPort // each worker's queue of p0
	for w := range 2 {
		p0 := NewMemPort("p0", rocev2.MAC{2, 0, 0, 0, 0, 1}, mems[w], 1024)
		p1 := NewMemPort("p1", rocev2.MAC{2, 0, 0, 0, 0, 2}, mems[w], 1024)
		p1.OnTransmit = func([]byte) { sent++ }
		var port0 Port = p0
		if w == 0 {
			port0 = NewInbox(p0, 1024)
		}
		wk, err := NewWorker(WorkerConfig{ID: w, Mem: mems[w], Ports: []Port{port0, p1}, Egress: []EgressConfig{eg, eg},
			Stages: []Stage{cross{q: 2}}, Classifier: rocev2.Classifier{VerifyICRC: true}, Handoff: h,
			Owner: func(*Packet, []byte) int { return 1 }, LinkOwner: []int{0, -1}})
		if err != nil {
			t.Fatal(err)
		}
		ws, wire = append(ws, wk), append(wire, p0)
	}
	f := roceFrame(t, 1, 500)
	for range 200 {
		wire[1].Inject(f)
	}
	for range 4 {
		ws[1].Step(0) // 200 frames raw to worker 0, a batch a step
	}
	ws[0].Step(0) // 200 into its Inbox; a batch received and handed to worker 1
	ws[1].Step(0) // which sends it
	ws[0].Step(0) // another batch handed: on the ring at the stop, 72 left in the Inbox
	// Stop as Run does, then drain the rings.
	for _, w := range ws {
		w.publish(0)
		w.drain()
	}
	dropped := DrainHandoff(ws)
	s0, s1 := ws[0].Snapshot(), ws[1].Snapshot()
	handed := s0.Handed[1] + s1.Handed[0]
	delivered := uint64(sent) + s0.Ports[0].RxPackets
	shut := s0.Drops[ReasonShutdown] + s1.Drops[ReasonShutdown]
	full := s0.Drops[ReasonHandoffFull] + s1.Drops[ReasonHandoffFull]
	if handed != delivered+shut+full {
		t.Errorf("handed %d (0→1 %d, 1→0 %d), delivered %d (sent %d, received through the Inbox %d), dropped at shutdown %d, ring full %d: frames unaccounted for",
			handed, s0.Handed[1], s1.Handed[0], delivered, sent, s0.Ports[0].RxPackets, shut, full)
	}
	if s1.Drops[ReasonShutdown] != BatchSize || s0.Drops[ReasonShutdown] != 200-2*BatchSize || dropped != shut || full != 0 {
		t.Errorf("shutdown drops: %d on worker 1 (the ring), %d on worker 0 (its Inbox), %d returned, %d ring full; want %d, %d, their sum, 0",
			s1.Drops[ReasonShutdown], s0.Drops[ReasonShutdown], dropped, full, BatchSize, 200-2*BatchSize)
	}
	for w, m := range mems {
		if m.InUse() != 0 {
			t.Errorf("worker %d: %d frames in use after the drain", w, m.InUse())
		}
	}
	if again := DrainHandoff(ws); again != 0 {
		t.Errorf("a second drain dropped %d", again)
	}
}

// BenchmarkWorkersScale measures what a second worker adds, each worker
// on a goroutine of its own as tord runs them: every worker receives
// 1 KB RoCEv2 frames of two flows on its queue of p0, classifies them
// (ICRC verified) and forwards them to p1. With one worker both flows
// are its own; with two, each worker owns one flow (by the UDP source
// port's low bit), so half of what each receives is handed to the
// other, handoff included. ns/pkt is wall time over the frames all
// workers sent, so the ratio of workers=1 to workers=2 is the scaling
// (issue 30's aim of 1.8 with NetRT and llr on is measured by
// tor/pipeline's BenchmarkPipelineScale). It
// needs as many idle CPUs as workers: on a busy machine it measures
// the machine.
func BenchmarkWorkersScale(b *testing.B) {
	var frames [2][]byte
	for i := range frames {
		f := make([]byte, 2048)
		n, err := rocev2.Build(f, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"),
			Opcode: rocev2.RCWriteMiddle, DestQP: 7, SrcPort: 0xc000 + uint16(i), PSN: rocev2PSN(1), Payload: make([]byte, 946)})
		if err != nil {
			b.Fatal(err)
		}
		frames[i] = f[:n]
	}
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			owner := func(p *Packet, _ []byte) int { return int(p.Meta.SrcPort&1) % n }
			r := newPairRig(b, 2, owner, nil, nil)
			for _, ps := range r.ports {
				ps[0].OnTransmit, ps[1].OnTransmit = nil, nil
			}
			batches := (b.N + BatchSize - 1) / BatchSize
			b.ReportAllocs()
			b.ResetTimer()
			runWorkers(r.h, r.ws[:n], r.ports, frames, (batches+n-1)/n)
			b.StopTimer()
			sent := uint64(0)
			for _, w := range r.ws[:n] {
				sent += w.st.Ports[1].TxPackets
			}
			if sent == 0 {
				b.Fatal("nothing sent")
			}
			for _, w := range r.ws[:n] {
				for k, d := range w.st.Drops {
					if d > 0 {
						b.Logf("worker %d drop %v: %d", w.cfg.ID, Reason(k), d)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/pkt")
		})
	}
}

// runWorkers runs each worker of ws (one or two) on a goroutine of its
// own: it injects batches batches of frames, alternating between them,
// on its queue of p0 and steps, then steps on until every worker has injected
// all of its frames and nothing it stepped did any work, so that what
// one hands the other is taken.
func runWorkers(h *Handoff, ws []*Worker, ports [][2]*MemPort, frames [2][]byte, batches int) {
	var wg sync.WaitGroup
	var left atomic.Int32
	left.Store(int32(len(ws)))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := int64(0)
			for range batches {
				// Inject at the pace of the slower worker, as a
				// wire would with PFC: a full ring drops, so a
				// worker waits while over two batches it handed
				// wait for the other (HandoffRing holds four).
				for len(ws) > 1 && h.Waiting(i, 1-i) > 2*BatchSize {
					now += 1000
					w.Step(now)
					runtime.Gosched()
				}
				for k := range BatchSize {
					ports[i][0].Inject(frames[k&1])
				}
				now += 1000
				w.Step(now)
			}
			left.Add(-1)
			for idle := 0; left.Load() > 0 || idle < 100; {
				now += 1000
				if w.Step(now) > 0 {
					idle = 0
				} else {
					idle++
				}
			}
		}()
	}
	wg.Wait()
}
