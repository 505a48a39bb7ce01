package netrt

import (
	"testing"

	"rocetor/rocev2"
)

func newDst(t testing.TB, c Config) (*rig, *DstToR) {
	t.Helper()
	c.Fabric = 1 // p0 faces the fabric, p1 the host
	d, err := NewDstToR(c)
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, d), d
}

func (r *rig) noLeak(closer interface{ Close() error }) {
	r.t.Helper()
	r.settle()
	closer.Close()
	if n := r.mem.InUse(); n != 0 {
		r.t.Fatalf("%d frames leaked", n)
	}
}

func TestDstInOrder(t *testing.T) {
	r, d := newDst(t, Config{})
	for i := uint32(0); i < 100; i++ {
		r.inject(0, data(t, 7, 1000+i))
		if i%8 == 7 {
			r.step(1000)
		}
	}
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, seq(1000, 1100)) {
		t.Fatalf("host got %v", got)
	}
	if n := len(r.take(0)); n != 0 {
		t.Fatalf("%d frames sent back to the fabric", n)
	}
	if st := d.Stats(); st.InOrder != 100 || st.Held != 0 || st.Requests != 0 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

func TestDstGapRequestRelease(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 50_000})
	for _, n := range []uint32{0, 1, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{0, 1}) {
		t.Fatalf("host got %v, want 0 1 and 3 held", got)
	}
	reqs := r.take(0)
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	m, n := message(t, reqs[0])
	if n.Type() != rocev2.NetRTRequest || n.PSN() != 2 || n.Bitmap() != (rocev2.Bitmap128{Lo: 1}) {
		t.Fatalf("request type %d ePSN %d bitmap %+v, want 1, 2, {Lo:1}", n.Type(), n.PSN(), n.Bitmap())
	}
	e := rocev2.Ethernet(reqs[0])
	if addrOf(m.Flow.Src) != dstIP || addrOf(m.Flow.Dst) != srcIP || m.Flow.QP != 7 ||
		e.Dst() != hostMAC || e.Src() != r.ports[0].MAC() {
		t.Fatalf("request addressed %v→%v qp %d, MACs %v→%v", addrOf(m.Flow.Src), addrOf(m.Flow.Dst), m.Flow.QP, e.Src(), e.Dst())
	}
	// More packets behind the hole are held too; the timer re-sends the
	// request with the fuller bitmap.
	r.inject(0, data(t, 7, 4))
	r.inject(0, data(t, 7, 6))
	r.settle()
	if n := len(r.take(1)); n != 0 {
		t.Fatalf("%d frames passed the hole", n)
	}
	r.step(50_000)
	reqs = r.take(0)
	if len(reqs) != 1 {
		t.Fatalf("%d re-sent requests, want 1", len(reqs))
	}
	if _, n := message(t, reqs[0]); n.PSN() != 2 || n.Bitmap() != (rocev2.Bitmap128{Lo: 0b1011}) {
		t.Fatalf("re-sent request ePSN %d bitmap %+v", n.PSN(), n.Bitmap())
	}
	r.inject(0, data(t, 7, 2))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{2, 3, 4}) {
		t.Fatalf("host got %v after the hole filled, want 2 3 4 (6 still held)", got)
	}
	r.inject(0, data(t, 7, 5))
	r.inject(0, data(t, 7, 7))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{5, 6, 7}) {
		t.Fatalf("host got %v, want 5 6 7", got)
	}
	r.step(200_000)
	if n := len(r.take(0)); n != 0 {
		t.Fatalf("%d requests after recovery", n)
	}
	if st := d.Stats(); st.Gaps != 1 || st.Recovered != 1 || st.HeldBytes != 0 || st.Held != st.Released {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

// TestDstSameBatch fills a hole in the batch that made it: the held
// packets must not overtake the in-order ones of the same batch.
func TestDstSameBatch(t *testing.T) {
	r, d := newDst(t, Config{})
	for _, n := range []uint32{0, 1, 3, 4, 2, 5} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, seq(0, 6)) {
		t.Fatalf("host got %v", got)
	}
	r.noLeak(d)
}

