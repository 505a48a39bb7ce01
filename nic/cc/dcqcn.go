package cc

import (
	"fmt"
	"math"
	"reflect"

	"rocetor/nic"
)

// DCQCNConfig is DCQCN's configuration with ConnectX's parameter names
// (the sysfs files under roce_rp and roce_np, mlxreg and NVConfig), units
// and defaults, so that an operator's tuning carries over: each field
// names its parameter. Take DefaultDCQCNConfig and change what differs;
// a zero field means zero, not the default (rate_to_set_on_first_cnp 0
// and clamp_tgt_rate false are meaningful), except BurstBytes.
type DCQCNConfig struct {
	// Reaction point: rate increase.

	// RPGTimeReset is rpg_time_reset, µs: the rate increase timer — an
	// increase event each period without a rate cut (default 300).
	RPGTimeReset uint32 `json:"rpg_time_reset"`
	// RPGByteReset is rpg_byte_reset, bytes: an increase event each time
	// the QP has sent this much since the last one or the last cut; 0
	// disables the byte counter (default 32767).
	RPGByteReset uint32 `json:"rpg_byte_reset"`
	// RPGThreshold is rpg_threshold: the increase events each counter
	// (timer, bytes) counts in fast recovery before the QP moves on to
	// additive increase, and hyper increase once both passed it
	// (default 1; the paper's F is 5).
	RPGThreshold uint32 `json:"rpg_threshold"`
	// RPGAIRate is rpg_ai_rate, Mb/s: the target rate's step in additive
	// increase (default 5).
	RPGAIRate uint32 `json:"rpg_ai_rate"`
	// RPGHAIRate is rpg_hai_rate, Mb/s: the step in hyper increase, times
	// the hyper stage (default 50).
	RPGHAIRate uint32 `json:"rpg_hai_rate"`
	// ClampTgtRate is clamp_tgt_rate: every cut first sets the target
	// rate to the current rate (the paper's RT ← RC; default false).
	ClampTgtRate bool `json:"clamp_tgt_rate"`
	// ClampTgtRateAfterTimeInc is clamp_tgt_rate_after_time_inc: a cut
	// sets the target rate to the current rate when the timer raised the
	// rate since the last cut, not only the byte counter (default true).
	ClampTgtRateAfterTimeInc bool `json:"clamp_tgt_rate_after_time_inc"`

	// Reaction point: rate decrease.

	// RPGGD is rpg_gd, log2 of the divisor of alpha in the cut, alpha in
	// ConnectX's 10-bit fixed point: a cut multiplies the rate by
	// 1 − alpha·2^(10−rpg_gd), so 11 (the default) is the paper's
	// 1 − alpha/2 and 10 cuts by alpha (10 or 11).
	RPGGD uint32 `json:"rpg_gd"`
	// RPGMinDecFac is rpg_min_dec_fac, %: a cut leaves at least this
	// share of the rate (default 50; 100 disables cuts).
	RPGMinDecFac uint32 `json:"rpg_min_dec_fac"`
	// RPGMinRate is rpg_min_rate, Mb/s: the lowest rate (default 1).
	RPGMinRate uint32 `json:"rpg_min_rate"`
	// RateToSetOnFirstCNP is rate_to_set_on_first_cnp, Mb/s: the current
	// and target rate a QP's first CNP sets before it cuts; 0 is the
	// line rate (default 0).
	RateToSetOnFirstCNP uint32 `json:"rate_to_set_on_first_cnp"`
	// RateReduceMonitorPeriod is rate_reduce_monitor_period, µs: at most
	// one cut per period; a CNP within a period of the last cut cuts at
	// the period's end (default 4).
	RateReduceMonitorPeriod uint32 `json:"rate_reduce_monitor_period"`

	// Reaction point: alpha.

	// DCETCPG is dce_tcp_g, in 1/1024: alpha's weight, so the paper's
	// gain g is (1024 − dce_tcp_g)/1024. Every dce_tcp_rtt alpha becomes
	// (1−g)·alpha + g if a CNP arrived in the period, else (1−g)·alpha
	// (default 1019, g ≈ 1/205; the paper's 1/256 is 1020).
	DCETCPG uint32 `json:"dce_tcp_g"`
	// DCETCPRTT is dce_tcp_rtt, µs: the alpha update period (default 1;
	// the paper's K is 55).
	DCETCPRTT uint32 `json:"dce_tcp_rtt"`
	// InitialAlphaValue is initial_alpha_value, in 1/1024: alpha on a
	// QP's first CNP (default 1023).
	InitialAlphaValue uint32 `json:"initial_alpha_value"`

	// Notification point.

	// MinTimeBetweenCNPs is min_time_between_cnps, µs: a QP answers CE
	// marks with at most one CNP per period; marks in between are
	// counted and not answered (default 4).
	MinTimeBetweenCNPs uint32 `json:"min_time_between_cnps"`

	// BurstBytes is the depth of each QP's token bucket, which paces it
	// at its current rate (0: 16 KiB, as Fixed). Not a ConnectX
	// parameter: a NIC's rate limiter spaces packets in hardware.
	BurstBytes int `json:"burst_bytes,omitempty"`
}

