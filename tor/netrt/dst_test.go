package netrt

import (
	"net/netip"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
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

// checkPartition checks that every data packet st counts ended in
// exactly one outcome, and every held one left the buffer once or is
// still there.
func checkPartition(t testing.TB, st *DstStats) {
	t.Helper()
	s := st.Sum()
	out := s.InOrder + s.Late + s.Passed + s.Beyond + s.Full + s.Duplicates + s.Held + s.WaitBudget + s.WaitSpan + s.WaitBackoff
	if st.Packets != st.Foreign+st.HighPort+st.TableFull+out {
		t.Fatalf("%d packets, %d foreign, %d to high ports, %d of a full table, %d with an outcome", st.Packets, st.Foreign, st.HighPort, st.TableFull, out)
	}
	if s.Held != s.Released+s.Flushed+st.Dropped+uint64(st.Frames) || s.Frames != st.Frames || s.Bytes != st.Bytes {
		t.Fatalf("held %d, released %d, flushed %d, dropped %d, %d frames (%d by port), %d bytes (%d by port)",
			s.Held, s.Released, s.Flushed, st.Dropped, st.Frames, s.Frames, st.Bytes, s.Bytes)
	}
	if n := st.FlowsOrdered + st.FlowsReTx + st.FlowsWaiting; n > st.Flows {
		t.Fatalf("%d flows by state, %d in the table", n, st.Flows)
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
	st := d.Stats()
	if p := st.Ports[1]; p.InOrder != 100 || p.Held != 0 || p.Requests != 0 || st.FlowsOrdered != 1 {
		t.Fatalf("stats %+v", st)
	}
	checkPartition(t, &st)
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
	st := d.Stats()
	if p := st.Ports[1]; p.Gaps != 1 || p.Recovered != 1 || p.Bytes != 0 || p.Held != p.Released || p.Requests != 2 || p.Resent != 1 {
		t.Fatalf("stats %+v", p)
	}
	checkPartition(t, &st)
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
	p := st.Ports[1]
	if p.WaitUnfulfilled != 1 || p.Waits() != 1 || p.Flushed != 3 || st.Notices != 2 || p.Passed != 1 || p.Gaps != 2 || p.Resumed != 1 {
		t.Fatalf("stats %+v", st)
	}
	r.step(int64(2e6))
	s := r.w.Snapshot()
	if s.Drops[ReasonConsumed] != 2 {
		t.Fatalf("consumed %d notices, want 2", s.Drops[ReasonConsumed])
	}
	r.noLeak(d)
}

// otherQP is a flow of its own whose in-order packets show a live fabric.
const otherQP = 99

// alive steps the rig n times by dt, a packet of flow otherQP arriving
// from the fabric before each step: the peer ToR is there, so requests
// it leaves unanswered count against MaxRequests (DstToR.Timer).
func (r *rig) alive(t testing.TB, n int, dt int64) {
	for range n {
		r.inject(0, data(t, otherQP, r.other))
		r.other++
		r.step(dt)
	}
}

// qpPSNs returns the PSNs of qp's data frames among fs.
func qpPSNs(t testing.TB, fs [][]byte, qp uint32) []uint32 {
	t.Helper()
	var out []uint32
	for _, f := range fs {
		if m := meta(t, f); isData(&m) && m.Flow.QP == qp {
			out = append(out, uint32(m.PSN))
		}
	}
	return out
}

// TestDstGivesUp: MaxRequests requests go unanswered while other
// packets keep coming from the fabric: the flow falls back to Waiting,
// its held packets to the host.
func TestDstGivesUp(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 3})
	for _, n := range []uint32{0, 2, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.alive(t, 10, 10_000)
	if n := len(r.take(0)); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if got := qpPSNs(t, r.take(1), 7); !equal(got, []uint32{0, 2, 3}) {
		t.Fatalf("host got %v", got)
	}
	if st := d.Stats(); st.Ports[1].WaitGaveUp != 1 || st.Ports[1].Waits() != 1 || st.FlowsWaiting != 1 || st.Ports[1].Silent != 0 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

// TestDstPeerPaused: the source ToR is off its CPU for longer than
// MaxRequests request intervals (nothing comes from the fabric), then
// answers the requests queued for it. The flow must not give up in the
// silence: it recovers in the network, nothing reaches the host out of
// order. Before requests in silence were set apart, it gave up at the
// third interval and the hosts went back N (docs/experiments.md "Why
// tor2 gave up").
func TestDstPeerPaused(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 3})
	for _, n := range []uint32{0, 2, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	for range 5 { // 5 intervals of silence: more than MaxRequests
		r.step(10_000)
	}
	r.inject(0, data(t, 7, 1)) // back: the answer, then new data
	r.inject(0, data(t, 7, 4))
	r.settle()
	if got := qpPSNs(t, r.take(1), 7); !equal(got, []uint32{0, 1, 2, 3, 4}) {
		t.Fatalf("host got %v, want 0…4 in order", got)
	}
	st := d.Stats()
	// The first request and five re-sent, three of them uncounted
	// (SilentRequests defaults to MaxRequests).
	if p := st.Ports[1]; p.Waits() != 0 || p.Recovered != 1 || p.Silent != 3 || p.Requests != 6 {
		t.Fatalf("waits %d, recovered %d, silent %d, requests %d; want 0, 1, 3, 6", p.Waits(), p.Recovered, p.Silent, p.Requests)
	}
	d.expect(t, 7, Ordered, 5, rocev2.Bitmap128{})
	r.take(0)
	r.noLeak(d)
}

// TestDstSilentBound: a fabric silent for good still ends in Waiting,
// after MaxRequests + SilentRequests requests.
func TestDstSilentBound(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 3, SilentRequests: 4})
	for _, n := range []uint32{0, 2} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	for range 20 {
		r.step(10_000)
	}
	if n := len(r.take(0)); n != 3+4 {
		t.Fatalf("%d requests, want 3 + 4", n)
	}
	if p := d.Stats().Ports[1]; p.WaitGaveUp != 1 || p.Silent != 4 {
		t.Fatalf("gave up %d, silent %d; want 1, 4", p.WaitGaveUp, p.Silent)
	}
	r.take(1)
	r.noLeak(d)
}

// TestDstBackoff: after giving up, the flow's gaps pass unheld and
// unrequested for Backoff; then a gap is held and requested again.
func TestDstBackoff(t *testing.T) {
	const backoff = 1_000_000
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 2, Backoff: backoff})
	for _, n := range []uint32{0, 2} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.alive(t, 5, 10_000)
	if n := len(r.take(0)); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	r.take(1)
	d.expect(t, 7, Waiting, 1, rocev2.Bitmap128{})
	until := d.flow(t, 7).until
	if until <= r.now || until > r.now+backoff {
		t.Fatalf("backing off until %d at %d", until, r.now)
	}
	// The sender's go-back-N brings ePSN: Ordered, but backing off.
	for _, n := range []uint32{1, 2, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	d.expect(t, 7, Ordered, 4, rocev2.Bitmap128{})
	r.inject(0, data(t, 7, 5)) // a gap during the backoff: passed
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{1, 2, 3, 5}) {
		t.Fatalf("host got %v", got)
	}
	if n := len(r.take(0)); n != 0 {
		t.Fatalf("%d requests during the backoff", n)
	}
	d.expect(t, 7, Waiting, 4, rocev2.Bitmap128{})
	for _, n := range []uint32{4, 5} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.inject(0, data(t, 7, 7))
	r.step(until - 1 - r.now) // still backing off
	d.expect(t, 7, Waiting, 6, rocev2.Bitmap128{})
	r.inject(0, data(t, 7, 6))
	r.inject(0, data(t, 7, 7))
	r.inject(0, data(t, 7, 9)) // the backoff is over: held, requested
	r.settle()
	d.expect(t, 7, ReTx, 8, rocev2.Bitmap128{Lo: 1})
	if e, _ := requests(t, r.take(0)); !equal(e, []uint32{8}) {
		t.Fatalf("requests for %v, want 8", e)
	}
	st := d.Stats()
	if p := st.Ports[1]; p.WaitGaveUp != 1 || p.WaitBackoff != 2 || p.Retries != 1 || p.Gaps != 2 || p.Resumed != 3 {
		t.Fatalf("stats %+v", p)
	}
	checkPartition(t, &st)
	r.noLeak(d)
}

