package netrt

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// newQueuedSrc returns an srig whose fabric port 1 is shaped to 10
// Mbit/s with a one-frame burst, so that a few dozen frames queue there
// for milliseconds: the source ToR's own egress as the bottleneck (the
// dumbbell of dcqcn-fairness, where tor1's port toward tor2 is shaped).
func newQueuedSrc(t *testing.T, c Config) (*srig, *SrcToR) {
	t.Helper()
	c.Fabric = 2
	s, err := NewSrcToR(c)
	if err != nil {
		t.Fatal(err)
	}
	shaped := dataplane.DefaultEgress(10e6, 8<<20)
	shaped.BurstBytes = 400
	return newSrcRig(t, []dataplane.EgressConfig{dataplane.DefaultEgress(0, 8<<20), shaped}, s), s
}

// queued sends data PSNs 0..n-1 of flow qp from the host in one batch,
// all of which then wait in fabric port 1's data queue.
func (r *srig) queued(qp, n uint32) {
	for k := uint32(0); k < n; k++ {
		r.inject(0, data(r.t, qp, k))
	}
	r.step(1)
}

// A tail probe must not overtake its own original. Sixty frames wait
// in the shaped port's data queue, about 15 ms of it, and TailProbe is
// 2 ms: a probe timed from pooling would leave on the strict-priority
// retransmit queue while PSNs 8..59 still wait, and the destination ToR
// would see a gap that no loss made and ask for all of them. Timed
// from the original's departure, the port sends 0..59 in order and the
// first probe of 59 at least TailProbe after 59 left.
func TestSrcTailProbeQueued(t *testing.T) {
	const probe = 2_000_000
	r, s := newQueuedSrc(t, Config{Hold: 100_000_000, TailProbe: probe})
	r.queued(7, 60)
	r.until(40_000_000, 100_000)
	fs := r.take(1)
	at, ids, pfc := sortOut(t, fs)
	if len(pfc) != 0 || len(ids) < 61 {
		t.Fatalf("sent %v (%d PFC): want PSNs 0..59 and probes of 59", ids, len(pfc))
	}
	for k := range 60 {
		if ids[k] != 700+uint32(k) {
			t.Fatalf("sent %v: PSN %d left in place %d, before the queue ahead of it", ids[:60], ids[k]-700, k)
		}
	}
	for k := 60; k < len(ids); k++ {
		if ids[k] != 759 {
			t.Fatalf("sent %v after the originals: want only probes of the tail, 59", ids[60:])
		}
	}
	if gap := at[60] - at[59]; gap < probe {
		t.Fatalf("first probe %d ns after its original left, want at least TailProbe (%d)", gap, probe)
	}
	st := s.Stats().Ports[1]
	if st.TailProbes != uint64(len(ids)-60) || st.TailProbes == 0 {
		t.Fatalf("%d tail probes counted, %d sent", st.TailProbes, len(ids)-60)
	}
	r.noLeak(s)
}

// A request for PSNs whose originals still wait in the port's queue
// resends none of them: they are not lost, and a copy on the
// strict-priority retransmit queue would only overtake them. Once they
// have left, a request repeated because they did not arrive resends
// them, once each while that copy waits in turn.
func TestSrcRequestQueued(t *testing.T) {
	r, s := newQueuedSrc(t, Config{Hold: 100_000_000})
	r.queued(7, 60)
	// The destination ToR holds 21 and lacks 10..20.
	bm := rocev2.Bitmap128{}.Set(10)
	r.inject(1, request(t, 7, 10, bm))
	r.step(1000)
	st := s.Stats().Ports[1]
	if st.Retrans != 0 || st.InQueue != 11 || st.Unfulfill != 0 {
		t.Fatalf("retransmitted %d, in queue %d, unfulfilled %d; want 0, 11 (10..20 wait), 0",
			st.Retrans, st.InQueue, st.Unfulfill)
	}
	r.until(30_000_000, 100_000) // every original has left
	r.take(1)
	r.inject(1, request(t, 7, 10, bm))
	r.inject(1, request(t, 7, 10, bm)) // again at once: the copies wait on the port
	r.step(1000)
	st = s.Stats().Ports[1]
	if st.Retrans != 11 || st.InQueue != 22 {
		t.Fatalf("retransmitted %d, in queue %d; want 11 (10..20 once), 22", st.Retrans, st.InQueue)
	}
	r.until(40_000_000, 100_000)
	_, ids, _ := sortOut(t, r.take(1))
	if !equal(ids, seq(710, 721)) {
		t.Fatalf("sent %v, want 10..20 once", ids)
	}
	r.noLeak(s)
}

