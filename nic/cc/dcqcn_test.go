package cc_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
)

// refDCQCN is the reaction point written the slow, obvious way: every
// timer event — each alpha period, each rate increase timer expiry, a
// deferred cut — is its own step, taken in time order (at one instant:
// cut, alpha, timer), with the formulas as the package doc states them.
// No bulk steps, no pow, no token bucket.
type refDCQCN struct {
	c    cc.DCQCNConfig
	line float64

	rc, rt, alpha      float64
	limited, seen, due bool
	t, bc              int
	bytes              int
	nextAlpha, nextInc int64
	nextCut            int64
	now, open          int64
	started            bool
	min, area          float64
	cuts, fr, ai, hai  int
	timerEvs, byteEvs  int
}

func newRef(line float64, c cc.DCQCNConfig) *refDCQCN {
	return &refDCQCN{c: c, line: line, rc: line, rt: line, min: line}
}

func (m *refDCQCN) us(v uint32) int64 { return int64(v) * 1000 }
func (m *refDCQCN) g() float64        { return float64(1024-m.c.DCETCPG) / 1024 }
func (m *refDCQCN) minRate() float64  { return math.Min(float64(m.c.RPGMinRate)*1e6, m.line) }

func (m *refDCQCN) runTo(now int64) {
	if !m.started {
		m.started, m.now, m.open = true, now, now
	}
	for m.limited {
		// the earliest event; at one instant cut, then alpha, then timer
		at, kind := m.nextAlpha, 1
		if m.nextInc < at {
			at, kind = m.nextInc, 2
		}
		if m.due && m.nextCut <= at {
			at, kind = m.nextCut, 0
		}
		if at > now {
			break
		}
		m.area += m.rc * float64(at-m.now)
		m.now = at
		switch kind {
		case 0:
			m.cut()
		case 1:
			if m.seen {
				m.alpha = (1-m.g())*m.alpha + m.g()
			} else {
				m.alpha = (1 - m.g()) * m.alpha
			}
			m.seen = false
			m.nextAlpha += m.us(m.c.DCETCPRTT)
		case 2:
			m.t++
			m.timerEvs++
			m.increase()
			m.nextInc += m.us(m.c.RPGTimeReset)
		}
	}
	if now > m.now {
		m.area += m.rc * float64(now-m.now)
		m.now = now
	}
}

func (m *refDCQCN) increase() {
	f := int(m.c.RPGThreshold)
	lo, hi := min(m.t, m.bc), max(m.t, m.bc)
	switch {
	case hi <= f: // fast recovery: the target stays
		m.fr++
	case lo > f: // hyper increase, stage lo-f
		m.hai++
		m.rt += float64(lo-f) * float64(m.c.RPGHAIRate) * 1e6
	default: // additive increase
		m.ai++
		m.rt += float64(m.c.RPGAIRate) * 1e6
	}
	if m.rt > m.line {
		m.rt = m.line
	}
	m.rc = (m.rt + m.rc) / 2
}

func (m *refDCQCN) cut() {
	if m.c.ClampTgtRate || m.c.ClampTgtRateAfterTimeInc && m.t > 0 {
		m.rt = m.rc
	}
	factor := m.alpha / 2
	if m.c.RPGGD == 10 {
		factor = m.alpha
	}
	nr := m.rc * (1 - factor)
	if floor := m.rc * float64(m.c.RPGMinDecFac) / 100; nr < floor {
		nr = floor
	}
	if nr < m.minRate() {
		nr = m.minRate()
	}
	if nr < m.rc {
		m.rc = nr
	}
	if m.rc < m.min {
		m.min = m.rc
	}
	m.t, m.bc, m.bytes = 0, 0, 0
	m.nextInc = m.now + m.us(m.c.RPGTimeReset)
	m.nextCut = m.now + m.us(m.c.RateReduceMonitorPeriod)
	m.due = false
	m.cuts++
}

func (m *refDCQCN) cnp(now int64) {
	m.runTo(now)
	if !m.limited {
		m.limited = true
		first := m.line
		if m.c.RateToSetOnFirstCNP != 0 {
			first = math.Min(math.Max(float64(m.c.RateToSetOnFirstCNP)*1e6, m.minRate()), m.line)
		}
		m.rc, m.rt = first, first
		m.min = math.Min(m.min, first)
		m.alpha = float64(m.c.InitialAlphaValue) / 1024
		m.nextAlpha = now + m.us(m.c.DCETCPRTT)
		m.nextCut = now
	} else {
		m.seen = true
	}
	if m.due {
		return
	}
	if now >= m.nextCut {
		m.cut()
	} else {
		m.due = true
	}
}

