package cc

import (
	"fmt"
	"reflect"

	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// HPCCConfig is HPCC's configuration: Algorithm 1 of Li et al., "HPCC:
// High Precision Congestion Control" (SIGCOMM 2019), in the rate form of
// its ns-3 model (alibaba-edu/High-Precision-Congestion-Control,
// rdma-hw.cc UpdateRateHp). Take DefaultHPCCConfig and change what
// differs; the package doc says where each default comes from.
type HPCCConfig struct {
	// Eta is η, the target utilisation (default 0.95).
	Eta float64 `json:"eta"`
	// MaxStage is maxStage, the additive increases in a row after which
	// an update is multiplicative whatever U (default 5).
	MaxStage uint32 `json:"max_stage"`
	// AI is W_AI/T, the additive increase in Mb/s (0: the line rate
	// ÷ 2500, the ns-3 runs' 10 Mb/s per 25 Gb/s of link).
	AI float64 `json:"ai_mbps"`
	// BaseRTT is T, µs: the base round trip, which turns queue bytes
	// into utilisation and caps the EWMA's step (default 10).
	BaseRTT float64 `json:"base_rtt_us"`
	// Hops is the INT records each request reserves (default 5, the
	// ns-3 model's maxHop; at most rocev2.INTMaxHops).
	Hops int `json:"int_hops"`
	// FastReact updates the rate on every ACK with INT, committing the
	// reference rate once per round trip; off, only the once-per-round-
	// trip updates change the rate (default on, the ns-3 runs' hp mode).
	FastReact bool `json:"fast_react"`
	// MinRate is the lowest rate, Mb/s (default 100, the ns-3 runs').
	MinRate float64 `json:"min_rate_mbps"`
	// BurstBytes is the per-QP token bucket's size (0: 16 KiB).
	BurstBytes int `json:"burst_bytes,omitempty"`
	// Window bounds each QP's bytes in flight to its rate × T, the
	// paper's W beside the pacing at W/T (the ns-3 runs' has_win and
	// var_win: the base BDP scaled by rate ÷ line). Off, only the rate
	// paces, and a QP's first round trip at the line rate is bounded
	// only by its transport's window. T must then be the fabric's
	// largest base round trip, as ns-3 sets it, or the window caps
	// every flow below its rate (default off).
	Window bool `json:"window,omitempty"`
}

// DefaultHPCCConfig returns the paper's and the ns-3 runs' parameters.
func DefaultHPCCConfig() HPCCConfig {
	return HPCCConfig{Eta: 0.95, MaxStage: 5, BaseRTT: 10, Hops: rocev2.INTDefaultMax, FastReact: true, MinRate: 100}
}

// Validate checks the ranges.
func (c HPCCConfig) Validate() error {
	switch {
	case !(c.Eta > 0 && c.Eta <= 1):
		return fmt.Errorf("eta %v: want more than 0, at most 1", c.Eta)
	case !(c.AI >= 0):
		return fmt.Errorf("ai %v Mb/s: want 0 (derived) or more", c.AI)
	case !(c.BaseRTT > 0):
		return fmt.Errorf("base_rtt %v µs: want more than 0", c.BaseRTT)
	case c.Hops < 1 || c.Hops > rocev2.INTMaxHops:
		return fmt.Errorf("int_hops %d: want 1 to %d", c.Hops, rocev2.INTMaxHops)
	case !(c.MinRate > 0):
		return fmt.Errorf("min_rate %v Mb/s: want more than 0", c.MinRate)
	case c.BurstBytes < 0:
		return fmt.Errorf("burst %d bytes: want 0 (16 KiB) or more", c.BurstBytes)
	}
	return nil
}

// HPCCStats are an HPCC instance's counters, plain fields the worker's
// goroutine writes.
type HPCCStats struct {
	Echoes     uint64 // ACKs with INT
	Updates    uint64 // of those, once-per-round-trip updates (the reference rate committed)
	Fast       uint64 // per-ACK updates that left the reference rate (FastReact)
	Mult       uint64 // updates that were multiplicative: U ≥ η or maxStage reached
	Additive   uint64 // updates that added W_AI
	PathChange uint64 // echoes whose hop count differed from the last: records restarted, no update
	Stale      uint64 // echoes no hop of which had moved on (no time passed): no update
	WindowFull uint64 // times a QP's bytes in flight had reached its window (Window): it waited
}

// hpState is one QP's HPCC state.
type hpState struct {
	b      bucket
	rate   float64 // bit/s, R
	rc     float64 // bit/s, the reference rate: Wc/T
	u      float64 // the EWMA of the path's utilisation, U
	stage  uint32  // additive increases in a row
	last   psn.PSN // lastUpdateSeq: a full update when an ACK passes it
	init   bool    // last and hops hold a first echo
	nhops  uint8
	hops   [rocev2.INTMaxHops]rocev2.INTHop // the last records, per hop
	opened bool
	rateLog
}

// HPCC is HPCC (Li et al., SIGCOMM 2019, Algorithm 1): per QP, a rate
// set from the utilisation of the most loaded link of its path, which
// the switches stamp into its requests as INT (tor/inband) and its peer
// echoes in ACKs (nic.INTSampler): U = max over hops of
// min(qlen, qlen')/(B·T) + txRate/B, smoothed over a base RTT T; the
// rate is the reference rate divided by U/η plus W_AI/T when U ≥ η or
// after maxStage additive steps, else the reference plus W_AI/T; the
// reference moves once a round trip. It paces the QP with a token
// bucket at that rate. It ignores CE marks and CNPs. Nothing on the
// packet path allocates. Create one per endpoint with NewHPCC; it
// belongs to the endpoint's worker and is not safe for concurrent use.
type HPCC struct {
	cfg               HPCCConfig
	line, minRate, ai float64 // bit/s
	t                 float64 // ns
	burst             int64
	st                []hpState
	stats             HPCCStats
}

// NewHPCC returns HPCC for an endpoint whose port sends at lineBps bits
// per second, the rate every QP starts at (HPCC starts flows at the line
// rate) and never passes.
func NewHPCC(lineBps uint64, c HPCCConfig) (*HPCC, error) {
	if lineBps == 0 {
		return nil, fmt.Errorf("hpcc: no line rate")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("hpcc: %w", err)
	}
	if c.BurstBytes == 0 {
		c.BurstBytes = 16 << 10
	}
	line := float64(lineBps)
	if c.AI == 0 {
		c.AI = line / 2500 / 1e6
	}
	return &HPCC{cfg: c, line: line, minRate: min(c.MinRate*1e6, line), ai: c.AI * 1e6,
		t: c.BaseRTT * 1e3, burst: int64(c.BurstBytes)}, nil
}

// Name implements nic.CC.
func (h *HPCC) Name() string { return "hpcc" }

// Config returns the configuration in use (AI derived).
func (h *HPCC) Config() HPCCConfig { return h.cfg }

// LineBps returns the line rate.
func (h *HPCC) LineBps() uint64 { return uint64(h.line) }

// Init implements nic.CC.
func (h *HPCC) Init(n int) { h.st = make([]hpState, n) }

// StateBytes implements nic.CC.
func (h *HPCC) StateBytes() int { return int(reflect.TypeFor[hpState]().Size()) }

// Open implements nic.CC: q starts at the line rate with a full bucket.
func (h *HPCC) Open(q *nic.QP) {
	h.st[q.Index()] = hpState{b: bucket{tokens: h.burst, last: -1}, rate: h.line, rc: h.line,
		opened: true, rateLog: rateLog{now: -1, min: h.line}}
}

// Stats returns the counters.
func (h *HPCC) Stats() HPCCStats { return h.stats }

// Rate returns q's current rate in bits/s.
func (h *HPCC) Rate(q *nic.QP) float64 { return h.st[q.Index()].rate }

// U returns q's smoothed utilisation.
func (h *HPCC) U(q *nic.QP) float64 { return h.st[q.Index()].u }

// Summary returns the rate summary over the opened QPs, as DCQCN's.
func (h *HPCC) Summary() RateSummary {
	return summarize(h.st, func(r *hpState) (bool, *rateLog, float64) { return r.opened, &r.rateLog, r.rate })
}

func (h *HPCC) setTime(r *hpState, now int64) {
	if r.now < 0 {
		r.now, r.open = now, now
	}
	if now <= r.now {
		return
	}
	r.area += r.rate * float64(now-r.now)
	r.b.refill(now, uint64(r.rate), h.burst)
	r.now = now
}

// Ready implements nic.CC.
func (h *HPCC) Ready(q *nic.QP, now int64) int64 {
	r := &h.st[q.Index()]
	h.setTime(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rate), h.burst)
	}
	if h.cfg.Window && h.windowFull(q, r) {
		// The endpoint wakes a parked QP by timer only: look again
		// an eighth of a base round trip on, by when ACKs will have
		// come (ns-3 looks on every ACK).
		h.stats.WindowFull++
		return now + max(int64(h.t)/8, 1)
	}
	return r.b.ready(now, uint64(r.rate))
}

