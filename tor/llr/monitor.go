package llr

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Monitor is the corruption monitor (seed 003, appendix C): it estimates
// each protected port's incoming loss rate over a moving window of
// frames and, while the rate is at or above a threshold, asks the
// neighbour at the other end to protect what it sends (the upstream
// switch's sender, whose frames are the ones lost). Protego's corruptd
// polls the driver's framesrxok and framesrxall once a second over a
// window of 100M frames and activates at 1e-8; those are the defaults.
//
// Two sources, the larger rate wins:
//
//   - gaps: sequences the port's receiver found missing over sequences
//     the neighbour sent (PortStats.Lost, Sent), whenever the
//     neighbour numbers its frames — protected, or watched while
//     dormant (Config.Watch);
//   - counters: the port's interface counters, frames received with
//     CRC errors over all frames received, read by a Counters function
//     (tord reads netlink's rx_crc_errors: not rx_errors, which counts
//     FIFO overruns and other drops that are congestion, not
//     corruption). A physical port counts the corrupted frames its MAC
//     drops; a veth counts none, which is what watching is for.
//
// A source's rate decides only when it means something at the
// threshold: its window holds at least 1/Threshold frames (one loss then
// is the threshold), or at least minLosses losses. A window of far fewer
// frames than 1/Threshold would otherwise call a link corrupting on one
// stray drop.
//
// The decision travels in-band: a ShimProtect frame per interval carries
// the measured rate; the neighbour switches its sender on (unless an
// operator pinned it, Stage.SetActive) and takes the rate as Eq. 1's
// actual loss, so its copies follow what this side measures. Once on,
// protection stays on when the rate falls — a corrupting link is
// repaired, not outgrown: after the repair an operator turns it off
// (torctl llr off PORT, on the sending switch) and back to automatic
// (torctl llr auto PORT).
//
// Step does one interval's work and Run calls it on a ticker; Status is
// safe from any goroutine. The zero value is not usable: NewMonitor.
type Monitor struct {
	cfg      MonitorConfig
	stage    Protector
	counters Counters
	log      *zap.Logger

	mu    sync.Mutex
	ports []monPort
}

// Counters reads the interface counters of a port: frames received
// intact and frames received with CRC errors, both since some fixed time
// (they are differenced). ok false: no counters for this port.
type Counters func(port string) (rx, errs uint64, ok bool)

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Interval between two readings; 0 means 1s.
	Interval time.Duration
	// Window is the frames over which the loss rate is estimated: the
	// newest readings that together cover at least this many frames
	// (at most monitorSamples of them); 0 means 100,000,000.
	Window uint64
	// Threshold is the loss rate at or above which a link corrupts; 0
	// means 1e-8.
	Threshold float64
}

// Monitor defaults (seed 003, appendix C).
const (
	DefaultMonitorInterval  = time.Second
	DefaultMonitorWindow    = 100_000_000
	DefaultMonitorThreshold = 1e-8
)

// monitorSamples bounds the readings a window spans: at the default
// interval, the estimate never looks further back than this many
// seconds, however quiet the link.
const monitorSamples = 256

// minLosses is the losses a window shorter than 1/Threshold frames must
// hold for its rate to decide: fewer could be one stray drop.
const minLosses = 4

// meaningful reports whether losses in frames can tell a link at
// threshold from a clean one.
func meaningful(rate float64, frames uint64, threshold float64) bool {
	return float64(frames)*threshold >= 1 || rate*float64(frames) >= minLosses-0.5
}

// MonitorStatus is one port's estimate and decision.
type MonitorStatus struct {
	Port string `json:"port"`
	// GapLoss and CounterLoss are the window's rates from each source,
	// over GapFrames and CounterFrames frames.
	GapLoss       float64 `json:"gap_loss"`
	GapFrames     uint64  `json:"gap_frames"`
	CounterLoss   float64 `json:"counter_loss"`
	CounterFrames uint64  `json:"counter_frames"`
	// Loss is the larger of the two; Corrupting whether it is at or
	// above the threshold, since when (zero time: never).
	Loss       float64   `json:"loss"`
	Corrupting bool      `json:"corrupting"`
	Since      time.Time `json:"since,omitzero"`
	// Requests counts the protection requests the monitor made.
	Requests uint64 `json:"requests"`
}

type monPort struct {
	idx  int
	st   MonitorStatus
	gaps window
	ifc  window
	// previous readings of each source, to difference
	lastExp, lastLost, lastRx, lastErr uint64
	primedGaps, primedIfc              bool
}

