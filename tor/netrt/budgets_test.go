package netrt

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"rocetor/rocev2"
)

// team is a switch's workers as rigs on one clock, each running a
// SrcToR (port 0 faces the hosts, port 1 the fabric) or a DstToR (port 0
// the fabric, port 1 the hosts) whose budgets the others share.
type team struct {
	t    testing.TB
	b    *Budgets
	rigs []*rig
	srcs []*SrcToR
	dsts []*DstToR
	now  int64
}

// newTeam builds n workers over stages of configuration c, sharing b
// (nil: each its own, as one worker).
func newTeam(t testing.TB, n int, c Config, b *Budgets, dst bool) *team {
	t.Helper()
	tm := &team{t: t, b: b}
	c.Budgets = b
	for range n {
		if dst {
			r, d := newDst(t, c)
			tm.rigs, tm.dsts = append(tm.rigs, r), append(tm.dsts, d)
		} else {
			r, s := newSrc(t, c)
			tm.rigs, tm.srcs = append(tm.rigs, r), append(tm.srcs, s)
		}
	}
	return tm
}

// step moves the clock on by dt and runs one loop of every worker.
func (tm *team) step(dt int64) {
	tm.now += dt
	for _, r := range tm.rigs {
		r.now = tm.now
		r.w.Step(tm.now)
	}
}

// sums returns the bytes of port i's pool (or buffer) summed over the
// workers' stats, and each worker's.
func (tm *team) sums(i int) (sum int, each []int) {
	for _, s := range tm.srcs {
		each = append(each, s.Stats().Ports[i].Bytes)
	}
	for _, d := range tm.dsts {
		each = append(each, d.Stats().Ports[i].Bytes)
	}
	for _, b := range each {
		sum += b
	}
	return sum, each
}

// close frees every worker's frames and checks that none leaked and the
// shared counts are back to zero.
func (tm *team) close() {
	tm.t.Helper()
	for range 3 {
		tm.step(1000)
	}
	for i, r := range tm.rigs {
		if i < len(tm.srcs) {
			tm.srcs[i].Close()
		} else {
			tm.dsts[i].Close()
		}
		if n := r.mem.InUse(); n != 0 {
			tm.t.Fatalf("worker %d: %d frames leaked", i, n)
		}
	}
	if tm.b != nil && (tm.b.Pool(1) != 0 || tm.b.Buffer(1) != 0) {
		tm.t.Fatalf("shared counts left at pool %d, buffer %d bytes", tm.b.Pool(1), tm.b.Buffer(1))
	}
}

// TestBudgetsPool runs 2 and 4 SrcToRs sharing one fabric port's pool,
// many flows on it each owned by a worker drawn at random (the
// adversary), with bursts, ACKs and requests: at every step the
// workers' pools on the port add up to at most PoolBytes, and to the
// shared count.
func TestBudgetsPool(t *testing.T) {
	frame := len(data(t, 0, 0))
	budget := 16*frame + frame/2
	for _, workers := range []int{2, 4} {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(workers)))
			tm := newTeam(t, workers, Config{PoolBytes: budget, Hold: 50_000}, new(Budgets), false)
			const flows = 24
			owner := make([]int, flows)
			for q := range owner {
				owner[q] = rng.IntN(workers)
			}
			next := make([]uint32, flows)
			var peak int
			for step := range 2000 {
				q := rng.IntN(flows)
				r := tm.rigs[owner[q]]
				switch x := rng.IntN(10); {
				case x < 6:
					for range 1 + rng.IntN(12) {
						r.inject(0, data(t, uint32(q), next[q]))
						next[q]++
					}
				case x < 8 && next[q] > 0:
					r.inject(1, ack(t, uint32(q), next[q]-1-uint32(rng.IntN(int(next[q])))))
				case x < 9 && next[q] > 2:
					r.inject(1, request(t, uint32(q), next[q]-2, rocev2.Bitmap128{Lo: 1}))
				}
				tm.step(int64(rng.IntN(3000)))
				sum, each := tm.sums(1)
				if sum > budget || sum != tm.b.Pool(1) {
					t.Fatalf("%d workers, seed %d, step %d: pools %v add up to %d bytes, shared count %d, budget %d",
						workers, seed, step, each, sum, tm.b.Pool(1), budget)
				}
				peak = max(peak, sum)
				for _, r := range tm.rigs {
					r.take(0)
					r.take(1)
				}
			}
			var evicted, crowded uint64
			for _, s := range tm.srcs {
				evicted += s.Stats().Ports[1].Evicted
				crowded += s.Stats().Ports[1].Crowded
			}
			t.Logf("%d workers, seed %d: peak %d of %d bytes, %d evicted, %d crowded out", workers, seed, peak, budget, evicted, crowded)
			if peak < budget-frame || evicted == 0 {
				t.Fatalf("the pool never filled (peak %d of %d bytes, %d evicted): the test asks too little", peak, budget, evicted)
			}
			tm.close()
		}
	}
}