// Frames the port's queue refused (full) do not count as waiting: a
// lost original is resent as soon as what was queued ahead of it has
// left, however many more were lost behind it. The queue takes ten of
// sixty frames sent one call each; a request 3 ms later, when the ten
// have left, resends the lost PSN 59.
func TestSrcRequestAfterTailDrop(t *testing.T) {
	r, s := newTenFrameSrc(t)
	for k := uint32(0); k < 60; k++ {
		r.inject(0, data(t, 7, k))
		r.step(1000)
	}
	r.until(3_500_000, 100_000)
	if _, ids, _ := sortOut(t, r.take(1)); len(ids) > 12 {
		t.Fatalf("sent %v: want the ten or so the queue took", ids)
	}
	r.inject(1, request(t, 7, 59, rocev2.Bitmap128{}))
	r.step(1000)
	if st := s.Stats().Ports[1]; st.Retrans != 1 || st.InQueue != 0 {
		t.Fatalf("retransmitted %d, in queue %d; want 1, 0: PSN 59 was refused, not queued", st.Retrans, st.InQueue)
	}
	r.noLeak(s)
}

// newTenFrameSrc is a SrcToR whose fabric port, port 1, is shaped to
// 10 Mbit/s with a queue of ten frames of flow 7.
func newTenFrameSrc(t *testing.T) (*srig, *SrcToR) {
	s, err := NewSrcToR(Config{Fabric: 2, Hold: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	shaped := dataplane.DefaultEgress(10e6, 10*len(data(t, 7, 0)))
	shaped.BurstBytes = 400
	return newSrcRig(t, []dataplane.EgressConfig{dataplane.DefaultEgress(0, 8<<20), shaped}, s), s
}

// Hold counts from when the original left the port: sixty frames take
// 15 ms to leave the shaped port, Hold is 5 ms, and a request for the
// last one 1 ms after it left is answered from the pool, not with an
// unfulfilled notice. Then it expires.
func TestSrcHoldQueued(t *testing.T) {
	r, s := newQueuedSrc(t, Config{Hold: 5_000_000})
	r.queued(7, 60)
	r.until(17_000_000, 100_000)
	if _, ids, _ := sortOut(t, r.take(1)); len(ids) != 60 {
		t.Fatalf("sent %d frames by 17 ms, want all 60", len(ids))
	}
	r.inject(1, request(t, 7, 59, rocev2.Bitmap128{}))
	r.step(1000)
	st := s.Stats().Ports[1]
	if st.Retrans != 1 || st.Unfulfill != 0 || st.HoldsExtended == 0 {
		t.Fatalf("retransmitted %d, unfulfilled %d, holds extended %d; want 1, 0, some", st.Retrans, st.Unfulfill, st.HoldsExtended)
	}
	r.until(40_000_000, 100_000)
	if st := s.Stats().Ports[1]; st.Frames != 0 || st.Expired != 60 {
		t.Fatalf("%d pooled, %d expired at 40 ms; want 0, 60", st.Frames, st.Expired)
	}
	r.noLeak(s)
}

// Nor do the frames the queue refuses in a batch, or in an earlier
// batch at the same time (a worker's loop takes a batch from every
// port at one time; a descheduled worker finds them full). A hundred
// frames come in two batches of one loop, the queue takes ten, and a
// request for the last of each batch, once the ten have left, resends
// it. Had every refused frame pushed the estimate of the next by its
// time at the port's rate, as they did, PSN 99 would look queued for
// 25 ms, ten times what the queue held ahead of it, and the
// destination ToR's requests for it would go unanswered meanwhile
// (docs/experiments.md, DCQCN, "NetRT at 4 senders").
func TestSrcRequestAfterBatchDrop(t *testing.T) {
	r, s := newTenFrameSrc(t)
	for k := uint32(0); k < 100; k++ {
		r.inject(0, data(t, 7, k))
	}
	r.step(1000) // PSNs 0..63, one batch
	r.step(0)    // 64..99, a second batch at the same time
	if st := s.Stats(); st.Calls != 2 || st.Ports[1].Pooled != 100 {
		t.Fatalf("%d calls pooled %d frames, want 2 and 100", st.Calls, st.Ports[1].Pooled)
	}
	r.until(3_500_000, 100_000)
	if _, ids, _ := sortOut(t, r.take(1)); len(ids) > 12 {
		t.Fatalf("sent %v: want the ten or so the queue took", ids)
	}
	r.inject(1, request(t, 7, 63, rocev2.Bitmap128{}))
	r.inject(1, request(t, 7, 99, rocev2.Bitmap128{}))
	r.step(1000)
	if st := s.Stats().Ports[1]; st.Retrans != 2 || st.InQueue != 0 {
		t.Fatalf("retransmitted %d, in queue %d; want 2, 0: PSNs 63 and 99 were refused, not queued", st.Retrans, st.InQueue)
	}
	r.noLeak(s)
}