// TestDstPrefixes: only flows from a remote prefix running NetRT are
// served; the others are forwarded as they come, gaps and all.
func TestDstPrefixes(t *testing.T) {
	r, d := newDst(t, Config{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}})
	other := netip.MustParseAddr("10.0.9.1")
	for _, n := range []uint32{0, 2, 3} {
		r.inject(0, dataFrom(t, other, 7, n, 256))
		r.inject(0, data(t, 8, n))
	}
	r.settle()
	ids, msgs := split(t, r.take(1))
	if !equal(ids, []uint32{700, 800, 702, 703}) || len(msgs) != 0 {
		t.Fatalf("host got %v and %d messages, want 700 800 702 703 (802 and 803 held)", ids, len(msgs))
	}
	if e, _ := requests(t, r.take(0)); !equal(e, []uint32{1}) {
		t.Fatalf("requests for %v, want one for QP 8", e)
	}
	st := d.Stats()
	if st.Foreign != 3 || st.Flows != 2 || st.FlowsOrdered != 0 || st.FlowsReTx != 1 || st.Ports[1].Held != 2 {
		t.Fatalf("stats %+v", st)
	}
	checkPartition(t, &st)
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
	if st := d.Stats(); st.Reclaimed != 1 || st.Flows != 2 || st.FlowsOrdered != 2 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(d)
}

// TestDstFlowBytes holds 10,000 concurrent flows, the scale of seed
// 000's Table II, in one table with the default size, all served, and
// reports what a flow costs; then fills the table and reclaims an idle
// entry.
func TestDstFlowBytes(t *testing.T) {
	r, d := newDst(t, Config{})
	r.ports[1].OnTransmit = nil
	if len(d.flows) != 16384 || DefaultFlows != 16384 {
		t.Fatalf("%d flow entries by default, want 16384", len(d.flows))
	}
	const n = 10_000
	f := data(t, 1, 0)
	m := meta(t, f)
	bth := rocev2.BTH(f[m.BTHOff:])
	// inject sends PSN k of QPs [from, to), a batch per step.
	inject := func(from, to, k uint32) {
		for qp := from; qp < to; qp++ {
			bth.SetDestQP(qp)
			bth.SetPSN(psn.New(k))
			m.SetICRC(f)
			r.inject(0, f)
			if qp%64 == 63 {
				r.step(1000)
			}
		}
		r.settle()
	}
	inject(1, n+1, 0)
	inject(1, n+1, 1)
	st := d.Stats()
	if st.Flows != n || st.FlowsOrdered != n || st.TableFull != 0 || st.Ports[1].InOrder != 2*n || st.Foreign != 0 {
		t.Fatalf("stats: %d flows, %d Ordered, %d of a full table, %d in order", st.Flows, st.FlowsOrdered, st.TableFull, st.Ports[1].InOrder)
	}
	// Every flow is served: a gap in the last one made is held.
	inject(n, n+1, 3)
	if d.Stats().FlowsReTx != 1 {
		t.Fatal("the 10,000th flow is not served")
	}
	inject(n, n+1, 2)

	entry := int(reflect.TypeFor[dflow]().Size()) // unsafe.Sizeof(dflow{})
	index := 4 * len(d.index.slot) / len(d.flows)
	core := 4 + 16 + 1 // ePSN, bitmap, state; the paper's Table II counts 3 + 16 + 1/4
	key := len(rocev2.FlowKey{}.Src)*2 + 4
	t.Logf("per flow entry: %d bytes: ePSN, bitmap and state %d, key %d, bookkeeping %d; index %d bytes per entry",
		entry, core, key, entry-core-key, index)
	t.Logf("table of %d entries: %d KiB, %d bytes for each of %d flows (seed 000 Table II: 192.5 KB for 10K QPs, 19.25 bytes each)",
		len(d.flows), (entry+index)*len(d.flows)>>10, (entry+index)*len(d.flows)/n, n)
	// 104 bytes before the Miss counters' previous PSN and NAK flag
	// (5 bytes, padded to 8); the first PSN (ResyncsEarly) fits by a
	// 16-bit timer generation.
	if entry > 112 || index > 8 {
		t.Fatalf("a flow entry takes %d bytes and its index %d, want at most 112 and 8", entry, index)
	}

	// Fill the table; one more flow finds it full until the others have
	// been idle for IdleTimeout.
	inject(n+1, 16385, 0)
	r.inject(0, data(t, 20000, 0))
	r.settle()
	if st := d.Stats(); st.Flows != 16384 || st.TableFull != 1 || st.Reclaimed != 0 {
		t.Fatalf("stats: %d flows, %d of a full table, %d reclaimed", st.Flows, st.TableFull, st.Reclaimed)
	}
	r.step(DefaultIdleTimeout)
	r.inject(0, data(t, 20001, 0))
	r.inject(0, data(t, 20001, 2))
	r.settle()
	if st := d.Stats(); st.Flows != 16384 || st.Reclaimed != 1 || st.FlowsReTx != 1 {
		t.Fatalf("stats: %d flows, %d reclaimed, %d in ReTx", st.Flows, st.Reclaimed, st.FlowsReTx)
	}
	d.expect(t, 20001, ReTx, 1, rocev2.Bitmap128{Lo: 1})
	st = d.Stats()
	checkPartition(t, &st)
	r.noLeak(d)
}

