package impair

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Drop reasons of the stage; see the package doc for when each applies.
var (
	ReasonLoss     = dataplane.NewReason("impair_loss")
	ReasonBurst    = dataplane.NewReason("impair_burst")
	ReasonCorrupt  = dataplane.NewReason("impair_corrupt")
	ReasonPoliced  = dataplane.NewReason("impair_policed")
	ReasonOverflow = dataplane.NewReason("impair_overflow")
)

// ruleState is a worker's mutable state for one rule of its plan.
type ruleState struct {
	bad    bool  // Gilbert–Elliott state
	tokens int64 // policer bucket, bytes
	last   int64 // time the bucket was last filled up to
}

// Stage applies the rules a Control publishes; see the package doc. One
// worker owns each Stage: its random stream, per-rule state, held frames
// and counters are plain fields. It holds at most the plan's hold_bytes
// of frames (1 MiB by default) and never more frames than its worker's
// Mem has. Only Snapshot may be called from other goroutines. Its zero
// value is not usable; see NewStage.
type Stage struct {
	ctl    *Control
	worker int

	plan  *plan
	rng   rand.PCG
	in    [][]uint16 // rule indices by ingress port, in config order
	out   [][]uint16 // rule indices by egress port
	state []ruleState
	ctrlQ []int // the "control" queue of each port, for trimmed packets; -1 if none

	q     holdQueue
	armed int64 // deadline of the earliest timer armed for q, MaxInt64 if none
	mem   *dataplane.Mem
	tmp   dataplane.Packet // a frame being emitted; a field, so it never escapes

	st      Stats
	lastPub int64
	pubMu   sync.Mutex
	pub     Stats
}

// NewStage returns the stage of worker number worker, which applies the
// rules ctl publishes. The worker number selects the worker's random
// stream (package doc, "Determinism").
func NewStage(ctl *Control, worker int) *Stage {
	return &Stage{ctl: ctl, worker: worker, armed: math.MaxInt64}
}

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "impair" }

// Process implements dataplane.Stage: it releases held frames that are
// due, then impairs every packet still marked Forward that a rule
// matches.
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	// One atomic load per batch: a new rule set costs nothing until it
	// is published, and every packet of a batch sees the same set.
	if p := s.ctl.load(); p != s.plan {
		s.adopt(c, p)
	}
	s.release(c)
	if len(s.plan.rules) > 0 {
		for i := 0; i < b.N; i++ {
			if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
				s.impair(c, p)
			}
		}
	}
	if c.Now-s.lastPub >= int64(time.Millisecond) {
		s.publish(c.Now)
	}
}

// Poll implements dataplane.Source, only to publish the counters: the
// worker calls it every loop, also when no batch comes, so the last
// millisecond of a burst shows in Snapshot without waiting for the next
// packet. It originates nothing and returns 0.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	if c.Now-s.lastPub >= int64(time.Millisecond) {
		s.publish(c.Now)
	}
	return 0
}

// adopt switches to plan p: rules are mapped to this worker's ports by
// name, per-rule state and counters start afresh and the random stream is
// reseeded. It allocates, once per rule set.
func (s *Stage) adopt(c *dataplane.Ctx, p *plan) {
	s.plan = p
	s.mem = c.Mem
	s.rng.Seed(workerSeeds(p.cfg.Seed, s.worker))
	n := c.NumPorts()
	s.in, s.out = make([][]uint16, n), make([][]uint16, n)
	s.ctrlQ = make([]int, n)
	for i := range s.ctrlQ {
		s.ctrlQ[i] = c.Egress(i).QueueIndex("control")
	}
	s.state = make([]ruleState, len(p.rules))
	s.st.Rules = make([]RuleStats, len(p.rules))
	for ri := range p.rules {
		r := &p.rules[ri]
		s.st.Rules[ri] = RuleStats{Port: r.port, Direction: r.dir}
		s.state[ri] = ruleState{tokens: r.bucket, last: c.Now}
		tab := s.in
		if r.dir == Egress {
			tab = s.out
		}
		for i := 0; i < n; i++ {
			if c.Port(i).Name() == r.port {
				tab[i] = append(tab[i], uint16(ri))
			}
		}
	}
	s.st.Sets++
	// Room for the budget in minimum-size (60-byte) frames, but never
	// more entries than the worker has frames.
	s.q.reserve(min(p.holdBytes/60+1, c.Mem.Frames()))
}

