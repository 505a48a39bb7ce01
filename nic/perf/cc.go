package perf

import (
	"rocetor/nic"
	"rocetor/nic/cc"
)

// CCCounters are the congestion control's figures of one endpoint: the
// signals (endpoint counters, whatever the CC) and, with --cc dcqcn,
// timely or hpcc, its own counters and the QPs' rates. TIMELY's cuts (above
// T_high and by the gradient) are rate_cuts, its increases below T_low
// and on a negative gradient additive_increase, its hyperactive ones
// hyper_increase.
type CCCounters struct {
	Name         string          `json:"name"`
	RateCuts     uint64          `json:"rate_cuts"`         // reaction point: rate decreases
	CNPsHeld     uint64          `json:"cnps_held"`         // notification point: marks not answered (min_time_between_cnps)
	FastRecovery uint64          `json:"fast_recovery"`     // increase events in fast recovery
	AdditiveInc  uint64          `json:"additive_increase"` // increase events in additive increase
	HyperInc     uint64          `json:"hyper_increase"`    // increase events in hyper increase
	TimerEvents  uint64          `json:"timer_events"`      // increase events of rpg_time_reset
	ByteEvents   uint64          `json:"byte_events"`       // increase events of rpg_byte_reset
	LineBps      uint64          `json:"line_bps"`          // the rate QPs start at
	Rate         *cc.RateSummary `json:"rate,omitempty"`    // the QPs' rates (DCQCN, TIMELY)
	// TIMELY's RTT samples (completion events) and their range.
	RTTSamples uint64  `json:"rtt_samples,omitempty"`
	RTTMinUS   float64 `json:"rtt_min_us,omitempty"`
	RTTMaxUS   float64 `json:"rtt_max_us,omitempty"`
	// HPCC's ACKs with INT; its multiplicative updates are rate_cuts,
	// its additive ones additive_increase.
	INTEchoes uint64 `json:"int_echoes,omitempty"`
	// HPCC's waits at a full window (HPCCConfig.Window).
	WindowFull uint64 `json:"window_full,omitempty"`
}

// CCCountersOf reads a stopped endpoint's congestion control (nil
// with none): roceperf's report and the simulator's (tor/lab/simnet).
func CCCountersOf(c nic.CC) *CCCounters { return ccCountersOf(c) }

func ccCountersOf(c nic.CC) *CCCounters {
	switch d := c.(type) {
	case *cc.DCQCN:
		st, s := d.Stats(), d.Summary()
		return &CCCounters{Name: d.Name(), RateCuts: st.Cuts, CNPsHeld: st.CNPsHeld, FastRecovery: st.FastRecovery,
			AdditiveInc: st.AdditiveInc, HyperInc: st.HyperInc, TimerEvents: st.TimerEvents, ByteEvents: st.ByteEvents,
			LineBps: d.LineBps(), Rate: &s}
	case *cc.Timely:
		st, s := d.Stats(), d.Summary()
		return &CCCounters{Name: d.Name(), RateCuts: st.HighCuts + st.GradCuts, AdditiveInc: st.LowInc + st.GradInc,
			HyperInc: st.HAIInc, LineBps: d.LineBps(), Rate: &s, RTTSamples: st.Samples,
			RTTMinUS: float64(st.RTTMin) / 1e3, RTTMaxUS: float64(st.RTTMax) / 1e3}
	case *cc.HPCC:
		st, s := d.Stats(), d.Summary()
		return &CCCounters{Name: d.Name(), RateCuts: st.Mult, AdditiveInc: st.Additive, LineBps: d.LineBps(), Rate: &s,
			INTEchoes: st.Echoes, WindowFull: st.WindowFull}
	case *cc.Fixed:
		return &CCCounters{Name: d.Name()}
	}
	return nil
}
