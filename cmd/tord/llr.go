package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"rocetor/dataplane"
	"rocetor/tor/llr"
)

// LLRConfig is the llr: section: link-local retransmission (tor/llr,
// Protego) on the switch-to-switch links it names. The switch at the
// other end of each link must protect its side too, in the same mode.
// No ports, no stage.
type LLRConfig struct {
	Ports      []string        `yaml:"ports"`       // protected links
	Mode       string          `yaml:"mode"`        // blocking (default) or nb
	TxBuffer   dataplane.Bytes `yaml:"tx_buffer"`   // copies kept until ACKed, per port; default 2 × egress.queue_limit, at least 256KiB
	RxBuffer   dataplane.Bytes `yaml:"rx_buffer"`   // reordering buffer per port (blocking)
	Pause      dataplane.Bytes `yaml:"pause"`       // reorder bytes that pause the upstream switch
	Resume     dataplane.Bytes `yaml:"resume"`      // ... and resume it
	AckTimeout time.Duration   `yaml:"ack_timeout"` // ackNoTimeout: a missing packet is skipped after this
	TargetLoss float64         `yaml:"target_loss"` // Eq. 1's target
	ActualLoss float64         `yaml:"actual_loss"` // Eq. 1's loss estimate; 0: measured
	Copies     int             `yaml:"copies"`      // copies per lost packet; 0: Eq. 1
	Dormant    bool            `yaml:"dormant"`     // senders start off; POST /llr on the admin listener turns them on
}

// On reports whether the section protects any port.
func (l *LLRConfig) On() bool { return len(l.Ports) > 0 }

// stageConfig turns the section into tor/llr's configuration.
func (l *LLRConfig) stageConfig(ports []string) (llr.Config, error) {
	c := llr.Config{TxBuffer: int(l.TxBuffer), RxBuffer: int(l.RxBuffer), Pause: int(l.Pause), Resume: int(l.Resume),
		AckTimeout: int64(l.AckTimeout), TargetLoss: l.TargetLoss, ActualLoss: l.ActualLoss, Copies: l.Copies,
		Dormant: l.Dormant}
	mode := l.Mode
	if mode == "" {
		mode = "blocking"
	}
	var err error
	if c.Mode, err = llr.ParseMode(mode); err != nil {
		return c, bad("llr.mode", "%v", err)
	}
	for _, p := range l.Ports {
		i := slices.Index(ports, p)
		if i < 0 || i >= llr.MaxPorts {
			return c, bad("llr.ports", "%q is not one of the first %d ports", p, llr.MaxPorts)
		}
		c.Ports |= 1 << i
	}
	if err := c.Validate(); err != nil {
		return c, bad("llr", "%v", err)
	}
	return c, nil
}

// validate checks the section against the rest of the configuration.
func (l *LLRConfig) validate(c *Config) error {
	if !l.On() {
		return nil
	}
	if c.Workers != 1 {
		// Each worker would number its share of the link; the
		// neighbour could not tell the streams apart.
		return bad("llr", "link-local retransmission needs workers: 1, have %d", c.Workers)
	}
	_, err := l.stageConfig(c.Ports)
	return err
}

// llrCollector exports tor/llr's counters per protected port.
type llrCollector struct {
	ports []string
	stage *llr.Stage
}