func (m *refDCQCN) sent(now int64, n int) {
	m.runTo(now)
	if !m.limited || m.c.RPGByteReset == 0 {
		return
	}
	m.bytes += n
	for m.bytes >= int(m.c.RPGByteReset) {
		m.bytes -= int(m.c.RPGByteReset)
		m.bc++
		m.byteEvs++
		m.increase()
	}
}

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))+1e-12
}

// randomConfig draws a configuration across ConnectX's ranges, with the
// periods short enough that a sequence crosses many of them.
func randomConfig(r *rand.Rand) cc.DCQCNConfig {
	c := cc.DefaultDCQCNConfig()
	if r.IntN(4) == 0 {
		return c
	}
	c.RPGTimeReset = uint32(1 + r.IntN(300))
	c.RPGByteReset = []uint32{0, 1500, 4096, 32767}[r.IntN(4)]
	c.RPGThreshold = uint32(1 + r.IntN(6))
	c.RPGAIRate = uint32(1 + r.IntN(100))
	c.RPGHAIRate = uint32(1 + r.IntN(500))
	c.ClampTgtRate = r.IntN(2) == 0
	c.ClampTgtRateAfterTimeInc = r.IntN(2) == 0
	c.RPGGD = uint32(10 + r.IntN(2))
	c.RPGMinDecFac = uint32(r.IntN(101))
	c.RPGMinRate = uint32(1 + r.IntN(200))
	c.RateToSetOnFirstCNP = []uint32{0, 0, 100, 5000}[r.IntN(4)]
	c.RateReduceMonitorPeriod = uint32(1 + r.IntN(50))
	c.DCETCPG = uint32(r.IntN(1024))
	c.DCETCPRTT = uint32(1 + r.IntN(60))
	c.InitialAlphaValue = uint32(1 + r.IntN(1023))
	return c
}

// TestDCQCNDifferential drives DCQCN and the reference with the same
// random sequences — CNPs in bursts and gaps from a microsecond to tens
// of milliseconds, frames of random sizes, Ready calls — on an injected
// clock, and compares the current and summary rates, alpha and the
// counters after every call.
func TestDCQCNDifferential(t *testing.T) {
	const seqs, steps = 400, 3000
	for seed := range uint64(seqs) {
		r := rand.New(rand.NewPCG(seed, 16))
		c := randomConfig(r)
		line := []float64{1e9, 10e9, 25e9, 100e9}[r.IntN(4)]
		d, err := cc.NewDCQCN(uint64(line), c)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		d.Init(1)
		q := new(nic.QP)
		d.Open(q)
		m := newRef(line, c)
		now := int64(r.IntN(1000))
		cnpGap := []int64{500, 5_000, 50_000, 1_000_000}[r.IntN(4)]
		for i := range steps {
			switch k := r.IntN(20); {
			case k < 3:
				now += r.Int64N(2 * cnpGap) // a CNP
				d.CNP(q, now)
				m.cnp(now)
			case k < 4:
				now += r.Int64N(5_000_000) // idle, then a frame
				n := 64 + r.IntN(4096)
				d.Sent(q, now, n)
				m.sent(now, n)
			case k < 5:
				now += r.Int64N(1000)
				d.Ready(q, now)
				m.runTo(now)
			default:
				now += r.Int64N(2000) // a frame
				n := 64 + r.IntN(4096)
				d.Sent(q, now, n)
				m.sent(now, n)
			}
			st := d.Stats()
			s := d.Summary()
			mean := m.rc
			if m.now > m.open {
				mean = m.area / float64(m.now-m.open)
			}
			switch {
			case !near(d.Rate(q), m.rc, 1e-8):
				t.Fatalf("seed %d step %d: rate %.6g, reference %.6g (%+v)", seed, i, d.Rate(q), m.rc, c)
			case !near(d.Alpha(q), m.alpha, 1e-9):
				t.Fatalf("seed %d step %d: alpha %.12g, reference %.12g", seed, i, d.Alpha(q), m.alpha)
			case !near(s.Min, m.min, 1e-8) || !near(s.Mean, mean, 1e-8) || s.Final != d.Rate(q):
				t.Fatalf("seed %d step %d: summary %+v, reference min %.6g mean %.6g", seed, i, s, m.min, mean)
			case st.Cuts != uint64(m.cuts) || st.FastRecovery != uint64(m.fr) || st.AdditiveInc != uint64(m.ai) ||
				st.HyperInc != uint64(m.hai) || st.TimerEvents != uint64(m.timerEvs) || st.ByteEvents != uint64(m.byteEvs):
				t.Fatalf("seed %d step %d: counters %+v, reference cuts %d FR %d AI %d HAI %d timer %d bytes %d",
					seed, i, st, m.cuts, m.fr, m.ai, m.hai, m.timerEvs, m.byteEvs)
			}
		}
	}
}