// DefaultDCQCNConfig returns ConnectX's defaults: NVIDIA's "DCQCN
// parameters" table (ConnectX-4 and later), and the same values an
// mlxconfig query of a ConnectX NIC lists (RPG_TIME_RESET_P1 300, …,
// MIN_TIME_BETWEEN_CNPS_P1 4, CNP_DSCP_P1 48, CNP_802P_PRIO_P1 6).
func DefaultDCQCNConfig() DCQCNConfig {
	return DCQCNConfig{
		RPGTimeReset: 300, RPGByteReset: 32767, RPGThreshold: 1, RPGAIRate: 5, RPGHAIRate: 50,
		ClampTgtRate: false, ClampTgtRateAfterTimeInc: true,
		RPGGD: 11, RPGMinDecFac: 50, RPGMinRate: 1, RateToSetOnFirstCNP: 0, RateReduceMonitorPeriod: 4,
		DCETCPG: 1019, DCETCPRTT: 1, InitialAlphaValue: 1023,
		MinTimeBetweenCNPs: 4,
	}
}

// Validate checks every parameter against the range ConnectX accepts.
func (c DCQCNConfig) Validate() error {
	switch {
	case c.RPGTimeReset < 1 || c.RPGTimeReset > 131071:
		return fmt.Errorf("rpg_time_reset %d µs: want 1 to 131071", c.RPGTimeReset)
	case c.RPGByteReset > 32767:
		return fmt.Errorf("rpg_byte_reset %d bytes: want 0 (off) to 32767", c.RPGByteReset)
	case c.RPGThreshold < 1 || c.RPGThreshold > 31:
		return fmt.Errorf("rpg_threshold %d: want 1 to 31", c.RPGThreshold)
	case c.RPGGD != 10 && c.RPGGD != 11:
		return fmt.Errorf("rpg_gd %d: want 10 or 11", c.RPGGD)
	case c.RPGMinDecFac > 100:
		return fmt.Errorf("rpg_min_dec_fac %d%%: want 0 to 100", c.RPGMinDecFac)
	case c.RPGMinRate < 1:
		return fmt.Errorf("rpg_min_rate %d Mb/s: want at least 1", c.RPGMinRate)
	case c.RateReduceMonitorPeriod < 1:
		return fmt.Errorf("rate_reduce_monitor_period %d µs: want at least 1", c.RateReduceMonitorPeriod)
	case c.DCETCPG > 1023:
		return fmt.Errorf("dce_tcp_g %d: want 0 to 1023", c.DCETCPG)
	case c.DCETCPRTT < 1 || c.DCETCPRTT > 131071:
		return fmt.Errorf("dce_tcp_rtt %d µs: want 1 to 131071", c.DCETCPRTT)
	case c.InitialAlphaValue < 1 || c.InitialAlphaValue > 1023:
		return fmt.Errorf("initial_alpha_value %d: want 1 to 1023", c.InitialAlphaValue)
	case c.MinTimeBetweenCNPs > 4095:
		return fmt.Errorf("min_time_between_cnps %d µs: want 0 to 4095", c.MinTimeBetweenCNPs)
	case c.BurstBytes < 0:
		return fmt.Errorf("burst %d bytes: want 0 (16 KiB) or more", c.BurstBytes)
	}
	return nil
}

