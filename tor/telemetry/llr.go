package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/llr"
)

// llrCollector exports tor/llr's counters per protected port.
type llrCollector struct {
	ports   []string
	stage   llr.Protector
	monitor *llr.Monitor // nil without llr.monitor
}

// NewLLR returns the collector of the rocetor_llr_ series of stage, the
// switch's llr stages, each link's counters from the worker that owns
// it (llr.Links), and of
// monitor, its corruption monitor (nil: none, and no monitor series);
// ports names the switch's ports in order.
func NewLLR(ports []string, stage llr.Protector, monitor *llr.Monitor) prometheus.Collector {
	return &llrCollector{ports: ports, stage: stage, monitor: monitor}
}

var llrMetrics = []portMetric[llr.PortStats]{
	counterOf("llr_protected_packets_total", "Frames sent on the link with a sequence number, kept in the Tx buffer until acknowledged.", func(p *llr.PortStats) float64 { return float64(p.Protected) }),
	counterOf("llr_shim_bytes_total", "Bytes the link shim added.", func(p *llr.PortStats) float64 { return float64(p.ShimBytes) }),
	gaugeOf("llr_tx_buffer_bytes", "Bytes the Tx buffer keeps until acknowledged, held frames and copies alike.", func(p *llr.PortStats) float64 { return float64(p.TxBytes) }),
	gaugeOf("llr_tx_buffer_peak_bytes", "High-water mark of tx_buffer_bytes.", func(p *llr.PortStats) float64 { return float64(p.TxBytesMax) }),
	gaugeOf("llr_tx_buffer_held_frames", "Frames the Tx buffer keeps as the frames themselves in the switch's frame memory (tx_frames), not as copies.", func(p *llr.PortStats) float64 { return float64(p.TxHeld) }),
	counterOf("llr_tx_buffer_copied_total", "Protected frames the Tx buffer keeps as copies rather than holding them: its tx_frames were all held, or are 0.", func(p *llr.PortStats) float64 { return float64(p.TxCopied) }),
	counterOf("llr_loss_notices_received_total", "Loss notices from the receiver at the other end.", func(p *llr.PortStats) float64 { return float64(p.NoticesReceived) }),
	counterOf("llr_retransmitted_total", "Lost frames sent again (each once, however many copies).", func(p *llr.PortStats) float64 { return float64(p.Retransmitted) }),
	counterOf("llr_copies_total", "Retransmitted frames, every copy (Eq. 1): copies_total / retransmitted_total is the copies per loss.", func(p *llr.PortStats) float64 { return float64(p.Copies) }),
	counterOf("llr_dummies_total", "Dummy frames sent so a lost tail is seen without a timeout.", func(p *llr.PortStats) float64 { return float64(p.Dummies) }),
	counterOf("llr_received_packets_total", "Protected frames received from the link.", func(p *llr.PortStats) float64 { return float64(p.RxProtected) }),
	counterOf("llr_losses_detected_total", "Sequence numbers found missing.", func(p *llr.PortStats) float64 { return float64(p.LossesDetected) }),
	counterOf("llr_loss_notices_sent_total", "Loss notices sent to the sender (retries included).", func(p *llr.PortStats) float64 { return float64(p.NoticesSent) }),
	counterOf("llr_duplicates_total", "Copies dropped as duplicates.", func(p *llr.PortStats) float64 { return float64(p.Duplicates) }),
	gaugeOf("llr_reorder_buffer_bytes", "Bytes held for in-order release (blocking mode).", func(p *llr.PortStats) float64 { return float64(p.RxBytes) }),
	gaugeOf("llr_reorder_buffer_peak_bytes", "High-water mark of reorder_buffer_bytes.", func(p *llr.PortStats) float64 { return float64(p.RxBytesMax) }),
	gaugeOf("llr_head_wait_max_seconds", "Longest time the head of line stood missing with frames held behind it (blocking): the reordering buffer grows at the link's rate while it lasts.", func(p *llr.PortStats) float64 { return float64(p.HeadWaitMax) / 1e9 }),
	gaugeOf("llr_head_wait_max_notice_retries", "Notice retries during the longest head-of-line wait: its loss notice, or every copy, was lost.", func(p *llr.PortStats) float64 { return float64(p.HeadWaitRetries) }),
	gaugeOf("llr_head_wait_max_present_seconds", "Of the longest head-of-line wait, how long the head was held but not released (frame memory or the batch full).", func(p *llr.PortStats) float64 { return float64(p.HeadWaitPresent) / 1e9 }),
	gaugeOf("llr_head_wait_max_skipped", "1 if ackNoTimeout ended the longest head-of-line wait.", func(p *llr.PortStats) float64 { return float64(p.HeadWaitSkipped) }),
	gaugeOf("llr_head_wait_max_buffer_bytes", "The reordering buffer's peak during the longest head-of-line wait.", func(p *llr.PortStats) float64 { return float64(p.HeadWaitRxBytesMax) }),
	counterOf("llr_pause_frames_total", "PFC pause frames sent upstream at the pause threshold.", func(p *llr.PortStats) float64 { return float64(p.PauseSent) }),
	counterOf("llr_resume_frames_total", "PFC resume frames sent upstream at the resume threshold.", func(p *llr.PortStats) float64 { return float64(p.ResumeSent) }),
	counterOf("llr_syncs_sent_total", "Session syncs sent: at start, in answer to the neighbour's, and retries while unanswered.", func(p *llr.PortStats) float64 { return float64(p.SyncsSent) }),
	counterOf("llr_syncs_received_total", "Session syncs from the neighbour.", func(p *llr.PortStats) float64 { return float64(p.SyncsReceived) }),
	counterOf("llr_sessions_total", "Sessions the neighbour confirmed: one, and one more after each restart of either side.", func(p *llr.PortStats) float64 { return float64(p.Sessions) }),
	counterOf("llr_resyncs_total", "New sessions of the neighbour after its first (it restarted): the receiver started over at its position.", func(p *llr.PortStats) float64 { return float64(p.Resyncs) }),
	counterOf("llr_resync_dropped_total", "Frames held for the neighbour's previous session, dropped when it restarted.", func(p *llr.PortStats) float64 { return float64(p.ResyncDropped) }),
	counterOf("llr_no_session_packets_total", "Shim frames received before the neighbour's first sync; numbered ones passed on unprotected.", func(p *llr.PortStats) float64 { return float64(p.RxNoSession) }),
	counterOf("llr_ack_timeout_expiries_total", "ackNoTimeout expiries (each skips one missing run).", func(p *llr.PortStats) float64 { return float64(p.AckTimeouts) }),
	counterOf("llr_notice_retries_total", "Loss notices naming a head of line again after notice_retry.", func(p *llr.PortStats) float64 { return float64(p.NoticeRetries) }),
	counterOf("llr_notices_stale_total", "Loss notices received that named nothing still in the Tx buffer.", func(p *llr.PortStats) float64 { return float64(p.NoticesStale) }),
	counterOf("llr_losses_notified_total", "Sequences the neighbour's loss notices asked for.", func(p *llr.PortStats) float64 { return float64(p.LossesNotified) }),
	counterOf("llr_requests_dropped_total", "Loss notices not served: the request ring was full.", func(p *llr.PortStats) float64 { return float64(p.RequestsDropped) }),
	counterOf("llr_retransmit_limited_total", "Times serving the neighbour's loss notices waited for the retransmission budget (llr.retx_rate, retx_burst): the amplification bound at work.", func(p *llr.PortStats) float64 { return float64(p.RetxLimited) }),
	counterOf("llr_retransmit_refused_total", "Retransmitted copies the retransmit queue refused.", func(p *llr.PortStats) float64 { return float64(p.RetxRefused) }),
	counterOf("llr_holes_merged_total", "Missing runs merged into the previous one for want of hole-table room.", func(p *llr.PortStats) float64 { return float64(p.HolesMerged) }),
	counterOf("llr_reorder_buffer_full_total", "Out-of-order frames dropped for want of reordering-buffer room (asked for again).", func(p *llr.PortStats) float64 { return float64(p.RxBufferFull) }),
	counterOf("llr_unprotected_received_packets_total", "Frames without a shim received from the link, passed as they are.", func(p *llr.PortStats) float64 { return float64(p.RxUnprotected) }),
	counterOf("llr_watched_received_packets_total", "Numbered frames of the neighbour's switched-off sender (watch) received.", func(p *llr.PortStats) float64 { return float64(p.RxWatched) }),
	counterOf("llr_malformed_total", "Shim frames dropped as malformed: cut short, empty notices, sequences outside the window.", func(p *llr.PortStats) float64 { return float64(p.RxMalformed) }),
	counterOf("llr_delivered_packets_total", "Protected frames handed to the pipeline, shim stripped.", func(p *llr.PortStats) float64 { return float64(p.Delivered) }),
	counterOf("llr_held_packets_total", "Protected frames held in the reordering buffer before delivery (blocking).", func(p *llr.PortStats) float64 { return float64(p.Held) }),
	counterOf("llr_released_packets_total", "Held frames released from the reordering buffer in sequence.", func(p *llr.PortStats) float64 { return float64(p.Released) }),
	counterOf("llr_expected_total", "Sequences the neighbour is known to have sent (the loss ratios' denominator).", func(p *llr.PortStats) float64 { return float64(p.Expected) }),
	gaugeOf("llr_tx_frames", "Sequences sent and not yet acknowledged.", func(p *llr.PortStats) float64 { return float64(p.TxFrames) }),
	counterOf("llr_control_acks_total", "Explicit ACKs sent on the control queue because no frame carried the ACK for dummy_interval (busy reverse queue).", func(p *llr.PortStats) float64 { return float64(p.AcksControl) }),
	counterOf("llr_acks_carried_total", "Frames that left carrying the ACK (piggybacked, explicit or on a dummy).", func(p *llr.PortStats) float64 { return float64(p.AcksCarried) }),
	counterOf("llr_acks_received_total", "Explicit ACKs from the neighbour.", func(p *llr.PortStats) float64 { return float64(p.AcksReceived) }),
	counterOf("llr_dummies_received_total", "Dummies from the neighbour.", func(p *llr.PortStats) float64 { return float64(p.DummiesReceived) }),
	counterOf("llr_no_frame_total", "Frames llr could not build or release: frame memory exhausted.", func(p *llr.PortStats) float64 { return float64(p.NoFrame) }),
	counterOf("llr_timer_full_total", "Timers the worker refused (its timer heap was full).", func(p *llr.PortStats) float64 { return float64(p.TimerFull) }),
	counterOf("llr_ack_timeouts_total", "Missing frames skipped by ackNoTimeout: losses the link did not recover.", func(p *llr.PortStats) float64 { return float64(p.Skipped) }),
	counterOf("llr_explicit_acks_total", "Explicit ACK frames sent when no reverse traffic carried the ACK.", func(p *llr.PortStats) float64 { return float64(p.Acks) }),
	counterOf("llr_watched_packets_total", "Frames numbered while the sender was switched off, without a copy (watch), so the neighbour can measure the link.", func(p *llr.PortStats) float64 { return float64(p.Watched) }),
	counterOf("llr_protect_requests_sent_total", "Protection requests sent to the neighbour by the corruption monitor.", func(p *llr.PortStats) float64 { return float64(p.ProtectAsked) }),
	counterOf("llr_protect_requests_received_total", "Protection requests from the neighbour's corruption monitor.", func(p *llr.PortStats) float64 { return float64(p.ProtectRequests) }),
	counterOf("llr_activations_total", "Protection requests that switched the sender on.", func(p *llr.PortStats) float64 { return float64(p.Activations) }),
	counterOf("llr_protect_requests_ignored_total", "Protection requests ignored because an operator pinned the sender (torctl llr on|off).", func(p *llr.PortStats) float64 { return float64(p.ProtectIgnored) }),
	gaugeOf("llr_measured_loss_ratio", "Losses detected over sequence numbers expected, over tord's life.", func(p *llr.PortStats) float64 { return p.MeasuredLoss() }),
	gaugeOf("llr_effective_loss_ratio", "Frames skipped over sequence numbers expected: the loss left after recovery.", func(p *llr.PortStats) float64 { return p.EffectiveLoss() }),
}

