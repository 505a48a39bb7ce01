package netrt

import (
	"math"
	"math/bits"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dup is one duplicate in the pool. It is on up to five lists, linked
// by index: its flow's (admission order, for requests), its port's
// (admission order, for LFU), the pool's (expiry order, for Hold and for
// LFU over all ports), the probe list (by probe time) while it is its
// flow's newest and TailProbe is set, and its port's pacing FIFO while
// it waits to be paced.
type dup struct {
	addr    uint64
	len     uint16
	out     uint16 // egress port of the original
	psn     psn.PSN
	flow    int32
	exp     int64        // when Hold retires it
	pat     int64        // when the tail probe looks at it next
	dep     int64        // when its last copy (the original, or a resend) leaves the port, as estimated when sent
	left    int64        // when the original leaves the port, as estimated: Hold counts from there
	on      [nLists]link // its places on the pool's lists (list.go)
	queued  bool
	probing bool // on the probe list
	counted bool // its bytes are in its port's N (once per stay in the pool)
	held    bool // the host's frame itself (Config.InPlace): hdrs has what resend restores
}

// heldHdr is what later stages may change of a frame SrcToR holds in
// place: its Ethernet header (llr's shim moves the addresses into the
// headroom and takes the EtherType's place) and its ECN field (the
// egress marks it), as they were when pooled.
type heldHdr struct {
	b   [rocev2.EthernetLen + rocev2.VLANTagLen]byte
	n   uint8 // bytes of b: the frame's L3 offset
	ecn uint8
}

// sflow is SrcToR's state for one flow.
type sflow struct {
	key      rocev2.FlowKey
	remote   bool   // destination in Config.Prefixes: decided once, when made
	in       uint16 // host port its packets come in by: the one to pause
	requests uint32 // retransmission requests received: the LFU count
	dups     ends   // its duplicates, oldest first
	n        int32
	last     int64
}

// pair is a flow's address pair, for ACKs whose QP is not the flow's.
type pair struct{ src, dst [16]byte }

// Timer arguments: the hold timer, the congestion tick, the tail probe,
// and a port's pacing timer (timerPace + port).
const (
	timerHold = iota
	timerTick
	timerProbe
	timerPace
)

// SrcToR is the source-ToR stage of NetRT (seed 000, §III-B, §III-C-1,
// §III-C-3): it keeps a copy of each data packet a host sends into the
// fabric in a duplicate pool, answers a destination ToR's retransmission
// request from it, and tells the destination ToR when it lacks a
// requested packet. When much is asked for on a port it paces the
// retransmissions and pauses the hosts concerned with PFC.
//
// The pool holds at most Config.PoolBytes bytes per egress port (with
// Config.Budgets, together with the other workers' pools) and
// Config.PoolFrames frames in all; a full pool replaces the oldest
// duplicate of the flow with the fewest requests (LFU), among its own.
// Duplicates leave after Config.Hold, or when an RC ACK acknowledges
// them. Duplicates
// waiting to be paced stay in the pool and count against its budget: the
// pacing FIFOs hold no frames of their own. It must run after fwd: it
// pools packets by the egress port fwd chose. One SrcToR per worker; it
// is not safe for concurrent use except Snapshot. Build it with
// NewSrcToR.
type SrcToR struct {
	cfg   Config
	flows []sflow
	fill  int // flows[:fill] have been used; the rest never were
	index flowIndex[sflow, *sflow]
	// recent is the entry lookup last found: it holds that flow or,
	// reclaimed, the one lookup reused it for.
	recent int32
	pairs  map[pair]int32
	hand   int // reclaim clock hand

	dups   []dup
	free   []int32
	byExp  ends           // every duplicate, by exp
	byPort [MaxPorts]ends // each fabric port's duplicates, oldest first
	armed  bool

	// Tail probe (Config.TailProbe): the flows' newest duplicates,
	// earliest probe time first.
	probes     ends
	probeArmed bool

	// Congestion avoidance, §III-C-3 (src_pace.go).
	cp      [MaxPorts]cport
	active  uint64          // fabric ports at N ≥ KLow at the last look
	paused  uint64          // host ports a pause is in force on
	refresh [MaxPorts]int64 // when a host port's pause is re-sent
	tick    int64           // congestion tick period, ns
	ticking bool            // a tick is armed
	ready   bool            // per-port rates resolved (needs a Ctx)

	// ACK-retired bytes whose Hold has not run out (src_shadow.go).
	shadow      []shade
	shadowLast  int // index of the entry last added to, or -1
	shadowBytes [MaxPorts]int

	mem  *dataplane.Mem
	hdrs []heldHdr // per dup, with Config.InPlace
	spec rocev2.Spec
	call uint64 // Process and Timer calls, numbering leave's

	// res[i] is the bytes of port i's shared pool (Config.Budgets)
	// this stage holds without a duplicate in them: taken ahead of the
	// packets of the call (leaseAhead), or given up by the call's
	// retired duplicates. settle gives them back at the end of every
	// Process and Timer, so that between calls the shared count is
	// exactly the duplicates'. resPorts marks the ports with any.
	res      [MaxPorts]int
	resPorts uint64

	st       SrcStats
	pubArmed bool // the publication timer is armed
	occ      occupancy
	now      int64        // worker time of the current call
	spare    SrcPortStats // figures of ports ≥ MaxPorts, not kept
	pub      dataplane.Published[SrcStats]
}

// NewSrcToR returns a SrcToR with the configuration c.
func NewSrcToR(c Config) (*SrcToR, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &SrcToR{cfg: c, flows: make([]sflow, c.Flows), index: newFlowIndex[sflow](c.Flows),
		pairs: make(map[pair]int32, c.Flows), dups: make([]dup, c.PoolFrames), free: make([]int32, c.PoolFrames),
		byExp: noEnds, probes: noEnds, shadow: make([]shade, 0, c.PoolFrames), shadowLast: -1}
	if c.InPlace {
		s.hdrs = make([]heldHdr, c.PoolFrames)
	}
	for i := range s.free {
		s.free[i] = int32(len(s.free) - 1 - i)
	}
	for i := range s.cp {
		s.cp[i].fifo, s.byPort[i] = noEnds, noEnds
	}
	return s, nil
}

// Name implements dataplane.Stage.
func (s *SrcToR) Name() string { return "netrt-src" }

// Config returns the configuration in force, defaults filled in.
func (s *SrcToR) Config() Config { return s.cfg }

// Process implements dataplane.Stage.
func (s *SrcToR) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	s.mem, s.now = c.Mem, c.Now
	s.call++
	if !s.ready {
		s.resolve(c)
	}
	s.st.Calls++
	s.expire(c.Now)
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		m := &p.Meta
		switch {
		case isData(m):
			if s.cfg.host(p.In) && s.cfg.fabric(p.Out) {
				s.st.Packets++
				s.pool(c, p)
			}
		case m.Opcode == rocev2.NetRTOpcode:
			if n := netRT(c, p); n != nil && n.Type() == rocev2.NetRTRequest && s.cfg.host(p.Out) {
				s.request(c, p, n)
			}
		case m.Kind == rocev2.KindRoCE && m.Reason == rocev2.ReasonNone && m.Ext&rocev2.ExtAETH != 0 && s.cfg.fabric(p.In):
			s.ack(c, p)
		}
	}
	if s.probes.head >= 0 {
		s.tails(c)
	}
	s.arm(c)
	s.settle()
	s.publish(c)
}

