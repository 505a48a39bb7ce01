package dataplane

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// sharedEgress is DefaultEgress on pool b with every queue's reserve and
// the given α per queue (control, retransmit, data, idle).
func sharedEgress(t testing.TB, b *SharedBuffer, limit, reserve int, alpha [4]float64) *Egress {
	t.Helper()
	return portEgress(t, b, limit, 0, reserve, alpha)
}

// portEgress is sharedEgress with a port reserve.
func portEgress(t testing.TB, b *SharedBuffer, limit, portReserve, reserve int, alpha [4]float64) *Egress {
	t.Helper()
	c := DefaultEgress(0, limit)
	c.Shared, c.PortReserve = b, portReserve
	for i := range c.Queues {
		c.Queues[i].Reserve, c.Queues[i].Alpha = reserve, alpha[i]
	}
	e, err := NewEgress(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSharedBufferRule(t *testing.T) {
	// A pool of 10,000 bytes, reserves of 1,000, α 1 for data and 1/4
	// for idle.
	b := NewSharedBuffer(10000)
	e := sharedEgress(t, b, 1<<20, 1000, [4]float64{1, 1, 1, 0.25})
	const data, idle = 2, 3
	// The reserve takes ten 100-byte frames without touching the pool.
	for i := 0; i < 10; i++ {
		if !e.Enqueue(data, 0, 100) {
			t.Fatalf("frame %d refused within the reserve", i)
		}
	}
	if b.Used() != 0 {
		t.Fatalf("reserve counted in the pool: %d", b.Used())
	}
	// Alone, with α 1, the data queue grows while its shared bytes are
	// at most the free bytes: s ≤ 10000 − s, so up to 5,000.
	n := 0
	for e.Enqueue(data, 0, 100) {
		n++
	}
	if n != 50 || b.Used() != 5000 {
		t.Fatalf("data queue took %d frames beyond its reserve, pool %d; want 50 and 5000", n, b.Used())
	}
	if e.Threshold(data) != 1000+5000 {
		t.Fatalf("threshold %d, want 6000", e.Threshold(data))
	}
	if s := e.Stats(data); s.ThresholdDrops != 1 || s.Drops != 1 {
		t.Fatalf("stats %+v, want one threshold drop", s)
	}
	// idle, α 1/4, now has 5,000 free: s ≤ (5000 − s)/4, so 1,000.
	for i := 0; i < 10; i++ {
		e.Enqueue(idle, 0, 100) // its reserve
	}
	n = 0
	for e.Enqueue(idle, 0, 100) {
		n++
	}
	if n != 10 || b.Used() != 6000 {
		t.Fatalf("idle took %d frames beyond its reserve, pool %d; want 10 and 6000", n, b.Used())
	}
	// Draining data gives its shared bytes back first of all: the last
	// 1,000 bytes it holds are its reserve.
	var out [BatchSize]Packet
	for {
		if d, _ := e.Depth(data); d == 1000 {
			break
		}
		// strict priority would serve control, retransmit first,
		// which are empty; data is above idle.
		e.Dequeue(0, out[:1])
	}
	if b.Used() != 1000 {
		t.Fatalf("pool %d with data at its reserve, want idle's 1000", b.Used())
	}
	for e.Backlog() > 0 {
		e.Dequeue(0, out[:])
	}
	if b.Used() != 0 {
		t.Fatalf("pool %d when empty", b.Used())
	}
}

// TestSharedBufferPortReserve: a port's reserve is its queues' together
// and holds when the pool is full: another port's queue has taken the
// whole pool, yet two queues of this port still admit the port reserve
// between them, and nothing more; their queue reserves come first.
func TestSharedBufferPortReserve(t *testing.T) {
	const data, idle = 2, 3
	b := NewSharedBuffer(4000)
	greedy := portEgress(t, b, 1<<20, 0, 0, [4]float64{256, 256, 256, 256})
	for greedy.Enqueue(data, 0, 100) {
	}
	if b.Used() < 3900 {
		t.Fatalf("the greedy queue left %d of the pool free", b.Size()-b.Used())
	}
	e := portEgress(t, b, 1<<20, 1000, 200, [4]float64{1, 1, 1, 1})
	n := 0
	for e.Enqueue(data, 0, 100) { // its 200, then the port's 1000
		n++
	}
	if n != 12 {
		t.Fatalf("data admitted %d frames with the pool full, want 12 (its reserve and the port's)", n)
	}
	if size, held := e.PortReserve(); size != 1000 || held != 1000 {
		t.Fatalf("port reserve %d, %d held; want 1000, all of it", size, held)
	}
	// idle still has its own reserve, and no more: the port's is spent.
	n = 0
	for e.Enqueue(idle, 0, 100) {
		n++
	}
	if n != 2 || e.Stats(idle).ThresholdDrops != 1 {
		t.Fatalf("idle admitted %d frames beyond a spent port reserve (stats %+v), want its own 2", n, e.Stats(idle))
	}
	// Data drains: its port bytes go back, and idle may take them.
	var out [BatchSize]Packet
	for d, _ := e.Depth(data); d > 200; d, _ = e.Depth(data) {
		e.Dequeue(0, out[:1])
	}
	if _, held := e.PortReserve(); held != 0 {
		t.Fatalf("%d port-reserve bytes held with data at its own reserve and idle at its", held)
	}
	n = 0
	for e.Enqueue(idle, 0, 100) {
		n++
	}
	if n != 10 {
		t.Fatalf("idle took %d frames of the port reserve data gave back, want 10", n)
	}
}

// refQueue is the naive reference of a queue in the shared buffer: the
// bytes in each layer (its reserve, its port's, the pool), filled in
// that order and given back in the reverse.
type refQueue struct {
	frames                []int
	bytes, reserve, limit int
	own, ported, pooled   int
	alpha                 int64
}

// refPort is the reference of a port: its queues and its reserve.
type refPort struct {
	q             [4]refQueue
	reserve, held int
}

// TestSharedBufferReference drives random enqueues and dequeues on three
// ports' queues over one pool and checks each decision, the pool's use,
// the port reserves' and the thresholds against the reference.
func TestSharedBufferReference(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		size := int64(rng.IntN(64<<10) + 1)
		b := NewSharedBuffer(size)
		reserve := rng.IntN(4096)
		portReserve := 0
		if seed%3 != 0 {
			portReserve = rng.IntN(16 << 10)
		}
		limit := reserve + rng.IntN(64<<10) + 2048
		alphas := [4]float64{}
		for i := range alphas {
			alphas[i] = []float64{1.0 / 16, 0.25, 0.5, 1, 2, 8}[rng.IntN(6)]
		}
		var egs [3]*Egress
		var ref [3]refPort
		for p := range egs {
			egs[p] = portEgress(t, b, limit, portReserve, reserve, alphas)
			ref[p].reserve = portReserve
			for q := range ref[p].q {
				ref[p].q[q] = refQueue{reserve: reserve, limit: limit, alpha: alphaFixed(alphas[q])}
			}
		}
		lent := func() int64 {
			var s int64
			for p := range ref {
				for q := range ref[p].q {
					s += int64(ref[p].q[q].pooled)
				}
			}
			return s
		}
		var out [1]Packet
		for op := 0; op < 20000; op++ {
			p, q := rng.IntN(3), rng.IntN(4)
			if rng.IntN(3) > 0 {
				n := 64 + rng.IntN(1500)
				want := ref[p].enqueue(q, n, size-lent())
				if got := egs[p].Enqueue(q, 0, n); got != want {
					t.Fatalf("seed %d op %d: port %d queue %d (%+v, α %v) frame %d with %d of %d lent: admitted %v, want %v",
						seed, op, p, q, ref[p].q[q], alphas[q], n, lent(), size, got, want)
				}
			} else if egs[p].Backlog() > 0 {
				if egs[p].Dequeue(0, out[:]) != 1 {
					t.Fatal("nothing dequeued")
				}
				ref[p].dequeue(int(out[0].Queue))
			}
			if b.Used() != lent() || b.Used() > size {
				t.Fatalf("seed %d op %d: pool says %d lent, reference %d, size %d", seed, op, b.Used(), lent(), size)
			}
			if rs, held := egs[p].PortReserve(); rs != portReserve || held != ref[p].held || held > portReserve {
				t.Fatalf("seed %d op %d: port %d reserve %d, %d held; reference %d of %d", seed, op, p, rs, held, ref[p].held, portReserve)
			}
			r := &ref[p].q[q]
			want := r.reserve + r.ported + portReserve - ref[p].held + int(r.alpha*(size-lent())>>AlphaShift)
			if th := egs[p].Threshold(q); th != min(want, r.limit) {
				t.Fatalf("seed %d op %d: threshold %d, want %d", seed, op, th, min(want, r.limit))
			}
		}
	}
}

// enqueue decides a frame of n bytes for queue q with free bytes in the
// pool, and takes it if admitted.
func (p *refPort) enqueue(q, n int, free int64) bool {
	r := &p.q[q]
	own := min(n, r.reserve-r.own)
	port := min(n-own, p.reserve-p.held)
	pool := n - own - port
	if r.bytes+n > r.limit || pool > 0 && (int64(pool) > free || int64(r.pooled+pool)<<AlphaShift > r.alpha*free) {
		return false
	}
	r.frames = append(r.frames, n)
	r.bytes += n
	r.own += own
	r.ported += port
	p.held += port
	r.pooled += pool
	return true
}

// dequeue takes queue q's head frame out: the pool's bytes first.
func (p *refPort) dequeue(q int) {
	r := &p.q[q]
	n := r.frames[0]
	r.frames = r.frames[1:]
	r.bytes -= n
	pool := min(n, r.pooled)
	port := min(n-pool, r.ported)
	r.pooled -= pool
	r.ported -= port
	p.held -= port
	r.own -= n - pool - port
}

// TestSharedBufferConcurrent runs workers' egresses on one pool at once:
// the pool is never over-committed and gives every byte back.
func TestSharedBufferConcurrent(t *testing.T) {
	const size = 32 << 10
	b := NewSharedBuffer(size)
	var wg sync.WaitGroup
	over := make(chan int64, 4)
	for w := 0; w < 4; w++ {
		e := portEgress(t, b, 1<<20, 2048*w, 512, [4]float64{8, 1, 1, 0.5})
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			var out [4]Packet
			for i := 0; i < 50000; i++ {
				if rng.IntN(2) == 0 {
					e.Enqueue(rng.IntN(4), 0, 64+rng.IntN(1500))
				} else {
					e.Dequeue(0, out[:1+rng.IntN(4)])
				}
				if u := b.Used(); u > size || u < 0 {
					over <- u
					return
				}
			}
			for e.Backlog() > 0 {
				e.Dequeue(0, out[:])
			}
			if _, held := e.PortReserve(); held != 0 {
				t.Errorf("worker %d: %d port-reserve bytes held with every queue empty", seed, held)
			}
		}(uint64(w))
	}
	wg.Wait()
	close(over)
	for u := range over {
		t.Fatalf("pool at %d of %d", u, size)
	}
	if b.Used() != 0 {
		t.Fatalf("%d bytes still lent with every queue empty", b.Used())
	}
}

