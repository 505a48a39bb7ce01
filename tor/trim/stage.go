package trim

import (
	"fmt"
	"sync/atomic"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Drop reasons of the stage: packets that found their data queue over the
// threshold and are not DCP data, so cannot be trimmed (seed 002 §4.2).
var (
	ReasonNonDCP = dataplane.NewReason("trim_non_dcp") // tag 00, or not RoCEv2
	ReasonAck    = dataplane.NewReason("trim_ack")     // DCP ACK, tag 01
	// ReasonNoFrame: the frame is NetRT's duplicate too (held in place,
	// dataplane.Mem.Hold), so it is trimmed in a copy, and the worker's
	// memory had no frame for it.
	ReasonNoFrame = dataplane.NewReason("trim_no_frame")
)

// MaxPorts bounds the ports a Stage serves; packets leaving by a port of
// a higher index pass untouched. Per-port counters are fixed arrays.
const MaxPorts = 64

// Stage is the trimming stage: see the package doc. One worker owns each
// Stage; its counters are plain fields and only Snapshot may be called
// from other goroutines. It holds no packets and allocates nothing per
// packet. Its zero value is not usable; see NewStage.
type Stage struct {
	cfg       Config
	threshold int

	ready  bool
	nports int
	on     [MaxPorts]bool
	// off switches trimming off per port at run time (SetPort), bit i
	// for port i: set from the control plane, loaded once per batch.
	off    atomic.Uint64
	offNow uint64
	data   [MaxPorts]uint8 // the data queue's index per port
	ctrl   [MaxPorts]uint8 // the control queue's index per port
	// pend counts the bytes this batch has left on each port's data
	// queue: the worker queues a batch only after the last stage, so
	// Egress.Depth does not show them yet.
	pend [MaxPorts]int

	st  Stats
	pub dataplane.Published[Stats]
}

// NewStage returns a stage that trims at the ports c names (all ports
// when it names none). c is validated, without a port list; the ports are
// matched by name at the first batch.
func NewStage(c Config) (*Stage, error) {
	if err := c.Validate(nil); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	return &Stage{cfg: c, threshold: int(c.Threshold)}, nil
}

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "trim" }

// Config returns the configuration in force, defaults filled in.
func (s *Stage) Config() Config { return s.cfg }

// resolve maps the configured port names to the worker's ports and finds
// their data and control queues, once.
func (s *Stage) resolve(c *dataplane.Ctx) {
	s.ready = true
	s.nports = min(c.NumPorts(), MaxPorts)
	for i := 0; i < s.nports; i++ {
		e := c.Egress(i)
		d, k := e.QueueIndex(DataQueue), e.QueueIndex(ControlQueue)
		if d < 0 || k < 0 || !s.cfg.Trims(c.Port(i).Name()) {
			continue
		}
		s.on[i], s.data[i], s.ctrl[i] = true, uint8(d), uint8(k)
	}
}

// Trimming reports whether the stage trims at port i of its worker; it
// knows only after its first batch.
func (s *Stage) Trimming(i int) bool { return i < MaxPorts && s.on[i] }

// SetPort switches trimming at port i on or off at run time (an
// operator's toggle; off, the port's data queue tail-drops as a plain
// switch's, while header-only packets keep the control queue fwd gives
// them); false when i is out of range. Safe from any goroutine: the
// worker sees it at its next batch.
func (s *Stage) SetPort(i int, on bool) bool {
	if i < 0 || i >= MaxPorts {
		return false
	}
	for {
		old := s.off.Load()
		n := old | 1<<i
		if on {
			n = old &^ (1 << i)
		}
		if s.off.CompareAndSwap(old, n) {
			return true
		}
	}
}

// PortOn reports whether trimming at port i is switched on (SetPort);
// safe from any goroutine.
func (s *Stage) PortOn(i int) bool { return i >= 0 && i < MaxPorts && s.off.Load()&(1<<i) == 0 }

