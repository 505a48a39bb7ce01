package dataplane

import (
	"fmt"
	"math"
)

// IngressPFC is PFC on buffer thresholds, as a switch MMU generates it
// (802.1Qbb; htsim's LosslessInputQueue): the bytes a port's peer has
// put in this worker's egress queues are counted per ingress port and
// PFC priority, from enqueue to dequeue. When they pass XOff the worker
// sends the peer a PFC frame that pauses the priority for Quanta; when
// they fall to XOn or below it sends one with time 0, which resumes it.
// While they stay above XOn the pause is sent again every half of its
// length, so a long backlog never lets it lapse. Only queues with a PFC
// priority count: the control queue of DefaultEgress is exempt, as its
// frames are.
//
// A frame counts against the port in its Packet.In when that names one
// of the worker's ports: what a stage builds counts against the port
// it says the frame came from. Lossless needs XOff plus a round trip of
// the link's traffic (headroom) to fit the egress queues' budget.
//
// With Alpha and a shared buffer (the egress queues' EgressConfig.Shared)
// the thresholds follow the buffer as the ns-3 RDMA switch MMU's PFC
// threshold does: a port's peer is paused past XOff + Alpha × the
// pool's free bytes and resumed at XOn + Alpha × the free bytes, so
// XOff is the port's static share and XOff − XOn the resume offset. As
// the buffer fills every port pauses sooner.
type IngressPFC struct {
	XOff, XOn int // bytes
	// Groups sets XOff and XOn for one priority each, the thresholds of
	// its priority group (SONiC's BUFFER_PG profiles): a priority whose
	// entry is zero takes XOff and XOn.
	Groups [8]Thresholds
	// Alpha is the share of the shared pool's free bytes a port may
	// queue before it pauses its peer; 0: static thresholds.
	Alpha float64
	// Quanta is each pause's length in 512 bit times at the port's
	// pause rate; 0 means 0xffff.
	Quanta uint16
	// Ports says by port index which ingress ports pause their peer;
	// nil means every port.
	Ports []bool
	// Priorities is the PFC enable vector (bit p: priority p is
	// lossless), as 802.1Qbb's per-port PFC enable: a frame queued on
	// another priority is never counted and never pauses, and received
	// pauses of other priorities are ignored. 0 means every priority
	// (what a worker did before it had the vector).
	Priorities uint8
	// Headroom, with a shared buffer, is the bytes per ingress port and
	// lossless priority a queue may take past the pool's dynamic
	// threshold, for the frames a peer has in flight when it is paused:
	// such a frame is queued (drawing on the pool beyond its size, which
	// the pool's owner made smaller by every headroom) and pauses the
	// peer at once, as the ns-3 RDMA switch MMU (switch-mmu.cc) admits
	// into headroom what the shared pool refuses. Frames leaving release
	// headroom first, as there. 0: the threshold drops them.
	Headroom int
}

// Thresholds are a priority group's xoff and xon in bytes.
type Thresholds struct{ XOff, XOn int }

// thresholds returns priority p's.
func (c *IngressPFC) thresholds(p int) Thresholds {
	if g := c.Groups[p]; g != (Thresholds{}) {
		return g
	}
	return Thresholds{c.XOff, c.XOn}
}

// validate checks the thresholds against n ports.
func (c *IngressPFC) validate(n int) error {
	for p := range c.Groups {
		if c.Priorities != 0 && c.Priorities&(1<<p) == 0 {
			continue // not lossless: never counted
		}
		if t := c.thresholds(p); t.XOff <= 0 || t.XOn < 0 || t.XOn >= t.XOff {
			return fmt.Errorf("%w: ingress pfc: priority %d: xoff %d, xon %d bytes, want 0 ≤ xon < xoff", ErrWorkerConfig, p, t.XOff, t.XOn)
		}
	}
	switch {
	case c.Ports != nil && len(c.Ports) != n:
		return fmt.Errorf("%w: ingress pfc names %d ports, have %d", ErrWorkerConfig, len(c.Ports), n)
	case c.Headroom < 0:
		return fmt.Errorf("%w: ingress pfc: headroom %d bytes", ErrWorkerConfig, c.Headroom)
	case c.Alpha != 0:
		if err := validAlpha(c.Alpha); err != nil {
			return fmt.Errorf("%w: ingress pfc: %v", ErrWorkerConfig, err)
		}
	}
	return nil
}

// pfcState is a worker's ingress accounting.
type pfcState struct {
	cfg   IngressPFC
	th    [8]Thresholds // by priority (IngressPFC.thresholds)
	pool  *SharedBuffer // with cfg.Alpha: the pool the thresholds follow
	alpha int64         // cfg.Alpha in fixed point (alphaFixed)
	bytes [][8]int      // queued bytes by ingress port and priority
	hdrm  [][8]int      // of bytes, those queued in headroom (IngressPFC.Headroom)
	on    []uint8       // priorities paused, by ingress port
	again []int64       // when each paused port's pause is sent again
	next  int64         // the earliest of again over paused ports; MaxInt64 when none
	pause []int64       // a pause's length on each port, ns
}

func newPFCState(c IngressPFC, eg []*Egress) *pfcState {
	if c.Quanta == 0 {
		c.Quanta = 0xffff
	}
	s := &pfcState{cfg: c, bytes: make([][8]int, len(eg)), hdrm: make([][8]int, len(eg)), on: make([]uint8, len(eg)), again: make([]int64, len(eg)),
		next: math.MaxInt64, pause: make([]int64, len(eg))}
	for p := range s.th {
		s.th[p] = c.thresholds(p)
	}
	for i, e := range eg {
		s.pause[i] = int64(uint64(c.Quanta) * 512 * 1e9 / e.PauseRateBps())
		if c.Alpha > 0 && s.pool == nil {
			s.pool, s.alpha = e.Shared(), alphaFixed(c.Alpha)
		}
	}
	return s
}