// llrUnprotected are the causes of llr_unprotected_packets_total.
var llrUnprotected = []struct {
	cause string
	get   func(*llr.PortStats) uint64
}{
	{"queue", func(p *llr.PortStats) uint64 { return p.UnprotectedQueue }},
	{"too_big", func(p *llr.PortStats) uint64 { return p.UnprotectedTooBig }},
	{"no_room", func(p *llr.PortStats) uint64 { return p.UnprotectedNoRoom }},
	{"tx_full", func(p *llr.PortStats) uint64 { return p.UnprotectedTxFull }},
	{"shim", func(p *llr.PortStats) uint64 { return p.UnprotectedShim }},
	{"off", func(p *llr.PortStats) uint64 { return p.UnprotectedOff }},
	{"sync", func(p *llr.PortStats) uint64 { return p.UnprotectedSync }},
}

var (
	descLLRUnprotected = newDesc("llr_unprotected_packets_total", "Frames sent on the protected link without protection, by cause: queue (not the data queue), too_big, no_room (no head- or tailroom), tx_full (Tx buffer or window spent), shim (already shimmed), off (sender switched off), sync (the session not yet confirmed).", "cause")
	descLLRActive      = newDesc("llr_active", "1 while the port's sender protects what it sends; 0 while it is switched off (dormant).")
	descLLRPinned      = newDesc("llr_pinned", "1 while an operator's override (torctl llr on|off) holds the port's sender.")
	descLLRNeighbour   = newDesc("llr_neighbour_loss_ratio", "Loss rate the neighbour's monitor reported in its last protection request (Eq. 1's actual loss).")
	descMonitorLoss    = newDesc("llr_monitor_loss_ratio", "Incoming loss rate the corruption monitor estimates over its window, by source (gaps, counters).", "source")
	descMonitorFrames  = newDesc("llr_monitor_window_frames", "Frames the monitor's window covers, by source.", "source")
	descMonitorCorrupt = newDesc("llr_monitor_corrupting", "1 while the monitor finds the incoming link at or above its loss threshold.")
)