// effect collects what the (at most two) rules that matched a packet
// decided for it, when none dropped it.
type effect struct {
	n       int
	rule    [2]int
	dup     [2]bool
	reorder [2]bool
	delay   [2]bool
	hold    int64 // total hold, ns
	holder  int   // rule charged with the held frame
}

// impair applies the packet's ingress rule, then its egress rule.
func (s *Stage) impair(c *dataplane.Ctx, p *dataplane.Packet) {
	var e effect
	if ri := s.find(s.in, p.In, &p.Meta); ri >= 0 && !s.apply(c, p, ri, &e) {
		return
	}
	if ri := s.find(s.out, p.Out, &p.Meta); ri >= 0 && !s.apply(c, p, ri, &e) {
		return
	}
	if e.n == 0 || e.hold == 0 && !e.dup[0] && !e.dup[1] {
		return
	}
	if p.Out == dataplane.NoPort {
		// Held and copied frames go straight to an egress queue
		// (Ctx.Emit), so they need the port a later stage would have
		// chosen: impair runs before fwd. Pass the packet on unimpaired
		// and count it.
		for k := 0; k < e.n; k++ {
			if e.dup[k] || e.reorder[k] || e.delay[k] {
				s.st.Rules[e.rule[k]].Unrouted++
			}
		}
		return
	}
	at := int64(0)
	if e.hold > 0 {
		at = c.Now + e.hold
		if !s.take(c, p.Addr, p.Len, p.Out, p.Queue, at, e.holder) {
			s.st.Rules[e.holder].Overflow++
			p.Drop(ReasonOverflow)
			return
		}
		p.Verdict = dataplane.Taken
		for k := 0; k < e.n; k++ {
			rs := &s.st.Rules[e.rule[k]]
			if e.reorder[k] {
				rs.Reordered++
			}
			if e.delay[k] {
				rs.Delayed++
			}
		}
	}
	for k := 0; k < e.n; k++ {
		if e.dup[k] {
			s.duplicate(c, p, e.rule[k], at)
		}
	}
}

// find returns the index of the first rule of tab[port] that matches m,
// or -1.
func (s *Stage) find(tab [][]uint16, port uint16, m *rocev2.Meta) int {
	if int(port) >= len(tab) {
		return -1
	}
	for _, ri := range tab[port] {
		if s.plan.rules[ri].matches(m) {
			return int(ri)
		}
	}
	return -1
}

func (r *rule) matches(m *rocev2.Meta) bool {
	if r.roce {
		if m.Kind != rocev2.KindRoCE {
			return false
		}
		if r.ops != nil && r.ops[m.Opcode>>6]&(1<<(m.Opcode&63)) == 0 {
			return false
		}
	}
	if r.dscp >= 0 {
		if m.Kind != rocev2.KindIP && m.Kind != rocev2.KindRoCE || int16(m.DSCP) != r.dscp {
			return false
		}
	}
	return true
}

// apply runs rule ri on p. It returns false when it dropped p; otherwise
// it records in e what is left to do: hold, copy.
//
// The drops come in the order a frame meets them: on ingress the wire
// (burst loss, loss, corruption) and then the switch's policer; on egress
// the policer and then the wire. The Gilbert–Elliott chain steps on
// every packet that reaches it, so its bursts keep their length whatever
// else is configured.
//
// With trim, a DCP data packet that burst or loss picks is trimmed
// instead (see trim) and goes on with no further impairment from this
// rule: a trimming switch does not also corrupt, hold or copy the
// header-only packet it makes.
func (s *Stage) apply(c *dataplane.Ctx, p *dataplane.Packet, ri int, e *effect) bool {
	now := c.Now
	r, rs, ps := &s.plan.rules[ri], &s.st.Rules[ri], &s.state[ri]
	rs.Matched++
	if r.rate > 0 && r.dir == Egress && !police(r, ps, now, p.Len) {
		rs.Policed++
		p.Drop(ReasonPoliced)
		return false
	}
	if r.ge && s.gilbert(r, ps) {
		if r.trim && s.trim(c, p) {
			rs.Trimmed++
			return true
		}
		rs.BurstLost++
		p.Drop(ReasonBurst)
		return false
	}
	if s.chance(r.loss) {
		if r.trim && s.trim(c, p) {
			rs.Trimmed++
			return true
		}
		rs.Lost++
		p.Drop(ReasonLoss)
		return false
	}
	if s.chance(r.corrupt) {
		rs.Corrupted++
		p.Drop(ReasonCorrupt)
		return false
	}
	if r.rate > 0 && r.dir == Ingress && !police(r, ps, now, p.Len) {
		rs.Policed++
		p.Drop(ReasonPoliced)
		return false
	}
	k := e.n
	e.n++
	e.rule[k] = ri
	e.dup[k] = s.chance(r.dup)
	if s.chance(r.reorder) {
		e.reorder[k] = true
		e.hold += r.reorderDelay
		e.holder = ri
	}
	if r.holds {
		e.delay[k] = true
		e.hold += r.delay + s.uniform(r.jitter)
		e.holder = ri
	}
	return true
}