func TestDstUnfulfilled(t *testing.T) {
	r, d := newDst(t, Config{})
	for _, n := range []uint32{0, 2, 3, 4} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.take(0)
	if got := psns(t, r.take(1)); !equal(got, []uint32{0}) {
		t.Fatalf("host got %v", got)
	}
	r.inject(0, unfulfilled(t, 7, 9)) // not the ePSN: ignored, consumed
	r.settle()
	if st := d.Stats(); st.Stale != 1 || len(r.sent[1]) != 0 {
		t.Fatalf("stale notice: stats %+v, %d frames to host", st, len(r.sent[1]))
	}
	r.inject(0, unfulfilled(t, 7, 1))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{2, 3, 4}) {
		t.Fatalf("host got %v on Waiting, want the buffer flushed lowest first", got)
	}
	// Waiting blocks nothing until the sender's go-back-N brings ePSN.
	r.inject(0, data(t, 7, 5))
	r.inject(0, data(t, 7, 1))
	r.inject(0, data(t, 7, 2))
	r.inject(0, data(t, 7, 4))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{5, 1, 2}) {
		t.Fatalf("host got %v, want 5 1 2 (4 held: Ordered again)", got)
	}
	st := d.Stats()
	if st.Waits != 1 || st.Flushed != 3 || st.Notices != 2 || st.Passed != 1 || st.Gaps != 2 {
		t.Fatalf("stats %+v", st)
	}
	r.step(int64(2e6))
	s := r.w.Snapshot()
	if s.Drops[ReasonConsumed] != 2 {
		t.Fatalf("consumed %d notices, want 2", s.Drops[ReasonConsumed])
	}
	r.noLeak(d)
}

func TestDstGivesUp(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 3})
	for _, n := range []uint32{0, 2, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	for i := 0; i < 10; i++ {
		r.step(10_000)
	}
	if n := len(r.take(0)); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if got := psns(t, r.take(1)); !equal(got, []uint32{0, 2, 3}) {
		t.Fatalf("host got %v", got)
	}
	if st := d.Stats(); st.GaveUp != 1 || st.Waits != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

func TestDstBudget(t *testing.T) {
	frame := len(data(t, 7, 0))
	budget := 5*frame + frame/2
	r, d := newDst(t, Config{BufferBytes: budget})
	r.inject(0, data(t, 7, 0))
	for n := uint32(2); n < 20; n++ {
		r.inject(0, data(t, 7, n))
		r.settle()
		if st := d.Stats(); st.HeldBytes > budget {
			t.Fatalf("held %d bytes, budget %d", st.HeldBytes, budget)
		}
	}
	st := d.Stats()
	if st.MaxHeldBytes != 5*frame || st.ReorderFull != 13 || st.Held != 5 {
		t.Fatalf("stats %+v", st)
	}
	// 0 and the overflow (7–19) passed; the hole then releases 2–6.
	if got := psns(t, r.take(1)); len(got) != 14 {
		t.Fatalf("host got %v", got)
	}
	r.inject(0, data(t, 7, 1))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, seq(1, 7)) {
		t.Fatalf("host got %v", got)
	}
	r.noLeak(d)
}

func TestDstTableFull(t *testing.T) {
	r, d := newDst(t, Config{Flows: 2})
	for qp := uint32(1); qp <= 4; qp++ {
		r.inject(0, data(t, qp, 0))
	}
	r.settle()
	if st := d.Stats(); st.TableFull != 2 || st.Flows != 2 || len(r.take(1)) != 4 {
		t.Fatalf("stats %+v", st)
	}
	r.step(int64(DefaultIdleTimeout))
	r.inject(0, data(t, 9, 0))
	r.settle()
	if st := d.Stats(); st.Reclaimed != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

func TestDstInOrderAllocs(t *testing.T) {
	r, d := newDst(t, Config{})
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
	f := data(t, 7, 0)
	m := meta(t, f)
	n := uint32(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			rocev2.BTH(f[m.BTHOff:]).SetPSN(rocev2PSN(n))
			m.SetICRC(f)
			n++
			r.ports[0].Inject(f)
		}
		r.step(1000)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch on the in-order path", allocs)
	}
	if st := d.Stats(); st.InOrder != uint64(n) {
		t.Fatalf("stats %+v after %d packets", st, n)
	}
	r.noLeak(d)
}
