package cc_test

import (
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/rocev2/psn"
)

// tm is a Timely instance with one open QP, for the phase tests.
func tm(t *testing.T, line uint64, c cc.TimelyConfig) (*cc.Timely, *nic.QP) {
	t.Helper()
	x, err := cc.NewTimely(line, c)
	if err != nil {
		t.Fatal(err)
	}
	x.Init(1)
	q := new(nic.QP)
	x.Open(q)
	return x, q
}

// sampler feeds a Timely RTT samples: each is one timed packet, sent at
// the current time and acknowledged rtt later.
type sampler struct {
	x   *cc.Timely
	q   *nic.QP
	p   psn.PSN
	now int64
}

func (s *sampler) rtt(us float64) {
	rtt := int64(us * 1000)
	s.x.Requested(s.q, s.now, s.p, 1024, false, true)
	s.now += rtt
	s.x.Acked(s.q, s.now, s.p)
	s.p = s.p.Add(1)
	s.now += 1000
}

// TestTimelyAlgorithm walks Algorithm 1 through a hand-computed sequence
// of RTT samples with the paper's parameters (T_low 50 µs, T_high 500 µs,
// δ 10 Mb/s, β 0.8, α 0.875, minRTT 20 µs, HAI after 5): a cut above
// T_high, increases on negative gradients, a cut by the gradient, five
// negative gradients in a row to hyperactive increase, and increases
// below T_low whatever the gradient.
func TestTimelyAlgorithm(t *testing.T) {
	const line = 10e9
	x, q := tm(t, line, cc.DefaultTimelyConfig())
	s := &sampler{x: x, q: q, p: psn.New(0xfffffd), now: 5000} // PSNs wrap on the way
	r := line * (1 - 0.8*(1-500.0/600))                        // first sample, difference 0; above T_high
	s.rtt(600)
	wantRate(t, "above T_high", x.Rate(q), r)
	// diff −500: EWMA 0.875·−500 = −437.5, gradient < 0 (1 in a row): +δ
	s.rtt(100)
	r += 10e6
	wantRate(t, "negative gradient", x.Rate(q), r)
	// diff +20: EWMA 0.125·−437.5 + 0.875·20 = −37.1875 < 0 (2): +δ
	s.rtt(120)
	r += 10e6
	wantRate(t, "EWMA still negative", x.Rate(q), r)
	// diff +30: 0.125·−37.1875 + 26.25 = 21.6015625; g = 1.080078125:
	// ×(1 − 0.8·1.080078125) = ×0.1359375
	s.rtt(150)
	r *= 0.1359375
	wantRate(t, "positive gradient cut", x.Rate(q), r)
	// diffs −10: EWMA 0.125·21.6015625 − 8.75 = −6.0498046875 < 0, then
	// more negative: gradients negative 1, 2, 3, 4 times in a row: +δ
	// each; the fifth in a row: +5δ (HAI); again +5δ.
	for i, rtt := range []float64{140, 130, 120, 110, 100, 90} {
		s.rtt(rtt)
		if i >= 4 {
			r += 5 * 10e6
		} else {
			r += 10e6
		}
		wantRate(t, "gradient increase", x.Rate(q), r)
	}
	// a rise within [T_low, T_high] ends the run: diff +10 after −10s:
	// EWMA 0.125·e + 8.75 > 0 for e > −70 — a cut by the gradient.
	e := -6.0498046875
	for range 5 {
		e = 0.125*e - 8.75
	}
	e = 0.125*e + 8.75
	r *= 1 - 0.8*e/20
	s.rtt(100)
	wantRate(t, "gradient cut after HAI", x.Rate(q), r)
	// below T_low every sample is +δ, even with a positive gradient
	s.rtt(30)
	s.rtt(49)
	wantRate(t, "below T_low", x.Rate(q), r+20e6)
	// a gradient of 1.25 or more would cut to nothing: the floor holds
	for _, rtt := range []float64{60, 400} {
		s.rtt(rtt)
	}
	if got := x.Rate(q); got != 100e6 {
		t.Fatalf("rate %.9g after steep gradients, want the 100 Mb/s floor", got)
	}
	st := x.Stats()
	if st.Samples != 15 || st.HighCuts != 1 || st.HAIInc != 2 || st.LowInc != 2 || st.GradInc != 6 || st.GradCuts != 4 {
		t.Fatalf("counters %+v", st)
	}
	if st.RTTMin != 30_000 || st.RTTMax != 600_000 || x.RTT(q) != 400_000 {
		t.Fatalf("RTTs %+v, last %d", st, x.RTT(q))
	}
	// never above the line rate
	x, q = tm(t, line, cc.DefaultTimelyConfig())
	s = &sampler{x: x, q: q}
	s.rtt(10)
	wantRate(t, "below T_low at the line rate", x.Rate(q), line)
}