// dynamic returns what the thresholds have over XOff and XOn now: α
// times the shared pool's free bytes, 0 without a pool.
func (s *pfcState) dynamic() int {
	if s.pool == nil {
		return 0
	}
	return int(s.alpha * max(s.pool.size-s.pool.used.Load(), 0) >> AlphaShift)
}

// pfcCount returns the byte count of ingress port in at the priority of
// queue q of port out, and that priority; nil when in is not paused by
// depth or the queue has no priority.
func (w *Worker) pfcCount(in, out uint16, q uint8) (*int, int) {
	s := w.pfc
	if int(in) >= len(s.bytes) || (s.cfg.Ports != nil && !s.cfg.Ports[in]) {
		return nil, 0
	}
	prio := w.egress[out].queues[q].cfg.PFC
	if prio < 0 || s.cfg.Priorities != 0 && s.cfg.Priorities&(1<<prio) == 0 {
		return nil, 0
	}
	return &s.bytes[in][prio], prio
}

// pfcHeadroom reports whether frame p, if the shared pool refuses it,
// may go into its ingress port's headroom, and tells its queue so.
func (w *Worker) pfcHeadroom(p *Packet) bool {
	s := w.pfc
	if s.cfg.Headroom == 0 {
		return false
	}
	b, prio := w.pfcCount(p.In, p.Out, p.Queue)
	if b == nil || s.hdrm[p.In][prio]+int(p.Len) > s.cfg.Headroom {
		return false
	}
	w.egress[p.Out].queues[p.Queue].headroom = true
	return true
}

// pfcEnqueued counts a frame queued on port out, queue q, that came in
// on port in, and pauses in's peer when the frame takes it past XOff or
// went into headroom (hdrm).
func (w *Worker) pfcEnqueued(in, out uint16, q uint8, n int, hdrm bool) {
	s := w.pfc
	b, prio := w.pfcCount(in, out, q)
	if b == nil {
		return
	}
	*b += n
	if hdrm {
		s.hdrm[in][prio] += n
	}
	// A pause or resume that finds no frame or a full control queue
	// (counted as a drop) changes no state, so the next frame tries
	// again.
	if bit := uint8(1) << prio; (hdrm || *b > s.th[prio].XOff+s.dynamic()) && s.on[in]&bit == 0 && w.pfcSend(int(in), bit, s.cfg.Quanta) {
		s.on[in] |= bit
		if t := w.ctx.Now + s.pause[in]/2; s.on[in] == bit {
			s.again[in] = t
			s.next = min(s.next, t)
		}
	}
}

// pfcDequeued uncounts a frame port out sent from queue q, and resumes
// in's peer when that takes it to XOn.
func (w *Worker) pfcDequeued(in, out uint16, q uint8, n int) {
	s := w.pfc
	b, prio := w.pfcCount(in, out, q)
	if b == nil {
		return
	}
	*b -= n
	if h := &s.hdrm[in][prio]; *h > 0 {
		*h -= min(*h, n) // headroom drains first
	}
	// Not while frames wait in headroom: the pool refused them, and a
	// resume would bring the peer's next burst to the same refusal
	// (ns-3's CheckShouldResume waits for hdrm_bytes to reach 0).
	if bit := uint8(1) << prio; *b <= s.th[prio].XOn+s.dynamic() && s.hdrm[in][prio] == 0 && s.on[in]&bit != 0 && w.pfcSend(int(in), bit, 0) {
		s.on[in] &^= bit
		if s.on[in] == 0 {
			// Rare (once per pause): the next repetition is
			// another port's, if any.
			s.next = math.MaxInt64
			for i, on := range s.on {
				if on != 0 {
					s.next = min(s.next, s.again[i])
				}
			}
		}
	}
}

// pfcRefresh sends again, at time now, the pauses due, and the
// resumes a full control queue kept from going.
func (w *Worker) pfcRefresh(now int64) {
	s := w.pfc
	s.next = math.MaxInt64
	for i, on := range s.on {
		if on == 0 {
			continue
		}
		if s.again[i] <= now {
			var above, below uint8
			dyn := s.dynamic()
			for p := 0; p < 8; p++ {
				if bit := uint8(1) << p; on&bit != 0 {
					if s.bytes[i][p] > s.th[p].XOn+dyn || s.hdrm[i][p] > 0 {
						above |= bit
					} else {
						below |= bit
					}
				}
			}
			if below != 0 && w.pfcSend(i, below, 0) {
				s.on[i] &^= below
			}
			if above != 0 {
				w.pfcSend(i, above, s.cfg.Quanta)
			}
			s.again[i] = now + s.pause[i]/2
		}
		if s.on[i] != 0 {
			s.next = min(s.next, s.again[i])
		}
	}
}

// pfcSend sends port's peer a PFC frame giving time t to the
// priorities in enable, and reports whether the frame was queued.
func (w *Worker) pfcSend(port int, enable uint8, t uint16) bool {
	var times [8]uint16
	for p := range times {
		if enable&(1<<p) != 0 {
			times[p] = t
		}
	}
	return w.sendPFC(port, enable, times)
}

// IngressPFC returns the worker's PFC thresholds (WorkerConfig.PFC), the
// zero value and false without them.
func (w *Worker) IngressPFC() (IngressPFC, bool) {
	if w.pfc == nil {
		return IngressPFC{}, false
	}
	return *w.cfg.PFC, true
}