// DCQCNStats are a DCQCN instance's counters, plain fields the worker's
// goroutine writes; read them with Stats from that goroutine or after
// the worker stopped.
type DCQCNStats struct {
	// notification point
	Marks     uint64 // CE-marked packets the endpoint handed to Marked
	CNPsAsked uint64 // of those, answered with a CNP
	CNPsHeld  uint64 // of those, not answered: a CNP went less than min_time_between_cnps before
	// reaction point
	CNPs         uint64 // CNPs received
	FirstCNPs    uint64 // QPs that got their first CNP (their rate limiter started)
	Cuts         uint64 // rate cuts (at most one per rate_reduce_monitor_period per QP)
	DeferredCuts uint64 // of those, for CNPs that arrived within a period of the last cut
	FastRecovery uint64 // increase events in fast recovery
	AdditiveInc  uint64 // increase events in additive increase
	HyperInc     uint64 // increase events in hyper increase
	TimerEvents  uint64 // increase events of the rpg_time_reset timer
	ByteEvents   uint64 // increase events of the rpg_byte_reset counter
	AlphaUpdates uint64 // alpha updates (every dce_tcp_rtt after a QP's first CNP)
	AlphaSkipped uint64 // of those, periods without a CNP applied in one step (pow)
	TimerSkipped uint64 // of the timer events, ones applied in one step at the line rate
}

// RateSummary sums up the current rates of a set of QPs in bits/s: the
// lowest rate any QP was held to, the mean over QPs of each QP's
// time-weighted mean rate from its Open to the last time its congestion
// control was consulted, and the mean over QPs of their rates at the end.
// Before its first CNP a QP's rate is the line rate.
type RateSummary struct {
	QPs   int     `json:"qps"`
	Min   float64 `json:"min_bps"`
	Mean  float64 `json:"mean_bps"`
	Final float64 `json:"final_bps"`
}

// DCQCN is the congestion control of Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments" (SIGCOMM 2015), as ConnectX exposes it:
// per QP, the notification point (Marked: at most one CNP per
// min_time_between_cnps) and the reaction point (CNP: rate cut, alpha,
// fast recovery, additive and hyper increase by timer and byte counter),
// pacing each QP with a token bucket at its current rate. The package
// doc says how it follows the paper, ConnectX and ns-3.
//
// It keeps no timers: the alpha period, the rate increase timer and a
// deferred cut are evaluated from the time of each call (Ready, Sent,
// CNP, Marked) — the events due since the last call are applied in time
// order first, so the result is the one a timer-driven implementation
// reaches, on any clock, deterministically. Nothing on the packet path
// allocates. Create one per endpoint with NewDCQCN; it belongs to the
// endpoint's worker and is not safe for concurrent use.
type DCQCN struct {
	cfg   DCQCNConfig
	line  float64 // bit/s
	burst int64
	// periods in ns and the derived rates in bit/s
	tInc, tAlpha, tCut, tCNP int64
	ai, hai, minRate, first  float64
	g, gd, minDec            float64
	st                       []rpState
	stats                    DCQCNStats
}

// rpState is one QP's DCQCN state. Rates and alpha are float64: a cut,
// fast recovery's halving and the alpha updates are products and means
// that integer bit/s would round at every step (and alpha's (1−g)^k over
// a quiet spell needs pow); float64 keeps them within 1e-15 of the
// algorithm's values, which the differential test checks, and costs a
// software NIC nothing it would notice. 136 bytes per QP (StateBytes).
type rpState struct {
	b       bucket
	rc, rt  float64 // current and target rate, bit/s
	alpha   float64
	limited bool   // a CNP arrived: the limiter, its timers and alpha run
	cnpSeen bool   // a CNP arrived in the current alpha period
	cutDue  bool   // a CNP waits for its cut at cutAt
	opened  bool   // Open was called
	t, bc   uint32 // increase events of the timer and byte counter since the last cut
	bytes   uint64 // bytes sent since the last byte event or cut
	alphaAt int64  // next alpha update
	incAt   int64  // next timer increase event
	cutAt   int64  // the earliest time of the next cut
	cnpAt   int64  // notification point: when this QP last asked for a CNP
	cnpSent bool   // cnpAt is valid
	rateLog
}