// Process implements dataplane.Stage: every packet still marked Forward
// to a trimming port goes to the data queue fwd chose, is trimmed onto the
// control queue, or is dropped.
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	if !s.ready {
		s.resolve(c)
	}
	clear(s.pend[:s.nports])
	s.offNow = s.off.Load()
	for i := 0; i < b.N; i++ {
		// The port test here, not in packet: a packet toward a port
		// that does not trim then costs no call (about 14 instructions
		// a packet of BenchmarkPipelineForward/stages, callgrind,
		// 2026-12-01).
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward && s.trims(int(p.Out)) {
			s.packet(c, p)
		}
	}
	s.pub.Maybe(c.Now, &s.st)
}

// trims reports whether port out trims now.
func (s *Stage) trims(out int) bool {
	return out < s.nports && s.on[out] && s.offNow&(1<<out) == 0
}

// packet is the Packet Trimming module of seed 002 §4.2 for one packet
// whose egress port is chosen and trims.
func (s *Stage) packet(c *dataplane.Ctx, p *dataplane.Packet) {
	out := int(p.Out)
	ps := &s.st.Ports[out]
	m := &p.Meta
	roce := m.Kind == rocev2.KindRoCE
	if roce && m.Tag == rocev2.DCPHeaderOnly {
		// Trimmed upstream: the control queue, whatever the depth.
		p.Queue = s.ctrl[out]
		ps.HeaderOnly++
		return
	}
	if p.Queue != s.data[out] {
		return // fwd sent it elsewhere (a dscp_queues override)
	}
	depth, _ := c.Egress(out).Depth(int(p.Queue))
	if n := depth + s.pend[out] + int(p.Len); n <= s.threshold {
		s.pend[out] = n - depth
		ps.Passed++
		return
	}
	switch {
	case roce && m.Tag == rocev2.DCPData:
		old := int(p.Len)
		if c.Mem.Held(p.Addr) {
			// NetRT's pool keeps this frame whole: trim a copy.
			a, ok := c.Mem.Unshare(p.Addr, int(p.Len), 0)
			if !ok {
				ps.DropNoFrame++
				p.Drop(ReasonNoFrame)
				return
			}
			p.Addr = a
		}
		n, err := rocev2.Trim(c.Mem.Frame(p), m)
		if err != nil {
			// Tagged data the classifier did not parse as DCP (its
			// DCP mode off): it cannot be trimmed.
			ps.DropNonDCP++
			p.Drop(ReasonNonDCP)
			return
		}
		p.Len, p.Queue = uint16(n), s.ctrl[out]
		ps.Trimmed++
		ps.TrimmedBytes += uint64(old - n)
		ps.HeaderOnly++
	case roce && m.Tag == rocev2.DCPAck:
		ps.DropAck++
		p.Drop(ReasonAck)
	default:
		ps.DropNonDCP++
		p.Drop(ReasonNonDCP)
	}
}

// Poll implements dataplane.Source, only to publish the counters: the
// worker calls it every loop, also when no batch comes, so the last
// millisecond of a burst shows in Snapshot without waiting for the next
// packet. It originates nothing and returns 0.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	s.pub.Maybe(c.Now, &s.st)
	return 0
}

// Stats returns the live counters. Call it only from the worker's
// goroutine (or after the worker stopped); other goroutines use Snapshot.
func (s *Stage) Stats() Stats { return s.st }

// Snapshot returns the counters as last published, about once a
// millisecond of worker time. It is safe to call from any goroutine.
func (s *Stage) Snapshot() Stats { return s.pub.Load() }

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (s *Stage) Publish(now int64) { s.pub.Store(now, &s.st) }

// String describes the configuration in force, for logs.
func (s *Stage) String() string {
	cw, dw := Weights(s.cfg.Weight())
	return fmt.Sprintf("trim threshold %d B, N %d, r %.2f, w %.3f (DRR %d:%d)",
		s.threshold, s.cfg.IncastDegree, s.cfg.Ratio, s.cfg.Weight(), cw, dw)
}

var (
	_ dataplane.Stage  = (*Stage)(nil)
	_ dataplane.Source = (*Stage)(nil)
)