// publish publishes the counters at most once a millisecond, and arms a
// timer that publishes what the last activity left.
func (s *SrcToR) publish(c *dataplane.Ctx) {
	s.pub.Maybe(c.Now, &s.st)
	if !s.pubArmed {
		s.pubArmed = c.After(publishEvery, pubTimer)
	}
}

// ps returns the counters of port i; ports beyond MaxPorts share a sink.
func (s *SrcToR) ps(i uint16) *SrcPortStats {
	if i < MaxPorts {
		return &s.st.Ports[i]
	}
	return &s.spare
}

// lookup finds or makes the flow of key; -1 when the table is full.
func (s *SrcToR) lookup(now int64, key *rocev2.FlowKey) int32 {
	// The last flow found first, as DstToR.lookup does: packets of one
	// flow come in trains. About 51 instructions a packet of
	// BenchmarkPipelineForward/stages (callgrind, 2026-12-01). Here and
	// not in flowIndex.find, which both would share: through find's call
	// and its generic key accessor the test cost 65 instructions more.
	if i := s.recent; i < int32(s.fill) && s.flows[i].key.Equal(key) {
		return i
	}
	if i := s.index.find(s.flows, key); i >= 0 {
		s.recent = i
		return i
	}
	i := s.fill
	if i < len(s.flows) {
		s.fill++
	} else if i = s.idle(now); i < 0 {
		s.st.TableFull++
		return -1
	}
	f := &s.flows[i]
	// The prefix test runs here, once per flow, so that a packet pays
	// one flag test for it.
	*f = sflow{key: *key, remote: s.cfg.remote(key.Dst), dups: noEnds, last: now}
	s.index.insert(s.flows, int32(i))
	s.pairs[pair{key.Src, key.Dst}] = int32(i)
	s.st.Flows++
	return int32(i)
}

