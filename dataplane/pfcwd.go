package dataplane

import (
	"fmt"
	"math"
)

// PFCWatchdog ends PFC pause storms and deadlocks, as SONiC's pfcwd
// does (sonic-swss orchagent/pfcwdorch.cpp; the "PFC Watchdog" design in
// sonic-net/SONiC doc/pfc_watchdog): a queue whose PFC priority has been
// paused by the port's peer, with frames waiting and none sent, for
// Detection is stormed. The worker then stops honouring the peer's
// pauses on that priority and either drops the priority's queued and
// arriving frames (ReasonPFCWatchdog, PortCounters.WDDrops) or, with
// Forward, sends them regardless of the pause. The queue is restored
// when Restoration passes with no pause received on the priority.
//
// Without it one host whose NIC pauses forever (a stuck receive ring, a
// bug), or a cyclic buffer dependency (Guo et al., "RDMA over Commodity
// Ethernet at Scale", SIGCOMM 2016, §4.3 and §4.4: the storm and the
// deadlock), stops the priority on every link that leads to it.
//
// Time is the worker's clock, so a simulation repeats exactly. The
// watchdog looks at a priority when a pause arrives and when a check it
// scheduled falls due (Detection after the pause began, then every
// Detection/4 while the priority stays paused), never per data frame: a
// storm is declared between Detection and 1.25 × Detection after the
// queue stalled, and at Detection after its first pause when frames
// were already waiting. Storms and restorations are counted
// (PortCounters.WDStorms, WDRestores); the control plane alerts on the
// counters (the worker never logs).
type PFCWatchdog struct {
	Detection, Restoration int64 // ns
	// Forward, when true, sends a stormed queue's frames in spite of
	// the pauses; false drops them (SONiC's default action).
	Forward bool
	// Priorities is the vector of the watched priorities (bit p:
	// priority p); 0 watches every priority.
	Priorities uint8
	// Ports says by port index which ports are watched; nil: every
	// port.
	Ports []bool
}

func (c *PFCWatchdog) validate(n int) error {
	switch {
	case c.Detection <= 0 || c.Restoration <= 0:
		return fmt.Errorf("%w: pfc watchdog: detection %d ns, restoration %d ns, want both > 0", ErrWorkerConfig, c.Detection, c.Restoration)
	case c.Ports != nil && len(c.Ports) != n:
		return fmt.Errorf("%w: pfc watchdog names %d ports, have %d", ErrWorkerConfig, len(c.Ports), n)
	}
	return nil
}

// wdQueue is the watchdog's view of one port's priority.
type wdQueue struct {
	since  int64  // when the priority was last seen paused and not sending; -1: not paused
	sent   uint64 // the priority's frames sent by then
	lastRx int64  // when a pause last arrived on it
}

// wdState is a worker's watchdog.
type wdState struct {
	cfg   PFCWatchdog
	prios uint8
	q     [][8]wdQueue
	storm []uint8 // stormed priorities, by port
	next  int64   // the next check; MaxInt64 when nothing is paused
}

func newWDState(c PFCWatchdog, ports int) *wdState {
	s := &wdState{cfg: c, prios: c.Priorities, q: make([][8]wdQueue, ports), storm: make([]uint8, ports), next: math.MaxInt64}
	if s.prios == 0 {
		s.prios = 0xff
	}
	for i := range s.q {
		for p := range s.q[i] {
			s.q[i][p].since = -1
		}
	}
	return s
}

// watched returns the priorities the watchdog watches on port i.
func (s *wdState) watched(i int) uint8 {
	if s.cfg.Ports != nil && !s.cfg.Ports[i] {
		return 0
	}
	return s.prios
}

// prioQueues returns the frames waiting in, and the frames sent from,
// the queues of e that PFC priority p stops.
func (e *Egress) prioQueues(p int) (frames int, sent uint64) {
	for i := range e.queues {
		if q := &e.queues[i]; q.cfg.PFC == p {
			frames += q.packets()
			sent += q.stats.Dequeued
		}
	}
	return frames, sent
}