// TestDstAlgorithm2 runs every row of Algorithm 2: each state meets a
// packet at, below and above ePSN, a duplicate and an unfulfilled notice.
// The flow is QP 7 with ePSN 10; in ReTx it holds 12 and 13, in Waiting
// (after a notice) nothing.
func TestDstAlgorithm2(t *testing.T) {
	const ri = 1_000_000 // no re-sent request unless a test waits for it
	setup := func(t *testing.T, state uint8) (*rig, *DstToR) {
		r, d := newDst(t, Config{RequestInterval: ri})
		for n := uint32(5); n < 10; n++ {
			r.inject(0, data(t, 7, n))
		}
		if state != Ordered {
			r.inject(0, data(t, 7, 12))
			r.inject(0, data(t, 7, 13))
		}
		r.settle()
		if state == Waiting {
			r.inject(0, unfulfilled(t, 7, 10))
			r.settle()
		}
		r.take(0)
		r.take(1)
		bm := map[uint8]rocev2.Bitmap128{ReTx: {Lo: 0b110}}[state]
		d.expect(t, 7, state, 10, bm)
		return r, d
	}
	// run injects f, settles, and checks the host's PSNs, the messages
	// to the fabric and the flow's state after.
	run := func(t *testing.T, r *rig, d *DstToR, f []byte, host []uint32, msgs int, state uint8, epsn uint32, bm rocev2.Bitmap128) {
		t.Helper()
		r.inject(0, f)
		r.settle()
		if got := psns(t, r.take(1)); !equal(got, host) {
			t.Fatalf("host got %v, want %v", got, host)
		}
		if n := len(r.take(0)); n != msgs {
			t.Fatalf("%d messages to the fabric, want %d", n, msgs)
		}
		d.expect(t, 7, state, epsn, bm)
		st := d.Stats()
		checkPartition(t, &st)
	}
	none := rocev2.Bitmap128{}
	held := rocev2.Bitmap128{Lo: 0b110}

	t.Run("Ordered/eq", func(t *testing.T) {
		r, d := setup(t, Ordered)
		run(t, r, d, data(t, 7, 10), []uint32{10}, 0, Ordered, 11, none)
		r.noLeak(d)
	})
	t.Run("Ordered/lt", func(t *testing.T) {
		r, d := setup(t, Ordered)
		run(t, r, d, data(t, 7, 8), []uint32{8}, 0, Ordered, 10, none)
		if d.Stats().Ports[1].Late != 1 {
			t.Fatal("not counted late")
		}
		r.noLeak(d)
	})
	t.Run("Ordered/gt", func(t *testing.T) {
		r, d := setup(t, Ordered)
		r.inject(0, data(t, 7, 12))
		r.settle()
		e, bms := requests(t, r.take(0))
		if !equal(e, []uint32{10}) || bms[0] != (rocev2.Bitmap128{Lo: 0b10}) || len(r.take(1)) != 0 {
			t.Fatalf("requests %v %v", e, bms)
		}
		d.expect(t, 7, ReTx, 10, rocev2.Bitmap128{Lo: 0b10})
		if p := d.Stats().Ports[1]; p.Gaps != 1 || p.Held != 1 || p.Requests != 1 {
			t.Fatalf("stats %+v", p)
		}
		r.noLeak(d)
	})
	t.Run("Ordered/dup", func(t *testing.T) {
		// In Ordered a duplicate is one already forwarded: below ePSN.
		r, d := setup(t, Ordered)
		run(t, r, d, data(t, 7, 9), []uint32{9}, 0, Ordered, 10, none)
		r.noLeak(d)
	})
	t.Run("Ordered/notice", func(t *testing.T) {
		r, d := setup(t, Ordered)
		run(t, r, d, unfulfilled(t, 7, 10), nil, 0, Ordered, 10, none)
		if st := d.Stats(); st.Stale != 1 || st.Notices != 1 {
			t.Fatalf("stats %+v", st)
		}
		r.noLeak(d)
	})
	t.Run("ReTx/eq", func(t *testing.T) {
		r, d := setup(t, ReTx)
		run(t, r, d, data(t, 7, 10), []uint32{10}, 0, ReTx, 11, rocev2.Bitmap128{Lo: 0b11})
		run(t, r, d, data(t, 7, 11), []uint32{11, 12, 13}, 0, Ordered, 14, none)
		if p := d.Stats().Ports[1]; p.Released != 2 || p.Recovered != 1 {
			t.Fatalf("stats %+v", p)
		}
		r.step(ri)
		if n := len(r.take(0)); n != 0 {
			t.Fatalf("%d requests after recovery", n)
		}
		r.noLeak(d)
	})
	t.Run("ReTx/lt", func(t *testing.T) {
		r, d := setup(t, ReTx)
		run(t, r, d, data(t, 7, 9), []uint32{9}, 0, ReTx, 10, held)
		r.noLeak(d)
	})
	t.Run("ReTx/gt", func(t *testing.T) {
		r, d := setup(t, ReTx)
		run(t, r, d, data(t, 7, 15), nil, 0, ReTx, 10, rocev2.Bitmap128{Lo: 0b10110})
		r.step(ri)
		if e, bms := requests(t, r.take(0)); !equal(e, []uint32{10}) || bms[0] != (rocev2.Bitmap128{Lo: 0b10110}) {
			t.Fatalf("re-sent requests %v %v", e, bms)
		}
		r.noLeak(d)
	})
	t.Run("ReTx/dup", func(t *testing.T) {
		r, d := setup(t, ReTx)
		run(t, r, d, data(t, 7, 12), nil, 0, ReTx, 10, held)
		if d.Stats().Ports[1].Duplicates != 1 {
			t.Fatal("not counted a duplicate")
		}
		r.step(int64(2e6))
		if n := r.w.Snapshot().Drops[ReasonDuplicate]; n != 1 {
			t.Fatalf("%d dropped as netrt_duplicate", n)
		}
		r.noLeak(d)
	})
	t.Run("ReTx/notice", func(t *testing.T) {
		r, d := setup(t, ReTx)
		run(t, r, d, unfulfilled(t, 7, 11), nil, 0, ReTx, 10, held) // not ePSN: stale
		run(t, r, d, unfulfilled(t, 7, 10), []uint32{12, 13}, 0, Waiting, 10, none)
		st := d.Stats()
		if p := st.Ports[1]; p.WaitUnfulfilled != 1 || p.Flushed != 2 || st.Stale != 1 || st.FlowsWaiting != 1 || st.FlowsReTx != 0 {
			t.Fatalf("stats %+v", st)
		}
		r.noLeak(d)
	})
	t.Run("Waiting/eq", func(t *testing.T) {
		r, d := setup(t, Waiting)
		run(t, r, d, data(t, 7, 10), []uint32{10}, 0, Ordered, 11, none)
		if p := d.Stats().Ports[1]; p.Resumed != 1 {
			t.Fatalf("stats %+v", p)
		}
		r.noLeak(d)
	})
	t.Run("Waiting/lt", func(t *testing.T) {
		r, d := setup(t, Waiting)
		run(t, r, d, data(t, 7, 9), []uint32{9}, 0, Waiting, 10, none)
		r.noLeak(d)
	})
	t.Run("Waiting/gt", func(t *testing.T) {
		r, d := setup(t, Waiting)
		run(t, r, d, data(t, 7, 14), []uint32{14}, 0, Waiting, 10, none)
		if d.Stats().Ports[1].Passed != 1 {
			t.Fatal("not counted passed")
		}
		r.noLeak(d)
	})
	t.Run("Waiting/dup", func(t *testing.T) {
		// Nothing is held in Waiting: a copy of a flushed packet passes.
		r, d := setup(t, Waiting)
		run(t, r, d, data(t, 7, 12), []uint32{12}, 0, Waiting, 10, none)
		r.noLeak(d)
	})
	t.Run("Waiting/notice", func(t *testing.T) {
		r, d := setup(t, Waiting)
		run(t, r, d, unfulfilled(t, 7, 10), nil, 0, Waiting, 10, none)
		if st := d.Stats(); st.Stale != 1 || st.Ports[1].WaitUnfulfilled != 1 {
			t.Fatalf("stats %+v", st)
		}
		r.noLeak(d)
	})
}