// idle finds an entry with nothing pooled, idle for IdleTimeout, unindexes
// it and returns it; -1 if none of sweep entries from the hand is. A full
// table so costs a bounded amount per packet (DstToR.idle does the same).
func (s *SrcToR) idle(now int64) int {
	for range sweep {
		i := s.hand
		s.hand++
		if s.hand == len(s.flows) {
			s.hand = 0
		}
		f := &s.flows[i]
		if f.n != 0 || now-f.last < s.cfg.IdleTimeout {
			continue
		}
		s.index.remove(s.flows, int32(i))
		s.st.Flows--
		if pk := (pair{f.key.Src, f.key.Dst}); s.pairs[pk] == int32(i) {
			delete(s.pairs, pk)
		}
		s.st.Reclaimed++
		return i
	}
	return -1
}

// pool admits a copy of p, evicting by LFU when the pool is full.
func (s *SrcToR) pool(c *dataplane.Ctx, p *dataplane.Packet) {
	fi := s.lookup(c.Now, &p.Meta.Flow)
	if fi < 0 {
		return
	}
	f := &s.flows[fi]
	f.last = c.Now
	if !f.remote {
		s.st.Local++
		return
	}
	f.in = p.In
	ps := &s.st.Ports[p.Out] // p.Out is a fabric port, below 64
	l := int(p.Len)
	if l > s.cfg.PoolBytes {
		ps.TooBig++
		return
	}
	// Neither of the stage's own loops can fail: l fits the budget, so
	// a port over budget has a duplicate to give up, and no free entry
	// means PoolFrames duplicates to choose from.
	sh := s.cfg.Budgets
	if sh == nil {
		for ps.Bytes+l > s.cfg.PoolBytes {
			if !s.evict(int(p.Out)) {
				return
			}
		}
	} else {
		// The port's budget is the switch's (and bounds this stage's
		// part too): the other workers' duplicates count, but only
		// this worker's can go, and they go only if they can make the
		// room.
		if !s.reserve(p.Out, l) {
			ps.Crowded++
			return
		}
	}
	for len(s.free) == 0 {
		if !s.evict(-1) {
			return
		}
	}
	// The frame itself when it can be held (Config.InPlace): its 1 KB
	// copy was the largest part of BenchmarkPipelineForward/stages over
	// plain forwarding left after llr's (docs/performance.md).
	a, held := p.Addr, false
	if s.hdrs != nil && int(p.Meta.L3Off) <= len(heldHdr{}.b) && c.OwnsPort(int(p.Out)) {
		held = c.Mem.Hold(a)
	}
	if !held {
		var room []byte
		var ok bool
		if a, room, ok = c.Alloc(); !ok {
			if sh != nil {
				s.res[p.Out] += l
			}
			s.st.NoFrame++
			return
		}
		copy(room, c.Mem.Frame(p))
	}
	e := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	dep := s.cp[p.Out].data.admit(s.call, c, p, s)
	// Field by field, not a dup literal: the literal was built on the
	// stack and copied, 49 instructions a packet where these stores
	// take 20 (callgrind, BenchmarkPipelineForward/stages, 2026-11-30).
	// The lists set their links below; the probe list's is unused
	// until plink.
	d := &s.dups[e]
	d.addr, d.len, d.out, d.psn, d.flow = a, p.Len, p.Out, p.Meta.PSN, fi
	d.exp, d.pat, d.dep, d.left = c.Now+s.cfg.Hold, 0, dep, dep
	d.on[onProbe] = link{}
	d.queued, d.probing, d.counted, d.held = false, false, false, held
	if held {
		// All of b, whatever n: an array's assignment is two or three
		// moves where copy called memmove (about 25 instructions a
		// packet, callgrind, BenchmarkPipelineForward/stages).
		h := &s.hdrs[e]
		h.b, h.n, h.ecn = [len(h.b)]byte(c.Mem.Bytes(a, len(h.b))), uint8(p.Meta.L3Off), p.Meta.ECN
		ps.InPlace++
	}
	s.pushBack(&s.byPort[p.Out], onPort, e)
	if t := f.dups.tail; t >= 0 && s.dups[t].probing {
		s.punlink(t) // no longer the newest: e reveals a loss of it
	}
	s.pushBack(&f.dups, onFlow, e)
	f.n++
	s.link(e)
	if s.cfg.TailProbe > 0 {
		s.plink(e, c.Now+s.cfg.TailProbe)
	}
	s.occ.add(p.Out, s.now, ps.Bytes, &ps.ByteSeconds)
	ps.Bytes += l
	ps.Frames++
	ps.Pooled++
	ps.MaxBytes = max(ps.MaxBytes, ps.Bytes)
	ps.HoldOnlyPeak = max(ps.HoldOnlyPeak, ps.Bytes+s.shadowBytes[p.Out])
}

