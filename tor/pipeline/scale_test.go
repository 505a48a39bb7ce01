package pipeline

import (
	"testing"
)

// settle steps every worker of both switches in turn, from this
// goroutine, until none has work: a deterministic run of the pair.
func (r *scalePair) settle(t testing.TB) {
	t.Helper()
	for idle, steps := 0, 0; idle < 4; steps++ {
		if steps > 100000 {
			t.Fatal("the workers never went idle")
		}
		work := 0
		for w := range r.now {
			work += r.step(w)
		}
		if work == 0 {
			idle++
		} else {
			idle = 0
		}
	}
}

// TestScaleHandoffs is issue 30's ownership on scalePair with two
// workers: the llr links (the uplinks) are dealt round the workers,
// each link's sender and receiver on one worker's stage at both ends;
// a flow leaves by an uplink its owner owns; the host ports are shared
// (Config.SharedPorts), so no data packet or ACK is handed at all —
// each flow's owner sends its frames to the host from its own share of
// the host's port — as the flows spread over every uplink. With every
// link on worker 0, or ecmp over all uplinks, a flow of worker 1 is
// handed to worker 0 and back; with host ports owned as other ports
// (i mod 2), a flow is handed once where its host's port is the other
// worker's.
func TestScaleHandoffs(t *testing.T) {
	r := newScalePair(t, 2)
	for _, s := range []*scaleSwitch{&r.a, &r.b} {
		for w, pl := range s.pls {
			for i := range len(s.ports[w]) {
				if want := i < scaleUplinks && i%2 == w; pl.LLR.Protected(i) != want {
					t.Fatalf("worker %d's llr protects port %d: %v, want %v", w, i, pl.LLR.Protected(i), want)
				}
			}
		}
	}
	// llr's session syncs first.
	r.settle(t)
	const count = 64
	for k := range r.hs {
		w := k / scaleFlowsPer // the flow's owner (scaleFlows)
		before, sent := r.handed(), r.b.toHost[w].n.Load()
		r.send(w, r.ss[w][k%scaleFlowsPer], count)
		r.settle(t)
		if got := r.handed() - before; got != 0 {
			t.Errorf("flow %d of worker %d to host port %d: %d frames handed, want 0", k, w, scaleHostPort(k), got)
		}
		if got := r.b.toHost[w].n.Load() - sent; got != count {
			t.Errorf("flow %d of worker %d: its worker sent %d frames to the host, want %d", k, w, got, count)
		}
	}
	if got, want := r.delivered(), int64(len(r.hs)*count); got != want {
		t.Errorf("%d data packets reached b's hosts, want %d", got, want)
	}
	// Each flow's owner sends it by an uplink it owns, so NetRT's pool
	// keeps every duplicate in place (netrt.Config.InPlace).
	for w, pl := range r.a.pls {
		if st := pl.Src.Stats().Sum(); st.Pooled == 0 || st.InPlace != st.Pooled {
			t.Errorf("a's worker %d pooled %d duplicates, %d of them in place; want all", w, st.Pooled, st.InPlace)
		}
	}
	for u := range scaleUplinks {
		var tx uint64
		for w, pl := range r.a.pls {
			pl.Worker.Publish(r.now[w].n.Load())
			tx += pl.Worker.Snapshot().Ports[u].TxPackets
		}
		if tx < count {
			t.Errorf("uplink %d of a sent %d frames: the flows do not spread over the uplinks", u, tx)
		}
	}
}

// TestScaleNoAllocs: the pair's two workers forward, hand and protect
// without allocating.
func TestScaleNoAllocs(t *testing.T) {
	r := newScalePair(t, 2)
	r.settle(t)
	for w := range 2 { // warm up every flow's tables and rings
		for _, s := range r.ss[w] {
			r.send(w, s, benchBurst)
		}
	}
	r.settle(t)
	i := 0
	if a := testing.AllocsPerRun(200, func() {
		w := i % 2
		r.send(w, r.ss[w][i/2%scaleFlowsPer], benchBurst)
		i++
		for range 4 {
			r.step(0)
			r.step(1)
		}
	}); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
}