// TestTimelyProbes checks which packets are timed and which samples
// count: a segment's last new packet asks for an ACK; a message's last
// ends a segment; a retransmission voids the probes at or after it
// (Karn); one ACK covering two probes samples the later one; a QP with
// every probe slot waiting times nothing more.
func TestTimelyProbes(t *testing.T) {
	c := cc.DefaultTimelyConfig()
	c.SegmentBytes = 4096
	x, q := tm(t, 10e9, c)
	now := int64(0)
	send := func(p uint32, n int, retx, last bool) bool {
		ask := x.Probe(q, psn.New(p), n, retx)
		x.Requested(q, now, psn.New(p), n, retx, ask || last)
		now += 1000
		return ask
	}
	for p := uint32(0); p < 3; p++ {
		if send(p, 1024, false, false) {
			t.Fatalf("PSN %d asked for an ACK inside a segment", p)
		}
	}
	if !send(3, 1024, false, false) || x.Stats().Probes != 1 {
		t.Fatal("the segment's last packet did not ask for an ACK")
	}
	if send(4, 1024, false, true) || x.Stats().Probes != 2 { // a message's last: the transport asked
		t.Fatalf("message end: %+v", x.Stats())
	}
	if send(3, 4096, true, false) { // PSN 3 again: voids probes 3 and 4
		t.Fatal("a retransmission asked for an ACK")
	}
	x.Acked(q, now, psn.New(4))
	if st := x.Stats(); st.Karn != 2 || st.Samples != 0 {
		t.Fatalf("after a resend: %+v", st)
	}
	send(5, 4096, false, false) // at 6000 ns
	send(6, 4096, false, false) // at 7000 ns
	x.Acked(q, 70_000, psn.New(6))
	if st := x.Stats(); st.Samples != 1 || st.Coalesced != 1 || x.RTT(q) != 63_000 {
		t.Fatalf("coalesced ACK: %+v, RTT %d", x.Stats(), x.RTT(q))
	}
	now = 100_000
	for p := uint32(7); p < 7+8; p++ {
		send(p, 4096, false, false)
	}
	if send(15, 4096, false, false) || x.Stats().Skipped != 0 {
		t.Fatal("a ninth probe with eight waiting")
	}
	send(16, 0, false, true) // a message end with every slot taken
	if st := x.Stats(); st.Skipped != 1 || st.Probes != 12 {
		t.Fatalf("full: %+v", st)
	}
}

// refTimely is TIMELY written the slow, obvious way: the probes in a
// slice, every sample through the paper's Algorithm 1 in float64 µs.
type refTimely struct {
	c                                   cc.TimelyConfig
	line, rate                          float64
	probes                              []refProbe
	seg                                 int
	prev, ewma                          float64
	have                                bool
	neg                                 int
	samples, low, high, ginc, hai, gcut int
	probed, karn, coalesced, skipped    int
}

type refProbe struct {
	p  psn.PSN
	at int64
}

func (m *refTimely) probe(n int, retx bool) bool {
	return !retx && len(m.probes) < 8 && m.seg+n >= int(m.c.SegmentBytes)
}

func (m *refTimely) requested(now int64, p psn.PSN, n int, retx, ask bool) {
	if retx {
		keep := m.probes[:0]
		for _, x := range m.probes {
			if x.p.Less(p) {
				keep = append(keep, x)
			} else {
				m.karn++
			}
		}
		m.probes = keep
		return
	}
	m.seg += n
	if !ask {
		return
	}
	m.seg = 0
	if len(m.probes) == 8 {
		m.skipped++
		return
	}
	m.probes = append(m.probes, refProbe{p, now})
	m.probed++
}

func (m *refTimely) acked(now int64, a psn.PSN) {
	k := 0
	for k < len(m.probes) && m.probes[k].p.LessEq(a) {
		k++
	}
	if k == 0 {
		return
	}
	m.coalesced += k - 1
	rtt := float64(now-m.probes[k-1].at) / 1000 // µs
	m.probes = m.probes[k:]
	m.update(rtt)
}