// link appends e to the pool's expiry list. Every exp is now+Hold at the
// time it is set, so the tail is always the latest.
func (s *SrcToR) link(e int32) { s.pushBack(&s.byExp, onExp, e) }

// unlink takes e off the pool's expiry list.
func (s *SrcToR) unlink(e int32) { s.drop(&s.byExp, onExp, e) }

// evict removes the oldest duplicate (on port, or on any port when port
// is -1) of the flow with the fewest requests, ties going to the flow
// whose such duplicate is oldest (§III-C-1). Rather than every flow, it
// looks at the flows of the sweep oldest duplicates (of the port, or of
// the pool by expiry), as Redis samples keys for its approximated LFU:
// exact while those are all the pooled flows, bounded at any size, and
// never empty-handed while the pool holds anything. A flow whose
// duplicates are all younger than the sample is no candidate until they
// age into it (TestSrcEvictSample).
func (s *SrcToR) evict(port int) bool {
	e, list := s.byExp.head, onExp
	if port >= 0 {
		e, list = s.byPort[port].head, onPort
	}
	best := int32(-1)
	for k := 0; e >= 0 && k < sweep; k++ {
		// Oldest first, so the first duplicate of the fewest requests
		// is its flow's oldest and, among ties, the oldest.
		if best < 0 || s.flows[s.dups[e].flow].requests < s.flows[s.dups[best].flow].requests {
			best = e
		}
		e = s.dups[e].on[list].next
	}
	if best < 0 {
		return false
	}
	s.st.Ports[s.dups[best].out].Evicted++
	s.remove(best)
	return true
}

// leaseAhead is how many frames of its size a pooling packet takes
// from its port's shared pool at once when the stage holds too few
// reserved bytes (res): the packets after it in the call pool from the
// reservation without touching the shared count. Two workers pooling
// on one port made a compare-and-swap per packet on one cache line,
// about 19 ns uncontended and 95–100 ns when they collided
// (BenchmarkBudgets, budgets.go); with the lease it is one per
// leaseAhead packets and one add per port and call to give back the
// rest (settle). While a call runs, the other workers see the port's
// pool fuller by at most leaseAhead−1 frames, and only when that much
// room was free: a worker that cannot take the lease takes its frame
// alone, so no packet is crowded out that the exact count would have
// pooled on a switch of one worker.
const leaseAhead = 8

// reserve takes l bytes of port out's shared pool for a duplicate, from
// the stage's reservation first, then from the shared count (leaseAhead
// frames if there is room, else l), evicting its own duplicates on the
// port while they can make the room. It reports false when they cannot.
func (s *SrcToR) reserve(out uint16, l int) bool {
	bp, ps := &s.cfg.Budgets.ports[out], &s.st.Ports[out]
	s.resPorts |= 1 << out
	for s.res[out] < l {
		need := l - s.res[out]
		if take(&bp.pool, need+(leaseAhead-1)*l, s.cfg.PoolBytes) {
			s.res[out] += need + (leaseAhead-1)*l
			break
		}
		if take(&bp.pool, need, s.cfg.PoolBytes) {
			s.res[out] += need
			break
		}
		// The port's budget is the switch's (and bounds this stage's
		// part too): the other workers' duplicates count, but only
		// this worker's can go (its reservation counts as its own),
		// and they go only if they can make the room.
		if ps.Bytes+s.res[out]+s.cfg.PoolBytes-int(bp.pool.Load()) < l || !s.evict(int(out)) {
			return false
		}
	}
	s.res[out] -= l
	return true
}