// Probe implements nic.RTTSampler for the window alone: each packet in
// the second half of q's window asks for an ACK, so that the window
// slides packet by packet as in ns-3, which acknowledges every packet;
// the responder would otherwise acknowledge only every 16th (gbn), and
// a window of fewer would wait for the retransmission timer.
func (h *HPCC) Probe(q *nic.QP, p psn.PSN, _ int, _ bool) bool {
	if !h.cfg.Window {
		return false
	}
	r := &h.st[q.Index()]
	return 2*float64(p.Add(1).Diff(q.Una())*q.MTU()) >= r.rate*h.t/8e9
}

// Requested implements nic.RTTSampler; HPCC's signal is INT.
func (h *HPCC) Requested(*nic.QP, int64, psn.PSN, int, bool, bool) {}

// Acked implements nic.RTTSampler; HPCC's signal is INT.
func (h *HPCC) Acked(*nic.QP, int64, psn.PSN) {}

// windowFull reports whether q's bytes in flight, its unacknowledged
// packets at the MTU, have reached W = R·T, at least one packet (ns-3's
// GetWin never returns less than 1 byte).
func (h *HPCC) windowFull(q *nic.QP, r *hpState) bool {
	inflight := q.SndMax().Diff(q.Una()) * q.MTU()
	return inflight > 0 && float64(inflight) >= r.rate*h.t/8e9
}