// NewDCQCN returns DCQCN for an endpoint whose port sends at lineBps bits
// per second (the rate every QP starts at and returns to).
func NewDCQCN(lineBps uint64, c DCQCNConfig) (*DCQCN, error) {
	if lineBps == 0 {
		return nil, fmt.Errorf("dcqcn: no line rate")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("dcqcn: %w", err)
	}
	if c.BurstBytes == 0 {
		c.BurstBytes = 16 << 10
	}
	const us, mbps = 1000, 1e6
	d := &DCQCN{cfg: c, line: float64(lineBps), burst: int64(c.BurstBytes),
		tInc: int64(c.RPGTimeReset) * us, tAlpha: int64(c.DCETCPRTT) * us,
		tCut: int64(c.RateReduceMonitorPeriod) * us, tCNP: int64(c.MinTimeBetweenCNPs) * us,
		ai: float64(c.RPGAIRate) * mbps, hai: float64(c.RPGHAIRate) * mbps,
		minRate: min(float64(c.RPGMinRate)*mbps, float64(lineBps)),
		first:   float64(lineBps),
		g:       float64(1024-c.DCETCPG) / 1024,
		gd:      math.Ldexp(1, 10-int(c.RPGGD)),
		minDec:  float64(c.RPGMinDecFac) / 100,
	}
	if c.RateToSetOnFirstCNP != 0 {
		d.first = min(max(float64(c.RateToSetOnFirstCNP)*mbps, d.minRate), d.line)
	}
	return d, nil
}

// Name implements nic.CC.
func (d *DCQCN) Name() string { return "dcqcn" }

// Config returns the configuration in use.
func (d *DCQCN) Config() DCQCNConfig { return d.cfg }

// LineBps returns the line rate.
func (d *DCQCN) LineBps() uint64 { return uint64(d.line) }

// Init implements nic.CC.
func (d *DCQCN) Init(n int) { d.st = make([]rpState, n) }

// StateBytes implements nic.CC.
func (d *DCQCN) StateBytes() int { return int(reflect.TypeFor[rpState]().Size()) }

// Open implements nic.CC: q starts at the line rate with a full bucket
// and no rate limiter, as a NIC allocates one on a QP's first CNP.
func (d *DCQCN) Open(q *nic.QP) {
	d.st[q.Index()] = rpState{b: bucket{tokens: d.burst, last: -1}, rc: d.line, rt: d.line,
		opened: true, rateLog: rateLog{now: -1, min: d.line}}
}

// Stats returns the counters.
func (d *DCQCN) Stats() DCQCNStats { return d.stats }

// Rate returns q's current rate in bits/s as of the last call.
func (d *DCQCN) Rate(q *nic.QP) float64 { return d.st[q.Index()].rc }

// Alpha returns q's alpha as of the last call.
func (d *DCQCN) Alpha(q *nic.QP) float64 { return d.st[q.Index()].alpha }

// Summary returns the rate summary over the opened QPs. Call it from
// the worker's goroutine or after the worker stopped.
func (d *DCQCN) Summary() RateSummary {
	return summarize(d.st, func(r *rpState) (bool, *rateLog, float64) { return r.opened, &r.rateLog, r.rc })
}

// advance applies the events due in (r.now, now] in time order: a
// deferred cut, alpha updates and timer increase events; at one instant
// the cut goes first (it restarts the increase timer), then alpha (the
// cut uses alpha from before this period's update, the paper's order).
func (d *DCQCN) advance(r *rpState, now int64) {
	if r.now < 0 {
		r.now, r.open = now, now
	}
	if now <= r.now {
		return
	}
	for r.limited {
		next := min(r.alphaAt, r.incAt)
		if r.cutDue {
			next = min(next, r.cutAt)
		}
		if next > now {
			break
		}
		switch {
		case r.cutDue && r.cutAt == next:
			d.setTime(r, next)
			d.cut(r, next)
			d.stats.DeferredCuts++
		case r.alphaAt == next:
			d.alpha(r, now)
		default:
			d.setTime(r, next)
			d.timerEvents(r, now)
		}
	}
	d.setTime(r, now)
}

