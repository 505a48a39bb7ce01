package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/netrt"
)

// netrtCollector exports the NetRT stages' counters per port, summed
// over the workers. Each worker has its own pool and buffer, within the
// port's budgets the workers share (netrt.Budgets): the bytes summed are
// the port's, but a peak is the sum of the workers' peaks, exact with
// one worker, an upper bound with more. Nothing is exported per flow.
type netrtCollector struct {
	ports []string
	srcs  []*netrt.SrcToR
	dsts  []*netrt.DstToR
}

// NewNetRT returns the collector of the rocetor_netrt_ series over
// every worker's source and destination ToR stages, in pairs; ports
// names the switch's ports in order.
func NewNetRT(ports []string, srcs []*netrt.SrcToR, dsts []*netrt.DstToR) prometheus.Collector {
	return &netrtCollector{ports: ports, srcs: srcs, dsts: dsts}
}

type (
	srcPort = netrt.SrcPortStats
	dstPort = netrt.DstPortStats
)

// The source ToR's series, on fabric ports (pause frames on host ports).
var srcMetrics = []portMetric[srcPort]{
	gaugeOf("netrt_pool_bytes", "Bytes in the duplicate pool of the fabric port.", func(p *srcPort) float64 { return float64(p.Bytes) }),
	gaugeOf("netrt_pool_entries", "Duplicates in the pool of the fabric port.", func(p *srcPort) float64 { return float64(p.Frames) }),
	gaugeOf("netrt_pool_peak_bytes", "High-water mark of pool_bytes since tord started.", func(p *srcPort) float64 { return float64(p.MaxBytes) }),
	gaugeOf("netrt_pool_hold_only_peak_bytes", "What pool_peak_bytes would have been had ACKs not retired duplicates early.", func(p *srcPort) float64 { return float64(p.HoldOnlyPeak) }),
	gaugeOf("netrt_pool_hold_only_lower", "1 when pool_hold_only_peak_bytes is a lower bound: the record of ACK-retired bytes overflowed.", func(p *srcPort) float64 { return b2f(p.HoldOnlyLower) }),
	counterOf("netrt_pool_byte_seconds_total", "Integral of pool_bytes over time; its rate is the mean pool occupancy in bytes.", func(p *srcPort) float64 { return p.ByteSeconds }),
	counterOf("netrt_pool_admitted_total", "Duplicates admitted to the pool.", func(p *srcPort) float64 { return float64(p.Pooled) }),
	counterOf("netrt_pool_in_place_total", "Of the duplicates admitted, those kept as the host's frame itself, held in the switch's frame memory while it goes on, rather than as a copy.", func(p *srcPort) float64 { return float64(p.InPlace) }),
	counterOf("netrt_pool_holds_extended_total", "Holds that ran out before the duplicate's original had left the port hold before (a congested port's queue): kept another hold.", func(p *srcPort) float64 { return float64(p.HoldsExtended) }),
	counterOf("netrt_pool_too_big_total", "Packets larger than the port's whole pool budget, not pooled.", func(p *srcPort) float64 { return float64(p.TooBig) }),
	counterOf("netrt_pool_crowded_total", "Packets not pooled because other workers' duplicates filled the port's pool budget and this packet's worker had too few of its own there to make room by evicting them.", func(p *srcPort) float64 { return float64(p.Crowded) }),
	counterOf("netrt_requests_received_total", "Retransmission requests consumed, by the fabric port they came in on.", func(p *srcPort) float64 { return float64(p.Requests) }),
	counterOf("netrt_retransmitted_total", "Duplicates retransmitted from the pool, at once or paced.", func(p *srcPort) float64 { return float64(p.Retrans + p.Paced) }),
	counterOf("netrt_tail_probes_total", "Of retransmitted_total, tail probes: a flow's last duplicate resent every tail_probe after its last copy left the port, while unacknowledged.", func(p *srcPort) float64 { return float64(p.TailProbes) }),
	counterOf("netrt_tail_probes_deferred_total", "Tail probes put off because the duplicate's last copy had not left the port tail_probe before: each would have overtaken its original, still queued there.", func(p *srcPort) float64 { return float64(p.ProbesDeferred) }),
	counterOf("netrt_retransmitted_paced_total", "Of retransmitted_total, those paced at R_r because requested data exceeded K_l.", func(p *srcPort) float64 { return float64(p.Paced) }),
	counterOf("netrt_retransmit_failed_total", "Retransmissions not sent for want of a frame or queue room.", func(p *srcPort) float64 { return float64(p.RetxFailed) }),
	counterOf("netrt_retransmit_limited_total", "Requested duplicates not sent because the port's retransmission budget (netrt.retx_rate, retx_burst) was spent: the amplification bound at work.", func(p *srcPort) float64 { return float64(p.Limited) }),
	counterOf("netrt_retransmit_in_queue_total", "Requested duplicates not resent because the original or its last copy had not yet left the port: not lost, and a copy on the retransmit queue would overtake it.", func(p *srcPort) float64 { return float64(p.InQueue) }),
	counterOf("netrt_paced_skipped_total", "Paced retransmissions dropped from the queue because their duplicate was retired first.", func(p *srcPort) float64 { return float64(p.PacedSkips) }),
	gaugeOf("netrt_pace_queue", "Duplicates waiting to be retransmitted at R_r.", func(p *srcPort) float64 { return float64(p.PaceQueued) }),
	gaugeOf("netrt_retransmit_rate_bps", "R_r of the last paced retransmission, bit/s.", func(p *srcPort) float64 { return float64(p.RateBps) }),
	counterOf("netrt_unfulfilled_sent_total", "Unfulfilled notices sent: a requested packet was not in the pool.", func(p *srcPort) float64 { return float64(p.Unfulfill) }),
	counterOf("netrt_unfulfilled_failed_total", "Unfulfilled notices not sent for want of a frame or queue room.", func(p *srcPort) float64 { return float64(p.SendFailed) }),
	counterOf("netrt_pause_frames_total", "PFC pause frames sent to hosts on the port (first and refreshes) while requested data exceeds K_l.", func(p *srcPort) float64 { return float64(p.Pauses) }),
	counterOf("netrt_resume_frames_total", "PFC resume frames sent to hosts on the port.", func(p *srcPort) float64 { return float64(p.Resumes) }),
	counterOf("netrt_pfc_failed_total", "PFC pause or resume frames the port refused (retried at the next tick).", func(p *srcPort) float64 { return float64(p.PFCFailed) }),
	gaugeOf("netrt_paused", "1 while NetRT holds the hosts on the port paused.", func(p *srcPort) float64 { return b2f(p.PausedNow) }),
}

