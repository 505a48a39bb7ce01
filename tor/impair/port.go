package impair

import (
	"math/rand/v2"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// PortConfig is what a Port needs of its worker.
type PortConfig struct {
	// Worker is the worker's number; it selects the port's random
	// stream (package doc, "Determinism").
	Worker int
	// Mem is the worker's frame memory, which the inner port's frames
	// live in.
	Mem *dataplane.Mem
	// Clock is the worker's clock (dataplane.WorkerConfig.Clock), in
	// nanoseconds: deadlines and policers run on it, so tests and a
	// simulator that step the worker drive the port too.
	Clock func() int64
	// Classifier is the worker's: filters and trim parse frames with
	// it.
	Classifier rocev2.Classifier
}

// ruleState is a port's mutable state for one rule of its plan.
type ruleState struct {
	bad    bool  // Gilbert–Elliott state
	tokens int64 // policer bucket, bytes
	last   int64 // time the bucket was last filled up to
}

// txScratch is the room of one Transmit: a worker batch, the held
// frames that fell due (at most a batch) and a copy of every frame.
const txScratch = 3 * dataplane.BatchSize

// Port is an impaired port: it wraps the port a worker would otherwise
// use, directly on the AF_XDP or in-memory port and inside any other
// wrapper (llr's), and applies the rules of its name to every frame that
// leaves by it (egress) and every frame that arrives on it (ingress),
// whatever put the frame there. See the package doc.
//
// It owns the frames it holds, at most hold_bytes (1 MiB by default) of
// them and never more than its worker's Mem has, and gives the frames it
// destroys back to Mem. Like every port it belongs to its worker's
// thread; only Snapshot may be called from other goroutines. Its zero
// value is not usable; see Control.Wrap.
type Port struct {
	inner dataplane.Port
	ctl   *Control
	cfg   PortConfig
	name  string

	plan  *plan
	rules [2][]uint16 // this port's rule indices by direction, in config order
	state []ruleState // indexed like plan.rules
	rng   rand.PCG

	q     [2]holdQueue // held frames by direction
	bytes int          // held in both
	meta  rocev2.Meta  // the frame being judged, when parsed
	out   [txScratch]dataplane.Packet

	st  Stats
	pub dataplane.Published[Stats] // for Snapshot
}

// Wrap returns inner impaired by the rules ctl publishes for its name.
// A port with no rules passes frames straight through, so tord wraps
// every port and a live Update may give any of them rules.
func (x *Control) Wrap(inner dataplane.Port, c PortConfig) *Port {
	// Rules need the frame's kind and fields, not its ICRC, which the
	// worker verifies when the frame reaches it.
	c.Classifier.VerifyICRC = false
	p := &Port{inner: inner, ctl: x, cfg: c, name: inner.Name()}
	p.st.Port = p.name
	p.adopt()
	p.pub.Store(0, &p.st)
	return p
}

// Inner returns the wrapped port (dataplane.Wrapper).
func (p *Port) Inner() dataplane.Port { return p.inner }

// Name implements dataplane.Port.
func (p *Port) Name() string { return p.name }

// MAC implements dataplane.Port.
func (p *Port) MAC() rocev2.MAC { return p.inner.MAC() }

// TxRoom implements dataplane.Port. Held frames that fall due and copies
// may need more: what the inner port then refuses waits in the hold
// queue for the next call.
func (p *Port) TxRoom() int { return p.inner.TxRoom() }

// Fd implements dataplane.Port.
func (p *Port) Fd() int { return p.inner.Fd() }

// Stats implements dataplane.Port: the inner port's counters. The
// impairment's own are Counters and Snapshot.
func (p *Port) Stats() dataplane.PortStats { return p.inner.Stats() }

// Deadline implements dataplane.Holder: the earliest held frame's.
func (p *Port) Deadline() (int64, bool) {
	at, ok := int64(0), false
	for d := range p.q {
		if h := p.q[d].h; len(h) > 0 && (!ok || h[0].at < at) {
			at, ok = h[0].at, true
		}
	}
	return at, ok
}

// HeldBy returns the frames held now in direction d (Stats.Held is both
// directions'): egress frames wait to go on the wire, ingress frames to
// reach the worker. Call it from the worker's goroutine.
func (p *Port) HeldBy(d Direction) int { return len(p.q[d].h) }

// active reports whether the port has anything to do: rules or held
// frames. An idle port costs one atomic load per call.
func (p *Port) active() bool {
	if pl := p.ctl.load(); pl != p.plan {
		p.adopt()
	}
	return len(p.rules[Ingress])+len(p.rules[Egress])+len(p.q[Ingress].h)+len(p.q[Egress].h) > 0
}

// adopt switches to the plan in force: the rules of this port by
// direction, fresh per-rule state, a reseeded stream, and hold queues
// big enough for the budget. It allocates, once per rule set.
func (p *Port) adopt() {
	pl := p.ctl.load()
	p.plan = pl
	p.rng.Seed(portSeeds(pl.cfg.Seed, p.cfg.Worker, p.name))
	p.rules = [2][]uint16{}
	p.state = make([]ruleState, len(pl.rules))
	now := p.cfg.Clock()
	var room [2]int
	for ri := range pl.rules {
		r := &pl.rules[ri]
		if r.port != p.name {
			continue
		}
		p.rules[r.dir] = append(p.rules[r.dir], uint16(ri))
		p.state[ri] = ruleState{tokens: r.bucket, last: now}
		// Room for the budget in minimum-size (60-byte) frames. Any
		// rule, in either direction, may park copies and frames the
		// inner port refused for a call.
		room[Ingress], room[Egress] = max(room[Ingress], 2*txScratch), max(room[Egress], 2*txScratch)
		if r.holds || r.reorder > 0 {
			room[r.dir] = max(room[r.dir], pl.holdBytes/60+1)
		}
	}
	for d := range p.q {
		// never more entries than the worker has frames
		p.q[d].reserve(min(room[d], p.cfg.Mem.Frames()))
	}
	p.st.Sets++
	// Published now: a port left without rules stops publishing.
	p.pub.Store(now, &p.st)
}

// Receive implements dataplane.Port: held frames that are due come
// first, then what the inner port received, minus what the ingress rule
// destroyed or held.
func (p *Port) Receive(b *dataplane.Batch) int {
	if !p.active() {
		return p.inner.Receive(b)
	}
	n0 := b.N
	now := p.cfg.Clock()
	q := &p.q[Ingress]
	for b.N < dataplane.BatchSize && q.due(now) {
		e := p.unhold(q)
		b.Pkts[b.N] = dataplane.Packet{Addr: e.addr, Len: e.len}
		b.N++
	}
	first := b.N
	p.inner.Receive(b)
	if len(p.rules[Ingress]) == 0 {
		return b.N - n0
	}
	k := first
	for j := first; j < b.N; j++ {
		pk := &b.Pkts[j]
		f, ok := p.impair(Ingress, now, pk.Addr, pk.Len)
		if !ok {
			continue
		}
		pk.Addr = f.addr
		if f.hold == 0 {
			b.Pkts[k] = dataplane.Packet{Addr: pk.Addr, Len: f.len}
			k++
		} else if !p.hold(Ingress, now+f.hold, pk.Addr, f.len) {
			continue
		}
		if f.dup {
			// The batch has no room to spare: the copy waits for the
			// next Receive (or its original's deadline).
			p.duplicate(Ingress, pk.Addr, f.len, now, f.hold)
		}
	}
	b.N = k
	return b.N - n0
}

// Transmit implements dataplane.Port: it takes every frame. Held frames
// that are due leave first, then each frame the egress rule neither
// destroyed nor held, each copy right behind its original; what the
// inner port refuses waits in the hold queue, due at once.
func (p *Port) Transmit(pkts []dataplane.Packet) int {
	if !p.active() {
		return p.inner.Transmit(pkts)
	}
	now := p.cfg.Clock()
	k := p.releaseDue(now)
	for i := range pkts {
		pk := &pkts[i]
		f, ok := p.impair(Egress, now, pk.Addr, pk.Len)
		pk.Addr = f.addr // trimmed in a copy when llr holds the frame
		switch {
		case !ok:
			continue
		case f.hold == 0:
			k = p.queue(now, k, pk.Addr, f.len)
		case !p.hold(Egress, now+f.hold, pk.Addr, f.len):
			continue
		}
		if !f.dup {
			continue
		}
		if addr, ok := p.duplicate(Egress, pk.Addr, f.len, now, f.hold); ok {
			k = p.queue(now, k, addr, f.len)
		}
	}
	p.send(now, k)
	return len(pkts)
}

// Service implements dataplane.Port: held frames that fall due between
// batches leave here, then the inner port reclaims and wakes.
func (p *Port) Service() {
	if p.active() {
		now := p.cfg.Clock()
		if p.q[Egress].due(now) {
			p.send(now, p.releaseDue(now))
		}
		p.pub.Maybe(now, &p.st) // about once a millisecond of worker time
	}
	p.inner.Service()
}

// releaseDue moves the due egress frames, as many as the inner port has
// room for, into the scratch batch, and returns how many.
func (p *Port) releaseDue(now int64) int {
	k, room := 0, min(p.inner.TxRoom(), dataplane.BatchSize)
	for q := &p.q[Egress]; k < room && q.due(now); k++ {
		e := p.unhold(q)
		p.out[k] = dataplane.Packet{Addr: e.addr, Len: e.len}
	}
	return k
}

// queue puts a frame in the scratch batch at k, or, when it is full,
// holds it due at once; it returns the new length.
func (p *Port) queue(now int64, k int, addr uint64, n uint16) int {
	if k == len(p.out) {
		p.hold(Egress, now, addr, n)
		return k
	}
	p.out[k] = dataplane.Packet{Addr: addr, Len: n}
	return k + 1
}

// send hands the scratch batch's k frames to the inner port; those it
// refuses are held, due at once, in order.
func (p *Port) send(now int64, k int) {
	if k == 0 {
		return
	}
	for j := p.inner.Transmit(p.out[:k]); j < k; j++ {
		p.hold(Egress, now, p.out[j].Addr, p.out[j].Len)
	}
}

// hold keeps a frame until at, in direction d's queue. Over the budget
// it destroys the frame instead (cause overflow) and returns false.
func (p *Port) hold(d Direction, at int64, addr uint64, n uint16) bool {
	q := &p.q[d]
	if p.bytes+int(n) > p.plan.holdBytes || q.full() {
		p.destroy(d, addr, n, CauseOverflow)
		return false
	}
	q.push(held{at: at, addr: addr, len: n})
	p.bytes += int(n)
	p.st.Held++
	p.st.HeldBytes = p.bytes
	p.st.MaxHeldBytes = max(p.st.MaxHeldBytes, p.bytes)
	return true
}

func (p *Port) unhold(q *holdQueue) held {
	e := q.pop()
	p.bytes -= int(e.len)
	p.st.Held--
	p.st.HeldBytes = p.bytes
	p.st.Released++
	return e
}

// destroy gives a frame back to Mem and counts it by class and cause.
// It parses the frame anew: destruction is rare, and the frame may have
// been rewritten since a filter parsed it.
func (p *Port) destroy(d Direction, addr uint64, n uint16, c Cause) {
	p.cfg.Classifier.Classify(p.cfg.Mem.Bytes(addr, int(n)), &p.meta)
	p.st.Dir[d].Destroyed[classOf(&p.meta, p.cfg.Classifier.DCP)][c]++
	p.cfg.Mem.Release(addr)
}

// duplicate copies a frame into a free one. A copy of a held frame is
// held with it; any other is returned for the caller to send (Transmit)
// or held due at once (Receive, whose batch has no room to spare).
// Without a free frame there is no copy.
func (p *Port) duplicate(d Direction, addr uint64, n uint16, now, hold int64) (uint64, bool) {
	ds := &p.st.Dir[d]
	c, ok := p.cfg.Mem.Alloc()
	if !ok {
		ds.DupFailed++
		return 0, false
	}
	copy(p.cfg.Mem.Room(c), p.cfg.Mem.Bytes(addr, int(n)))
	ds.Duplicated++
	if d == Egress && hold == 0 {
		return c, true
	}
	p.hold(d, now+hold, c, n)
	return 0, false
}

// Flush frees the frames still held, counting them in Stats.Flushed. Call
// it once the worker has stopped (tord does, after Run); the port stays
// usable.
func (p *Port) Flush() {
	for d := range p.q {
		for q := &p.q[d]; len(q.h) > 0; {
			e := p.unhold(q)
			p.st.Released--
			p.st.Flushed++
			p.cfg.Mem.Release(e.addr)
		}
	}
	p.pub.Store(p.cfg.Clock(), &p.st)
}

// Close implements dataplane.Port: it flushes, then closes the inner
// port.
func (p *Port) Close() error {
	p.Flush()
	return p.inner.Close()
}

var (
	_ dataplane.Port    = (*Port)(nil)
	_ dataplane.Holder  = (*Port)(nil)
	_ dataplane.Wrapper = (*Port)(nil)
)