func (c *llrCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range llrMetrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{descLLRUnprotected, descLLRActive, descLLRPinned, descLLRNeighbour} {
		ch <- d
	}
	if c.monitor != nil {
		for _, d := range []*prometheus.Desc{descMonitorLoss, descMonitorFrames, descMonitorCorrupt} {
			ch <- d
		}
	}
}

func (c *llrCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stage.Snapshot()
	for i, name := range c.ports {
		if i >= llr.MaxPorts || !c.stage.Protected(i) {
			continue
		}
		p := &st.Ports[i]
		for _, m := range llrMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(p), name)
		}
		for _, u := range llrUnprotected {
			ch <- prometheus.MustNewConstMetric(descLLRUnprotected, prometheus.CounterValue, float64(u.get(p)), name, u.cause)
		}
		ch <- prometheus.MustNewConstMetric(descLLRActive, prometheus.GaugeValue, b2f(c.stage.Active(i)), name)
		ch <- prometheus.MustNewConstMetric(descLLRPinned, prometheus.GaugeValue, b2f(c.stage.Pinned(i)), name)
		ch <- prometheus.MustNewConstMetric(descLLRNeighbour, prometheus.GaugeValue, c.stage.NeighbourLoss(i), name)
	}
	if c.monitor == nil {
		return
	}
	for _, s := range c.monitor.Status() {
		ch <- prometheus.MustNewConstMetric(descMonitorLoss, prometheus.GaugeValue, s.GapLoss, s.Port, "gaps")
		ch <- prometheus.MustNewConstMetric(descMonitorLoss, prometheus.GaugeValue, s.CounterLoss, s.Port, "counters")
		ch <- prometheus.MustNewConstMetric(descMonitorFrames, prometheus.GaugeValue, float64(s.GapFrames), s.Port, "gaps")
		ch <- prometheus.MustNewConstMetric(descMonitorFrames, prometheus.GaugeValue, float64(s.CounterFrames), s.Port, "counters")
		ch <- prometheus.MustNewConstMetric(descMonitorCorrupt, prometheus.GaugeValue, b2f(s.Corrupting), s.Port)
	}
}
