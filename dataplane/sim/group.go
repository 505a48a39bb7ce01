package sim

import (
	"math/bits"
	"sync"
)

// Group runs the partitions of one simulation (Sim.Part) in windows of
// simulated time, conservatively (Chandy–Misra–Bryant with a fixed
// lookahead, as the package doc says): within a window no partition can
// affect another, since every link between two has a delay of at least
// Lookahead, so the partitions run a window each on a goroutine of its
// own and meet at its end, where the frames that crossed are taken into
// their receivers' memories (Drain, at the start of the next window).
// Global is a partition of the actors that read or write several
// partitions (a run's flow posting and sampling in tor/fabric); the
// caller fires its events between windows, on one goroutine, with the
// others stopped.
type Group struct {
	Parts     []*Sim
	Global    *Sim
	Lookahead Time
	// span counts the most events any one partition fired in each
	// Run, inRun all the events fired in Run (Parallelism).
	span, inRun uint64
	wg          sync.WaitGroup
	paused      []bool
	fired       []uint64
}

// NewGroup returns the group of parts and global, with the smallest
// delay of a link between two of parts as its lookahead (Never with
// one part).
func NewGroup(parts []*Sim, global *Sim) *Group {
	g := &Group{Parts: parts, Global: global, Lookahead: Never, paused: make([]bool, len(parts)), fired: make([]uint64, len(parts))}
	for _, p := range parts {
		for _, w := range p.cross {
			g.Lookahead = min(g.Lookahead, w.to.cfg.Delay)
		}
	}
	for _, p := range parts {
		for _, w := range p.cross {
			w.xroom = exchangeRoom(w.to.cfg.RateBps, g.Lookahead, w.to.mem.FrameSize())
		}
	}
	return g
}

// exchangeRoom is the bytes a link direction of rate bit/s carries in a
// window of lookahead: rate × lookahead and the frame being serialized
// as the window opens, each of at most frame bytes. An exchange's data
// is made that large at its first frame (wire.push): grown by append
// from nothing instead, the buffers it outgrew were garbage the
// collector, paced by a heap of hundreds of MB, left in place — 34 MB
// for htsim's 1,024-host permutation on two partitions (tor/fabric), 48
// MB allocated for 14 MB kept.
func exchangeRoom(rate uint64, lookahead Time, frame int) int {
	hi, lo := bits.Mul64(rate, uint64(lookahead))
	if hi != 0 || lookahead <= 0 {
		return 64 << 10 // no bound worth keeping: grow as frames come
	}
	return int(min(lo/uint64(8*Second), 64<<10)) + frame
}

// Begin starts a window: frames put on a wire between partitions from
// now on go to the window's exchange, which its receiver drains at the
// start of the next.
func (g *Group) Begin() {
	for _, p := range g.Parts {
		p.epoch++
	}
}

// Next returns the time of the earliest event of any partition or of
// Global, counting the frames that crossed in the last window and wait
// to be drained (their arrivals are events of the receiver).
func (g *Group) Next() Time {
	t := g.Global.Next()
	for _, p := range g.Parts {
		t = min(t, p.Next())
		for _, w := range p.cross {
			for i := range w.x {
				if r := w.x[i].recs; len(r) > 0 {
					t = min(t, r[0].at)
				}
			}
		}
	}
	return t
}

// Drain takes into p's memories the frames that crossed into it in the
// windows before the current one, link by link in id order, each link's
// in the order sent: so they are in flight in the same order whatever
// the goroutines did.
func (p *Sim) Drain() {
	for _, w := range p.cross {
		if x := &w.x[(p.epoch+1)&1]; len(x.recs) > 0 {
			w.drain(x)
		}
	}
}

// Flush drains every exchange, the current window's too: at the end of
// a run, so that the frames that crossed are in flight at their
// receivers (Port.InFlight) and in their memories.
func (g *Group) Flush() {
	for _, p := range g.Parts {
		p.Drain()
		p.epoch++
		p.Drain()
	}
}