// TestBudgetsPoolCrowded: a worker that finds the port's pool full of
// another's duplicates has none of its own to evict, and pools nothing
// (Crowded); the worker that filled it evicts its own oldest; once ACKs
// free room, the other pools again, and evicts its own when full.
func TestBudgetsPoolCrowded(t *testing.T) {
	frame := len(data(t, 0, 0))
	tm := newTeam(t, 2, Config{PoolBytes: 4 * frame}, new(Budgets), false)
	a, b := tm.rigs[0], tm.rigs[1]
	for n := range uint32(4) {
		a.inject(0, data(t, 1, n))
	}
	tm.step(1000)
	b.inject(0, data(t, 2, 0))
	tm.step(1000)
	sa, sb := tm.srcs[0].Stats().Ports[1], tm.srcs[1].Stats().Ports[1]
	if sa.Frames != 4 || sb.Frames != 0 || sb.Crowded != 1 || sb.Pooled != 0 {
		t.Fatalf("worker 0 pools %d, worker 1 pools %d (%d crowded out), want 4, 0 (1)", sa.Frames, sb.Frames, sb.Crowded)
	}
	a.inject(0, data(t, 1, 4))
	tm.step(1000)
	if sa = tm.srcs[0].Stats().Ports[1]; sa.Frames != 4 || sa.Evicted != 1 {
		t.Fatalf("worker 0: %d pooled, %d evicted, want 4 and 1", sa.Frames, sa.Evicted)
	}
	a.inject(1, ack(t, 1, 2)) // retires 1 and 2 (0 was evicted)
	tm.step(1000)
	b.inject(0, data(t, 2, 1))
	b.inject(0, data(t, 2, 2))
	b.inject(0, data(t, 2, 3))
	tm.step(1000)
	// Two fit; for the third, worker 1 evicts its own oldest, not
	// worker 0's.
	sa, sb = tm.srcs[0].Stats().Ports[1], tm.srcs[1].Stats().Ports[1]
	if sa.Frames != 2 || sa.Evicted != 1 || sb.Frames != 2 || sb.Evicted != 1 || sb.Crowded != 1 || tm.b.Pool(1) != 4*frame {
		t.Fatalf("pooled %d and %d, evicted %d and %d, %d crowded out, shared %d bytes; want 2, 2, 1, 1, 1, %d",
			sa.Frames, sb.Frames, sa.Evicted, sb.Evicted, sb.Crowded, tm.b.Pool(1), 4*frame)
	}
	// A packet larger than all worker 1 pools: evicting its own would
	// not make the room, so it keeps them and pools nothing.
	b.inject(0, dataFrom(t, srcIP, 3, 0, 256+2*frame))
	tm.step(1000)
	if sb = tm.srcs[1].Stats().Ports[1]; sb.Frames != 2 || sb.Evicted != 1 || sb.Crowded != 2 {
		t.Fatalf("worker 1: %d pooled, %d evicted, %d crowded out; want 2, 1, 2", sb.Frames, sb.Evicted, sb.Crowded)
	}
	tm.close()
}

