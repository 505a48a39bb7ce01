package netrt

import (
	"math"
	"math/bits"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// In-network congestion avoidance (seed 000, §III-C-3). Per fabric port
// the stage measures N, the bytes of retransmission asked of it within
// the last Config.Window. Below KLow a requested duplicate goes at once;
// from KLow on it joins the port's pacing FIFO, which a timer drains at
//
//	R_r = max(RateMax − (N−KLow)(RateMax−RateMin)/(KHigh−KLow), RateMin)
//
// and the host ports whose flows were asked for are paused with PFC
// until N falls below KLow again.
//
// The pacing FIFO is a list threaded through the pool's own entries
// (dup.on[onPace]) rather than a ring of indices with generations or a
// set of copies: a duplicate retired while it waits (ACKed, evicted,
// expired) leaves the list at once and is counted as skipped, so the
// FIFO never holds stale entries, needs no memory of its own, cannot
// overflow, and what waits is bounded by the pool's budget.

// cport is the congestion-avoidance state of one fabric port.
type cport struct {
	// N over a sliding window made of two fixed ones: the bytes of this
	// window and of the one before, the latter weighted by the part of
	// it still inside the last Window. No memory per request.
	epoch       int64 // number of the current window: now / Window
	cur, prev   int
	hcur, hprev uint64 // host ports whose flows the bytes were for

	fifo       ends  // pacing FIFO, oldest first
	retx, data leave // departures of the resends and originals of the current call (dup.dep)
	next       int64 // earliest time of the next paced retransmission
	armed      bool  // a pacing timer is armed
	rmax, rmin uint64

	// The amplification bound (Config.RetxRate, RetxBurst) as a
	// virtual-time token bucket (GCRA): tat is when the bucket would
	// be full again, burst how far ahead of now it may run, in ns at
	// lrate bit/s. Integer time, no float, nothing per request.
	tat   int64
	burst int64
	lrate uint64
}

// allow charges duplicate d's bytes to its port's retransmission
// bucket and reports whether there was room.
func (s *SrcToR) allow(now int64, d *dup) bool {
	p := &s.cp[d.out]
	cost := int64(min(mulDiv(uint64(d.len)*8, 1e9, p.lrate), math.MaxInt32))
	if sh := s.cfg.Budgets; sh != nil {
		return sh.ports[d.out].allow(now, cost, p.burst)
	}
	t := max(p.tat, now)
	if t+cost-now > p.burst {
		return false
	}
	p.tat = t + cost
	return true
}

// roll moves the window on to now.
func (p *cport) roll(now, w int64) {
	e := now / w
	switch {
	case e == p.epoch:
		return
	case e == p.epoch+1:
		p.prev, p.hprev = p.cur, p.hcur
	default:
		p.prev, p.hprev = 0, 0
	}
	p.cur, p.hcur, p.epoch = 0, 0, e
}

// n returns N at now.
func (p *cport) n(now, w int64) int {
	p.roll(now, w)
	return p.cur + int(mulDiv(uint64(p.prev), uint64(w-now%w), uint64(w)))
}

// load returns port f's N at now: this stage's own, or with
// Config.Budgets every worker's, counted the same way. The port's
// windows roll either way: the host ports to pause are this stage's.
func (s *SrcToR) load(f int, now int64) int {
	p, w := &s.cp[f], s.cfg.Window
	sh := s.cfg.Budgets
	if sh == nil {
		return p.n(now, w)
	}
	p.roll(now, w)
	cur, prev := sh.ports[f].window(now / w)
	return cur + int(mulDiv(uint64(prev), uint64(w-now%w), uint64(w)))
}

// rate returns R_r for N = n ≥ KLow.
func (s *SrcToR) rate(p *cport, n int) uint64 {
	switch {
	case n >= s.cfg.KHigh:
		return p.rmin
	case n <= s.cfg.KLow:
		return p.rmax
	}
	return p.rmax - mulDiv(uint64(n-s.cfg.KLow), p.rmax-p.rmin, uint64(s.cfg.KHigh-s.cfg.KLow))
}

// mulDiv returns a·b/c without overflow in the product, saturating.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// resolve fixes what depends on the worker's ports: each port's rate
// bounds and the tick, short enough both to notice N falling below KLow
// within Window/16 and to refresh a pause before it lapses.
func (s *SrcToR) resolve(c *dataplane.Ctx) {
	s.ready = true
	s.tick = max(s.cfg.Window/16, 1000)
	for i := 0; i < min(c.NumPorts(), MaxPorts); i++ {
		p := &s.cp[i]
		p.rmax, p.rmin = s.cfg.RateMax, s.cfg.RateMin
		if r := c.Egress(i).RateBps(); r > 0 {
			p.rmax = orDefault(p.rmax, r/2)
			p.rmin = orDefault(p.rmin, r/100)
		} else {
			p.rmax = orDefault(p.rmax, DefaultRateMax)
			p.rmin = orDefault(p.rmin, DefaultRateMin)
		}
		p.rmin = max(p.rmin, 1)
		p.rmax = max(p.rmax, p.rmin) // a RateMin set above the default RateMax
		p.lrate = orDefault(s.cfg.RetxRate, p.rmax)
		burst := s.cfg.RetxBurst
		if burst == 0 {
			burst = max(s.cfg.PoolBytes, MaxFrame)
		}
		p.burst = int64(min(mulDiv(uint64(burst)*8, 1e9, p.lrate), math.MaxInt64/2))
		p.tat = math.MinInt64 / 2 // full
		if s.cfg.host(uint16(i)) && s.cfg.PausePriority > 0 {
			s.tick = min(s.tick, s.pauseLen(c, i)/4)
		}
	}
	s.tick = max(s.tick, 1)
}

// orDefault returns v, or d when v is zero.
func orDefault(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// pauseLen returns how long a pause of PauseQuanta lasts on host port h:
// quanta of 512 bit times at the port's pause rate, which is its shaped
// rate, or 10 Gbit/s when it is unshaped (dataplane.EgressConfig).
func (s *SrcToR) pauseLen(c *dataplane.Ctx, h int) int64 {
	return int64(rocev2.PauseQuanta(s.cfg.PauseQuanta, c.Egress(h).PauseRateBps()))
}

// retransmit sends pooled duplicate e again, at once while its port's N
// is below KLow, else through the port's pacing FIFO. N counts e's bytes
// the first time e is asked for, this request included: a repeated
// request (its first answer lost, or still on its way) asks for nothing
// new, and counting it again would drive N toward KLow, pacing and
// pausing for what is one hole (§III-C-3 counts requested data, not
// requests). One that already waits is not queued twice.
//
// The request's ePSN (first) is what the destination ToR is blocked on:
// everything it holds waits behind it, and it gives the flow up after
// MaxRequests unanswered requests. So it goes to the front of the FIFO,
// the rest of the request behind what waited before: pacing keeps its
// rate, and the packet that releases the most goes first.
func (s *SrcToR) retransmit(c *dataplane.Ctx, e int32, first bool) {
	d := &s.dups[e]
	if d.queued {
		if first && s.cp[d.out].fifo.head != e {
			s.unqueue(e)
			s.enqueue(e, c.Now, true)
		}
		s.restart(e, c.Now)
		return
	}
	f := int(d.out)
	p := &s.cp[f]
	p.roll(c.Now, s.cfg.Window)
	if !d.counted {
		d.counted = true
		p.cur += int(d.len)
		if h := s.flows[d.flow].in; h < MaxPorts {
			p.hcur |= 1 << h
		}
		if sh := s.cfg.Budgets; sh != nil {
			sh.ports[f].request(c.Now/s.cfg.Window, int(d.len))
		}
	}
	if s.load(f, c.Now) < s.cfg.KLow {
		s.drain(c, f) // what waited goes first
		s.resend(c, e, false)
		return
	}
	// Paced from the end of the request (congest), so that all of it is
	// paced at the rate its whole size calls for.
	s.active |= 1 << f
	s.enqueue(e, c.Now, first)
	s.restart(e, c.Now)
}

// restart gives a duplicate that waits to be paced a new Hold from now,
// so that the pacing it waits for does not expire it; it may still
// expire if its turn is more than Hold away, and is then skipped.
func (s *SrcToR) restart(e int32, now int64) {
	s.unlink(e)
	s.dups[e].exp = now + s.cfg.Hold
	s.link(e)
}

// enqueue appends e to its port's pacing FIFO, or puts it in front.
func (s *SrcToR) enqueue(e int32, now int64, front bool) {
	d := &s.dups[e]
	p := &s.cp[d.out]
	if p.fifo.head < 0 {
		p.next = max(p.next, now) // an idle port starts at once
		if sh := s.cfg.Budgets; sh != nil {
			sh.ports[d.out].pacers.Add(1)
		}
	}
	d.queued = true
	if front {
		s.pushFront(&p.fifo, onPace, e)
	} else {
		s.pushBack(&p.fifo, onPace, e)
	}
	s.st.Ports[d.out].PaceQueued++
}

// unqueue takes e off its port's pacing FIFO.
func (s *SrcToR) unqueue(e int32) {
	d := &s.dups[e]
	s.drop(&s.cp[d.out].fifo, onPace, e)
	d.queued = false
	s.st.Ports[d.out].PaceQueued--
	if sh := s.cfg.Budgets; sh != nil && s.cp[d.out].fifo.head < 0 {
		sh.ports[d.out].pacers.Add(-1)
	}
}

// drain sends everything port f's FIFO holds at once.
func (s *SrcToR) drain(c *dataplane.Ctx, f int) {
	for p := &s.cp[f]; p.fifo.head >= 0; {
		e := p.fifo.head
		s.unqueue(e)
		s.resend(c, e, false)
	}
}

// pace sends what port f's FIFO owes by now, one duplicate every
// len·8/R_r, and keeps a timer for the next. The gap is added to the
// previous send time, not to now, so the timer's lateness does not
// lower the rate; but a worker late by more than a tick gets no credit
// for it, so that it does not make up with a burst.
func (s *SrcToR) pace(c *dataplane.Ctx, f int) {
	p := &s.cp[f]
	n := s.load(f, c.Now)
	if n < s.cfg.KLow {
		s.drain(c, f)
		return
	}
	sh := s.cfg.Budgets
	p.next = max(p.next, c.Now-s.tick)
	for p.fifo.head >= 0 && p.next <= c.Now {
		e := p.fifo.head
		l := uint64(s.dups[e].len)
		r, mine := s.rate(p, n), uint64(1)
		if sh != nil {
			// The port's pace is the switch's: the k workers pacing
			// on it each send at R_r/k, so that together they send
			// R_r, each its turn (one clock for all would let the
			// worker that polls first take every slot).
			mine = uint64(max(sh.ports[f].pacers.Load(), 1))
		}
		s.unqueue(e)
		s.resend(c, e, true)
		s.st.Ports[f].RateBps = r
		p.next += int64(min(mulDiv(l*8*mine, 1e9, r), math.MaxInt32))
	}
	if p.fifo.head >= 0 && !p.armed {
		if c.After(p.next-c.Now, timerPace+uint64(f)) {
			p.armed = true
		} else {
			s.st.TimerFull++ // the tick serves the FIFO meanwhile
		}
	}
}

// congest looks at every port at or above KLow: one that fell below
// sends what waits at once and leaves the set; the others are paced,
// and their hosts paused. It keeps the tick armed while any port is
// congested or any host paused.
func (s *SrcToR) congest(c *dataplane.Ctx) {
	var want uint64
	for m := s.active; m != 0; m &= m - 1 {
		f := bits.TrailingZeros64(m)
		p := &s.cp[f]
		if s.load(f, c.Now) < s.cfg.KLow {
			s.drain(c, f)
			s.active &^= 1 << f
			continue
		}
		want |= p.hcur | p.hprev
		s.pace(c, f)
	}
	s.pfc(c, want)
	if (s.active != 0 || s.paused != 0) && !s.ticking {
		if c.After(s.tick, timerTick) {
			s.ticking = true
		} else {
			s.st.TimerFull++
		}
	}
}

// pfc pauses the host ports in want that are not paused or whose pause
// is half over, and resumes the paused ones not in want. A frame the
// port refuses is tried again at the next tick.
func (s *SrcToR) pfc(c *dataplane.Ctx, want uint64) {
	if s.cfg.PausePriority < 0 {
		return
	}
	prio := s.cfg.PausePriority
	for m := want | s.paused; m != 0; m &= m - 1 {
		h := bits.TrailingZeros64(m)
		bit := uint64(1) << h
		ps := &s.st.Ports[h]
		var t [8]uint16
		if want&bit == 0 {
			if !c.SendPFC(h, 1<<prio, t) {
				ps.PFCFailed++
				continue
			}
			s.paused &^= bit
			ps.Resumes++
			ps.PausedNow = false
			continue
		}
		if s.paused&bit != 0 && c.Now < s.refresh[h] {
			continue
		}
		t[prio] = s.cfg.PauseQuanta
		if !c.SendPFC(h, 1<<prio, t) {
			ps.PFCFailed++
			continue
		}
		s.paused |= bit
		s.refresh[h] = c.Now + s.pauseLen(c, h)/2
		ps.Pauses++
		ps.PausedNow = true
	}
}