// rp is a DCQCN instance with one open QP, for the phase tests.
func rp(t *testing.T, line uint64, c cc.DCQCNConfig) (*cc.DCQCN, *nic.QP) {
	t.Helper()
	d, err := cc.NewDCQCN(line, c)
	if err != nil {
		t.Fatal(err)
	}
	d.Init(1)
	q := new(nic.QP)
	d.Open(q)
	return d, q
}

func wantRate(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want, 1e-12) {
		t.Fatalf("%s: rate %.9g, want %.9g", what, got, want)
	}
}

// TestDCQCNCut checks the decrease: a first CNP cuts the line rate by
// alpha/2 with alpha at initial_alpha_value; a second within
// rate_reduce_monitor_period waits for the period's end; rpg_gd 10 cuts
// by alpha; rpg_min_dec_fac and rpg_min_rate bound the cut.
func TestDCQCNCut(t *testing.T) {
	const line = 10e9
	c := cc.DefaultDCQCNConfig()
	c.DCETCPRTT = 1000 // no alpha update in the test's span
	d, q := rp(t, line, c)
	if d.Ready(q, 0) != 0 || d.Rate(q) != line {
		t.Fatal("a QP without CNPs is not at the line rate")
	}
	d.CNP(q, 1000)
	a := 1023.0 / 1024
	r1 := line * (1 - a/2)
	wantRate(t, "first CNP", d.Rate(q), r1)
	d.CNP(q, 2000) // 1 µs after the cut: deferred to 1000+4000
	wantRate(t, "CNP within the period", d.Rate(q), r1)
	d.Ready(q, 4999)
	wantRate(t, "before the period ends", d.Rate(q), r1)
	d.Ready(q, 5000)
	wantRate(t, "at the period's end", d.Rate(q), r1*(1-a/2))
	if st := d.Stats(); st.Cuts != 2 || st.DeferredCuts != 1 {
		t.Fatalf("counters %+v", st)
	}

	c.RPGGD, c.RPGMinDecFac = 10, 30 // cut by alpha, but to no less than 30 %
	d, q = rp(t, line, c)
	d.CNP(q, 0)
	wantRate(t, "rpg_gd 10, rpg_min_dec_fac 30", d.Rate(q), 0.3*line)
	c.RPGMinDecFac, c.RPGMinRate = 0, 4000 // no share floor; 4 Gb/s
	d, q = rp(t, line, c)
	d.CNP(q, 0)
	wantRate(t, "rpg_min_rate", d.Rate(q), 4e9)
	c = cc.DefaultDCQCNConfig()
	c.RPGMinDecFac = 100
	d, q = rp(t, line, c)
	d.CNP(q, 0)
	wantRate(t, "rpg_min_dec_fac 100 (no cuts)", d.Rate(q), line)
	c = cc.DefaultDCQCNConfig()
	c.RateToSetOnFirstCNP = 2000
	d, q = rp(t, line, c)
	d.CNP(q, 0)
	wantRate(t, "rate_to_set_on_first_cnp 2000", d.Rate(q), 2e9*(1-1023.0/2048))
}

// TestDCQCNAlpha checks alpha: it rises by g in a period with a CNP and
// decays by (1−g) in each period without, the first CNP setting it
// rather than raising it; a long quiet spell decays it in one step as
// many single steps would.
func TestDCQCNAlpha(t *testing.T) {
	c := cc.DefaultDCQCNConfig()
	c.DCETCPRTT, c.DCETCPG = 10, 1020 // the paper's g 1/256, 10 µs periods
	g := 4.0 / 1024
	d, q := rp(t, 10e9, c)
	d.CNP(q, 0)
	a := 1023.0 / 1024
	if d.Alpha(q) != a {
		t.Fatalf("alpha %.9g after the first CNP, want initial_alpha_value %.9g", d.Alpha(q), a)
	}
	d.Ready(q, 10_000)
	a *= 1 - g
	if !near(d.Alpha(q), a, 1e-15) {
		t.Fatalf("alpha %.12g after a quiet period, want %.12g", d.Alpha(q), a)
	}
	d.CNP(q, 15_000)
	d.Ready(q, 20_000)
	a = (1-g)*a + g
	if !near(d.Alpha(q), a, 1e-15) {
		t.Fatalf("alpha %.12g after a period with a CNP, want %.12g", d.Alpha(q), a)
	}
	d.Ready(q, 20_000+1000*10_000)
	a *= math.Pow(1-g, 1000)
	if !near(d.Alpha(q), a, 1e-12) {
		t.Fatalf("alpha %.12g after 1000 quiet periods, want %.12g", d.Alpha(q), a)
	}
}

