package netrt

import (
	"math/bits"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// dup is one duplicate in the pool.
type dup struct {
	addr  uint64
	len   uint16
	out   uint16 // egress port of the original
	psn   psn.PSN
	flow  int32
	born  int64
	fprev int32 // the flow's duplicates, oldest first
	fnext int32
	aprev int32 // all duplicates, oldest first
	anext int32
}

// sflow is SrcToR's state for one flow.
type sflow struct {
	key        rocev2.FlowKey
	used       bool
	requests   uint32 // retransmission requests received: the LFU count
	head, tail int32
	n          int32
	last       int64
}

// pair is a flow's address pair, for ACKs whose QP is not the flow's.
type pair struct{ src, dst [16]byte }

// SrcToR is the source-ToR stage of NetRT (seed 000, §III-B, §III-C-1):
// it keeps a copy of each data packet a host sends into the fabric in a
// duplicate pool, answers a destination ToR's retransmission request from
// it, and tells the destination ToR when it lacks a requested packet.
//
// The pool holds at most Config.PoolBytes bytes per egress port and
// Config.PoolFrames frames in all; a full pool replaces the oldest
// duplicate of the flow with the fewest requests (LFU). Duplicates leave
// after Config.Hold, or when an RC ACK acknowledges them. It must run
// after fwd: it pools packets by the egress port fwd chose. One SrcToR per
// worker; it is not safe for concurrent use except Snapshot. Build it
// with NewSrcToR.
type SrcToR struct {
	cfg   Config
	flows []sflow
	index map[rocev2.FlowKey]int32
	pairs map[pair]int32
	hand  int

	dups         []dup
	free         []int32
	ahead, atail int32
	portBytes    [64]int
	armed        bool

	mem  *dataplane.Mem
	spec rocev2.Spec

	st  SrcStats
	pub dataplane.Published[SrcStats]
}

// NewSrcToR returns a SrcToR with the configuration c.
func NewSrcToR(c Config) (*SrcToR, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &SrcToR{cfg: c, flows: make([]sflow, c.Flows), index: make(map[rocev2.FlowKey]int32, c.Flows),
		pairs: make(map[pair]int32, c.Flows), dups: make([]dup, c.PoolFrames), free: make([]int32, c.PoolFrames),
		ahead: -1, atail: -1}
	for i := range s.free {
		s.free[i] = int32(len(s.free) - 1 - i)
	}
	return s, nil
}

// Name implements dataplane.Stage.
func (s *SrcToR) Name() string { return "netrt-src" }

// Process implements dataplane.Stage.
func (s *SrcToR) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	s.mem = c.Mem
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
	s.arm(c)
	s.pub.Maybe(c.Now, &s.st)
}

// lookup finds or makes the flow of key; -1 when the table is full.
func (s *SrcToR) lookup(now int64, key *rocev2.FlowKey) int32 {
	if i, ok := s.index[*key]; ok {
		return i
	}
	for k := 0; k < len(s.flows) && k < 16+len(s.index); k++ {
		i := s.hand
		s.hand++
		if s.hand == len(s.flows) {
			s.hand = 0
		}
		f := &s.flows[i]
		if f.used {
			if f.n != 0 || now-f.last < s.cfg.IdleTimeout {
				continue
			}
			delete(s.index, f.key)
			pk := pair{f.key.Src, f.key.Dst}
			if s.pairs[pk] == int32(i) {
				delete(s.pairs, pk)
			}
			s.st.Reclaimed++
		}
		*f = sflow{key: *key, used: true, head: -1, tail: -1, last: now}
		s.index[*key] = int32(i)
		s.pairs[pair{key.Src, key.Dst}] = int32(i)
		s.st.Flows = len(s.index)
		return int32(i)
	}
	s.st.TableFull++
	return -1
}

// pool admits a copy of p, evicting by LFU when the pool is full.
func (s *SrcToR) pool(c *dataplane.Ctx, p *dataplane.Packet) {
	l := int(p.Len)
	if l > s.cfg.PoolBytes {
		s.st.TooBig++
		return
	}
	fi := s.lookup(c.Now, &p.Meta.Flow)
	if fi < 0 {
		return
	}
	s.flows[fi].last = c.Now
	for s.portBytes[p.Out]+l > s.cfg.PoolBytes {
		if !s.evict(int(p.Out)) {
			return
		}
	}
	for len(s.free) == 0 {
		if !s.evict(-1) {
			return
		}
	}
	a, room, ok := c.Alloc()
	if !ok {
		s.st.NoFrame++
		return
	}
	copy(room, c.Mem.Frame(p))
	e := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	f := &s.flows[fi]
	s.dups[e] = dup{addr: a, len: p.Len, out: p.Out, psn: p.Meta.PSN, flow: fi, born: c.Now,
		fprev: f.tail, fnext: -1, aprev: s.atail, anext: -1}
	if f.tail >= 0 {
		s.dups[f.tail].fnext = e
	} else {
		f.head = e
	}
	f.tail = e
	f.n++
	if s.atail >= 0 {
		s.dups[s.atail].anext = e
	} else {
		s.ahead = e
	}
	s.atail = e
	s.portBytes[p.Out] += l
	s.st.Pooled++
	s.st.PoolBytes += l
	s.st.MaxBytes = max(s.st.MaxBytes, s.portBytes[p.Out])
}