// settle gives the shared pools back the bytes the stage reserved and
// did not use (res), one add per port, at the end of every call.
func (s *SrcToR) settle() {
	for m := s.resPorts; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if s.res[i] != 0 {
			s.cfg.Budgets.ports[i].pool.Add(-int64(s.res[i]))
			s.res[i] = 0
		}
	}
	s.resPorts = 0
}

// remove takes duplicate e out of the pool and frees its frame. One
// waiting to be paced is skipped, and counted.
func (s *SrcToR) remove(e int32) {
	d := &s.dups[e]
	ps := &s.st.Ports[d.out]
	if d.queued {
		s.unqueue(e)
		ps.PacedSkips++
	}
	f := &s.flows[d.flow]
	s.drop(&f.dups, onFlow, e)
	f.n--
	s.unlink(e)
	s.drop(&s.byPort[d.out], onPort, e)
	if d.probing {
		s.punlink(e)
	}
	s.occ.add(d.out, s.now, ps.Bytes, &ps.ByteSeconds)
	ps.Bytes -= int(d.len)
	ps.Frames--
	if s.cfg.Budgets != nil {
		s.res[d.out] += int(d.len) // settle gives it back
		s.resPorts |= 1 << d.out
	}
	s.mem.Release(d.addr)
	s.free = append(s.free, e)
}

// expire retires duplicates whose Hold has run out, and forgets the
// ACK-retired bytes that would have gone by now.
//
// Hold counts from when the original left the port (dup.left), as
// TailProbe does (tails): a duplicate whose original still waits in a
// congested port's queue, or left less than Hold ago, is kept another
// Hold, so that the expiry list stays in time order; it goes between
// Hold and twice that after its original left. Otherwise a queue
// longer than Hold (1 MiB at 200 Mbit/s is 42 ms) would retire the
// duplicates of the very packets it drops before the destination ToR
// could ask for them.
func (s *SrcToR) expire(now int64) {
	for e := s.byExp.head; e >= 0 && s.dups[e].exp <= now; e = s.byExp.head {
		d := &s.dups[e]
		if d.left+s.cfg.Hold > now && !d.queued {
			s.st.Ports[d.out].HoldsExtended++
			s.restart(e, now)
			continue
		}
		s.st.Ports[d.out].Expired++
		s.remove(e)
	}
	s.unshade(now)
}

// arm keeps one timer armed for the oldest duplicate's expiry, and one
// for the next tail probe.
func (s *SrcToR) arm(c *dataplane.Ctx) {
	if e := s.byExp.head; !s.armed && e >= 0 {
		if c.After(max(s.dups[e].exp-c.Now, 0), timerHold) {
			s.armed = true
		} else {
			s.st.TimerFull++
		}
	}
	if e := s.probes.head; !s.probeArmed && e >= 0 {
		if c.After(max(s.dups[e].pat-c.Now, 0), timerProbe) {
			s.probeArmed = true
		} else {
			s.st.TimerFull++
		}
	}
}

// plink appends e, its flow's newest duplicate, to the probe list, to
// be looked at at time at. Every at is the time of the call plus
// TailProbe, so the tail is always the latest.
func (s *SrcToR) plink(e int32, at int64) {
	s.dups[e].pat, s.dups[e].probing = at, true
	s.pushBack(&s.probes, onProbe, e)
}

// punlink takes e off the probe list.
func (s *SrcToR) punlink(e int32) {
	s.drop(&s.probes, onProbe, e)
	s.dups[e].probing = false
}