// TestDstBitmapEdges: the hole at bit 0, a packet at bit 127 (ePSN+128),
// and one beyond the span (ePSN+129), in Ordered and in ReTx.
func TestDstBitmapEdges(t *testing.T) {
	const ri = 1_000_000
	start := func(t *testing.T) (*rig, *DstToR) {
		r, d := newDst(t, Config{RequestInterval: ri})
		r.inject(0, data(t, 7, 9))
		r.settle()
		r.take(1)
		return r, d
	}
	t.Run("bit0", func(t *testing.T) {
		r, d := start(t)
		r.inject(0, data(t, 7, 11))
		r.settle()
		if _, bms := requests(t, r.take(0)); len(bms) != 1 || bms[0] != (rocev2.Bitmap128{Lo: 1}) {
			t.Fatalf("request bitmaps %v", bms)
		}
		d.expect(t, 7, ReTx, 10, rocev2.Bitmap128{Lo: 1})
		r.noLeak(d)
	})
	t.Run("bit127", func(t *testing.T) {
		r, d := start(t)
		r.inject(0, data(t, 7, 11))
		r.inject(0, data(t, 7, 10+128))
		r.settle()
		r.take(0)
		top := rocev2.Bitmap128{Hi: 1 << 63, Lo: 1}
		d.expect(t, 7, ReTx, 10, top)
		r.step(ri)
		if _, bms := requests(t, r.take(0)); len(bms) != 1 || bms[0] != top {
			t.Fatalf("request bitmaps %v, want %+v", bms, top)
		}
		r.inject(0, data(t, 7, 10))
		r.settle()
		if got := psns(t, r.take(1)); !equal(got, []uint32{10, 11}) || len(r.take(0)) != 0 {
			t.Fatalf("host got %v", got)
		}
		d.expect(t, 7, ReTx, 12, rocev2.Bitmap128{Hi: 1 << 61})
		r.noLeak(d)
	})
	t.Run("bit127/Ordered", func(t *testing.T) {
		r, d := start(t)
		r.inject(0, data(t, 7, 10+128))
		r.settle()
		d.expect(t, 7, ReTx, 10, rocev2.Bitmap128{Hi: 1 << 63})
		r.noLeak(d)
	})
	t.Run("beyond/ReTx", func(t *testing.T) {
		r, d := start(t)
		r.inject(0, data(t, 7, 11))
		r.inject(0, data(t, 7, 10+129))
		r.settle()
		if got := psns(t, r.take(1)); !equal(got, []uint32{11, 139}) {
			t.Fatalf("host got %v, want 11 139: the buffer flushed, then the packet beyond", got)
		}
		d.expect(t, 7, Waiting, 10, rocev2.Bitmap128{})
		if p := d.Stats().Ports[1]; p.WaitSpan != 1 || p.Flushed != 1 {
			t.Fatalf("stats %+v", p)
		}
		r.noLeak(d)
	})
	t.Run("beyond/Ordered", func(t *testing.T) {
		r, d := start(t)
		r.inject(0, data(t, 7, 10+129))
		r.inject(0, data(t, 7, 10))
		r.settle()
		if got := psns(t, r.take(1)); !equal(got, []uint32{139, 10}) || len(r.take(0)) != 0 {
			t.Fatalf("host got %v", got)
		}
		d.expect(t, 7, Ordered, 11, rocev2.Bitmap128{})
		if p := d.Stats().Ports[1]; p.Beyond != 1 || p.Waits() != 0 {
			t.Fatalf("stats %+v", p)
		}
		r.noLeak(d)
	})
}

// TestDstLostRequest: the first request is lost; the interval timer
// re-sends it, and its answer repairs the hole.
func TestDstLostRequest(t *testing.T) {
	const ri = 10_000
	r, d := newDst(t, Config{RequestInterval: ri})
	for _, n := range []uint32{0, 2, 3} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	if e, _ := requests(t, r.take(0)); !equal(e, []uint32{1}) {
		t.Fatalf("requests %v", e)
	}
	// Lost: no answer. The timer asks again, with the same hole.
	r.step(ri)
	e, bms := requests(t, r.take(0))
	if !equal(e, []uint32{1}) || bms[0] != (rocev2.Bitmap128{Lo: 0b11}) {
		t.Fatalf("re-sent requests %v %v", e, bms)
	}
	r.inject(0, data(t, 7, 1))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, seq(0, 4)) {
		t.Fatalf("host got %v", got)
	}
	if p := d.Stats().Ports[1]; p.Requests != 2 || p.Resent != 1 || p.Recovered != 1 {
		t.Fatalf("stats %+v", p)
	}
	r.noLeak(d)
}

// TestDstLostRetransmission: of two missing packets the source ToR
// resends, one is lost again; the repeated request names only it, and its
// second retransmission repairs the flow.
func TestDstLostRetransmission(t *testing.T) {
	const ri = 10_000
	r, d := newDst(t, Config{RequestInterval: ri})
	for _, n := range []uint32{0, 3, 4} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{0}) {
		t.Fatalf("host got %v", got)
	}
	// Sent on 3's arrival: ePSN 1, and 2 missing below 3.
	if e, bms := requests(t, r.take(0)); !equal(e, []uint32{1}) || bms[0] != (rocev2.Bitmap128{Lo: 0b10}) {
		t.Fatalf("requests %v %v, want ePSN 1, 3 held", e, bms)
	}
	r.inject(0, data(t, 7, 2)) // the retransmission of 1 is lost
	r.settle()
	if n := len(r.take(1)); n != 0 {
		t.Fatalf("%d frames passed the hole", n)
	}
	r.step(ri)
	if e, bms := requests(t, r.take(0)); !equal(e, []uint32{1}) || bms[0] != (rocev2.Bitmap128{Lo: 0b111}) {
		t.Fatalf("repeated requests %v %v, want ePSN 1 with 2–4 held", e, bms)
	}
	r.inject(0, data(t, 7, 1))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, seq(1, 5)) {
		t.Fatalf("host got %v", got)
	}
	d.expect(t, 7, Ordered, 5, rocev2.Bitmap128{})
	r.noLeak(d)
}

// TestDstWrap runs a gap across the PSN wrap-around: ePSN 2^24−2, held
// 2^24−1, 0 and 1.
func TestDstWrap(t *testing.T) {
	const top = psn.Mask
	r, d := newDst(t, Config{RequestInterval: 1_000_000})
	for _, n := range []uint32{top - 2, top, 0, 1} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	if e, bms := requests(t, r.take(0)); !equal(e, []uint32{top - 1}) || bms[0] != (rocev2.Bitmap128{Lo: 1}) {
		t.Fatalf("requests %v %v", e, bms)
	}
	d.expect(t, 7, ReTx, top-1, rocev2.Bitmap128{Lo: 0b111})
	r.inject(0, data(t, 7, top-1))
	r.inject(0, data(t, 7, top-2)) // late, across the wrap
	r.inject(0, data(t, 7, 2))
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{top - 2, top - 1, top, 0, 1, top - 2, 2}) {
		t.Fatalf("host got %v", got)
	}
	d.expect(t, 7, Ordered, 3, rocev2.Bitmap128{})
	// Beyond the span across the wrap: ePSN 2^24−10, PSN 2^24−10+129.
	r.inject(0, data(t, 8, top-10))
	r.inject(0, data(t, 8, top-8))
	r.inject(0, data(t, 8, (top-9+129)&top))
	r.settle()
	d.expect(t, 8, Waiting, top-9, rocev2.Bitmap128{})
	if p := d.Stats().Ports[1]; p.WaitSpan != 1 || p.Late != 1 {
		t.Fatalf("stats %+v", p)
	}
	r.noLeak(d)
}