func TestSharedBufferValidate(t *testing.T) {
	for _, c := range []struct {
		reserve int
		alpha   float64
	}{{-1, 1}, {2 << 20, 1}, {0, 0}, {0, 1000}, {0, -1}} {
		eg := DefaultEgress(0, 1<<20)
		eg.Shared = NewSharedBuffer(1 << 20)
		eg.Queues[2].Reserve, eg.Queues[2].Alpha = c.reserve, c.alpha
		for i := range eg.Queues {
			if i != 2 {
				eg.Queues[i].Alpha = 1
			}
		}
		if err := eg.Validate(); err == nil {
			t.Errorf("reserve %d, α %v: accepted", c.reserve, c.alpha)
		}
	}
	eg := DefaultEgress(0, 1<<20)
	eg.Shared, eg.PortReserve = NewSharedBuffer(1<<20), -1
	for i := range eg.Queues {
		eg.Queues[i].Alpha = 1
	}
	if err := eg.Validate(); err == nil {
		t.Error("port reserve -1: accepted")
	}
}

// TestWorkerSharedBuffer: the worker drops at the threshold with its own
// reason, and the packet path allocates nothing.
func TestWorkerSharedBuffer(t *testing.T) {
	eg := DefaultEgress(0, 1<<20)
	eg.Shared = NewSharedBuffer(16 << 10)
	for i := range eg.Queues {
		eg.Queues[i].Alpha, eg.Queues[i].Reserve = 1, 4096
	}
	r := newRig(t, eg, cross{q: 2})
	f := roceFrame(t, 1, 1024)
	for i := 0; i < 64; i++ {
		r.ports[0].Inject(f)
	}
	r.ports[1].OnTransmit = nil
	r.w.Step(1)
	s := r.w.Egress(1).Stats(2)
	if s.ThresholdDrops == 0 || r.w.st.Drops[ReasonBufferThreshold] != s.ThresholdDrops || r.w.st.Drops[ReasonQueueFull] != 0 {
		t.Fatalf("queue %+v, drops: threshold %d, full %d", s, r.w.st.Drops[ReasonBufferThreshold], r.w.st.Drops[ReasonQueueFull])
	}
	r.w.Publish(2)
	if snap := r.w.Snapshot(); snap.SharedSize != 16<<10 || snap.SharedUsed != int64(eg.Shared.Used()) || snap.Queues[1][2].ThresholdBytes != 4096+int(16<<10-eg.Shared.Used()) {
		t.Fatalf("snapshot: pool %d of %d, threshold %d", snap.SharedUsed, snap.SharedSize, snap.Queues[1][2].ThresholdBytes)
	}
}