var descPoolRetired = newDesc("netrt_pool_retired_total", "Duplicates that left the pool, by cause: lfu (evicted for room), age (Hold ran out), ack (acknowledged).", "cause")

// The destination ToR's series, on host ports.
var dstMetrics = []portMetric[dstPort]{
	gaugeOf("netrt_reorder_bytes", "Bytes in the reordering buffer of the host port.", func(p *dstPort) float64 { return float64(p.Bytes) }),
	gaugeOf("netrt_reorder_packets", "Packets in the reordering buffer of the host port.", func(p *dstPort) float64 { return float64(p.Frames) }),
	gaugeOf("netrt_reorder_peak_bytes", "High-water mark of reorder_bytes since tord started.", func(p *dstPort) float64 { return float64(p.MaxBytes) }),
	counterOf("netrt_reorder_byte_seconds_total", "Integral of reorder_bytes over time; its rate is the mean occupancy in bytes.", func(p *dstPort) float64 { return p.ByteSeconds }),
	counterOf("netrt_held_total", "Out-of-order packets taken into the reordering buffer.", func(p *dstPort) float64 { return float64(p.Held) }),
	counterOf("netrt_released_total", "Held packets released in order as holes filled.", func(p *dstPort) float64 { return float64(p.Released) }),
	counterOf("netrt_flushed_total", "Held packets forwarded on entering Waiting, for the hosts' go-back-N.", func(p *dstPort) float64 { return float64(p.Flushed) }),
	counterOf("netrt_duplicates_dropped_total", "Packets dropped because the buffer already held their PSN.", func(p *dstPort) float64 { return float64(p.Duplicates) }),
	counterOf("netrt_gaps_total", "Flows entering ReTx: a gap held and a request sent.", func(p *dstPort) float64 { return float64(p.Gaps) }),
	counterOf("netrt_recovered_total", "Flows back to Ordered from ReTx: the hole filled in the network.", func(p *dstPort) float64 { return float64(p.Recovered) }),
	counterOf("netrt_resumed_total", "Flows back to Ordered from Waiting: the hosts' go-back-N brought the expected PSN.", func(p *dstPort) float64 { return float64(p.Resumed) }),
	counterOf("netrt_backoff_retries_total", "Gaps held and requested again once a flow's backoff (a peer that never answered) ran out.", func(p *dstPort) float64 { return float64(p.Retries) }),
	counterOf("netrt_resyncs_total", "Flows whose ePSN moved to the PSN a host's sequence NAK named, the NAK passed on (too far back to hold).", func(p *dstPort) float64 { return float64(p.Resyncs) }),
	counterOf("netrt_resyncs_early_total", "Of the resyncs, those whose NAK named a PSN before the first the flow's entry saw: its first packets, overtaken on another path or lost before this ToR.", func(p *dstPort) float64 { return float64(p.ResyncsEarly) }),
	counterOf("netrt_naks_held_total", "Hosts' sequence NAKs held while the source ToR resent what they named, instead of the sender going back N.", func(p *dstPort) float64 { return float64(p.NAKHeld) }),
	counterOf("netrt_naks_answered_total", "Of naks_held_total, dropped: the PSN they named arrived from the network.", func(p *dstPort) float64 { return float64(p.NAKAnswered) }),
	counterOf("netrt_naks_released_total", "Of naks_held_total, sent on to the sender: the flow fell back to Waiting.", func(p *dstPort) float64 { return float64(p.NAKReleased) }),
	counterOf("netrt_requests_sent_total", "Retransmission requests sent (first and repeated).", func(p *dstPort) float64 { return float64(p.Requests) }),
	counterOf("netrt_requests_resent_total", "Of requests_sent_total, those the request interval re-sent while the hole lasted.", func(p *dstPort) float64 { return float64(p.Resent) }),
	counterOf("netrt_requests_silent_total", "Of requests_resent_total, those re-sent while nothing came from the fabric, not counted against max_requests.", func(p *dstPort) float64 { return float64(p.Silent) }),
	counterOf("netrt_requests_failed_total", "Requests not sent for want of a frame or queue room.", func(p *dstPort) float64 { return float64(p.SendFailed) }),
}