// TestDstWaitOnBudget: a flow in ReTx whose next packet finds the
// budget spent gives up to the end hosts: the buffer and that packet go
// out in PSN order, and the flow waits. In Ordered, the first packet of
// a gap that cannot be held just passes.
func TestDstWaitOnBudget(t *testing.T) {
	frame := len(data(t, 7, 0))
	budget := 2*frame + frame/2
	r, d := newDst(t, Config{BufferBytes: budget})
	r.inject(0, data(t, 7, 10))
	for _, n := range []uint32{12, 15} {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.take(0)
	r.take(1)
	d.expect(t, 7, ReTx, 11, rocev2.Bitmap128{Lo: 0b1001})
	r.inject(0, data(t, 7, 13)) // between the held ones
	r.settle()
	if got := psns(t, r.take(1)); !equal(got, []uint32{12, 13, 15}) {
		t.Fatalf("host got %v, want 12 13 15", got)
	}
	d.expect(t, 7, Waiting, 11, rocev2.Bitmap128{})
	// QP 8 fills the budget; QP 9's gap finds none and passes, Ordered.
	r.inject(0, data(t, 8, 0))
	r.inject(0, data(t, 8, 2))
	r.inject(0, data(t, 8, 3))
	r.inject(0, data(t, 9, 0))
	r.inject(0, data(t, 9, 2))
	r.settle()
	d.expect(t, 9, Ordered, 1, rocev2.Bitmap128{})
	st := d.Stats()
	if p := st.Ports[1]; p.WaitBudget != 1 || p.Flushed != 2 || p.Full != 1 || p.MaxBytes != 2*frame || p.Bytes != 2*frame {
		t.Fatalf("stats %+v", p)
	}
	checkPartition(t, &st)
	r.noLeak(d)
}

// TestDstPortBudget: BufferBytes is per host port, BufferFrames for the
// whole stage; neither is ever exceeded.
func TestDstPortBudget(t *testing.T) {
	frame := len(data(t, 1, 0))
	budget := 3 * frame
	r, d := newDstRig(t, 2, Config{BufferBytes: budget, BufferFrames: 5, RequestInterval: 1_000_000})
	// QP 2 and 4 leave by port 1, QP 1 and 3 by port 2.
	check := func() {
		t.Helper()
		st := d.Stats()
		for i := range st.Ports {
			if st.Ports[i].Bytes > budget {
				t.Fatalf("port %d holds %d bytes, budget %d", i, st.Ports[i].Bytes, budget)
			}
		}
		if st.Frames > 5 {
			t.Fatalf("%d frames held, at most 5", st.Frames)
		}
		checkPartition(t, &st)
	}
	for _, qp := range []uint32{1, 2, 3, 4} {
		r.inject(data(t, qp, 0))
	}
	for n := uint32(2); n < 5; n++ {
		r.inject(data(t, 2, n)) // port 1's budget, full
		r.step(1000)
		check()
	}
	r.inject(data(t, 4, 2)) // port 1: no room, QP 4 stays Ordered
	r.inject(data(t, 1, 2)) // port 2 has its own budget
	r.inject(data(t, 1, 3))
	r.step(1000)
	check()
	d.expect(t, 4, Ordered, 1, rocev2.Bitmap128{})
	d.expect(t, 1, ReTx, 1, rocev2.Bitmap128{Lo: 0b11})
	st := d.Stats()
	if st.Ports[1].Bytes != 3*frame || st.Ports[2].Bytes != 2*frame || st.Ports[1].Full != 1 || st.Frames != 5 {
		t.Fatalf("port 1 %+v\nport 2 %+v", st.Ports[1], st.Ports[2])
	}
	r.inject(data(t, 3, 2)) // port 2 has bytes left, the stage no frame
	r.step(1000)
	r.inject(data(t, 1, 4)) // so QP 1 gives up to the hosts
	r.step(1000)
	check()
	d.expect(t, 3, Ordered, 1, rocev2.Bitmap128{})
	d.expect(t, 1, Waiting, 1, rocev2.Bitmap128{})
	st = d.Stats()
	if st.Ports[2].WaitBudget != 1 || st.Ports[2].Full != 1 || st.Ports[2].Bytes != 0 || st.Ports[1].Bytes != 3*frame {
		t.Fatalf("port 1 %+v\nport 2 %+v", st.Ports[1], st.Ports[2])
	}
	ids, _ := split(t, r.take(2))
	if !equal(ids, []uint32{100, 300, 302, 102, 103, 104}) {
		t.Fatalf("port 2 got %v", ids)
	}
	r.noLeak(d)
}

// TestDstBusiest: the busiest flows are published once a millisecond,
// by held bytes, and read safely from another goroutine.
func TestDstBusiest(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 100_000_000})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = d.Busiest()
				_ = d.Snapshot()
			}
		}
	}()
	// QP 1–10 hold 1–10 packets; QP 11 is Ordered.
	for qp := uint32(1); qp <= 11; qp++ {
		r.inject(0, data(t, qp, 0))
		for n := uint32(0); n < qp && qp <= 10; n++ {
			r.inject(0, data(t, qp, 2+n))
		}
		r.step(1000)
	}
	r.settle()
	if b := d.Busiest(); len(b) != 0 {
		t.Fatalf("busiest %v before the first publication", b)
	}
	r.step(publishEvery)
	close(stop)
	wg.Wait()
	b := d.Busiest()
	if len(b) != BusiestFlows {
		t.Fatalf("%d busiest flows, want %d", len(b), BusiestFlows)
	}
	frame := len(data(t, 1, 0))
	for i, f := range b {
		qp := uint32(10 - i)
		if f.Key != keyOf(t, qp) || f.State != ReTx || f.EPSN != 1 || f.Held != int(qp) || f.HeldBytes != int(qp)*frame || f.Requests != 1 || f.Port != 1 {
			t.Fatalf("busiest[%d] = %+v, want QP %d", i, f, qp)
		}
	}
	if s := d.Snapshot(); s.FlowsReTx != 10 || s.Ports[1].Held != 55 {
		t.Fatalf("snapshot %+v", s)
	}
	r.noLeak(d)
}