// Sent implements nic.CC: the frame takes its bytes from the bucket.
func (h *HPCC) Sent(q *nic.QP, now int64, n int) {
	r := &h.st[q.Index()]
	h.setTime(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rate), h.burst)
	}
	r.b.tokens -= int64(n)
}

// CNP implements nic.CC; HPCC's signal is INT, not ECN.
func (h *HPCC) CNP(*nic.QP, int64) {}

// Marked implements nic.CC; HPCC sends no CNPs.
func (h *HPCC) Marked(*nic.QP, int64) bool { return false }

// INTHops implements nic.INTSampler: every request asks for INT, as in
// the ns-3 model, where every data packet carries the header.
func (h *HPCC) INTHops(*nic.QP) int { return h.cfg.Hops }

// INT implements nic.INTSampler: NewAck of Algorithm 1 for an ACK that
// acknowledges up to a, with q's next PSN as snd_nxt.
func (h *HPCC) INT(q *nic.QP, now int64, a psn.PSN, t rocev2.INT) {
	r := &h.st[q.Index()]
	h.setTime(r, now)
	h.update(r, a, q.SndMax(), t)
}

// update is NewAck: MeasureInflight, then ComputeWind in rate form, a
// full update (the reference moves, lastUpdateSeq := sndNxt) when the
// ACK passes lastUpdateSeq, else a fast one (the ns-3 model's
// FastReactHp) when FastReact is on.
func (h *HPCC) update(r *hpState, a, sndNxt psn.PSN, t rocev2.INT) {
	h.stats.Echoes++
	n := t.Hops()
	if !r.init || n != int(r.nhops) {
		if r.init {
			h.stats.PathChange++
		}
		h.keep(r, t)
		r.init, r.last = true, sndNxt
		return
	}
	full := r.last.LessEq(a) // ns-3: ack.seq (the next byte expected) > lastUpdateSeq
	if !full && !h.cfg.FastReact {
		h.keep(r, t)
		return
	}
	u, ok := h.measure(r, t)
	if !ok {
		h.stats.Stale++
		return
	}
	rate, stage := h.compute(r, u)
	r.rate = rate
	r.min = min(r.min, rate)
	if full {
		r.rc, r.stage, r.last = rate, stage, sndNxt
		h.stats.Updates++
	} else {
		h.stats.Fast++
	}
}

// keep stores t's records as the last ones seen.
func (h *HPCC) keep(r *hpState, t rocev2.INT) {
	r.nhops = uint8(t.Hops())
	for i := range t.Hops() {
		r.hops[i] = t.Hop(i)
	}
}

// measure is MeasureInflight: each hop's utilisation
// min(qlen, qlen')/(B·T) + txRate/B from its record and the last one,
// the largest with its interval τ, folded into U with weight τ/T (τ
// capped at T). It keeps t's records; ok is false when no hop's clock
// moved (nothing to measure).
func (h *HPCC) measure(r *hpState, t rocev2.INT) (float64, bool) {
	var big, tau float64
	ok := false
	for i := range int(r.nhops) {
		cur, prev := t.Hop(i), r.hops[i]
		dt := float64(cur.TS - prev.TS) // uint32: the clock wraps
		if dt <= 0 || cur.RateMbps == 0 {
			continue
		}
		b := float64(cur.RateMbps) * 1e6
		tx := float64(cur.TxBytes-prev.TxBytes) * 8 / dt * 1e9
		u := float64(min(cur.QLen, prev.QLen))*8/(b*h.t*1e-9) + tx/b
		if !ok || u > big {
			big, tau = u, dt
		}
		ok = true
		r.hops[i] = cur
	}
	if !ok {
		return 0, false
	}
	tau = min(tau, h.t)
	r.u = (r.u*(h.t-tau) + big*tau) / h.t
	return r.u, true
}

// compute is ComputeWind in rate form (R = W/T): multiplicative towards
// η when U ≥ η or after MaxStage additive steps, additive otherwise,
// from the reference rate; clamped to [MinRate, line].
func (h *HPCC) compute(r *hpState, u float64) (rate float64, stage uint32) {
	if c := u / h.cfg.Eta; c >= 1 || r.stage >= h.cfg.MaxStage {
		h.stats.Mult++
		rate = r.rc/c + h.ai
	} else {
		h.stats.Additive++
		rate, stage = r.rc+h.ai, r.stage+1
	}
	return min(max(rate, h.minRate), h.line), stage
}

var (
	_ nic.CC         = (*HPCC)(nil)
	_ nic.INTSampler = (*HPCC)(nil)
)