// setTime moves r to time t, adding rc over the interval to the mean and
// refilling the bucket at the rate in force.
func (d *DCQCN) setTime(r *rpState, t int64) {
	if t <= r.now {
		return
	}
	r.area += r.rc * float64(t-r.now)
	r.b.refill(t, uint64(r.rc), d.burst)
	r.now = t
}

// alpha applies the alpha update due at r.alphaAt and, in one step, the
// CNP-less ones that follow before the next other event or now (alpha
// alone changes, so nothing else needs them one by one).
func (d *DCQCN) alpha(r *rpState, now int64) {
	if r.cnpSeen {
		r.alpha = (1-d.g)*r.alpha + d.g
	} else {
		r.alpha *= 1 - d.g
	}
	r.cnpSeen = false
	r.alphaAt += d.tAlpha
	d.stats.AlphaUpdates++
	end := min(now, r.incAt)
	if r.cutDue {
		end = min(end, r.cutAt)
	}
	if r.alphaAt < end { // strictly before: at end the other event goes first
		k := (end - 1 - r.alphaAt) / d.tAlpha
		if k > 0 {
			r.alpha *= math.Pow(1-d.g, float64(k))
			r.alphaAt += k * d.tAlpha
			d.stats.AlphaUpdates += uint64(k)
			d.stats.AlphaSkipped += uint64(k)
		}
	}
}

// timerEvents applies the increase event of the timer due now (r.now ==
// r.incAt) and, once the QP is back at the line rate and past fast
// recovery (so that the stage no longer changes), the rest due before
// the next other event in one step. Below the line rate each event is
// applied on its own: a catch-up after an idle QP costs one step per
// rpg_time_reset until the rate is back, at most line/rpg_ai_rate.
func (d *DCQCN) timerEvents(r *rpState, now int64) {
	r.t++
	d.stats.TimerEvents++
	d.increase(r)
	r.incAt += d.tInc
	if r.rt < d.line || d.line-r.rc >= 1 || r.t <= d.cfg.RPGThreshold {
		return
	}
	end := min(now, r.alphaAt)
	if r.cutDue {
		end = min(end, r.cutAt)
	}
	if r.incAt < end {
		k := (end - 1 - r.incAt) / d.tInc
		if k > 0 {
			// At the line rate an event moves rc by less than a bit/s.
			r.t += uint32(min(k, math.MaxUint32-int64(r.t)))
			r.incAt += k * d.tInc
			d.stats.TimerEvents += uint64(k)
			d.stats.TimerSkipped += uint64(k)
			d.countStage(r, uint64(k))
		}
	}
}

// stage returns the increase stage the counters give: fast recovery
// while neither counter passed rpg_threshold, hyper increase once both
// did, additive increase in between; and the hyper stage i, by which
// both passed it. With the byte counter off, or a QP that sends nothing,
// the byte stage stays 0, so the timer alone leads to additive increase
// but never to hyper increase.
func (d *DCQCN) stage(r *rpState) (s int, i uint32) {
	f := d.cfg.RPGThreshold
	lo, hi := min(r.t, r.bc), max(r.t, r.bc)
	switch {
	case hi <= f:
		return stageFR, 0
	case lo > f:
		return stageHAI, lo - f
	}
	return stageAI, 0
}

const (
	stageFR = iota
	stageAI
	stageHAI
)

func (d *DCQCN) countStage(r *rpState, k uint64) {
	switch s, _ := d.stage(r); s {
	case stageFR:
		d.stats.FastRecovery += k
	case stageAI:
		d.stats.AdditiveInc += k
	default:
		d.stats.HyperInc += k
	}
}

