package cc

import (
	"fmt"
	"math"
	"reflect"

	"rocetor/nic"
	"rocetor/rocev2/psn"
)

// TimelyConfig is TIMELY's configuration: Algorithm 1 of Mittal et al.,
// "TIMELY: RTT-based Congestion Control for the Datacenter" (SIGCOMM
// 2015), with the paper's names. Take DefaultTimelyConfig and change what
// differs; a zero field means zero, except BurstBytes. The package doc
// says where each default comes from.
type TimelyConfig struct {
	// TLow is T_low, µs: below it every sample raises the rate by δ,
	// whatever the gradient (default 50).
	TLow uint32 `json:"t_low_us"`
	// THigh is T_high, µs: above it every sample cuts the rate by
	// β·(1 − T_high/RTT), whatever the gradient (default 500).
	THigh uint32 `json:"t_high_us"`
	// MinRTT is minRTT, µs: the network's fixed minimum round trip that
	// normalises the gradient (default 20).
	MinRTT uint32 `json:"min_rtt_us"`
	// Delta is δ, Mb/s: the additive increment (default 10).
	Delta uint32 `json:"delta_mbps"`
	// Beta is β: the multiplicative decrement factor (default 0.8).
	Beta float64 `json:"beta"`
	// Alpha is α: the EWMA weight of the newest RTT difference in the
	// smoothed one (default 0.875).
	Alpha float64 `json:"alpha"`
	// HAIThreshold is the completions in a row with a negative gradient
	// after which a gradient increase is HAIFactor·δ (default 5).
	HAIThreshold uint32 `json:"hai_threshold"`
	// HAIFactor is N, the hyperactive increase's multiple of δ (default 5).
	HAIFactor uint32 `json:"hai_factor"`
	// SegmentBytes is the segment, bytes of new data per completion
	// event: the requester asks for an ACK of the packet that ends each
	// one (and of each message's last) and times it (default 16 KiB; the
	// paper uses 16 to 64 KB).
	SegmentBytes uint32 `json:"segment_bytes"`
	// MinRate is the lowest rate, Mb/s (default 100).
	MinRate uint32 `json:"min_rate_mbps"`
	// BurstBytes is the per-QP token bucket's size (0: 16 KiB).
	BurstBytes int `json:"burst_bytes,omitempty"`
}

// DefaultTimelyConfig returns the paper's parameters (the package doc
// gives each one's source).
func DefaultTimelyConfig() TimelyConfig {
	return TimelyConfig{TLow: 50, THigh: 500, MinRTT: 20, Delta: 10, Beta: 0.8, Alpha: 0.875,
		HAIThreshold: 5, HAIFactor: 5, SegmentBytes: 16 << 10, MinRate: 100}
}

// Validate checks the ranges.
func (c TimelyConfig) Validate() error {
	switch {
	case c.THigh <= c.TLow:
		return fmt.Errorf("t_high %d µs: want more than t_low %d µs", c.THigh, c.TLow)
	case c.MinRTT < 1:
		return fmt.Errorf("min_rtt %d µs: want at least 1", c.MinRTT)
	case c.Delta < 1:
		return fmt.Errorf("delta %d Mb/s: want at least 1", c.Delta)
	case !(c.Beta > 0 && c.Beta <= 1):
		return fmt.Errorf("beta %v: want more than 0, at most 1", c.Beta)
	case !(c.Alpha > 0 && c.Alpha <= 1):
		return fmt.Errorf("alpha %v: want more than 0, at most 1", c.Alpha)
	case c.HAIThreshold < 1:
		return fmt.Errorf("hai_threshold %d: want at least 1", c.HAIThreshold)
	case c.HAIFactor < 1:
		return fmt.Errorf("hai_factor %d: want at least 1", c.HAIFactor)
	case c.SegmentBytes < 1:
		return fmt.Errorf("segment %d bytes: want at least 1", c.SegmentBytes)
	case c.MinRate < 1:
		return fmt.Errorf("min_rate %d Mb/s: want at least 1", c.MinRate)
	case c.BurstBytes < 0:
		return fmt.Errorf("burst %d bytes: want 0 (16 KiB) or more", c.BurstBytes)
	}
	return nil
}

// TimelyStats are a Timely instance's counters, plain fields the
// worker's goroutine writes; read them with Stats from that goroutine or
// after the worker stopped.
type TimelyStats struct {
	Samples   uint64 // RTT samples (completion events), each a rate update
	LowInc    uint64 // of those, below T_low: +δ
	HighCuts  uint64 // above T_high: ×(1 − β(1 − T_high/RTT))
	GradInc   uint64 // gradient ≤ 0: +δ
	HAIInc    uint64 // gradient ≤ 0 after HAIThreshold negative ones in a row: +N·δ
	GradCuts  uint64 // gradient > 0: ×(1 − β·gradient)
	Probes    uint64 // request packets timed (a segment's or a message's last)
	Skipped   uint64 // segment ends not timed: every probe slot waited for an ACK
	Karn      uint64 // timed packets not sampled: they, or an earlier PSN, were sent again
	Coalesced uint64 // timed packets not sampled: one ACK covered a later timed packet too
	RTTMin    int64  // ns, the lowest sample (0: none yet)
	RTTMax    int64  // ns, the highest sample
}