// wdPause runs before a PFC frame received on port in is applied: it
// returns the priorities of enable the frame may pause or resume, the
// stormed ones left out, and starts watching the priorities it pauses.
func (w *Worker) wdPause(in int, enable uint8, times *[8]uint16) uint8 {
	s, e, now := w.wd, w.egress[in], w.ctx.Now
	watch := s.watched(in) & enable
	if watch == 0 {
		return enable
	}
	for p := 0; p < 8; p++ {
		bit := uint8(1) << p
		if watch&bit == 0 || times[p] == 0 {
			continue
		}
		q := &s.q[in][p]
		q.lastRx = now
		if s.storm[in]&bit == 0 && e.pausedUntil[p] <= now {
			// A pause begins: the stall is timed from here.
			_, q.sent = e.prioQueues(p)
			q.since = now
			s.next = min(s.next, now+s.cfg.Detection)
		}
	}
	return enable &^ s.storm[in]
}

// wdDropping reports whether a frame for queue q of port out dies
// because its priority is stormed and the action is drop.
func (w *Worker) wdDropping(out uint16, q uint8) bool {
	s := w.wd
	if s.storm[out] == 0 || s.cfg.Forward {
		return false
	}
	p := w.egress[out].queues[q].cfg.PFC
	return p >= 0 && s.storm[out]&(1<<p) != 0
}

// wdCheck declares the storms and restorations due at now and
// schedules the next check.
func (w *Worker) wdCheck(now int64) {
	s := w.wd
	s.next = math.MaxInt64
	for i, e := range w.egress {
		watch := s.watched(i)
		for p := 0; p < 8; p++ {
			if bit := uint8(1) << p; watch&bit != 0 {
				s.next = min(s.next, w.wdQueue(i, p, e, now))
			}
		}
	}
}

// wdQueue checks port i's priority p at now and returns when to look
// at it again (MaxInt64: not until a pause arrives).
func (w *Worker) wdQueue(i, p int, e *Egress, now int64) int64 {
	s, bit := w.wd, uint8(1)<<p
	q := &s.q[i][p]
	if s.storm[i]&bit != 0 {
		if now-q.lastRx < s.cfg.Restoration {
			return q.lastRx + s.cfg.Restoration
		}
		s.storm[i] &^= bit
		w.st.Ports[i].WDRestores++
		q.since = -1
		return math.MaxInt64
	}
	if e.pausedUntil[p] <= now {
		q.since = -1
		return math.MaxInt64
	}
	frames, sent := e.prioQueues(p)
	switch {
	case q.since < 0 || sent != q.sent:
		q.since, q.sent = now, sent
		return now + s.cfg.Detection
	case frames == 0:
		return now + max(s.cfg.Detection/4, 1)
	case now-q.since < s.cfg.Detection:
		return q.since + s.cfg.Detection
	}
	w.wdStorm(i, p, now)
	return q.lastRx + s.cfg.Restoration
}

// wdStorm declares a storm on port i's priority p: the pause is lifted
// and, with the drop action, the priority's queued frames are dropped.
func (w *Worker) wdStorm(i, p int, now int64) {
	s, e, bit := w.wd, w.egress[i], uint8(1)<<p
	s.storm[i] |= bit
	w.st.Ports[i].WDStorms++
	var zero [8]uint16
	e.Pause(now, bit, &zero)
	if s.cfg.Forward {
		return
	}
	for qi := range e.queues {
		qu := &e.queues[qi]
		if qu.cfg.PFC != p {
			continue
		}
		for qu.packets() > 0 {
			en := qu.pop()
			// Dropped, not sent: the queue's Dequeued counts frames
			// that left on the wire.
			qu.stats.Dequeued--
			qu.stats.Bytes -= uint64(en.len)
			e.backlog -= int(en.len)
			if en.in != NoPort {
				w.dequeued(en.in, uint16(i), uint8(qi), int(en.len))
			}
			w.st.Ports[i].WDDrops++
			w.drop(en.addr, en.len, ReasonPFCWatchdog)
		}
	}
}

// PFCWatchdog returns the worker's watchdog (WorkerConfig.PFCWatchdog),
// the zero value and false without one.
func (w *Worker) PFCWatchdog() (PFCWatchdog, bool) {
	if w.wd == nil {
		return PFCWatchdog{}, false
	}
	return w.wd.cfg, true
}