var (
	descWaits  = newDesc("netrt_waits_total", "Flows entering Waiting (end-to-end recovery), by cause: unfulfilled, gave_up, budget, span, backoff.", "cause")
	descData   = newDesc("netrt_data_packets_total", "Data packets toward the host port, by outcome: in_order, late, passed (Waiting), beyond (span), full (budget), held.", "outcome")
	descMiss   = newDesc("netrt_missing_psns_total", "PSNs a data packet toward the host port showed missing (on one path, each a loss), by what showed them: requested (a gap held and asked for), beyond (past the 128-PSN bitmap, left to the hosts), waited (it sent the flow to Waiting), passed (in Waiting), full (budget spent), delivered (below the expected PSN, a resend's copies); nak: named by a host's sequence NAK below the expected PSN (lost before the flow's entry began, or after this switch).", "shown_by")
	descGoBack = newDesc("netrt_go_backs_total", "Data packets toward the host port at or below their flow's previous PSN: the sender went back N, after: nak (a host's sequence NAK passed) or timeout (none did).", "after")
	descFlows  = prometheus.NewDesc("rocetor_netrt_flows", "Flows the destination ToR tracks, by state: ordered, retx, waiting.", []string{"state"}, nil)
)

// Stage-wide series: what belongs to no port.
var (
	descEntries = prometheus.NewDesc("rocetor_netrt_flow_entries",
		"Entries in the stage's flow table, served or not: src (pooling), dst (reordering).", []string{"stage"}, nil)
	descUnserved = prometheus.NewDesc("rocetor_netrt_unserved_packets_total",
		"Data packets the stage forwarded untouched, by reason: prefix (the far end is outside netrt.prefixes), table_full (a new flow, no idle entry among the 32 looked at), high_port (dst: a host port beyond 64).",
		[]string{"stage", "reason"}, nil)
	descReclaimed = prometheus.NewDesc("rocetor_netrt_flows_reclaimed_total",
		"Idle flow entries reused for a new flow.", []string{"stage"}, nil)
	descTimerFull = prometheus.NewDesc("rocetor_netrt_timer_full_total",
		"Timers the worker refused the stage (its timer heap full).", []string{"stage"}, nil)
	descNAKsHeld = prometheus.NewDesc("rocetor_netrt_naks_held",
		"Hosts' sequence NAKs the destination ToR holds now while the network recovers what they name; each takes a reordering-buffer entry.", nil, nil)
	descNoFrame = prometheus.NewDesc("rocetor_netrt_pool_no_frame_total",
		"Duplicates not made for want of a free frame (raise xdp.frames).", nil, nil)
	descACKs = prometheus.NewDesc("rocetor_netrt_acks_total",
		"RC ACKs from the fabric seen for pooled flows (they retire duplicates).", nil, nil)
	descNotices = prometheus.NewDesc("rocetor_netrt_notices_received_total",
		"Unfulfilled notices the destination ToR consumed, by outcome: waiting (the flow fell back to the hosts), unknown (no such flow), stale (not for the flow's expected PSN in ReTx).",
		[]string{"outcome"}, nil)
	descNAKUnknown = prometheus.NewDesc("rocetor_netrt_naks_unknown_total",
		"Sequence NAKs from hosts for no flow the destination ToR tracks.", nil, nil)
)