// timelyProbes is the timed packets a QP may wait for at once: a
// segment's ACK comes a round trip after it is sent, so with 16 KiB
// segments 8 cover 128 KiB in flight — the IRN seed's 120 KB path (seed
// 004 §4.1). A segment end that finds them all waiting is not timed
// (TimelyStats.Skipped): fewer samples, never a wrong one.
const timelyProbes = 8

type probe struct {
	psn psn.PSN
	at  int64 // ns, when it was sent
}

// tmState is one QP's TIMELY state, 224 bytes (StateBytes). The rate
// and the smoothed difference are float64 for the reason rpState's are.
type tmState struct {
	b       bucket
	rate    float64 // bit/s
	rttDiff float64 // ns, the EWMA of the RTT differences
	prevRTT int64   // ns, the last sample
	lastRTT int64
	neg     uint32 // completions in a row with a negative gradient
	seg     uint32 // bytes of new data since the last timed packet
	probes  [timelyProbes]probe
	head, n uint8 // the oldest waiting probe and how many wait
	sampled bool  // prevRTT holds a sample
	opened  bool
	rateLog
}

// Timely is TIMELY (Mittal et al., SIGCOMM 2015, Algorithm 1): per QP,
// a rate updated on each completion event from the RTT the event
// measures — additive increase below T_low, a cut above T_high, and in
// between increase or cut by the gradient of the RTT, normalised by
// minRTT, with hyperactive increase after HAIThreshold negative gradients
// in a row — pacing the QP with a token bucket at that rate. The RTT is
// the endpoint's (nic.RTTSampler): the time from sending a request
// packet, which asks for an ACK, to the ACK that covers it arriving, on
// the worker's clock. It ignores CE marks and CNPs. Nothing on the
// packet path allocates. Create one per endpoint with NewTimely; it
// belongs to the endpoint's worker and is not safe for concurrent use.
type Timely struct {
	cfg                  TimelyConfig
	line, minRate, delta float64 // bit/s
	tLow, tHigh          int64   // ns
	minRTT               float64 // ns
	burst                int64
	st                   []tmState
	stats                TimelyStats
}

// NewTimely returns TIMELY for an endpoint whose port sends at lineBps
// bits per second, the rate every QP starts at (the IRN seed starts
// every flow at the line rate, §4.1) and never passes.
func NewTimely(lineBps uint64, c TimelyConfig) (*Timely, error) {
	if lineBps == 0 {
		return nil, fmt.Errorf("timely: no line rate")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("timely: %w", err)
	}
	if c.BurstBytes == 0 {
		c.BurstBytes = 16 << 10
	}
	const us, mbps = 1000, 1e6
	line := float64(lineBps)
	return &Timely{cfg: c, line: line, minRate: min(float64(c.MinRate)*mbps, line),
		delta: float64(c.Delta) * mbps, tLow: int64(c.TLow) * us, tHigh: int64(c.THigh) * us,
		minRTT: float64(c.MinRTT) * us, burst: int64(c.BurstBytes)}, nil
}

// Name implements nic.CC.
func (t *Timely) Name() string { return "timely" }

// Config returns the configuration in use.
func (t *Timely) Config() TimelyConfig { return t.cfg }

// LineBps returns the line rate.
func (t *Timely) LineBps() uint64 { return uint64(t.line) }

// Init implements nic.CC.
func (t *Timely) Init(n int) { t.st = make([]tmState, n) }

// StateBytes implements nic.CC.
func (t *Timely) StateBytes() int { return int(reflect.TypeFor[tmState]().Size()) }

// Open implements nic.CC: q starts at the line rate with a full bucket
// and no RTT history.
func (t *Timely) Open(q *nic.QP) {
	t.st[q.Index()] = tmState{b: bucket{tokens: t.burst, last: -1}, rate: t.line, opened: true, rateLog: rateLog{now: -1, min: t.line}}
}

// Stats returns the counters.
func (t *Timely) Stats() TimelyStats { return t.stats }

// Rate returns q's current rate in bits/s.
func (t *Timely) Rate(q *nic.QP) float64 { return t.st[q.Index()].rate }

// RTT returns q's last RTT sample in ns (0: none yet).
func (t *Timely) RTT(q *nic.QP) int64 { return t.st[q.Index()].lastRTT }

// Summary returns the rate summary over the opened QPs, as DCQCN's.
func (t *Timely) Summary() RateSummary {
	return summarize(t.st, func(r *tmState) (bool, *rateLog, float64) { return r.opened, &r.rateLog, r.rate })
}