// TestBudgetsBuffer runs 2 and 4 DstToRs sharing one host port's
// reordering buffer, many flows each owned by a worker drawn at random,
// each flow opening gaps that hold its packets: at every step the
// workers' buffers for the port add up to at most BufferBytes, and to
// the shared count. A worker that holds nothing finds the budget spent
// by the others and forwards (Full, WaitBudget).
func TestBudgetsBuffer(t *testing.T) {
	frame := len(data(t, 0, 0))
	budget := 12*frame + frame/2
	for _, workers := range []int{2, 4} {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(workers)))
			tm := newTeam(t, workers, Config{BufferBytes: budget, RequestInterval: 1e9}, new(Budgets), true)
			const flows = 16
			owner := make([]int, flows)
			for q := range owner {
				owner[q] = rng.IntN(workers)
			}
			next := make([]uint32, flows)
			hole := make([]int64, flows) // PSN left out, -1: none
			for q := range hole {
				hole[q] = -1
			}
			var peak int
			for step := range 2000 {
				q := rng.IntN(flows)
				r := tm.rigs[owner[q]]
				if hole[q] >= 0 && rng.IntN(3) == 0 {
					r.inject(0, data(t, uint32(q), uint32(hole[q]))) // the hole fills
					hole[q] = -1
				} else {
					for range 1 + rng.IntN(6) {
						if hole[q] < 0 && rng.IntN(4) == 0 {
							hole[q] = int64(next[q])
						} else {
							r.inject(0, data(t, uint32(q), next[q]))
						}
						next[q]++
					}
				}
				tm.step(int64(rng.IntN(3000)))
				sum, each := tm.sums(1)
				if sum > budget || sum != tm.b.Buffer(1) {
					t.Fatalf("%d workers, seed %d, step %d: buffers %v add up to %d bytes, shared count %d, budget %d",
						workers, seed, step, each, sum, tm.b.Buffer(1), budget)
				}
				peak = max(peak, sum)
				for _, r := range tm.rigs {
					r.take(0)
					r.take(1)
				}
			}
			var spent uint64
			for _, d := range tm.dsts {
				p := d.Stats().Ports[1]
				spent += p.Full + p.WaitBudget
			}
			t.Logf("%d workers, seed %d: peak %d of %d bytes, %d packets found the budget spent", workers, seed, peak, budget, spent)
			if peak < budget-frame || spent == 0 {
				t.Fatalf("the buffer never filled (peak %d of %d bytes, %d found it spent): the test asks too little", peak, budget, spent)
			}
			tm.close()
		}
	}
}

// TestBudgetsRequested: N is the port's, whoever sent what was asked
// for. Two workers each asked for 3 duplicates: alone, each is below
// KLow (4 frames) and sends at once; together the second reaches it and
// paces.
func TestBudgetsRequested(t *testing.T) {
	frame := len(data(t, 0, 0))
	for _, shared := range []bool{false, true} {
		var b *Budgets
		if shared {
			b = new(Budgets)
		}
		tm := newTeam(t, 2, Config{KLow: 4 * frame, KHigh: 40 * frame, Window: 1e6, Hold: 1e6}, b, false)
		for w, r := range tm.rigs {
			for n := range uint32(3) {
				r.inject(0, data(t, uint32(w), n))
			}
		}
		tm.step(1000)
		for w, r := range tm.rigs {
			r.inject(1, request(t, uint32(w), 0, rocev2.Bitmap128{Lo: 1 << 2}))
			tm.step(1000)
		}
		s0, s1 := tm.srcs[0].Stats().Ports[1], tm.srcs[1].Stats().Ports[1]
		paced := s1.PaceQueued > 0 || s1.Paced > 0
		if s0.Retrans != 3 || paced != shared {
			t.Fatalf("shared %v: worker 0 resent %d at once, want 3; worker 1 resent %d at once, %d paced, %d waiting",
				shared, s0.Retrans, s1.Retrans, s1.Paced, s1.PaceQueued)
		}
		tm.close()
	}
}

// TestBudgetsPaced: the port's pace is the port's: two workers with
// duplicates waiting to be paced on one port send at R_r together, not
// at R_r each.
func TestBudgetsPaced(t *testing.T) {
	frame := len(data(t, 0, 0))
	const rate, span = 100e6, 1_000_000 // bit/s (RateMin), ns
	for _, shared := range []bool{false, true} {
		var b *Budgets
		if shared {
			b = new(Budgets)
		}
		// N at once above KHigh: every duplicate asked for is paced at
		// RateMin.
		tm := newTeam(t, 2, Config{KLow: frame, KHigh: 2 * frame, RateMin: rate, Window: 1e9, Hold: 1e9}, b, false)
		for w, r := range tm.rigs {
			for n := range uint32(100) {
				r.inject(0, data(t, uint32(w), n))
			}
		}
		for range 5 {
			tm.step(1000) // the originals leave
		}
		for w, r := range tm.rigs {
			r.take(1)
			r.inject(1, request(t, uint32(w), 0, rocev2.Bitmap128{Hi: 1 << 34})) // 0–98
		}
		start := tm.now
		var sent int
		for tm.now-start < span {
			tm.step(1000)
			for _, r := range tm.rigs {
				ids, _ := split(t, r.take(1))
				sent += len(ids)
			}
		}
		bound := int(rate/8*span/1e9)/frame + 2 // one slot's credit at the start, one in flight
		p0, p1 := tm.srcs[0].Stats().Ports[1], tm.srcs[1].Stats().Ports[1]
		t.Logf("shared %v: %d paced in %d µs (%d and %d), bound %d", shared, sent, span/1000, p0.Paced, p1.Paced, bound)
		if shared != (sent <= bound) || uint64(sent) != p0.Paced+p1.Paced {
			t.Fatalf("shared %v: the workers paced %d duplicates (%d and %d) in %d µs at %d bit/s, %d frames' worth",
				shared, sent, p0.Paced, p1.Paced, span/1000, int(rate), bound)
		}
		if d := int(p0.Paced) - int(p1.Paced); d < -1 || d > 1 {
			t.Fatalf("shared %v: paced %d and %d: the workers do not take turns", shared, p0.Paced, p1.Paced)
		}
		tm.close()
	}
}