// increase is one rate increase event, its counter already advanced:
// the target rate grows by the stage's step (none in fast recovery), up
// to the line rate, and the current rate moves half way to it.
func (d *DCQCN) increase(r *rpState) {
	s, i := d.stage(r)
	d.countStage(r, 1)
	switch s {
	case stageAI:
		r.rt += d.ai
	case stageHAI:
		r.rt += float64(i) * d.hai
	}
	r.rt = min(r.rt, d.line)
	r.rc = (r.rc + r.rt) / 2
}

// cut is the rate decrease at time now: the target clamps to the current
// rate (clamp_tgt_rate, or clamp_tgt_rate_after_time_inc when the timer
// raised the rate since the last cut), the current rate falls by
// alpha·2^(10−rpg_gd) but to no less than rpg_min_dec_fac of itself and
// rpg_min_rate, and the increase stages and timer restart.
func (d *DCQCN) cut(r *rpState, now int64) {
	if d.cfg.ClampTgtRate || d.cfg.ClampTgtRateAfterTimeInc && r.t > 0 {
		r.rt = r.rc
	}
	nr := max(r.rc*(1-r.alpha*d.gd), r.rc*d.minDec, d.minRate)
	r.rc = min(nr, r.rc)
	r.min = min(r.min, r.rc)
	r.t, r.bc, r.bytes = 0, 0, 0
	r.incAt = now + d.tInc
	r.cutAt = now + d.tCut
	r.cutDue = false
	d.stats.Cuts++
}

// Ready implements nic.CC.
func (d *DCQCN) Ready(q *nic.QP, now int64) int64 {
	r := &d.st[q.Index()]
	d.advance(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rc), d.burst)
	}
	return r.b.ready(now, uint64(r.rc))
}

// Sent implements nic.CC: the frame takes its bytes from the bucket and
// advances the byte counter.
func (d *DCQCN) Sent(q *nic.QP, now int64, n int) {
	r := &d.st[q.Index()]
	d.advance(r, now)
	if r.b.last < 0 {
		r.b.refill(now, uint64(r.rc), d.burst)
	}
	r.b.tokens -= int64(n)
	if !r.limited || d.cfg.RPGByteReset == 0 {
		return
	}
	r.bytes += uint64(n)
	for r.bytes >= uint64(d.cfg.RPGByteReset) {
		r.bytes -= uint64(d.cfg.RPGByteReset)
		r.bc++
		d.stats.ByteEvents++
		d.increase(r)
	}
}

// CNP implements nic.CC: the reaction point. A QP's first CNP starts its
// rate limiter at rate_to_set_on_first_cnp (0: the line rate) with alpha
// at initial_alpha_value — that CNP sets alpha rather than raising it —
// and starts the alpha period and the increase timer. Every CNP then
// cuts at once, or at the end of rate_reduce_monitor_period after the
// last cut if that is later; CNPs that arrive while a cut waits add
// nothing to it.
func (d *DCQCN) CNP(q *nic.QP, now int64) {
	r := &d.st[q.Index()]
	d.advance(r, now)
	d.stats.CNPs++
	if !r.limited {
		d.stats.FirstCNPs++
		r.limited = true
		r.rc, r.rt = d.first, d.first
		r.min = min(r.min, r.rc)
		r.alpha = float64(d.cfg.InitialAlphaValue) / 1024
		r.alphaAt = now + d.tAlpha
		r.cutAt = now
	} else {
		r.cnpSeen = true
	}
	switch {
	case r.cutDue:
	case now >= r.cutAt:
		d.cut(r, now)
	default:
		r.cutDue = true
	}
}

// Marked implements nic.CC: the notification point answers a CE mark
// with a CNP unless q asked for one less than min_time_between_cnps ago.
func (d *DCQCN) Marked(q *nic.QP, now int64) bool {
	r := &d.st[q.Index()]
	d.advance(r, now)
	d.stats.Marks++
	if r.cnpSent && now-r.cnpAt < d.tCNP {
		d.stats.CNPsHeld++
		return false
	}
	r.cnpAt, r.cnpSent = now, true
	d.stats.CNPsAsked++
	return true
}

var _ nic.CC = (*DCQCN)(nil)