// evict removes the oldest duplicate (on port, or on any port when port
// is -1) of the flow with the fewest requests, ties going to the flow
// whose such duplicate is oldest (§III-C-1). It scans the flow table:
// eviction happens only when the pool is full, and the table is small.
func (s *SrcToR) evict(port int) bool {
	best, bestF := int32(-1), uint32(0)
	for i := range s.flows {
		f := &s.flows[i]
		if !f.used || f.n == 0 || best >= 0 && f.requests > bestF {
			continue
		}
		e := f.head
		for port >= 0 && e >= 0 && int(s.dups[e].out) != port {
			e = s.dups[e].fnext
		}
		if e < 0 {
			continue
		}
		if best < 0 || f.requests < bestF || s.dups[e].born < s.dups[best].born {
			best, bestF = e, f.requests
		}
	}
	if best < 0 {
		return false
	}
	s.remove(best)
	s.st.Evicted++
	return true
}

// remove takes duplicate e out of the pool and frees its frame.
func (s *SrcToR) remove(e int32) {
	d := &s.dups[e]
	f := &s.flows[d.flow]
	if d.fprev >= 0 {
		s.dups[d.fprev].fnext = d.fnext
	} else {
		f.head = d.fnext
	}
	if d.fnext >= 0 {
		s.dups[d.fnext].fprev = d.fprev
	} else {
		f.tail = d.fprev
	}
	f.n--
	if d.aprev >= 0 {
		s.dups[d.aprev].anext = d.anext
	} else {
		s.ahead = d.anext
	}
	if d.anext >= 0 {
		s.dups[d.anext].aprev = d.aprev
	} else {
		s.atail = d.aprev
	}
	s.portBytes[d.out] -= int(d.len)
	s.st.PoolBytes -= int(d.len)
	s.mem.Release(d.addr)
	s.free = append(s.free, e)
}

// expire retires duplicates older than Hold.
func (s *SrcToR) expire(now int64) {
	for s.ahead >= 0 && s.dups[s.ahead].born+s.cfg.Hold <= now {
		s.remove(s.ahead)
		s.st.Expired++
	}
}

// arm keeps one timer armed for the oldest duplicate's expiry.
func (s *SrcToR) arm(c *dataplane.Ctx) {
	if s.armed || s.ahead < 0 {
		return
	}
	if c.After(max(s.dups[s.ahead].born+s.cfg.Hold-c.Now, 0), 0) {
		s.armed = true
	} else {
		s.st.TimerFull++
	}
}

// Timer implements dataplane.Timed: the hold time of the oldest
// duplicate.
func (s *SrcToR) Timer(c *dataplane.Ctx, _ uint64) {
	s.mem = c.Mem
	s.armed = false
	s.expire(c.Now)
	s.arm(c)
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
	fi, ok := s.index[m.Flow.Reverse(m.Flow.QP)]
	if !ok {
		if fi, ok = s.pairs[pair{m.Flow.Dst, m.Flow.Src}]; !ok {
			return
		}
	}
	s.st.ACKs++
	f := &s.flows[fi]
	acked := m.PSN
	for e := f.head; e >= 0; {
		d := &s.dups[e]
		next := d.fnext
		if n := acked.Diff(d.psn); n >= 0 && n < 1<<22 {
			s.remove(e)
			s.st.Acked++
		}
		e = next
	}
}

// request answers a retransmission request, consuming it: each missing
// PSN the pool holds is sent again on queue "retransmit" of its original
// egress port, and the first one it lacks is named in an unfulfilled
// notice sent back out of the port the request came in by.
func (s *SrcToR) request(c *dataplane.Ctx, p *dataplane.Packet, n rocev2.NetRT) {
	s.st.Requests++
	p.Drop(ReasonConsumed)
	key := served(&p.Meta)
	epsn, bm := n.PSN(), n.Bitmap()
	hi := highest(bm) // missing offsets from ePSN: 0 and i+1 ≤ hi with bit i clear
	var found [3]uint64
	if fi, ok := s.index[key]; ok {
		f := &s.flows[fi]
		f.requests++
		for e := f.head; e >= 0; e = s.dups[e].fnext {
			d := &s.dups[e]
			k := d.psn.Diff(epsn)
			if k < 0 || k > hi || k > 0 && bm.Has(k-1) || found[k>>6]&(1<<(k&63)) != 0 {
				continue
			}
			found[k>>6] |= 1 << (k & 63)
			a, room, ok := c.Alloc()
			if !ok {
				s.st.RetxFailed++
				continue
			}
			copy(room, s.mem.Bytes(d.addr, int(d.len)))
			q := dataplane.Packet{Addr: a, Len: d.len, In: dataplane.NoPort, Out: d.out, Queue: queueRetransmit}
			if c.Emit(&q) {
				s.st.Retrans++
			} else {
				s.st.RetxFailed++
			}
		}
	}
	for k := 0; k <= hi; k++ {
		if k > 0 && bm.Has(k-1) || found[k>>6]&(1<<(k&63)) != 0 {
			continue
		}
		out, mac := next(&s.cfg, key.Dst, p.In, c.Mem.Frame(p))
		if send(c, &s.spec, out, mac, key.Src, key.Dst, key.QP,
			rocev2.NetRTUnfulfilled, epsn.Add(k), rocev2.Bitmap128{}) {
			s.st.Unfulfill++
		} else {
			s.st.SendFailed++
		}
		break
	}
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
func (s *SrcToR) Close() error {
	for s.ahead >= 0 && s.mem != nil {
		s.remove(s.ahead)
		s.st.Dropped++
	}
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