func TestDstConfig(t *testing.T) {
	for _, c := range []Config{
		{Fabric: 1, MaxRequests: 256},
		{Fabric: 1, Backoff: -1},
		{Fabric: 1, Backoff: 25 * 3600e9},
	} {
		if _, err := NewDstToR(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	d, err := NewDstToR(Config{Fabric: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Backoff != 1e9 || d.cfg.Flows != 16384 {
		t.Fatalf("defaults: backoff %d, flows %d", d.cfg.Backoff, d.cfg.Flows)
	}
}

// TestDstInOrderAllocs: neither the in-order path nor a gap's hold, request and
// release allocate.
func TestDstInOrderAllocs(t *testing.T) {
	r, d := newDst(t, Config{})
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
	f := data(t, 7, 0)
	m := meta(t, f)
	n := uint32(0)
	send := func(k uint32) {
		rocev2.BTH(f[m.BTHOff:]).SetPSN(psn.New(k))
		m.SetICRC(f)
		r.ports[0].Inject(f)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			send(n)
			n++
		}
		r.step(1000)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch on the in-order path", allocs)
	}
	if st := d.Stats(); st.Ports[1].InOrder != uint64(n) {
		t.Fatalf("stats %+v after %d packets", st, n)
	}
	allocs = testing.AllocsPerRun(100, func() {
		send(n + 1) // a gap: held, a request sent, a timer armed
		send(n + 2)
		r.step(1000)
		send(n) // repaired: released
		r.step(1000)
		n += 3
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per gap", allocs)
	}
	if p := d.Stats().Ports[1]; p.Gaps != 101 || p.Recovered != 101 {
		t.Fatalf("stats %+v", p)
	}
	r.noLeak(d)
}

// BenchmarkDstInOrder measures the stage alone on in-order packets, one
// batch of 64 at a time: flows=1 keeps one entry hot, flows=10000 walks
// 10,000 flows round robin.
func BenchmarkDstInOrder(b *testing.B) {
	for _, flows := range []int{1, 10_000} {
		b.Run("flows="+strconv.Itoa(flows), func(b *testing.B) {
			d, err := NewDstToR(Config{Fabric: 1})
			if err != nil {
				b.Fatal(err)
			}
			m := meta(b, data(b, 0, 0))
			var bt dataplane.Batch
			bt.N = dataplane.BatchSize
			for k := range bt.Pkts {
				bt.Pkts[k] = dataplane.Packet{Len: 300, In: 0, Out: 1, Queue: 2, Meta: m}
			}
			next := make([]psn.PSN, flows)
			c := dataplane.Ctx{} // no worker, so no timers:
			d.ticking = true     // publish from Process only
			qp := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := range bt.Pkts {
					p := &bt.Pkts[k]
					p.Verdict = dataplane.Forward
					p.Meta.Flow.QP = uint32(qp)
					p.Meta.PSN = next[qp]
					next[qp]++
					if qp++; qp == flows {
						qp = 0
					}
				}
				c.Now += 1000
				d.Process(&c, &bt)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			if st := d.Stats(); st.Ports[1].InOrder == 0 || st.TableFull != 0 {
				b.Fatalf("stats %+v", st.Ports[1])
			}
		})
	}
}

// The reordering buffer's byte-time integral: packets 2–5 held behind a
// hole for 1 ms, then released by PSN 1.
func TestDstOccupancyIntegral(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000_000})
	frame := len(data(t, 7, 0))
	for n := uint32(0); n < 6; n++ {
		if n != 1 {
			r.inject(0, data(t, 7, n))
		}
	}
	r.step(1)
	r.step(1_000_000)
	r.inject(0, data(t, 7, 1))
	r.step(1)
	st := d.Stats().Ports[1]
	want := float64(4*frame) * 1e-3
	if st.Frames != 0 || st.Released != 4 || st.ByteSeconds < want*0.99 || st.ByteSeconds > want*1.01 {
		t.Fatalf("frames %d, released %d, byte-seconds %g; want 0, 4, %g", st.Frames, st.Released, st.ByteSeconds, want)
	}
}

// A flow whose peer answered before does not back off when one hole's
// requests go unanswered: its next gap is held and requested again.
func TestDstNoBackoffAfterAnswer(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 2, Backoff: 1_000_000})
	for _, n := range []uint32{0, 2, 1} { // a hole at 1, filled after the request
		r.inject(0, data(t, 7, n))
		r.settle()
	}
	r.inject(0, data(t, 7, 4)) // a hole at 3 that nobody fills
	r.settle()
	for i := 0; i < 5; i++ {
		r.step(10_000)
	}
	d.expect(t, 7, Waiting, 3, rocev2.Bitmap128{})
	if f := d.flow(t, 7); f.until != 0 {
		t.Fatalf("backing off until %d after an answered request", f.until)
	}
	for _, n := range []uint32{3, 4, 6} { // go-back-N brings 3; then a hole at 5
		r.inject(0, data(t, 7, n))
		r.settle()
	}
	d.expect(t, 7, ReTx, 5, rocev2.Bitmap128{}.Set(0))
	st := d.Stats().Ports[1]
	if st.WaitGaveUp != 1 || st.WaitBackoff != 0 || st.Gaps != 3 {
		t.Fatalf("gave up %d, backoff %d, gaps %d; want 1, 0, 3", st.WaitGaveUp, st.WaitBackoff, st.Gaps)
	}
	r.take(0)
	r.take(1)
}

// RequestDelay holds back a gap's first request: a hole that reordering
// fills within it costs no request; one that stays gets its request when
// the delay ends, not before.
func TestDstRequestDelay(t *testing.T) {
	const delay = 100_000
	r, d := newDst(t, Config{RequestDelay: delay, RequestInterval: 50_000})
	for _, n := range []uint32{0, 2} {
		r.inject(0, data(t, 7, n))
	}
	r.step(1)
	r.step(delay / 2)
	r.inject(0, data(t, 7, 1)) // the late packet: the hole fills
	r.step(1)
	r.step(delay)
	if got := r.take(0); len(got) != 0 {
		t.Fatalf("%d requests for a hole reordering filled", len(got))
	}
	if got := psns(t, r.take(1)); !equal(got, seq(0, 3)) {
		t.Fatalf("host got %v", got)
	}
	r.inject(0, data(t, 7, 4)) // a hole at 3 that stays
	r.step(1)
	r.step(delay - 10)
	if n := len(r.take(0)); n != 0 {
		t.Fatalf("%d requests before the delay ended", n)
	}
	r.step(20)
	_, msgs := split(t, r.take(0))
	if len(msgs) != 1 {
		t.Fatalf("%d requests when the delay ended, want 1", len(msgs))
	}
	if st := d.Stats().Ports[1]; st.Requests != 1 || st.Resent != 0 || st.Gaps != 2 {
		t.Fatalf("requests %d, resent %d, gaps %d; want 1, 0, 2", st.Requests, st.Resent, st.Gaps)
	}
	r.take(1)
}