func (c *netrtCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range srcMetrics {
		ch <- m.desc
	}
	for _, m := range dstMetrics {
		ch <- m.desc
	}
	ch <- descPoolRetired
	ch <- descWaits
	ch <- descData
	ch <- descMiss
	ch <- descGoBack
	ch <- descFlows
	for _, d := range []*prometheus.Desc{descEntries, descNAKsHeld, descUnserved, descReclaimed, descTimerFull, descNoFrame, descACKs, descNotices, descNAKUnknown} {
		ch <- d
	}
}

func (c *netrtCollector) Collect(ch chan<- prometheus.Metric) {
	n := min(len(c.ports), netrt.MaxPorts)
	src := make([]srcPort, n)
	dst := make([]dstPort, n)
	var ordered, retx, waiting int
	var ss netrt.SrcStats
	var ds netrt.DstStats
	for _, s := range c.srcs {
		st := s.Snapshot()
		for i := range src {
			src[i].Add(&st.Ports[i])
		}
		ss.Flows += st.Flows
		ss.Local += st.Local
		ss.TableFull += st.TableFull
		ss.Reclaimed += st.Reclaimed
		ss.TimerFull += st.TimerFull
		ss.NoFrame += st.NoFrame
		ss.ACKs += st.ACKs
	}
	for _, d := range c.dsts {
		st := d.Snapshot()
		for i := range dst {
			dst[i].Add(&st.Ports[i])
		}
		ordered, retx, waiting = ordered+st.FlowsOrdered, retx+st.FlowsReTx, waiting+st.FlowsWaiting
		ds.Flows += st.Flows
		ds.Foreign += st.Foreign
		ds.TableFull += st.TableFull
		ds.HighPort += st.HighPort
		ds.Reclaimed += st.Reclaimed
		ds.TimerFull += st.TimerFull
		ds.Notices += st.Notices
		ds.Unknown += st.Unknown
		ds.Stale += st.Stale
		ds.NAKUnknown += st.NAKUnknown
		ds.NAKs += st.NAKs
	}
	c.stageWide(ch, &ss, &ds)
	for i := range n {
		port := c.ports[i]
		for _, m := range srcMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(&src[i]), port)
		}
		for _, m := range dstMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(&dst[i]), port)
		}
		s, d := &src[i], &dst[i]
		for cause, v := range map[string]uint64{"lfu": s.Evicted, "age": s.Expired, "ack": s.Acked} {
			ch <- prometheus.MustNewConstMetric(descPoolRetired, prometheus.CounterValue, float64(v), port, cause)
		}
		for cause, v := range map[string]uint64{"unfulfilled": d.WaitUnfulfilled, "gave_up": d.WaitGaveUp,
			"budget": d.WaitBudget, "span": d.WaitSpan, "backoff": d.WaitBackoff} {
			ch <- prometheus.MustNewConstMetric(descWaits, prometheus.CounterValue, float64(v), port, cause)
		}
		for outcome, v := range map[string]uint64{"in_order": d.InOrder, "late": d.Late, "passed": d.Passed,
			"beyond": d.Beyond, "full": d.Full, "held": d.Held} {
			ch <- prometheus.MustNewConstMetric(descData, prometheus.CounterValue, float64(v), port, outcome)
		}
		for by, v := range map[string]uint64{"requested": d.MissRequested, "beyond": d.MissBeyond, "waited": d.MissWaited,
			"passed": d.MissPassed, "full": d.MissFull, "delivered": d.MissDelivered, "nak": d.MissNAKed} {
			ch <- prometheus.MustNewConstMetric(descMiss, prometheus.CounterValue, float64(v), port, by)
		}
		ch <- prometheus.MustNewConstMetric(descGoBack, prometheus.CounterValue, float64(d.GoBacksNAK), port, "nak")
		ch <- prometheus.MustNewConstMetric(descGoBack, prometheus.CounterValue, float64(d.GoBacks-d.GoBacksNAK), port, "timeout")
	}
	for state, v := range map[string]int{"ordered": ordered, "retx": retx, "waiting": waiting} {
		ch <- prometheus.MustNewConstMetric(descFlows, prometheus.GaugeValue, float64(v), state)
	}
}