func TestSharedBufferAllocs(t *testing.T) {
	eg := DefaultEgress(0, 1<<20)
	eg.Shared = NewSharedBuffer(32 << 10)
	for i := range eg.Queues {
		eg.Queues[i].Alpha, eg.Queues[i].Reserve = 1, 4096
	}
	r := newRig(t, eg, cross{q: 2})
	r.ports[1].OnTransmit = nil
	f := roceFrame(t, 1, 1024)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		for i := 0; i < BatchSize; i++ {
			r.ports[0].Inject(f)
		}
		now += 1000
		r.w.Step(now)
	})
	if allocs != 0 {
		t.Fatalf("Step with a shared buffer allocates %.1f times per batch", allocs)
	}
	if r.w.Egress(1).Stats(2).ThresholdDrops == 0 {
		t.Fatal("no threshold drop: the test would not cover the refusal")
	}
}

// BenchmarkEgressShared measures what the shared buffer adds to a
// frame's way through an egress: 64 1 KB frames enqueued on the data
// queue, then dequeued, with per-queue limits only (off), with a pool
// the frames stay within (shared: every frame past the 4 KB reserve
// takes a compare-and-swap and gives it back with an add), and with a
// pool so small that most frames meet the threshold (refused), and
// with a 16 KB port reserve the first frames past the queue's reserve
// take before the pool (port).
func BenchmarkEgressShared(b *testing.B) {
	for _, c := range []struct {
		name string
		pool int64
		port int
	}{{"off", 0, 0}, {"shared", 1 << 20, 0}, {"refused", 8 << 10, 0}, {"port", 1 << 20, 16 << 10}} {
		b.Run(c.name, func(b *testing.B) {
			eg := DefaultEgress(0, 1<<20)
			if c.pool > 0 {
				eg.Shared, eg.PortReserve = NewSharedBuffer(c.pool), c.port
				for i := range eg.Queues {
					eg.Queues[i].Alpha, eg.Queues[i].Reserve = 1, 4096
				}
			}
			e, err := NewEgress(eg)
			if err != nil {
				b.Fatal(err)
			}
			var out [BatchSize]Packet
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += BatchSize {
				for k := 0; k < BatchSize; k++ {
					e.Enqueue(2, uint64(k), 1024)
				}
				e.Dequeue(0, out[:])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// TestWorkerIngressPFCShared: with PFC's alpha the pause threshold
// follows the shared pool — a port's peer is paused once its queued
// bytes pass XOff + α × the pool's free bytes, later than XOff alone
// while the pool is empty — and the resume at XOn + α × free.
func TestWorkerIngressPFCShared(t *testing.T) {
	eg := DefaultEgress(1e9, 1<<20)
	eg.Shared = NewSharedBuffer(32 << 10)
	for i := range eg.Queues {
		eg.Queues[i].Alpha = 4 // the queues admit every frame of this test
	}
	r := newRig(t, eg, cross{q: 2})
	pfc := IngressPFC{XOff: 2048, XOn: 1024, Quanta: 1000, Alpha: 0.25}
	if err := pfc.validate(2); err != nil {
		t.Fatal(err)
	}
	r.w.cfg.PFC = &pfc
	r.w.pfc = newPFCState(pfc, r.w.egress)
	r.peerPFC(1, 0xffff) // port 1 may not send: port 0's bytes stay queued
	r.w.Step(0)
	f := roceFrame(t, 1, 1024)
	now := int64(1000)
	paused := 0
	for k := 1; k <= 20 && paused == 0; k++ {
		r.ports[0].Inject(f)
		r.w.Step(now)
		now += 1000
		queued := r.w.pfc.bytes[0][3]
		free := eg.Shared.Size() - eg.Shared.Used()
		times, _ := r.pfcTimes()
		switch want := queued > pfc.XOff+int(free)/4; {
		case len(times) > 0 && !want:
			t.Fatalf("frame %d: paused at %d bytes, threshold %d", k, queued, pfc.XOff+int(free)/4)
		case len(times) == 0 && want:
			t.Fatalf("frame %d: not paused at %d bytes, threshold %d", k, queued, pfc.XOff+int(free)/4)
		case len(times) > 0:
			paused = k
		}
	}
	if paused*len(f) <= pfc.XOff+len(f) {
		t.Fatalf("paused at frame %d (%d bytes): the static XOff alone, not the pool's share", paused, paused*len(f))
	}
	// Drain: the resume comes once the bytes fall to XOn + α × free.
	r.peerPFC(1, 0)
	for ; r.w.Egress(1).Backlog() > 0 || r.w.Egress(0).Backlog() > 0 || r.ports[1].Pending() > 0; now += 10_000 {
		r.w.Step(now)
	}
	if times, _ := r.pfcTimes(); len(times) < 2 || times[len(times)-1] != 0 {
		t.Fatalf("PFC frames %v: want a resume after the drain", times)
	}
}