// A sequence NAK from the host names the PSN its RNIC expects. When it
// lies before the flow's ePSN, within the bitmap's span, the flow holds
// the NAK and asks the source ToR for everything from that PSN up to its
// ePSN; the NAK is answered (dropped) when that PSN arrives. A NAK for
// ePSN itself changes nothing.
func TestDstNAKHeld(t *testing.T) {
	r, d := newDst(t, Config{})
	// The first NAK carries the flow's own QPN, the second the
	// requester's (another number): found by the address pair.
	qp := uint32(7)
	for n := uint32(0); n < 5; n++ { // forwarded in order: ePSN 5
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.take(1)
	r.inject(1, seqNAK(t, qp, 5)) // the RNIC agrees: nothing changes
	r.settle()
	d.expect(t, 7, Ordered, 5, rocev2.Bitmap128{})
	if got := r.take(0); len(got) != 1 {
		t.Fatalf("%d frames toward the sender, want the NAK passed", len(got))
	}
	qp = 0x4321
	r.inject(0, data(t, 7, 6))    // a gap at 5: held
	r.inject(1, seqNAK(t, qp, 2)) // the RNIC lost 2 after this switch
	r.settle()
	d.expect(t, 7, ReTx, 2, rocev2.Bitmap128{}.Set(3))
	_, msgs := split(t, r.take(0))
	e, bms := requests(t, msgs)
	// The request for the gap at 5, then the one for 2–5 (6 held, 5
	// named missing as 2–4 are).
	if len(e) != 2 || e[1] != 2 || bms[1] != (rocev2.Bitmap128{}.Set(3)) {
		t.Fatalf("requests for %v with %+v, want the gap's, then 2 with only 6 held", e, bms)
	}
	for _, n := range []uint32{3, 2, 4, 5} { // the source ToR's resend, reordered on the way
		r.inject(0, data(t, 7, n))
		r.settle()
	}
	if got := psns(t, r.take(1)); !equal(got, []uint32{2, 3, 4, 5, 6}) {
		t.Fatalf("host got %v, want the resend in order", got)
	}
	d.expect(t, 7, Ordered, 7, rocev2.Bitmap128{})
	if got := r.take(0); len(got) != 0 {
		t.Fatalf("%d frames toward the sender, want the NAK answered", len(got))
	}
	st := d.Stats()
	if p := st.Ports[1]; p.NAKHeld != 1 || p.NAKAnswered != 1 || p.NAKReleased != 0 || p.Resyncs != 0 || st.NAKUnknown != 0 {
		t.Fatalf("NAKs held %d, answered %d, released %d, resyncs %d, unknown %d; want 1, 1, 0, 0, 0",
			p.NAKHeld, p.NAKAnswered, p.NAKReleased, p.Resyncs, st.NAKUnknown)
	}
	r.step(int64(2e6)) // the worker publishes its counters
	if s := r.w.Snapshot(); s.Drops[ReasonNAKAnswered] != 1 {
		t.Fatalf("%d NAKs answered in the drop counts, want 1", s.Drops[ReasonNAKAnswered])
	}
	checkPartition(t, &st)
	r.noLeak(d)
}

// A held NAK goes on to the sender when the network cannot help: here
// the source ToR never answers, and the flow gives up.
func TestDstNAKReleased(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 2})
	for n := uint32(0); n < 5; n++ {
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.take(1)
	r.inject(1, seqNAK(t, 7, 3))
	r.settle()
	for i := 0; i < 5; i++ {
		r.step(10_000)
	}
	var naks int
	for _, f := range r.take(0) {
		if m := meta(t, f); m.Opcode == rocev2.RCAck {
			naks++
		}
	}
	d.expect(t, 7, Waiting, 3, rocev2.Bitmap128{})
	if p := d.Stats().Ports[1]; naks != 1 || p.NAKHeld != 1 || p.NAKReleased != 1 || p.WaitGaveUp != 1 {
		t.Fatalf("%d NAKs reached the sender; held %d, released %d, gave up %d; want 1 of each", naks, p.NAKHeld, p.NAKReleased, p.WaitGaveUp)
	}
	r.noLeak(d)
}

// A NAK the flow cannot hold for (further back than the bitmap's span)
// passes, and the flow adopts its PSN, so the sender's go-back-N resend
// is put in order again.
func TestDstNAKResync(t *testing.T) {
	r, d := newDst(t, Config{})
	r.stream(t, 7, 200)
	r.take(1)
	r.inject(1, seqNAK(t, 7, 2))
	r.settle()
	if got := r.take(0); len(got) != 1 {
		t.Fatalf("%d frames toward the sender, want the NAK passed", len(got))
	}
	d.expect(t, 7, Ordered, 2, rocev2.Bitmap128{})
	for _, n := range []uint32{3, 2, 4} { // the resend, reordered on the way
		r.inject(0, data(t, 7, n))
		r.settle()
	}
	if got := psns(t, r.take(1)); !equal(got, []uint32{2, 3, 4}) {
		t.Fatalf("host got %v, want the resend in order", got)
	}
	r.take(0)
	if p := d.Stats().Ports[1]; p.Resyncs != 1 || p.ResyncsEarly != 0 || p.NAKHeld != 0 {
		t.Fatalf("resyncs %d (%d before the entry began), NAKs held %d; want 1 (0), 0", p.Resyncs, p.ResyncsEarly, p.NAKHeld)
	}
	r.noLeak(d)
}

// A NAK for a PSN before the first the flow's entry saw counts apart
// (ResyncsEarly): here the flow's first packet, PSN 0, is overtaken by
// the next 199, so the entry begins at 1 and the host's NAK for 0,
// further back than the bitmap's span, passes.
func TestDstNAKResyncEarly(t *testing.T) {
	r, d := newDst(t, Config{})
	for k := uint32(1); k < 200; k++ {
		r.inject(0, data(t, 7, k))
		if k%32 == 31 {
			r.settle()
		}
	}
	r.settle()
	r.take(1)
	r.inject(1, seqNAK(t, 7, 0))
	r.settle()
	if got := r.take(0); len(got) != 1 {
		t.Fatalf("%d frames toward the sender, want the NAK passed", len(got))
	}
	if p := d.Stats().Ports[1]; p.Resyncs != 1 || p.ResyncsEarly != 1 {
		t.Fatalf("resyncs %d, of them before the entry began %d; want 1, 1", p.Resyncs, p.ResyncsEarly)
	}
	r.noLeak(d)
}

// seqNAK returns the sequence NAK an RNIC behind DstToR sends for PSN n
// of flow srcIP→dstIP, carrying QPN qp.
func seqNAK(t testing.TB, qp, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: peerMAC, Dst: hostMAC, SrcIP: dstIP, DstIP: srcIP,
		Opcode: rocev2.RCAck, DestQP: qp, PSN: psn.New(n), Syndrome: rocev2.NAKSyndrome(rocev2.NakPSNSeqError)})
}

// TestDstBackoffRepeats: every give-up on a peer that never answered
// starts a Backoff, not only the first. The sender's go-back-N bringing
// ePSN after a give-up is the end hosts' recovery, not the peer's
// answer, so it must not mark the flow answered; nor may the requests of
// the hole given up count against the next one.
func TestDstBackoffRepeats(t *testing.T) {
	const backoff = 1_000_000
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 2, Backoff: backoff})
	next := uint32(0)
	for round := 1; round <= 3; round++ {
		// A hole at next+1 that the peer never fills.
		r.inject(0, data(t, 7, next))
		r.inject(0, data(t, 7, next+2))
		r.settle()
		r.alive(t, 5, 10_000)
		if e, _ := requests(t, r.take(0)); len(e) != 2 {
			t.Fatalf("round %d: %d requests, want MaxRequests (2)", round, len(e))
		}
		f := d.flow(t, 7)
		if f.state != Waiting || f.until <= r.now {
			t.Fatalf("round %d: state %d, backing off until %d at %d; want Waiting, backing off", round, f.state, f.until, r.now)
		}
		// Go-back-N brings the hole and what followed.
		r.inject(0, data(t, 7, next+1))
		r.inject(0, data(t, 7, next+2))
		r.settle()
		if f.answered {
			t.Fatalf("round %d: the hosts' go-back-N marked the flow answered", round)
		}
		r.step(backoff) // the backoff runs out
		next += 3
	}
	if st := d.Stats().Ports[1]; st.WaitGaveUp != 3 || st.Retries != 2 || st.Gaps != 3 {
		t.Fatalf("gave up %d, retries %d, gaps %d; want 3, 2, 3", st.WaitGaveUp, st.Retries, st.Gaps)
	}
	r.take(1)
	r.noLeak(d)
}