// stageWide sends the series that belong to no port, from the stages'
// figures summed over the workers.
func (c *netrtCollector) stageWide(ch chan<- prometheus.Metric, ss *netrt.SrcStats, ds *netrt.DstStats) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(ss.Flows), "src")
	ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(ds.Flows), "dst")
	ch <- prometheus.MustNewConstMetric(descNAKsHeld, prometheus.GaugeValue, float64(ds.NAKs))
	counter(descUnserved, ss.Local, "src", "prefix")
	counter(descUnserved, ss.TableFull, "src", "table_full")
	counter(descUnserved, ds.Foreign, "dst", "prefix")
	counter(descUnserved, ds.TableFull, "dst", "table_full")
	counter(descUnserved, ds.HighPort, "dst", "high_port")
	counter(descReclaimed, ss.Reclaimed, "src")
	counter(descReclaimed, ds.Reclaimed, "dst")
	counter(descTimerFull, ss.TimerFull, "src")
	counter(descTimerFull, ds.TimerFull, "dst")
	counter(descNoFrame, ss.NoFrame)
	counter(descACKs, ss.ACKs)
	counter(descNotices, ds.Notices-ds.Unknown-ds.Stale, "waiting")
	counter(descNotices, ds.Unknown, "unknown")
	counter(descNotices, ds.Stale, "stale")
	counter(descNAKUnknown, ds.NAKUnknown)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