// tails resends each flow's newest duplicate every TailProbe while it
// stays unacknowledged and pooled (Hold), and nothing the host sent
// came after it. If it was the flow's last packet and was lost, the
// destination ToR has no later packet to see the gap by, and only the
// sender's RTO would end the wait; if it arrived but its ACK was lost,
// the copy reaches the RNIC as a duplicate, which it acknowledges
// again. A probe, or the ACK it draws, may be lost in turn: the next
// probe covers it, so the wait outlives no single loss. Going beyond the
// paper, which leaves tail losses to the end hosts. One waiting to be
// paced is not sent twice; it stays on the list.
//
// TailProbe counts from when the duplicate's last copy left the port
// (dup.dep), not from when it was pooled: on a congested port the
// original may wait longer than TailProbe behind the port's queue, and
// a probe then would leave on the strict-priority retransmit queue
// ahead of the flow's packets still waiting there, a gap no loss made:
// the destination ToR would hold the probe and ask for every packet in
// between, each resent and arriving twice, on the very port that is
// congested (dcqcn-fairness's dumbbell, docs/experiments.md). A probe
// found too early is looked at again a TailProbe later, so the list
// stays in time order: the probe leaves between TailProbe and twice
// that after the copy left.
func (s *SrcToR) tails(c *dataplane.Ctx) {
	for e := s.probes.head; e >= 0 && s.dups[e].pat <= c.Now; e = s.probes.head {
		d := &s.dups[e]
		s.punlink(e)
		switch {
		case d.queued:
		case c.Now < d.dep+s.cfg.TailProbe:
			s.st.Ports[d.out].ProbesDeferred++
		default:
			s.st.Ports[d.out].TailProbes++
			s.resend(c, e, false)
		}
		if at := c.Now + s.cfg.TailProbe; at < d.exp {
			s.plink(e, at)
		}
	}
}

// Timer implements dataplane.Timed: the hold time of the oldest
// duplicate, the congestion tick, and each port's pacing.
func (s *SrcToR) Timer(c *dataplane.Ctx, arg uint64) {
	s.mem, s.now = c.Mem, c.Now
	s.call++
	switch {
	case arg == pubTimer:
		// The last publication after activity; the next arms it again.
		s.pubArmed = false
		s.pub.Store(c.Now, &s.st)
		return
	case arg == timerHold:
		s.armed = false
		s.expire(c.Now)
	case arg == timerProbe:
		s.probeArmed = false
		s.tails(c)
	case arg == timerTick:
		s.ticking = false
		s.congest(c)
	case arg-timerPace < MaxPorts:
		s.cp[arg-timerPace].armed = false
		s.pace(c, int(arg-timerPace))
	}
	s.arm(c)
	s.settle()
	s.publish(c)
}

// ack retires the duplicates an RC ACK acknowledges. The ACK travels on
// the flow's reversed addresses but carries the requester's QP, which
// the data packets do not show; the flow is found by that QP when the
// two ends use the same QP number, and otherwise by the address pair
// (the pair's most recently created flow). With several QPs between the
// same two hosts the latter may retire another QP's duplicates early,
// which costs a chance of in-network recovery, never correctness.
func (s *SrcToR) ack(c *dataplane.Ctx, p *dataplane.Packet) {
	m := &p.Meta
	off := m.ExtOff(rocev2.ExtAETH)
	if !rocev2.AETH(c.Mem.Frame(p)[off:]).Syndrome().IsACK() {
		return
	}
	rk := m.Flow.Reverse(m.Flow.QP)
	fi := s.index.find(s.flows, &rk)
	if fi < 0 {
		var ok bool
		if fi, ok = s.pairs[pair{m.Flow.Dst, m.Flow.Src}]; !ok {
			return
		}
	}
	f := &s.flows[fi]
	if !f.remote {
		return
	}
	s.st.ACKs++
	acked := m.PSN
	// The whole list is walked: a go-back-N resend pools a PSN again
	// behind later ones, so the list is not always in PSN order.
	for e := f.dups.head; e >= 0; {
		d := &s.dups[e]
		next := d.on[onFlow].next
		if n := acked.Diff(d.psn); n >= 0 && n < 1<<22 {
			s.shade(c.Now, d)
			s.st.Ports[d.out].Acked++
			s.remove(e)
		}
		e = next
	}
}