// TestBudgetsRetxBucket: the retransmission bucket is the port's: two
// workers' requests draw at most RetxBurst from it together.
func TestBudgetsRetxBucket(t *testing.T) {
	frame := len(data(t, 0, 0))
	for _, shared := range []bool{false, true} {
		var b *Budgets
		if shared {
			b = new(Budgets)
		}
		// A rate of 1 Mbit/s refills no frame within the test.
		tm := newTeam(t, 2, Config{RetxBurst: MaxFrame, RetxRate: 1e6, Hold: 1e6}, b, false)
		for w, r := range tm.rigs {
			for n := range uint32(20) {
				r.inject(0, data(t, uint32(w), n))
			}
		}
		tm.step(1000)
		for _, r := range tm.rigs {
			r.take(1)
		}
		var bytes int
		var limited uint64
		for w, r := range tm.rigs {
			r.inject(1, request(t, uint32(w), 0, rocev2.Bitmap128{Lo: 1 << 19}))
			tm.step(1000)
			ids, _ := split(t, r.take(1))
			bytes += len(ids) * frame
			limited += tm.srcs[w].Stats().Ports[1].Limited
		}
		t.Logf("shared %v: %d bytes resent, %d limited", shared, bytes, limited)
		if shared != (bytes <= MaxFrame) || shared != (limited > 0) {
			t.Fatalf("shared %v: the workers resent %d bytes (%d limited), bucket %d bytes", shared, bytes, limited, MaxFrame)
		}
		tm.close()
	}
}

// TestBudgetsOneWorker: a stage alone with Budgets behaves as one
// without: the same frames sent and the same counters.
func TestBudgetsOneWorker(t *testing.T) {
	frame := len(data(t, 0, 0))
	run := func(b *Budgets, dst bool) ([2][][]byte, any) {
		tm := newTeam(t, 1, Config{PoolBytes: 8 * frame, BufferBytes: 8 * frame, KLow: 3 * frame, KHigh: 9 * frame,
			RetxBurst: MaxFrame, RetxRate: 1e7, RequestInterval: 30_000}, b, dst)
		r := tm.rigs[0]
		rng := rand.New(rand.NewPCG(7, 7))
		var sent [2][][]byte
		next := make([]uint32, 6)
		for range 600 {
			q := rng.IntN(len(next))
			switch x := rng.IntN(10); {
			case x < 6:
				n := next[q] + uint32(rng.IntN(3)) - 1 // some late, some skipped
				r.inject(0, data(t, uint32(q), n))
				next[q] = n + 1
			case x < 8 && !dst:
				r.inject(1, request(t, uint32(q), next[q]-min(next[q], 4), rocev2.Bitmap128{Lo: 1 << 2}))
			case x < 9 && !dst:
				r.inject(1, ack(t, uint32(q), next[q]-min(next[q], 6)))
			}
			tm.step(int64(rng.IntN(10_000)))
			sent[0], sent[1] = append(sent[0], r.take(0)...), append(sent[1], r.take(1)...)
		}
		var st any
		if dst {
			st = tm.dsts[0].Stats()
		} else {
			st = tm.srcs[0].Stats()
		}
		tm.close()
		return sent, st
	}
	for _, dst := range []bool{false, true} {
		want, wst := run(nil, dst)
		got, gst := run(new(Budgets), dst)
		switch st := wst.(type) {
		case SrcStats:
			p := st.Ports[1]
			t.Logf("src: %d pooled, %d evicted, %d resent, %d paced, %d limited", p.Pooled, p.Evicted, p.Retrans, p.Paced, p.Limited)
			if p.Evicted == 0 || p.Paced == 0 || p.Limited == 0 {
				t.Fatal("the run meets not every budget")
			}
		case DstStats:
			p := st.Ports[1]
			t.Logf("dst: %d held, %d found the budget spent", p.Held, p.Full+p.WaitBudget)
			if p.Held == 0 || p.Full+p.WaitBudget == 0 {
				t.Fatal("the run does not fill the buffer")
			}
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gst, wst) {
			t.Fatalf("dst %v: with Budgets %d+%d frames sent, stats %+v; without %d+%d, %+v", dst,
				len(got[0]), len(got[1]), gst, len(want[0]), len(want[1]), wst)
		}
	}
}