// NewMonitor makes a monitor of the ports of stage (a Stage, or Links
// over a switch's workers' stages) named in names (by port index, as
// tord's ports list; ports llr does not protect are skipped). counters may be nil (gaps only); log may be nil.
func NewMonitor(c MonitorConfig, stage Protector, names []string, counters Counters, log *zap.Logger) (*Monitor, error) {
	if c.Interval < 0 || c.Threshold < 0 || c.Threshold >= 1 {
		return nil, fmt.Errorf("llr monitor: interval %v, threshold %g: want a positive interval and a threshold in [0, 1)", c.Interval, c.Threshold)
	}
	if c.Interval == 0 {
		c.Interval = DefaultMonitorInterval
	}
	if c.Window == 0 {
		c.Window = DefaultMonitorWindow
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultMonitorThreshold
	}
	if log == nil {
		log = zap.NewNop()
	}
	m := &Monitor{cfg: c, stage: stage, counters: counters, log: log}
	for i, n := range names {
		if stage.Protected(i) {
			m.ports = append(m.ports, monPort{idx: i, st: MonitorStatus{Port: n}})
		}
	}
	return m, nil
}

// Config returns the configuration in force, defaults filled in.
func (m *Monitor) Config() MonitorConfig { return m.cfg }

// Run calls Step every interval until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.Step(now)
		}
	}
}

// Step reads every source once, updates the estimates and asks for
// protection where the link corrupts.
func (m *Monitor) Step(now time.Time) {
	snap := m.stage.Snapshot()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.ports {
		p := &m.ports[i]
		ps := &snap.Ports[p.idx]
		sent, lost := ps.Sent(), ps.Lost()
		if p.primedGaps && sent >= p.lastExp && lost >= p.lastLost {
			p.gaps.add(sent-p.lastExp, lost-p.lastLost)
		}
		p.lastExp, p.lastLost, p.primedGaps = sent, lost, true
		if m.counters != nil {
			if rx, errs, ok := m.counters(p.st.Port); ok {
				// Counters that went back (the interface was
				// recreated) restart the difference.
				if p.primedIfc && rx >= p.lastRx && errs >= p.lastErr {
					p.ifc.add(rx-p.lastRx+errs-p.lastErr, errs-p.lastErr)
				}
				p.lastRx, p.lastErr, p.primedIfc = rx, errs, true
			}
		}
		st := &p.st
		st.GapLoss, st.GapFrames = p.gaps.rate(m.cfg.Window)
		st.CounterLoss, st.CounterFrames = p.ifc.rate(m.cfg.Window)
		st.Loss = max(st.GapLoss, st.CounterLoss)
		thr := m.cfg.Threshold
		corrupting := st.GapLoss >= thr && meaningful(st.GapLoss, st.GapFrames, thr) ||
			st.CounterLoss >= thr && meaningful(st.CounterLoss, st.CounterFrames, thr)
		if corrupting != st.Corrupting {
			st.Corrupting, st.Since = corrupting, now
			if corrupting {
				m.log.Warn("link corrupting: asking the neighbour to protect it", zap.String("port", st.Port),
					zap.Float64("loss", st.Loss), zap.Float64("gap_loss", st.GapLoss), zap.Uint64("gap_frames", st.GapFrames),
					zap.Float64("counter_loss", st.CounterLoss), zap.Uint64("counter_frames", st.CounterFrames),
					zap.Float64("threshold", m.cfg.Threshold))
			} else {
				m.log.Info("link loss below the threshold again; protection stays until an operator turns it off",
					zap.String("port", st.Port), zap.Float64("loss", st.Loss))
			}
		}
		if corrupting && m.stage.RequestProtection(p.idx, st.Loss) {
			st.Requests++
		}
	}
}

// Status returns every monitored port's estimate and decision.
func (m *Monitor) Status() []MonitorStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MonitorStatus, len(m.ports))
	for i := range m.ports {
		out[i] = m.ports[i].st
	}
	return out
}

// window is a ring of readings: frames and losses per interval.
type window struct {
	frames, losses [monitorSamples]uint64
	head, n        int
}

func (w *window) add(frames, losses uint64) {
	w.head = (w.head + monitorSamples - 1) % monitorSamples
	w.frames[w.head], w.losses[w.head] = frames, losses
	w.n = min(w.n+1, monitorSamples)
}

// rate sums the newest readings until they cover limit frames and
// returns losses over frames, and the frames.
func (w *window) rate(limit uint64) (float64, uint64) {
	var f, l uint64
	for i := 0; i < w.n && f < limit; i++ {
		j := (w.head + i) % monitorSamples
		f, l = f+w.frames[j], l+w.losses[j]
	}
	if f == 0 {
		return 0, 0
	}
	return float64(l) / float64(f), f
}