// A flow backing off (its peer never answered) does not hold the host's
// NAK: the sender's go-back-N is the recovery there.
func TestDstNAKBackingOff(t *testing.T) {
	r, d := newDst(t, Config{RequestInterval: 10_000, MaxRequests: 2, Backoff: 1_000_000})
	for _, n := range []uint32{0, 2} { // a hole at 1 the peer never fills
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	for i := 0; i < 5; i++ {
		r.step(10_000)
	}
	for _, n := range []uint32{1, 2, 3, 4} { // go-back-N: Ordered, backing off
		r.inject(0, data(t, 7, n))
	}
	r.settle()
	r.take(0)
	r.inject(1, seqNAK(t, 7, 3)) // the host lost 3 after the switch
	r.settle()
	if got := r.take(0); len(got) != 1 {
		t.Fatalf("%d frames toward the sender, want the NAK passed", len(got))
	}
	if p := d.Stats().Ports[1]; p.NAKHeld != 0 || p.Resyncs != 1 {
		t.Fatalf("NAKs held %d, resyncs %d; want 0, 1", p.NAKHeld, p.Resyncs)
	}
	r.take(1)
	r.noLeak(d)
}

// A second NAK while one is held (the host lost more, further back
// than the span) passes after the held one, which is not kept for a PSN
// the flow no longer waits for.
func TestDstNAKTwice(t *testing.T) {
	r, d := newDst(t, Config{})
	r.stream(t, 7, 150)
	r.take(1)
	r.inject(1, seqNAK(t, 7, 140)) // held
	r.settle()
	r.inject(1, seqNAK(t, 7, 10)) // too far back: passes, the held one first
	r.settle()
	var naks []uint32
	for _, f := range r.take(0) {
		if m := meta(t, f); m.Opcode == rocev2.RCAck {
			naks = append(naks, uint32(m.PSN))
		}
	}
	if !equal(naks, []uint32{140, 10}) {
		t.Fatalf("NAKs %v reached the sender, want 140 then 10", naks)
	}
	d.expect(t, 7, Ordered, 10, rocev2.Bitmap128{})
	if p := d.Stats().Ports[1]; p.NAKHeld != 1 || p.NAKReleased != 1 || p.Resyncs != 1 || d.flow(t, 7).nak >= 0 {
		t.Fatalf("NAKs held %d, released %d, resyncs %d; want 1 of each, none held now", p.NAKHeld, p.NAKReleased, p.Resyncs)
	}
	r.noLeak(d)
}

// TestDstTimerRefused: the worker has room for one timer. The second
// flow's gap finds none: its timer is armed again once the first flow's
// has fired and left room, so its request repeats and, unanswered, it
// gives up instead of holding its packets until the hosts' RTO.
func TestDstTimerRefused(t *testing.T) {
	d, err := NewDstToR(Config{Fabric: 1, RequestInterval: 10_000, MaxRequests: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := newRigTimers(t, 1, d)
	for _, qp := range []uint32{7, 8} {
		r.inject(0, data(t, qp, 0))
		r.inject(0, data(t, qp, 2))
	}
	r.settle()
	if st := d.Stats(); st.TimerFull == 0 {
		t.Fatalf("no timer refused: the test needs a full timer heap")
	}
	for i := 0; i < 20; i++ {
		r.step(10_000)
	}
	for _, qp := range []uint32{7, 8} {
		d.expect(t, qp, Waiting, 1, rocev2.Bitmap128{})
	}
	// Nothing else comes from the fabric: each flow asks MaxRequests
	// times and SilentRequests (default MaxRequests) more.
	if st := d.Stats().Ports[1]; st.WaitGaveUp != 2 || st.Requests != 8 || st.Silent != 4 {
		t.Fatalf("gave up %d, requests %d, silent %d; want 2 flows giving up after 2 + 2 requests each", st.WaitGaveUp, st.Requests, st.Silent)
	}
	r.take(0)
	r.take(1)
	r.noLeak(d)
}

// stream passes PSNs 0..n-1 of QP qp from the fabric port through the
// rig, settling every 32 packets and at the end.
func (r *rig) stream(t *testing.T, qp, n uint32) {
	for k := uint32(0); k < n; k++ {
		r.inject(0, data(t, qp, k))
		if k%32 == 31 {
			r.settle()
		}
	}
	r.settle()
}

// TestDstMissing: the Miss counters count each PSN a packet skipped
// once, by what the packet showed it as, and GoBacks tell a sender's
// resend after a passed NAK from one after its timeout.
func TestDstMissing(t *testing.T) {
	send := func(r *rig, psns ...uint32) {
		for _, n := range psns {
			r.inject(0, data(t, 7, n))
			r.settle()
		}
		r.take(0)
		r.take(1)
	}
	t.Run("beyond/timeout/delivered", func(t *testing.T) {
		r, d := newDst(t, Config{})
		// 2..130 lost: 131 shows 129 beyond the bitmap. The sender's
		// timeout resends from 2; later from 0, its resend of 1 lost
		// (a delivered packet's copy); then 4..9 lost, 10 held.
		send(r, 0, 1, 131, 2, 0, 2, 3, 10)
		p := d.Stats().Ports[1]
		if p.MissBeyond != 129 || p.MissDelivered != 1 || p.MissRequested != 6 || p.Missing() != 136 {
			t.Fatalf("missing: beyond %d, delivered %d, requested %d, all %d; want 129, 1, 6, 136",
				p.MissBeyond, p.MissDelivered, p.MissRequested, p.Missing())
		}
		if p.GoBacks != 2 || p.GoBacksNAK != 0 {
			t.Fatalf("go-backs %d, after a NAK %d; want 2, 0", p.GoBacks, p.GoBacksNAK)
		}
		r.noLeak(d)
	})
	t.Run("nak/waited/passed", func(t *testing.T) {
		r, d := newDst(t, Config{})
		send(r, 0, 1, 131)
		r.inject(1, seqNAK(t, 7, 2)) // the host asks for ePSN: passed on
		r.settle()
		// The resend: 2 held behind lost 3 (requested), then 141 beyond
		// the bitmap in ReTx (136 waited), then 143 in Waiting (1 passed).
		send(r, 2, 4, 141, 143)
		p := d.Stats().Ports[1]
		if p.GoBacks != 1 || p.GoBacksNAK != 1 {
			t.Fatalf("go-backs %d, after a NAK %d; want 1, 1", p.GoBacks, p.GoBacksNAK)
		}
		if p.MissBeyond != 129 || p.MissRequested != 1 || p.MissWaited != 136 || p.MissPassed != 1 {
			t.Fatalf("missing: beyond %d, requested %d, waited %d, passed %d; want 129, 1, 136, 1",
				p.MissBeyond, p.MissRequested, p.MissWaited, p.MissPassed)
		}
		r.noLeak(d)
	})
	t.Run("entry late", func(t *testing.T) {
		r, d := newDst(t, Config{})
		// 0..4 lost before the flow's entry began at 5: the host's NAK
		// for 0 names them, and 5 and 6, forwarded before it came.
		send(r, 5, 6)
		r.inject(1, seqNAK(t, 7, 0))
		r.settle()
		if p := d.Stats().Ports[1]; p.MissNAKed != 7 || p.Missing() != 0 || p.Resyncs+p.NAKHeld != 1 {
			t.Fatalf("NAKed %d, missing %d, resyncs %d, NAKs held %d; want 7, 0, and one of them", p.MissNAKed, p.Missing(), p.Resyncs, p.NAKHeld)
		}
		r.noLeak(d)
	})
	t.Run("fill", func(t *testing.T) {
		r, d := newDst(t, Config{})
		// 1 lost, requested; its retransmission from the source ToR is
		// no go-back, and 4 after it shows nothing missing.
		send(r, 0, 2, 3, 1, 4)
		p := d.Stats().Ports[1]
		if p.Recovered != 1 || p.GoBacks != 0 || p.MissRequested != 1 || p.Missing() != 1 {
			t.Fatalf("recovered %d, go-backs %d, missing %d (requested %d); want 1, 0, 1 (1)", p.Recovered, p.GoBacks, p.Missing(), p.MissRequested)
		}
		r.noLeak(d)
	})
}