var llrMetrics = []struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(*llr.PortStats) float64
}{
	{lDesc("protected_packets_total", "Frames sent on the link with a sequence number and a Tx-buffer copy."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Protected) }},
	{lDesc("shim_bytes_total", "Bytes the link shim added."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.ShimBytes) }},
	{lDesc("unprotected_packets_total", "Frames sent on the protected link without protection (other queues, no room, Tx buffer full)."), prometheus.CounterValue, func(p *llr.PortStats) float64 {
		return float64(p.UnprotectedQueue + p.UnprotectedTooBig + p.UnprotectedNoRoom + p.UnprotectedTxFull + p.UnprotectedShim + p.UnprotectedOff)
	}},
	{lDesc("tx_buffer_bytes", "Bytes of copies kept until acknowledged."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return float64(p.TxBytes) }},
	{lDesc("tx_buffer_peak_bytes", "High-water mark of tx_buffer_bytes."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return float64(p.TxBytesMax) }},
	{lDesc("loss_notices_received_total", "Loss notices from the receiver at the other end."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.NoticesReceived) }},
	{lDesc("retransmitted_total", "Lost frames sent again (each once, however many copies)."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Retransmitted) }},
	{lDesc("copies_total", "Retransmitted frames, every copy (Eq. 1): copies_total / retransmitted_total is the copies per loss."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Copies) }},
	{lDesc("dummies_total", "Dummy frames sent so a lost tail is seen without a timeout."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Dummies) }},
	{lDesc("received_packets_total", "Protected frames received from the link."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.RxProtected) }},
	{lDesc("losses_detected_total", "Sequence numbers found missing."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.LossesDetected) }},
	{lDesc("loss_notices_sent_total", "Loss notices sent to the sender (retries included)."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.NoticesSent) }},
	{lDesc("duplicates_total", "Copies dropped as duplicates."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Duplicates) }},
	{lDesc("reorder_buffer_bytes", "Bytes held for in-order release (blocking mode)."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return float64(p.RxBytes) }},
	{lDesc("reorder_buffer_peak_bytes", "High-water mark of reorder_buffer_bytes."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return float64(p.RxBytesMax) }},
	{lDesc("pause_frames_total", "PFC pause frames sent upstream at the pause threshold."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.PauseSent) }},
	{lDesc("resume_frames_total", "PFC resume frames sent upstream at the resume threshold."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.ResumeSent) }},
	{lDesc("ack_timeouts_total", "Missing frames skipped by ackNoTimeout: losses the link did not recover."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Skipped) }},
	{lDesc("explicit_acks_total", "Explicit ACK frames sent when no reverse traffic carried the ACK."), prometheus.CounterValue, func(p *llr.PortStats) float64 { return float64(p.Acks) }},
	{lDesc("measured_loss_ratio", "Losses detected over sequence numbers expected, over tord's life."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return p.MeasuredLoss() }},
	{lDesc("effective_loss_ratio", "Frames skipped over sequence numbers expected: the loss left after recovery."), prometheus.GaugeValue, func(p *llr.PortStats) float64 { return p.EffectiveLoss() }},
}

func lDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("rocetor_llr_"+name, help, []string{"port"}, nil)
}

var descLLRActive = lDesc("active", "1 while the port's sender protects what it sends; 0 while it is switched off (dormant).")

func (c *llrCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range llrMetrics {
		ch <- m.desc
	}
	ch <- descLLRActive
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
		ch <- prometheus.MustNewConstMetric(descLLRActive, prometheus.GaugeValue, b2f(c.stage.Active(i)), name)
	}
}

// llrStatus is one protected port as GET /llr shows it.
type llrStatus struct {
	Port          string  `json:"port"`
	Active        bool    `json:"active"`
	Mode          string  `json:"mode"`
	Protected     uint64  `json:"protected_packets"`
	MeasuredLoss  float64 `json:"measured_loss"`
	EffectiveLoss float64 `json:"effective_loss"`
}

// llrHandler serves the admin API's /llr: GET lists the protected ports,
// POST /llr?port=NAME&on=true|false switches a port's sender.
func llrHandler(ports []string, stage *llr.Stage) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			i := slices.Index(ports, r.URL.Query().Get("port"))
			on, err := strconv.ParseBool(r.URL.Query().Get("on"))
			if err != nil || !stage.SetActive(i, on) {
				http.Error(w, "want port=<a protected port>&on=true|false", http.StatusBadRequest)
				return
			}
		}
		st := stage.Snapshot()
		out := []llrStatus{}
		for i, name := range ports {
			if !stage.Protected(i) {
				continue
			}
			p := &st.Ports[i]
			out = append(out, llrStatus{Port: name, Active: stage.Active(i), Mode: stage.Config().Mode.String(),
				Protected: p.Protected, MeasuredLoss: p.MeasuredLoss(), EffectiveLoss: p.EffectiveLoss()})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}
}
