package cc

import (
	"math"
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// hpTail returns an echo tail of the given records.
func hpTail(hops ...rocev2.INTHop) rocev2.INT {
	b := make([]byte, rocev2.INTLen(rocev2.INTMaxHops))
	rocev2.PutINT(b, rocev2.INTMaxHops)
	t := rocev2.INT(b)
	for _, h := range hops {
		t.Push(h)
	}
	e := make(rocev2.INT, len(t))
	rocev2.PutEcho(e, t)
	return e
}

func hpNew(t *testing.T, c HPCCConfig) (*HPCC, *hpState) {
	t.Helper()
	h, err := NewHPCC(10e9, c)
	if err != nil {
		t.Fatal(err)
	}
	h.Init(1)
	h.st[0] = hpState{rate: h.line, rc: h.line, rateLog: rateLog{min: h.line}}
	return h, &h.st[0]
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestHPCCAlgorithm walks Algorithm 1 through a hand-made INT sequence on
// one 10 Gb/s hop with T = 10 µs (so B·T = 12,500 bytes), η = 0.95,
// W_AI/T = 4 Mb/s, each rate computed by hand in the comments.
func TestHPCCAlgorithm(t *testing.T) {
	h, r := hpNew(t, DefaultHPCCConfig())
	const G = 10_000 // Mb/s
	step := func(name string, a, nxt psn.PSN, hop rocev2.INTHop, rate, rc, u float64, stage uint32) {
		t.Helper()
		h.update(r, a, nxt, hpTail(hop))
		if !near(r.rate, rate) || !near(r.rc, rc) || !near(r.u, u) || r.stage != stage {
			t.Fatalf("%s: rate %.6g rc %.6g U %.6g stage %d; want %.6g %.6g %.6g %d", name, r.rate, r.rc, r.u, r.stage, rate, rc, u, stage)
		}
	}
	// The first echo only keeps its records and lastUpdateSeq = 100.
	step("first", 0, 100, rocev2.INTHop{TS: 0, RateMbps: G}, 10e9, 10e9, 0, 0)
	// 5 µs later, 6,250 bytes sent (10 Gb/s: txRate/B = 1), 12,500
	// queued but 0 before: min(qlen) = 0, u = 1; τ = 5 µs, U = 0·½ +
	// 1·½ = 0.5 < η: additive, rate = 10 G + 4 M, clamped to the line.
	// ACK 50 < 100: a fast reaction, the reference stays.
	step("fast additive", 50, 150, rocev2.INTHop{TS: 5000, QLen: 12500, TxBytes: 6250, RateMbps: G}, 10e9, 10e9, 0.5, 0)
	// 10 µs later (τ = T), 12,500 more bytes (txRate/B = 1), queue
	// 25,000, min 12,500 = B·T: u = 2, U = 2. Multiplicative: R =
	// 10 G/(2/0.95) + 4 M = 4.754 G; ACK 100 ≥ 100, a full update: the
	// reference moves, stage 0, lastUpdateSeq = 200.
	mult := 10e9/(2/0.95) + 4e6
	step("full multiplicative", 100, 200, rocev2.INTHop{TS: 15000, QLen: 25000, TxBytes: 18750, RateMbps: G}, mult, mult, 2, 0)
	// The queue is gone and the link runs at 4 Gb/s (5,000 bytes in
	// 10 µs): u = 0.4 = U. Fast (ACK 150 < 200): rate = Rc + 4 M,
	// the reference and stage stay.
	step("fast after cut", 150, 250, rocev2.INTHop{TS: 25000, TxBytes: 23750, RateMbps: G}, mult+4e6, mult, 0.4, 0)
	// Five full additive updates, stage 1 to 5.
	ts, tx, rc := uint32(25000), uint32(23750), mult
	for i := range 5 {
		ts, tx, rc = ts+10000, tx+5000, rc+4e6
		a := psn.PSN(200 + 100*i)
		step("additive", a, a+100, rocev2.INTHop{TS: ts, TxBytes: tx, RateMbps: G}, rc, rc, 0.4, uint32(i+1))
	}
	// Stage 5 = maxStage: multiplicative whatever U: Rc/(0.4/0.95) +
	// 4 M = 11.3 G, clamped to the line; stage 0.
	step("maxStage", 700, 800, rocev2.INTHop{TS: ts + 10000, TxBytes: tx + 5000, RateMbps: G}, 10e9, 10e9, 0.4, 0)
	st := h.Stats()
	if st.Echoes != 10 || st.Updates != 7 || st.Fast != 2 || st.Mult != 2 || st.Additive != 7 {
		t.Fatalf("stats %+v", st)
	}
	// An echo no hop's clock moved in changes nothing; one with another
	// hop count restarts the records.
	before := *r
	h.update(r, 900, 1000, hpTail(rocev2.INTHop{TS: ts + 10000, QLen: 1 << 20, RateMbps: G}))
	h.update(r, 900, 1000, hpTail(rocev2.INTHop{TS: 1, RateMbps: G}, rocev2.INTHop{TS: 1, RateMbps: G}))
	if r.rate != before.rate || r.rc != before.rc || h.Stats().Stale != 1 || h.Stats().PathChange != 1 || r.nhops != 2 {
		t.Fatalf("stale and path change: %+v, stats %+v", *r, h.Stats())
	}
}

// refHPCC is Algorithm 1 as the paper writes it, in windows: W = Wc/(U/η)
// + W_AI or Wc + W_AI, R = W/T, per-hop state in plain slices, the
// ns-3 model's fast reaction (every ACK sets W from Wc; a full update
// also moves Wc, incStage and lastUpdateSeq).
type refHPCC struct {
	eta, bt, wai, wmin, wmax, tNs float64 // bytes, ns
	maxStage                      int
	w, wc, u                      float64
	stage                         int
	last                          psn.PSN
	prev                          []rocev2.INTHop
	init                          bool
}

func (m *refHPCC) ack(a, nxt psn.PSN, hops []rocev2.INTHop) {
	if !m.init || len(hops) != len(m.prev) {
		m.prev, m.init, m.last = append([]rocev2.INTHop(nil), hops...), true, nxt
		return
	}
	big, tau, any := 0.0, 0.0, false
	for i, l := range hops {
		dt := float64(uint32(l.TS - m.prev[i].TS))
		if dt == 0 || l.RateMbps == 0 {
			continue
		}
		bBytesPerNs := float64(l.RateMbps) * 1e6 / 8 / 1e9
		txRate := float64(uint32(l.TxBytes-m.prev[i].TxBytes)) / dt // bytes/ns
		u := float64(min(l.QLen, m.prev[i].QLen))/(bBytesPerNs*m.tNs) + txRate/bBytesPerNs
		if !any || u > big {
			big, tau = u, dt
		}
		any = true
		m.prev[i] = l
	}
	if !any {
		return
	}
	tau = math.Min(tau, m.tNs)
	m.u = (1-tau/m.tNs)*m.u + tau/m.tNs*big
	full := !a.Less(m.last)
	var w float64
	stage := m.stage
	if m.u >= m.eta || m.stage >= m.maxStage {
		w, stage = m.wc/(m.u/m.eta)+m.wai, 0
	} else {
		w, stage = m.wc+m.wai, m.stage+1
	}
	m.w = math.Min(math.Max(w, m.wmin), m.wmax)
	if full {
		m.wc, m.stage, m.last = m.w, stage, nxt
	}
}

// TestHPCCDifferential drives HPCC and the window-form reference with
// random INT sequences over random paths (1 to 5 hops of 10 to 400
// Gb/s, queues, wrapping clocks and counters, ACKs full and fast) and
// compares the rate after every echo.
func TestHPCCDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		c := DefaultHPCCConfig()
		c.BaseRTT = 2 + r.Float64()*20
		c.MaxStage = uint32(r.IntN(6))
		c.Eta = 0.8 + r.Float64()*0.2
		h, st := hpNew(t, c)
		tNs := c.BaseRTT * 1e3
		bt := 10e9 / 8 * tNs / 1e9
		m := &refHPCC{eta: c.Eta, tNs: tNs, bt: bt, wai: h.ai / 8 * tNs / 1e9, wmin: h.minRate / 8 * tNs / 1e9,
			wmax: bt, maxStage: int(c.MaxStage), w: bt, wc: bt}
		n := 1 + r.IntN(5)
		hops := make([]rocev2.INTHop, n)
		for i := range hops {
			hops[i] = rocev2.INTHop{TS: r.Uint32(), TxBytes: r.Uint32(), RateMbps: uint32([]int{10e3, 25e3, 100e3, 400e3}[r.IntN(4)])}
		}
		a, nxt := psn.PSN(r.IntN(1<<20)), psn.PSN(0)
		for range 100 {
			for i := range hops {
				dt := uint32(r.IntN(int(2 * tNs)))
				hops[i].TS += dt
				hops[i].TxBytes += uint32(float64(dt) * float64(hops[i].RateMbps) / 8e3 * r.Float64() * 1.2)
				hops[i].QLen = uint32(r.IntN(4)) * uint32(r.IntN(200_000))
			}
			a = a.Add(1 + r.IntN(20))
			nxt = a.Add(r.IntN(60))
			h.update(st, a, nxt, hpTail(hops...))
			m.ack(a, nxt, hops)
			if want := m.w * 8 / tNs * 1e9; !near(st.rate, want) {
				t.Fatalf("run %d: rate %.9g, reference %.9g (W %.6g, U %.6g vs %.6g)", run, st.rate, want, m.w, st.u, m.u)
			}
		}
	}
}

// TestHPCCAllocs: an echo's update allocates nothing.
func TestHPCCAllocs(t *testing.T) {
	h, r := hpNew(t, DefaultHPCCConfig())
	e := hpTail(rocev2.INTHop{TS: 1, RateMbps: 10000}, rocev2.INTHop{TS: 1, RateMbps: 10000})
	a := psn.PSN(0)
	if n := testing.AllocsPerRun(1000, func() {
		binary4(e, 0, 1000)
		a = a.Add(1)
		h.update(r, a, a.Add(10), e)
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// binary4 adds d to the big-endian word at off of each record of e.
func binary4(e rocev2.INT, off int, d uint32) {
	for i := range e.Hops() {
		p := e[rocev2.INTHeaderLen+rocev2.INTRecordLen*i+off:]
		v := uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
		v += d
		p[0], p[1], p[2], p[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
}
