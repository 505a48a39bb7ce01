package nictest

import (
	"net/netip"
	"runtime"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
)

// NewWith is New with o.Transport making each side's transport with mk;
// it also returns the transports of A and B, for their counters.
func NewWith[T nic.Transport](tb testing.TB, o Options, mk func() (T, error)) (*Pair, T, T) {
	tb.Helper()
	var ts []T
	o.Transport = func() nic.Transport {
		tr, err := mk()
		if err != nil {
			tb.Fatal(err)
		}
		ts = append(ts, tr)
		return tr
	}
	p := New(tb, o)
	return p, ts[0], ts[1]
}

// MustComplete runs p until A has want completions, or fails after limit
// nanoseconds of simulated time with both endpoints' counters.
func (p *Pair) MustComplete(tb testing.TB, want int, limit int64) {
	tb.Helper()
	if !p.Run(func() bool { return p.A.Done() >= want }, limit) {
		tb.Fatalf("A completed %d of %d work requests in %d ms of simulated time\nA: %+v\nB: %+v",
			p.A.Done(), want, limit/1e6, p.A.E.LiveStats(), p.B.E.LiveStats())
	}
}

// WantOK fails on the first completion whose status is not OK.
func WantOK(tb testing.TB, cq []nic.Completion) {
	tb.Helper()
	for i, c := range cq {
		if c.Status != nic.StatusOK {
			tb.Fatalf("completion %d: %+v", i, c)
		}
	}
}

// Stream keeps eight 64 KiB WRITEs outstanding on A's QP 0, for
// allocation tests and benchmarks: Tick moves the pair one step, checks
// every completion and posts anew. Nothing on its path allocates.
type Stream struct {
	P  *Pair
	cq [64]nic.Completion
	id uint64
}

// NewStream starts a stream on p.
func NewStream(tb testing.TB, p *Pair) *Stream {
	s := &Stream{P: p}
	s.fill(tb)
	return s
}

func (s *Stream) fill(tb testing.TB) {
	for s.P.A.E.Outstanding() < 8 {
		s.id++
		if err := s.P.A.Post(nic.OpWrite, 0, s.id, 0, 0, 64<<10); err != nil {
			tb.Fatal(err)
		}
	}
}

// Tick runs one step of the pair and keeps the stream full.
func (s *Stream) Tick(tb testing.TB) {
	s.P.Tick()
	for n := s.P.A.E.PollCQ(s.cq[:]); n > 0; n = s.P.A.E.PollCQ(s.cq[:]) {
		for _, c := range s.cq[:n] {
			if c.Status != nic.StatusOK {
				tb.Fatalf("completion %+v", c)
			}
		}
	}
	s.fill(tb)
}

// NoAllocs ticks the stream 20,000 times, past the first publications
// and queue growth, then asserts that 2,000 more allocate nothing and
// retransmit at least minRetx packets (0: send at least 10,000 requests,
// for a lossless stream), so that the loops measured did the work the
// test is about.
func (s *Stream) NoAllocs(tb testing.TB, minRetx uint64) {
	tb.Helper()
	for i := 0; i < 20000; i++ {
		s.Tick(tb)
	}
	before := s.P.A.E.LiveStats()
	if allocs := testing.AllocsPerRun(2000, func() { s.Tick(tb) }); allocs != 0 {
		tb.Fatalf("%.2f allocations per loop", allocs)
	}
	after := s.P.A.E.LiveStats()
	switch {
	case minRetx > 0 && after.Retransmits-before.Retransmits < minRetx:
		tb.Fatalf("%d retransmitted while measuring, want at least %d", after.Retransmits-before.Retransmits, minRetx)
	case minRetx == 0 && after.Requests-before.Requests < 10000:
		tb.Fatal("the stream did not flow while measuring")
	}
}

// Bench runs b.N of A's request packets through the stream after a
// warm-up and reports ns/pkt and pkt/s: the cost of one 1 KiB data
// packet through requester and responder, both run by this goroutine.
func (s *Stream) Bench(b *testing.B) {
	for i := 0; i < 1000; i++ {
		s.Tick(b)
	}
	b.ReportAllocs()
	b.SetBytes(1024)
	start := s.P.A.E.LiveStats().Requests
	b.ResetTimer()
	for s.P.A.E.LiveStats().Requests-start < uint64(b.N) {
		s.Tick(b)
	}
	b.StopTimer()
	pkts := float64(s.P.A.E.LiveStats().Requests - start)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
	b.ReportMetric(pkts/b.Elapsed().Seconds(), "pkt/s")
}

// EveryNth returns a Link filter that does act to every nth frame pick
// selects and, when late > 0, delays (Late) every late-th from the
// third on; the rest pass.
func EveryNth(pick func(*rocev2.Meta) bool, n int, act Action, late int) func([]byte, *rocev2.Meta) Action {
	k := 0
	return func(_ []byte, m *rocev2.Meta) Action {
		if !pick(m) {
			return Pass
		}
		k++
		switch {
		case k%n == 0:
			return act
		case late > 0 && k%late == 3:
			return Late
		}
		return Pass
	}
}

// HeapPerQP measures what one connected QP costs the heap in an endpoint
// of the transport mk makes: the allocations of an endpoint with 2049
// QPs less those of one with 1, per QP.
func HeapPerQP(tb testing.TB, mk func() nic.Transport) float64 {
	tb.Helper()
	return float64(EndpointHeap(tb, mk, 2049)-EndpointHeap(tb, mk, 1)) / 2048
}

// EndpointHeap measures every byte an endpoint of the transport mk makes
// allocates to set up n connected QPs: the transport (mk is called
// inside the measurement), the endpoint's tables and rings, each QP's
// context, queues and the transport's per-QP tables, sized for n QPs
// (CQDepth 16, the other depths the defaults). It is the least of three
// runs: the first may pay for one-time initialisation elsewhere in the
// process, and another goroutine may allocate during one; allocation
// sizes do not depend on timing, so the least is the same on every run
// of a build.
func EndpointHeap(tb testing.TB, mk func() nic.Transport, n int) uint64 {
	tb.Helper()
	least := ^uint64(0)
	for range 3 {
		least = min(least, endpointHeap(tb, mk, n))
	}
	return least
}

func endpointHeap(tb testing.TB, mk func() nic.Transport, n int) uint64 {
	tb.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	e, err := nic.NewEndpoint(nic.Config{Transport: mk(), IP: netip.MustParseAddr("10.0.0.1"),
		Egress: dataplane.DefaultEgress(0, 64<<10), MaxQPs: n, CQDepth: 16})
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		q, err := e.CreateQP(nic.QPOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		if err := e.Connect(q.QPN, nic.QPInfo{QPN: 7, MTU: 1024, IP: netip.MustParseAddr("10.0.0.2")}); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(e)
	return m1.TotalAlloc - m0.TotalAlloc
}
