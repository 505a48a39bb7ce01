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

var llrMetrics = []portMetric[llr.PortStats]{
	counterOf("llr_protected_packets_total", "Frames sent on the link with a sequence number and a Tx-buffer copy.", func(p *llr.PortStats) float64 { return float64(p.Protected) }),
	counterOf("llr_shim_bytes_total", "Bytes the link shim added.", func(p *llr.PortStats) float64 { return float64(p.ShimBytes) }),
	counterOf("llr_unprotected_packets_total", "Frames sent on the protected link without protection (other queues, no room, Tx buffer full).", func(p *llr.PortStats) float64 {
		return float64(p.UnprotectedQueue + p.UnprotectedTooBig + p.UnprotectedNoRoom + p.UnprotectedTxFull + p.UnprotectedShim + p.UnprotectedOff)
	}),
	gaugeOf("llr_tx_buffer_bytes", "Bytes of copies kept until acknowledged.", func(p *llr.PortStats) float64 { return float64(p.TxBytes) }),
	gaugeOf("llr_tx_buffer_peak_bytes", "High-water mark of tx_buffer_bytes.", func(p *llr.PortStats) float64 { return float64(p.TxBytesMax) }),
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
	counterOf("llr_pause_frames_total", "PFC pause frames sent upstream at the pause threshold.", func(p *llr.PortStats) float64 { return float64(p.PauseSent) }),
	counterOf("llr_resume_frames_total", "PFC resume frames sent upstream at the resume threshold.", func(p *llr.PortStats) float64 { return float64(p.ResumeSent) }),
	counterOf("llr_ack_timeouts_total", "Missing frames skipped by ackNoTimeout: losses the link did not recover.", func(p *llr.PortStats) float64 { return float64(p.Skipped) }),
	counterOf("llr_explicit_acks_total", "Explicit ACK frames sent when no reverse traffic carried the ACK.", func(p *llr.PortStats) float64 { return float64(p.Acks) }),
	gaugeOf("llr_measured_loss_ratio", "Losses detected over sequence numbers expected, over tord's life.", func(p *llr.PortStats) float64 { return p.MeasuredLoss() }),
	gaugeOf("llr_effective_loss_ratio", "Frames skipped over sequence numbers expected: the loss left after recovery.", func(p *llr.PortStats) float64 { return p.EffectiveLoss() }),
}

var descLLRActive = newDesc("llr_active", "1 while the port's sender protects what it sends; 0 while it is switched off (dormant).")

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