// trim turns p, if it is a DCP data packet (tag 10), into a header-only
// packet in place (rocev2.Trim) and moves it to its egress port's
// "control" queue, as DCP's trimming switch does (seed 002 §4.2). It
// reports false, changing nothing, for any other packet, which the
// caller then drops. A packet with no egress port yet (impair before
// fwd) keeps its queue; fwd sets one.
func (s *Stage) trim(c *dataplane.Ctx, p *dataplane.Packet) bool {
	m := &p.Meta
	if m.Kind != rocev2.KindRoCE || m.Tag != rocev2.DCPData {
		return false
	}
	n, err := rocev2.Trim(c.Mem.Frame(p), m)
	if err != nil {
		return false // tagged, but not parsed as DCP: the classifier's DCP mode is off
	}
	p.Len = uint16(n)
	if int(p.Out) < len(s.ctrlQ) && s.ctrlQ[p.Out] >= 0 {
		p.Queue = uint8(s.ctrlQ[p.Out])
	}
	return true
}

// gilbert steps rule r's Gilbert–Elliott chain and reports whether the
// packet is lost: the loss is drawn in the current state, then the state
// moves (as Linux netem's gemodel does).
func (s *Stage) gilbert(r *rule, ps *ruleState) bool {
	if ps.bad {
		lost := s.chance(r.geLossB)
		if s.chance(r.geR) {
			ps.bad = false
		}
		return lost
	}
	lost := s.chance(r.geLoss)
	if s.chance(r.geP) {
		ps.bad = true
	}
	return lost
}

// police runs rule r's token bucket for a frame of n bytes at time now
// and reports whether the frame conforms.
func police(r *rule, ps *ruleState, now int64, n uint16) bool {
	if dt := now - ps.last; dt > 0 {
		// Beyond the time an empty bucket takes to fill, dt·rate
		// could overflow and the bucket is full anyway.
		if uint64(dt) >= r.fill {
			ps.tokens, ps.last = r.bucket, now
		} else if add := int64(uint64(dt) * r.rate / 8e9); add > 0 {
			ps.tokens = min(ps.tokens+add, r.bucket)
			// advance only by the time the added bytes stand for,
			// keeping the fraction of a byte for the next frame
			ps.last += int64(uint64(add) * 8e9 / r.rate)
		}
	} else if dt < 0 {
		ps.last = now
	}
	if ps.tokens < int64(n) {
		return false
	}
	ps.tokens -= int64(n)
	return true
}

// duplicate sends a copy of p, made by rule ri, now or, when at is not 0,
// held until at alongside the original. Without a free frame there is no
// copy (Ctx.Alloc counts no_frame).
func (s *Stage) duplicate(c *dataplane.Ctx, p *dataplane.Packet, ri int, at int64) {
	rs := &s.st.Rules[ri]
	addr, room, ok := c.Alloc()
	if !ok {
		rs.DupFailed++
		return
	}
	copy(room, c.Mem.Frame(p))
	rs.Duplicated++
	s.tmp = dataplane.Packet{Addr: addr, Len: p.Len, In: p.In, Out: p.Out, Queue: p.Queue}
	if at == 0 {
		c.Emit(&s.tmp)
		return
	}
	if !s.take(c, addr, p.Len, p.Out, p.Queue, at, ri) {
		rs.Overflow++
		c.Discard(&s.tmp, ReasonOverflow)
	}
}

var (
	_ dataplane.Stage  = (*Stage)(nil)
	_ dataplane.Timed  = (*Stage)(nil)
	_ dataplane.Source = (*Stage)(nil)
)