// request answers a retransmission request, consuming it: each missing
// PSN the pool holds is sent again on queue "retransmit" of its original
// egress port, at once or paced (retransmit), and the first one it lacks
// is named in an unfulfilled notice sent back out of the port the
// request came in by.
func (s *SrcToR) request(c *dataplane.Ctx, p *dataplane.Packet, n rocev2.NetRT) {
	rq := s.ps(p.In)
	rq.Requests++
	p.Drop(ReasonConsumed)
	key := served(&p.Meta)
	epsn, bm := n.PSN(), n.Bitmap()
	hi := highest(bm) // missing offsets from ePSN: 0 and i+1 ≤ hi with bit i clear
	var found [3]uint64
	if fi := s.index.find(s.flows, &key); fi >= 0 {
		f := &s.flows[fi]
		f.requests++
		for e := f.dups.head; e >= 0; e = s.dups[e].on[onFlow].next {
			d := &s.dups[e]
			k := d.psn.Diff(epsn)
			if k < 0 || k > hi || k > 0 && bm.Has(k-1) || found[k>>6]&(1<<(k&63)) != 0 {
				continue
			}
			if !d.queued && d.dep > c.Now {
				// Not lost: it has not left yet (tails says why a copy
				// must not overtake it). A request repeated after it
				// left, because it did not arrive, resends it.
				s.st.Ports[d.out].InQueue++
				found[k>>6] |= 1 << (k & 63)
				continue
			}
			if !d.queued && !s.allow(c.Now, d) {
				// Past the port's retransmission budget: as if the
				// pool lacked it (the amplification bound).
				s.st.Ports[d.out].Limited++
				continue
			}
			found[k>>6] |= 1 << (k & 63)
			s.retransmit(c, e, k == 0) // moves e on the expiry list and the FIFO only
		}
	}
	for k := 0; k <= hi; k++ {
		if k > 0 && bm.Has(k-1) || found[k>>6]&(1<<(k&63)) != 0 {
			continue
		}
		out, mac := next(&s.cfg, key.Dst, p.In, c.Mem.Frame(p))
		if send(c, &s.spec, out, mac, key.Src, key.Dst, key.QP,
			rocev2.NetRTUnfulfilled, epsn.Add(k), rocev2.Bitmap128{}) {
			rq.Unfulfill++
		} else {
			rq.SendFailed++
		}
		break
	}
	if s.active != 0 {
		s.congest(c)
	}
}

// resend sends a fresh copy of duplicate e on queue "retransmit" of its
// original egress port.
func (s *SrcToR) resend(c *dataplane.Ctx, e int32, paced bool) {
	d := &s.dups[e]
	ps := &s.st.Ports[d.out]
	a, room, ok := c.Alloc()
	if !ok {
		ps.RetxFailed++
		return
	}
	copy(room, s.mem.Bytes(d.addr, int(d.len)))
	if d.held {
		s.restore(room, e)
	}
	q := dataplane.Packet{Addr: a, Len: d.len, In: dataplane.NoPort, Out: d.out, Queue: queueRetransmit}
	if !c.Emit(&q) {
		ps.RetxFailed++
		return
	}
	if paced {
		ps.Paced++
	} else {
		ps.Retrans++
	}
	d.dep = s.cp[d.out].retx.after(s.call, s.departs(c, d.out, queueRetransmit), s.wire(c, d.out, int(d.len)))
}

// restore puts back into f, a resend of held duplicate e, the Ethernet
// header and ECN field it was pooled with (heldHdr).
func (s *SrcToR) restore(f []byte, e int32) {
	h := &s.hdrs[e]
	copy(f, h.b[:h.n])
	switch l3 := f[h.n:]; {
	case l3[0]>>4 == 4 && rocev2.IPv4(l3).ECN() != h.ecn:
		rocev2.IPv4(l3).SetECN(h.ecn)
	case l3[0]>>4 == 6 && rocev2.IPv6(l3).ECN() != h.ecn:
		rocev2.IPv6(l3).SetECN(h.ecn)
	}
}

// leave estimates when the frames a call sends to one queue of a port
// leave it. A call is one Process or Timer call, counted by SrcToR.call:
// a worker's loop takes a batch from every port at one time (a
// descheduled worker a full batch from each), so the time does not
// tell calls apart.
//
// The resends a call emits are queued at once (dataplane.Ctx.Emit),
// and the queue's depth (departs) shows those before them; after keeps
// each a frame's time after the one before as well, for a port whose
// queue another worker owns. The originals a call pools join the queue
// only once the call returns, so the depth does not show those before
// them in the call yet: admit counts their bytes, and only those of
// frames the queue will take. A frame the queue will refuse (full)
// never leaves and delays none after it; its copy may go as soon as
// what the queue held ahead of it has left. While the refused frames
// of a loop pushed the estimates of those after them, as they did, the
// copy of a frame lost at a full queue could look queued up to a
// loop's batches' time at the port's rate longer than it was (64
// frames of 1 KiB: 2.8 ms at 200 Mbit/s, 11 ms for four host ports'
// batches in one loop), the destination ToR's requests for it were
// answered with nothing (InQueue), and if that outlasted MaxRequests
// requests it gave up and flushed (TestSrcRequestAfterBatchDrop;
// docs/experiments.md, DCQCN, "NetRT at 4 senders").
type leave struct {
	call  uint64 // the call last given an estimate
	last  int64  // the departure last given in it (after)
	bytes int    // bytes of its originals the queue will take (admit)
}