// TestDCQCNIncrease walks a QP through fast recovery, additive and hyper
// increase: the timer alone gives fast recovery for rpg_threshold events,
// then additive increase; the byte counter past the threshold too gives
// hyper increase; the rate never passes the line rate.
func TestDCQCNIncrease(t *testing.T) {
	const line = 10e9
	c := cc.DefaultDCQCNConfig()
	c.RPGThreshold, c.RPGTimeReset, c.RPGByteReset = 2, 100, 10_000
	c.DCETCPRTT = 131071
	d, q := rp(t, line, c)
	d.CNP(q, 0)
	rc := line * (1 - 1023.0/2048)
	rt := line // the first CNP set it; no timer event yet, so no clamp
	step := func(at int64, what string, dt float64) {
		t.Helper()
		d.Ready(q, at)
		rt = math.Min(rt+dt, line)
		rc = (rc + rt) / 2
		wantRate(t, what, d.Rate(q), rc)
	}
	step(100_000, "timer event 1: fast recovery", 0)
	step(200_000, "timer event 2: fast recovery", 0)
	step(300_000, "timer event 3: additive increase", 5e6)
	// A second cut clamps the target (the timer raised the rate).
	d.CNP(q, 350_000)
	rt = rc
	rc *= 1 - d.Alpha(q)/2
	wantRate(t, "cut", d.Rate(q), rc)
	// Bytes: three events (T 0, BC 1..3): FR, FR, then AI.
	for i, dt := range []float64{0, 0, 5e6} {
		d.Sent(q, 350_001+int64(i), 10_000)
		rt = math.Min(rt+dt, line)
		rc = (rc + rt) / 2
		wantRate(t, "byte event", d.Rate(q), rc)
	}
	// Timer events 1..3 with BC 3: T 1, 2 additive; T 3 hyper, stage 1.
	step(450_000, "timer 1, bytes 3: additive", 5e6)
	step(550_000, "timer 2, bytes 3: additive", 5e6)
	step(650_000, "timer 3, bytes 3: hyper 1", 50e6)
	d.Sent(q, 650_001, 10_000) // BC 4, T 3: hyper, stage min(3,4)-2 = 1
	rt = math.Min(rt+50e6, line)
	rc = (rc + rt) / 2
	wantRate(t, "bytes 4, timer 3: hyper 1", d.Rate(q), rc)
	step(750_000, "timer 4, bytes 4: hyper 2", 100e6)
	// Long after, the rate is back at the line rate and stays there.
	d.Ready(q, 10e9)
	if r := d.Rate(q); r > line || line-r >= 1 {
		t.Fatalf("rate %.9g after 10 s, want the line rate", r)
	}
	st := d.Stats()
	if st.FastRecovery != 4 || st.AdditiveInc != 4 || st.HyperInc == 0 {
		t.Fatalf("counters %+v", st)
	}
}

// TestDCQCNClamp checks the target clamp flags: with both off a cut
// leaves the target where it was, so fast recovery climbs back to it;
// clamp_tgt_rate_after_time_inc clamps only after a timer increase;
// clamp_tgt_rate clamps always.
func TestDCQCNClamp(t *testing.T) {
	const line = 10e9
	for _, tc := range []struct {
		name         string
		always, time bool
		byBytes      bool // the increase before the second cut came from bytes
		clamped      bool
	}{
		{"off", false, false, false, false},
		{"after time inc, timer", false, true, false, true},
		{"after time inc, bytes", false, true, true, false},
		{"always, bytes", true, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cc.DefaultDCQCNConfig()
			c.ClampTgtRate, c.ClampTgtRateAfterTimeInc = tc.always, tc.time
			c.RPGTimeReset, c.RPGByteReset, c.DCETCPRTT = 100, 10_000, 131071
			d, q := rp(t, line, c)
			d.CNP(q, 0)
			at := int64(100_001) // after the timer's first event
			if tc.byBytes {
				d.Sent(q, 1, 10_000)
				at = 50_000 // before it
			} else {
				d.Ready(q, 100_000)
			}
			before := d.Rate(q)
			d.CNP(q, at)
			cut := d.Rate(q)
			d.Ready(q, at+100_000) // one timer event: fast recovery towards the target
			want := (cut + line) / 2
			if tc.clamped {
				want = (cut + before) / 2
			}
			wantRate(t, "fast recovery after the cut", d.Rate(q), want)
		})
	}
}

