package pipeline

import (
	"slices"
	"time"

	"rocetor/dataplane"
	"rocetor/tor/llr"
)

// LLRConfig is the llr: section: link-local retransmission (tor/llr,
// Protego) on the links it names: to other switches, or to hosts whose
// NICs run llr too (tor/fabric's simulated hosts do). The node at the
// other end of each link must protect its side too, in the same mode.
// No ports, no stage.
type LLRConfig struct {
	Ports    []string        `yaml:"ports"`     // protected links
	Mode     string          `yaml:"mode"`      // blocking (default) or nb
	TxBuffer dataplane.Bytes `yaml:"tx_buffer"` // frames kept until ACKed, per port; default 2 × egress.queue_limit, at least 256KiB
	// TxFrames is how many frames per port the Tx buffer keeps as
	// themselves, held in the worker's frame memory until acknowledged,
	// rather than as copies (what fits is still reckoned in tx_buffer's
	// bytes); past it, it copies. 0: tx_buffer / xdp.frame_size, as far
	// as xdp.frames has frames beyond the rings and NetRT's; -1: copies
	// only. A value set must fit in xdp.frames with the rings and NetRT.
	TxFrames   int             `yaml:"tx_frames"`
	RxBuffer   dataplane.Bytes `yaml:"rx_buffer"`   // reordering buffer per port (blocking)
	Pause      dataplane.Bytes `yaml:"pause"`       // reorder bytes that pause the upstream switch
	Resume     dataplane.Bytes `yaml:"resume"`      // ... and resume it
	AckTimeout time.Duration   `yaml:"ack_timeout"` // ackNoTimeout: a missing packet is skipped after this
	// NoticeRetry is how long a head of line still missing waits before
	// its loss notice is sent again (a lost notice, or every copy lost);
	// 0: ack_timeout/4. At ack_timeout or more there is no retry, as in
	// Protego, which relies on Eq. 1's copies and the timeout alone.
	NoticeRetry time.Duration   `yaml:"notice_retry"`
	TargetLoss  float64         `yaml:"target_loss"` // Eq. 1's target
	ActualLoss  float64         `yaml:"actual_loss"` // Eq. 1's loss estimate; 0: measured
	Copies      int             `yaml:"copies"`      // copies per lost packet; 0: Eq. 1
	Dormant     bool            `yaml:"dormant"`     // senders start off; the neighbour's monitor or torctl llr on turns them on
	Watch       bool            `yaml:"watch"`       // senders switched off still number frames, so the neighbour's monitor sees losses
	RetxRate    dataplane.Rate  `yaml:"retx_rate"`   // retransmissions loss notices may draw per port, sustained; 0: half the port's rate
	RetxBurst   dataplane.Bytes `yaml:"retx_burst"`  // ... and at once; 0: tx_buffer
	// Monitor, when present, runs the corruption monitor on every
	// protected port: it asks the neighbour to protect the link once the
	// loss rate measured here reaches the threshold.
	Monitor *LLRMonitorConfig `yaml:"monitor"`
}

// LLRMonitorConfig is the llr.monitor: section (tor/llr.Monitor, seed 003
// appendix C); zero fields take the defaults.
type LLRMonitorConfig struct {
	Interval  time.Duration `yaml:"interval"`  // between readings; default 1s
	Window    uint64        `yaml:"window"`    // frames the loss rate is estimated over; default 100000000
	Threshold float64       `yaml:"threshold"` // loss rate that makes a link corrupting; default 1e-8
}

func (m *LLRMonitorConfig) Config() llr.MonitorConfig {
	return llr.MonitorConfig{Interval: m.Interval, Window: m.Window, Threshold: m.Threshold}
}

// On reports whether the section protects any port.
func (l *LLRConfig) On() bool { return len(l.Ports) > 0 }

// stageConfig turns the section into tor/llr's configuration.
func (l *LLRConfig) StageConfig(ports []string) (llr.Config, error) {
	c := llr.Config{TxBuffer: int(l.TxBuffer), RxBuffer: int(l.RxBuffer), Pause: int(l.Pause), Resume: int(l.Resume),
		AckTimeout: int64(l.AckTimeout), NoticeRetry: int64(l.NoticeRetry), TargetLoss: l.TargetLoss, ActualLoss: l.ActualLoss, Copies: l.Copies,
		Dormant: l.Dormant, Watch: l.Watch, RetxRate: uint64(l.RetxRate), RetxBurst: int(l.RetxBurst)}
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
	if m := l.Monitor; m != nil {
		if m.Interval < 0 || m.Threshold < 0 || m.Threshold >= 1 {
			return c, bad("llr.monitor", "interval %v, threshold %g: want a positive interval and a threshold in [0, 1)", m.Interval, m.Threshold)
		}
	}
	return c, nil
}

// llrTxBuffer is llr.tx_buffer or its default: frames are numbered, and
// kept, as they are queued, so the Tx buffer must hold the data queue
// and a round trip, or frames past it cross unprotected.
func (c *Config) llrTxBuffer() int {
	if b := int(c.LLR.TxBuffer); b != 0 {
		return b
	}
	return max(2*int(c.Egress.QueueLimit), llr.DefaultTxBuffer)
}

// llrTxWant is how many frames a port's Tx buffer wants to hold:
// llr.tx_frames, by default tx_buffer / xdp.frame_size; 0 without llr
// or with -1.
func (c *Config) llrTxWant() int {
	switch l := &c.LLR; {
	case !l.On() || l.TxFrames < 0:
		return 0
	case l.TxFrames > 0:
		return l.TxFrames
	}
	return c.llrTxBuffer() / c.XDP.FrameSize
}

// spareFrames is what xdp.frames has beyond the rings and NetRT's.
func (c *Config) spareFrames() int {
	n := c.XDP.Frames - 2*c.XDP.RingSize*len(c.Ports)
	if c.NetRT.On() {
		n -= c.NetRT.Frames()
	}
	return n
}

// llrTxFrames is llr.tx_frames or its default (LLRConfig.TxFrames): a
// port's want, by default as far as the spare frames go.
func (c *Config) llrTxFrames() int {
	want := c.llrTxWant()
	if c.LLR.TxFrames > 0 || want == 0 {
		return want
	}
	return max(0, min(want, c.spareFrames()/len(c.LLR.Ports)))
}

// LLRFrames is the most frames the Tx buffers of the protected ports want
// to hold, for a frame memory sized to give them all.
func (c *Config) LLRFrames() int { return c.llrTxWant() * len(c.LLR.Ports) }

// validate checks the section against the rest of the configuration.
func (l *LLRConfig) validate(c *Config) error {
	if !l.On() {
		return nil
	}
	if spare := c.spareFrames(); l.TxFrames > 0 && l.TxFrames*len(l.Ports) > spare {
		// Frames the Tx buffer holds are not in the fill rings.
		return bad("llr.tx_frames", "%d a port on %d ports: xdp.frames (%d) has %d beyond the rings and NetRT's; want xdp.frames ≥ %d",
			l.TxFrames, len(l.Ports), c.XDP.Frames, spare, c.XDP.Frames-spare+l.TxFrames*len(l.Ports))
	}
	if l.TxFrames < -1 {
		return bad("llr.tx_frames", "%d, want -1 (copies only), 0 (the default) or a number of frames", l.TxFrames)
	}
	// With more than one worker, one worker owns each protected link
	// and the others hand it what they receive on it (Owners), so the
	// link keeps one sequence space and one pair of buffers.
	_, err := l.StageConfig(c.Ports)
	return err
}