// setTime moves r to now, adding the rate over the interval to the mean
// and refilling the bucket at the rate in force.
func (t *Timely) setTime(r *tmState, now int64) {
	if r.now < 0 {
		r.now, r.open = now, now
	}
	if now <= r.now {
		return
	}
	r.area += r.rate * float64(now-r.now)
	r.b.refill(now, uint64(r.rate), t.burst)
	r.now = now
}

// Ready implements nic.CC.
func (t *Timely) Ready(q *nic.QP, now int64) int64 {
	r := &t.st[q.Index()]
	t.setTime(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rate), t.burst)
	}
	return r.b.ready(now, uint64(r.rate))
}

// Sent implements nic.CC: the frame takes its bytes from the bucket.
func (t *Timely) Sent(q *nic.QP, now int64, n int) {
	r := &t.st[q.Index()]
	t.setTime(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rate), t.burst)
	}
	r.b.tokens -= int64(n)
}

// CNP implements nic.CC; TIMELY's signal is the RTT, not ECN.
func (t *Timely) CNP(*nic.QP, int64) {}

// Marked implements nic.CC; TIMELY sends no CNPs.
func (t *Timely) Marked(*nic.QP, int64) bool { return false }

// Probe implements nic.RTTSampler: a new packet that completes a segment
// asks for an ACK, while a probe slot is free.
func (t *Timely) Probe(q *nic.QP, _ psn.PSN, payload int, retx bool) bool {
	r := &t.st[q.Index()]
	return !retx && r.n < timelyProbes && uint64(r.seg)+uint64(payload) >= uint64(t.cfg.SegmentBytes)
}

// Requested implements nic.RTTSampler: a new packet that asks for an
// ACK ends a segment and is timed; a packet sent again voids the
// waiting probes at or after its PSN (Karn's rule: its ACK could answer
// either copy, and a later PSN's waits for it).
func (t *Timely) Requested(q *nic.QP, now int64, p psn.PSN, payload int, retx, ackReq bool) {
	r := &t.st[q.Index()]
	if retx {
		for r.n > 0 && p.LessEq(r.probes[(r.head+r.n-1)%timelyProbes].psn) {
			r.n--
			t.stats.Karn++
		}
		return
	}
	r.seg = uint32(min(uint64(r.seg)+uint64(payload), math.MaxUint32))
	if !ackReq {
		return
	}
	r.seg = 0
	if r.n == timelyProbes {
		t.stats.Skipped++
		return
	}
	r.probes[(r.head+r.n)%timelyProbes] = probe{psn: p, at: now}
	r.n++
	t.stats.Probes++
}

// Acked implements nic.RTTSampler: the ACK completes the probes up to a;
// the latest of them is the completion event and its RTT the sample (an
// earlier one's ACK was coalesced into this one, and its RTT would count
// the wait).
func (t *Timely) Acked(q *nic.QP, now int64, a psn.PSN) {
	r := &t.st[q.Index()]
	at, got := int64(0), false
	for r.n > 0 && r.probes[r.head].psn.LessEq(a) {
		if got {
			t.stats.Coalesced++
		}
		at, got = r.probes[r.head].at, true
		r.head = (r.head + 1) % timelyProbes
		r.n--
	}
	if got {
		t.setTime(r, now)
		t.sample(r, now-at)
	}
}

// sample is Algorithm 1 for one completion event with RTT rtt (ns).
func (t *Timely) sample(r *tmState, rtt int64) {
	st := &t.stats
	st.Samples++
	if st.RTTMin == 0 || rtt < st.RTTMin {
		st.RTTMin = rtt
	}
	st.RTTMax = max(st.RTTMax, rtt)
	if !r.sampled {
		r.prevRTT, r.sampled = rtt, true // the first difference is 0
	}
	r.lastRTT = rtt
	diff := float64(rtt - r.prevRTT)
	r.prevRTT = rtt
	r.rttDiff = (1-t.cfg.Alpha)*r.rttDiff + t.cfg.Alpha*diff
	g := r.rttDiff / t.minRTT
	if g < 0 {
		r.neg++
	} else {
		r.neg = 0
	}
	switch {
	case rtt < t.tLow:
		r.rate += t.delta
		st.LowInc++
	case rtt > t.tHigh:
		r.rate *= 1 - t.cfg.Beta*(1-float64(t.tHigh)/float64(rtt))
		st.HighCuts++
	case g <= 0 && r.neg >= t.cfg.HAIThreshold:
		r.rate += float64(t.cfg.HAIFactor) * t.delta
		st.HAIInc++
	case g <= 0:
		r.rate += t.delta
		st.GradInc++
	default:
		r.rate *= 1 - t.cfg.Beta*g
		st.GradCuts++
	}
	r.rate = min(max(r.rate, t.minRate), t.line)
	r.min = min(r.min, r.rate)
}

var (
	_ nic.CC         = (*Timely)(nil)
	_ nic.RTTSampler = (*Timely)(nil)
)