// TestDCQCNNotificationPoint checks min_time_between_cnps: one CNP per
// QP per period, the marks between counted and not answered.
func TestDCQCNNotificationPoint(t *testing.T) {
	d, q := rp(t, 10e9, cc.DefaultDCQCNConfig())
	var asked []int64
	for now := int64(0); now < 20_000; now += 1000 {
		if d.Marked(q, now) {
			asked = append(asked, now)
		}
	}
	if len(asked) != 5 || asked[1] != 4000 || asked[4] != 16000 {
		t.Fatalf("CNPs asked at %v, want every 4 µs from 0", asked)
	}
	if st := d.Stats(); st.Marks != 20 || st.CNPsAsked != 5 || st.CNPsHeld != 15 {
		t.Fatalf("counters %+v", st)
	}
	c := cc.DefaultDCQCNConfig()
	c.MinTimeBetweenCNPs = 0
	d, q = rp(t, 10e9, c)
	if !d.Marked(q, 5) || !d.Marked(q, 5) {
		t.Fatal("min_time_between_cnps 0 must answer every mark")
	}
}

// TestDCQCNPacing checks that a cut QP is paced at its current rate:
// after the bucket's burst, n bytes take n·8/rate.
func TestDCQCNPacing(t *testing.T) {
	c := cc.DefaultDCQCNConfig()
	c.BurstBytes, c.RPGMinDecFac, c.RPGGD = 1000, 10, 10
	c.InitialAlphaValue, c.DCETCPRTT, c.RPGTimeReset, c.RPGByteReset = 512, 131071, 131071, 0
	d, q := rp(t, 8e9, c) // one byte per ns
	d.CNP(q, 0)           // half: 4e9, two ns per byte
	wantRate(t, "cut", d.Rate(q), 4e9)
	now := int64(0)
	sent := 0
	for sent < 1_000_000 {
		if at := d.Ready(q, now); at > now {
			now = at
			continue
		}
		d.Sent(q, now, 1000)
		sent += 1000
	}
	if want := int64(2 * (1_000_000 - 1000 - 1000)); now < want || now > want+10 {
		t.Fatalf("1 MB took %d ns at 4 Gb/s, want %d", now, want)
	}
}

func TestDCQCNConfig(t *testing.T) {
	if err := cc.DefaultDCQCNConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*cc.DCQCNConfig){
		func(c *cc.DCQCNConfig) { c.RPGTimeReset = 0 },
		func(c *cc.DCQCNConfig) { c.RPGGD = 12 },
		func(c *cc.DCQCNConfig) { c.DCETCPG = 1024 },
		func(c *cc.DCQCNConfig) { c.RPGMinDecFac = 101 },
		func(c *cc.DCQCNConfig) { c.InitialAlphaValue = 0 },
		func(c *cc.DCQCNConfig) { c.RPGByteReset = 40000 },
	} {
		c := cc.DefaultDCQCNConfig()
		f(&c)
		if _, err := cc.NewDCQCN(1e9, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := cc.NewDCQCN(0, cc.DefaultDCQCNConfig()); err == nil {
		t.Error("no line rate accepted")
	}
}

// TestDCQCNAllocs: the packet path allocates nothing.
func TestDCQCNAllocs(t *testing.T) {
	d, q := rp(t, 10e9, cc.DefaultDCQCNConfig())
	now := int64(0)
	n := testing.AllocsPerRun(1000, func() {
		now += 300
		if now%30_000 == 0 {
			d.CNP(q, now)
		}
		d.Marked(q, now)
		d.Ready(q, now)
		d.Sent(q, now, 1082)
	})
	if n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
}

// BenchmarkDCQCN is the reaction point's cost per packet: Ready and Sent
// for a 1 KiB frame every 100 ns (a QP at about 86 Gb/s), a CNP every
// 50 µs, so each packet crosses an alpha period now and then and the
// rate moves between cuts and increases.
func BenchmarkDCQCN(b *testing.B) {
	d, err := cc.NewDCQCN(100e9, cc.DefaultDCQCNConfig())
	if err != nil {
		b.Fatal(err)
	}
	d.Init(1)
	q := new(nic.QP)
	d.Open(q)
	b.ReportAllocs()
	now := int64(0)
	for i := 0; b.Loop(); i++ {
		now += 100
		if i%500 == 0 {
			d.CNP(q, now)
		}
		d.Ready(q, now)
		d.Sent(q, now, 1082)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
}