// TestBudgetsConcurrent: workers taking and returning bytes of one
// port at once never take it past its budget (run with -race).
func TestBudgetsConcurrent(t *testing.T) {
	var b Budgets
	const budget, n = 10_000, 300
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &b.ports[1]
			for i := range 20_000 {
				l := n + g + i%7
				if take(&p.pool, l, budget) {
					if v := p.pool.Load(); v > budget {
						t.Errorf("pool at %d bytes, budget %d", v, budget)
						return
					}
					p.pool.Add(-int64(l))
				}
				p.request(int64(i/1000), l)
				p.allow(int64(i), int64(l), 1e6)
			}
		}()
	}
	wg.Wait()
	if b.Pool(1) != 0 {
		t.Fatalf("pool left at %d", b.Pool(1))
	}
}

// BenchmarkBudgets measures what a pooled packet costs in shared
// accounting: a take at admission and a release at retirement
// (netrt.Budgets), where one worker alone adds to a plain int.
// "serial": one goroutine; "one-port": two goroutines at once, each
// b.N times, on one port's count, as two workers pooling on the same
// fabric port (contended); "own-port": each on a port of its own (the
// cache line stays with its CPU). ns/op is per take and release of one
// goroutine.
func BenchmarkBudgets(b *testing.B) {
	cycle := func(p *portBudget, n int) {
		for range n {
			if take(&p.pool, 1100, 256<<10) {
				p.pool.Add(-1100)
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		var bg Budgets
		b.ReportAllocs()
		cycle(&bg.ports[1], b.N)
	})
	for _, shared := range []bool{true, false} {
		name := "own-port"
		if shared {
			name = "one-port"
		}
		b.Run(name, func(b *testing.B) {
			if runtime.GOMAXPROCS(0) < 2 {
				b.Skip("needs two CPUs")
			}
			var bg Budgets
			var wg sync.WaitGroup
			b.ReportAllocs()
			for g := range 2 {
				p := &bg.ports[1+g]
				if shared {
					p = &bg.ports[1]
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					cycle(p, b.N)
				}()
			}
			wg.Wait()
		})
	}
}

// TestBudgetsLease: a stage pooling on a port takes leaseAhead frames of
// the shared pool at once while there is room, serves the next packets
// of the call from that reservation without touching the shared count,
// takes a frame alone when the lease does not fit, and gives back what
// it did not use at the end of the call (settle).
func TestBudgetsLease(t *testing.T) {
	const l = 1000
	b := new(Budgets)
	_, s := newSrc(t, Config{PoolBytes: 20 * l, Budgets: b})
	if !s.reserve(1, l) || leaseAhead < 4 || b.Pool(1) != leaseAhead*l || s.res[1] != (leaseAhead-1)*l {
		t.Fatalf("first frame: shared %d, reserved %d; want a lease of %d frames", b.Pool(1), s.res[1], leaseAhead)
	}
	for range leaseAhead - 1 {
		if !s.reserve(1, l) {
			t.Fatal("refused within the lease")
		}
	}
	if b.Pool(1) != leaseAhead*l || s.res[1] != 0 {
		t.Fatalf("within the lease the shared count moved to %d (reserved %d)", b.Pool(1), s.res[1])
	}
	// Another worker holds all but 3 frames: no room for a lease.
	b.ports[1].pool.Add(20*l - leaseAhead*l - 3*l)
	if !s.reserve(1, l) || b.Pool(1) != 18*l || s.res[1] != 0 {
		t.Fatalf("near full: shared %d, reserved %d; want one frame taken alone", b.Pool(1), s.res[1])
	}
	s.res[1] += 5 * l // retired in the call
	s.settle()
	if b.Pool(1) != 13*l || s.res[1] != 0 {
		t.Fatalf("after settle: shared %d, reserved %d; want the 5 retired frames back", b.Pool(1), s.res[1])
	}
}