// after returns the departure of a frame that takes wire ns and would
// leave at dep on its own.
func (l *leave) after(call uint64, dep, wire int64) int64 {
	if l.call == call {
		dep = max(dep, l.last)
	}
	l.call, l.last = call, dep+wire
	return l.last
}

// admit returns the departure of original p, pooled in call call: after
// what waits in its queue and the more urgent ones and what the call
// pooled before it that the queue will take, at the port's shaped rate.
// A frame that would take its queue past the limit is refused at
// enqueue, as the worker refuses it (dataplane.Egress): it is not
// counted, and its estimate is when what is ahead of it has left.
// Frames of the batch that are not pooled (another flow's, a local
// one's) are not counted: their few bytes make the estimate early, as
// a worker stall does, which a repeated request or probe makes up for.
func (l *leave) admit(call uint64, c *dataplane.Ctx, p *dataplane.Packet, s *SrcToR) int64 {
	if l.call != call {
		l.call, l.bytes = call, 0
	}
	out, q, n := p.Out, int(p.Queue), int(p.Len)
	eg := c.Egress(int(out))
	if eg.RateBps() == 0 {
		// Unshaped: nothing waits (departs). Asked once here, not by
		// departs, wire and the limit test in turn: about 39
		// instructions a pooled packet (callgrind, 2026-12-01).
		return c.Now
	}
	dep := s.departs(c, out, q) + s.wire(c, out, l.bytes)
	if c.QueueDepth(int(out), q)+l.bytes+n > eg.Limit(q) {
		return dep
	}
	l.bytes += n
	return dep + s.wire(c, out, n)
}

// departs estimates when what waits ahead of a frame that joins queue
// q of port out now will have left: what waits in that queue and in the
// more urgent ones (the layout of dataplane.DefaultEgress: control,
// retransmit, data, idle, the first served first), at the port's shaped
// rate; now on an unshaped port, whose queues do not build. Worker
// stalls make it late and a shaper's burst credit early; a request or
// probe it turns away comes again.
func (s *SrcToR) departs(c *dataplane.Ctx, out uint16, q int) int64 {
	eg := c.Egress(int(out))
	if eg.RateBps() == 0 {
		return c.Now
	}
	b := c.QueueDepth(int(out), eg.NumQueues())
	for k := 0; k <= q && k < eg.NumQueues(); k++ {
		b += c.QueueDepth(int(out), k)
	}
	return c.Now + s.wire(c, out, b)
}

// wire returns how long n bytes take on port out at its shaped rate.
func (s *SrcToR) wire(c *dataplane.Ctx, out uint16, n int) int64 {
	r := c.Egress(int(out)).RateBps()
	if r == 0 {
		return 0
	}
	return int64(min(mulDiv(uint64(n)*8, 1e9, r), math.MaxInt32))
}

// highest returns the index of the highest set bit of b, or 0 when b is
// empty (ePSN alone is missing then).
func highest(b rocev2.Bitmap128) int {
	switch {
	case b.Hi != 0:
		return 127 - bits.LeadingZeros64(b.Hi)
	case b.Lo != 0:
		return 63 - bits.LeadingZeros64(b.Lo)
	}
	return 0
}

// Close frees every pooled frame; call it once the worker has stopped.
// Duplicates waiting to be paced are dropped with the rest.
func (s *SrcToR) Close() error {
	for i := range s.cp {
		for s.cp[i].fifo.head >= 0 {
			s.unqueue(s.cp[i].fifo.head)
		}
	}
	for s.byExp.head >= 0 && s.mem != nil {
		s.remove(s.byExp.head)
		s.st.Dropped++
	}
	s.settle()
	return nil
}

// Stats returns the live counters; call it from the worker's goroutine
// only (others use Snapshot).
func (s *SrcToR) Stats() SrcStats { return s.st }

// Snapshot returns the counters as last published (about once a
// millisecond of worker time). It is safe from any goroutine.
func (s *SrcToR) Snapshot() SrcStats {
	return s.pub.Load()
}

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (s *SrcToR) Publish(now int64) { s.pub.Store(now, &s.st) }