func (m *refTimely) update(rtt float64) {
	m.samples++
	if !m.have {
		m.prev, m.have = rtt, true
	}
	m.ewma = (1-m.c.Alpha)*m.ewma + m.c.Alpha*(rtt-m.prev)
	m.prev = rtt
	g := m.ewma / float64(m.c.MinRTT)
	if g < 0 {
		m.neg++
	} else {
		m.neg = 0
	}
	delta := float64(m.c.Delta) * 1e6
	switch {
	case rtt < float64(m.c.TLow):
		m.rate += delta
		m.low++
	case rtt > float64(m.c.THigh):
		m.rate *= 1 - m.c.Beta*(1-float64(m.c.THigh)/rtt)
		m.high++
	case g <= 0 && m.neg >= int(m.c.HAIThreshold):
		m.rate += float64(m.c.HAIFactor) * delta
		m.hai++
	case g <= 0:
		m.rate += delta
		m.ginc++
	default:
		m.rate *= 1 - m.c.Beta*g
		m.gcut++
	}
	m.rate = min(max(m.rate, min(float64(m.c.MinRate)*1e6, m.line)), m.line)
}

func randomTimelyConfig(r *rand.Rand) cc.TimelyConfig {
	c := cc.DefaultTimelyConfig()
	if r.IntN(4) == 0 {
		return c
	}
	c.TLow = uint32(r.IntN(100))
	c.THigh = c.TLow + 1 + uint32(r.IntN(1000))
	c.MinRTT = uint32(1 + r.IntN(50))
	c.Delta = uint32(1 + r.IntN(100))
	c.Beta = 0.05 + 0.95*r.Float64()
	c.Alpha = 0.01 + 0.99*r.Float64()
	c.HAIThreshold = uint32(1 + r.IntN(8))
	c.HAIFactor = uint32(1 + r.IntN(8))
	c.SegmentBytes = []uint32{1024, 4096, 16 << 10, 64 << 10}[r.IntN(4)]
	c.MinRate = uint32(1 + r.IntN(500))
	return c
}

// TestTimelyDifferential drives Timely and the reference with the same
// random sender — new packets of random sizes, message ends, resends of
// any unacknowledged PSN, cumulative ACKs of random reach after RTTs from
// 1 µs to 2 ms, PSNs across the 24-bit wrap — and compares the rate and
// every counter after each event.
func TestTimelyDifferential(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 28))
		c := randomTimelyConfig(r)
		line := []float64{10e9, 25e9, 40e9, 100e9}[r.IntN(4)]
		x, q := tm(t, uint64(line), c)
		m := &refTimely{c: c, line: line, rate: line}
		una := psn.New(0xffffff - uint32(r.IntN(2000)))
		next, now := una, int64(r.IntN(1000))
		scale := []int64{2_000, 50_000, 400_000, 2_000_000}[r.IntN(4)]
		for i := range 4000 {
			now += r.Int64N(scale / 4)
			switch k := r.IntN(10); {
			case k < 6 || next == una: // a new packet
				n, last := r.IntN(4097), r.IntN(20) == 0
				ask := x.Probe(q, next, n, false)
				if ask != m.probe(n, false) {
					t.Fatalf("seed %d step %d: Probe %v, reference %v", seed, i, ask, !ask)
				}
				x.Requested(q, now, next, n, false, ask || last)
				m.requested(now, next, n, false, ask || last)
				next = next.Add(1)
			case k < 7: // a resend
				p := una.Add(r.IntN(una.Diff(next) * -1))
				if x.Probe(q, p, 1024, true) {
					t.Fatalf("seed %d step %d: a resend asked for an ACK", seed, i)
				}
				x.Requested(q, now, p, 1024, true, r.IntN(2) == 0)
				m.requested(now, p, 1024, true, false)
			default: // an ACK
				a := una.Add(r.IntN(next.Diff(una) + 1)).Add(-1)
				x.Acked(q, now, a)
				m.acked(now, a)
				una = a.Add(1)
			}
			st := x.Stats()
			switch {
			case !near(x.Rate(q), m.rate, 1e-9):
				t.Fatalf("seed %d step %d: rate %.9g, reference %.9g (%+v)", seed, i, x.Rate(q), m.rate, c)
			case st.Samples != uint64(m.samples) || st.LowInc != uint64(m.low) || st.HighCuts != uint64(m.high) ||
				st.GradInc != uint64(m.ginc) || st.HAIInc != uint64(m.hai) || st.GradCuts != uint64(m.gcut):
				t.Fatalf("seed %d step %d: counters %+v, reference samples %d low %d high %d inc %d hai %d cut %d",
					seed, i, st, m.samples, m.low, m.high, m.ginc, m.hai, m.gcut)
			case st.Probes != uint64(m.probed) || st.Karn != uint64(m.karn) || st.Coalesced != uint64(m.coalesced) ||
				st.Skipped != uint64(m.skipped):
				t.Fatalf("seed %d step %d: probes %+v, reference %d karn %d coalesced %d skipped %d",
					seed, i, st, m.probed, m.karn, m.coalesced, m.skipped)
			}
		}
	}
}