// Run runs the partitions whose index is listed, each on a goroutine of
// its own (the first on the caller's): each drains what crossed into it,
// then fires its events before end, stopping early after an event for
// which pause(i) (called on partition i's goroutine) says so. It reports
// which paused.
func (g *Group) Run(parts []int, end Time, pause func(i int) bool) []bool {
	clear(g.paused)
	one := func(i int) {
		p := g.Parts[i]
		defer func(e uint64) { g.fired[i] = p.Events - e }(p.Events)
		p.Drain()
		for len(p.h) > 0 && p.h[0].at < end {
			p.Step()
			if pause != nil && pause(i) {
				g.paused[i] = true
				return
			}
		}
	}
	for _, i := range parts[min(1, len(parts)):] {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			one(i)
		}()
	}
	if len(parts) > 0 {
		one(parts[0])
	}
	g.wg.Wait()
	most := uint64(0)
	for _, i := range parts {
		most = max(most, g.fired[i])
		g.inRun += g.fired[i]
	}
	g.span += most
	return g.paused
}

// Stop ends a run whose last event is the latest of the events at
// which the partitions that paused did (Run): the partitions that
// paused at an earlier time, or did not run, fire their events before
// that time; then those of every partition at that time fire in the
// order one simulation would have fired them — the smallest id of the
// partitions' next events first, those the paused ones fired already
// counted in their turn —, until the paused partitions' have all come.
func (g *Group) Stop(paused []bool) {
	t := Time(-1)
	for i, p := range paused {
		if p {
			t = max(t, g.Parts[i].now)
		}
	}
	if t < 0 {
		return
	}
	logs := make([][]int32, len(g.Parts))
	left := 0
	for i, p := range g.Parts {
		p.Drain()
		if paused[i] && p.now == t {
			logs[i] = p.log
			left += len(p.log)
			continue
		}
		for len(p.h) > 0 && p.h[0].at < t {
			p.Step()
		}
	}
	for left > 0 {
		best, bid := -1, int32(-1)
		for i, p := range g.Parts {
			id := int32(-1)
			if len(logs[i]) > 0 {
				id = logs[i][0]
			} else if len(p.h) > 0 && p.h[0].at == t {
				id = p.h[0].id
			}
			if id >= 0 && (best < 0 || id < bid) {
				best, bid = i, id
			}
		}
		if len(logs[best]) > 0 {
			logs[best] = logs[best][1:]
			left--
		} else {
			g.Parts[best].Step()
		}
	}
}

// StepFirst drains every partition and fires the one earliest event of
// them all and Global, as one simulation's Step would; it reports
// whether there was one.
func (g *Group) StepFirst() bool {
	best, bt, bid := (*Sim)(nil), Never, -1
	for _, p := range append(g.Parts[:len(g.Parts):len(g.Parts)], g.Global) {
		p.Drain()
		if t, id := p.Peek(); t < bt || t == bt && t != Never && id < bid {
			best, bt, bid = p, t, id
		}
	}
	if best == nil {
		return false
	}
	if best == g.Global {
		g.Advance(bt)
	}
	return best.Step()
}

// Advance sets every partition's clock to t, at which Global fires: each
// has fired every event before t+1, and whatever Global's actors post
// to a node reads t on its clock, as in one simulation. The events of t
// fired so far leave the logs: every one came before Global's, in any
// order, so Stop merges only those fired after.
func (g *Group) Advance(t Time) {
	for _, p := range g.Parts {
		p.now, p.log = max(p.now, t), p.log[:0]
	}
}

// Now returns the time of the last event fired in any partition.
func (g *Group) Now() Time {
	t := g.Global.Now()
	for _, p := range g.Parts {
		t = max(t, p.Now())
	}
	return t
}

// Parallelism returns the events fired over those on the run's critical
// path — per window the most one partition fired, and every event fired
// between windows —: the speed-up the partitions allow if every event
// cost alike and the barriers nothing, an upper bound of what the
// goroutines give.
func (g *Group) Parallelism() float64 {
	e := g.Events()
	return float64(e) / float64(max(1, g.span+e-g.inRun))
}

// Events returns the events fired in every partition and Global.
func (g *Group) Events() uint64 {
	e := g.Global.Events
	for _, p := range g.Parts {
		e += p.Events
	}
	return e
}

// CrossNoFrame returns the frames lost between partitions for want of
// a free frame at the receiver (PortStats.RxNoFrame on a link between
// partitions): such a frame is taken at the end of the window it was
// sent in, not as it leaves, so a run with any is not exactly what one
// partition would have run.
func (g *Group) CrossNoFrame() uint64 {
	var n uint64
	for _, p := range g.Parts {
		for _, w := range p.cross {
			n += w.to.st.RxNoFrame
		}
	}
	return n
}