// TestTimelyPacing checks that a QP is paced at its current rate.
func TestTimelyPacing(t *testing.T) {
	c := cc.DefaultTimelyConfig()
	c.BurstBytes, c.Beta = 1000, 1
	x, q := tm(t, 8e9, c) // one byte per ns
	s := &sampler{x: x, q: q}
	s.rtt(1000) // ×(1 − 1·(1 − 500/1000)): 4 Gb/s, two ns per byte
	wantRate(t, "cut", x.Rate(q), 4e9)
	now, sent := s.now, 0
	for sent < 1_000_000 {
		if at := x.Ready(q, now); at > now {
			now = at
			continue
		}
		x.Sent(q, now, 1000)
		sent += 1000
	}
	if want := s.now + 2*(1_000_000-1000-1000); now < want || now > want+10 {
		t.Fatalf("1 MB took until %d ns at 4 Gb/s, want %d", now, want)
	}
}

func TestTimelyConfig(t *testing.T) {
	if err := cc.DefaultTimelyConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*cc.TimelyConfig){
		func(c *cc.TimelyConfig) { c.THigh = c.TLow },
		func(c *cc.TimelyConfig) { c.MinRTT = 0 },
		func(c *cc.TimelyConfig) { c.Beta = 0 },
		func(c *cc.TimelyConfig) { c.Beta = 1.5 },
		func(c *cc.TimelyConfig) { c.Alpha = 0 },
		func(c *cc.TimelyConfig) { c.HAIThreshold = 0 },
		func(c *cc.TimelyConfig) { c.SegmentBytes = 0 },
		func(c *cc.TimelyConfig) { c.Delta = 0 },
	} {
		c := cc.DefaultTimelyConfig()
		f(&c)
		if _, err := cc.NewTimely(1e9, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := cc.NewTimely(0, cc.DefaultTimelyConfig()); err == nil {
		t.Error("no line rate accepted")
	}
}

// TestTimelyAllocs: the packet path allocates nothing.
func TestTimelyAllocs(t *testing.T) {
	x, q := tm(t, 10e9, cc.DefaultTimelyConfig())
	now, p := int64(0), psn.New(0)
	n := testing.AllocsPerRun(1000, func() {
		now += 300
		x.Ready(q, now)
		ask := x.Probe(q, p, 1024, false)
		x.Sent(q, now, 1082)
		x.Requested(q, now, p, 1024, false, ask)
		x.Acked(q, now+20_000, p.Add(-20))
		p = p.Add(1)
	})
	if n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
}

// BenchmarkTimely is TIMELY's cost per packet: Ready, Sent and the
// RTTSampler calls for a 1 KiB frame every 100 ns, a segment end every
// 16 frames and its ACK 20 µs later, so every sixteenth packet is a
// sample and a rate update.
func BenchmarkTimely(b *testing.B) {
	x, err := cc.NewTimely(100e9, cc.DefaultTimelyConfig())
	if err != nil {
		b.Fatal(err)
	}
	x.Init(1)
	q := new(nic.QP)
	x.Open(q)
	b.ReportAllocs()
	now, p := int64(0), psn.New(0)
	for b.Loop() {
		now += 100
		x.Ready(q, now)
		ask := x.Probe(q, p, 1024, false)
		x.Sent(q, now, 1082)
		x.Requested(q, now, p, 1024, false, ask)
		x.Acked(q, now, p.Add(-200))
		p = p.Add(1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
}
