package llr

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Stage is the link-local retransmission stage of one worker: see the
// package doc. It implements dataplane.Stage (the sender half: sequence,
// shim and Tx-buffer copy of the frames the pipeline sends out of a
// protected port), dataplane.Source (Poll: retransmissions, loss notices,
// explicit ACKs, dummies, PFC backpressure, ackNoTimeout) and
// dataplane.Timed (timers only wake the worker for Poll's work). Wrap
// gives the Port each protected port must be polled through.
//
// One worker owns each Stage and its Ports; only Snapshot may be called
// from other goroutines. It holds copies, never frames of Mem, within
// Config.TxBuffer and Config.RxBuffer per port, and allocates nothing
// after NewStage. Its zero value is not usable.
type Stage struct {
	cfg   Config
	links [MaxPorts]*link
	// ports is links' protected ports in port order: Poll visits them
	// every worker loop, and walking all MaxPorts entries for the one
	// or two that are set cost 70 instructions a packet in
	// BenchmarkPipelineForward/stages (callgrind).
	ports []*link
	calls uint64
	st    Stats
	pub   dataplane.Published[Stats]
}

// NewStage validates c and builds the per-port state of every protected
// port.
func NewStage(c Config) (*Stage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Stage{cfg: c.WithDefaults()}
	for m := c.Ports; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		s.links[i] = newLink(uint16(i), &s.cfg, &s.st.Ports[i])
		s.links[i].off.Store(c.Dormant)
		s.ports = append(s.ports, s.links[i])
	}
	return s, nil
}

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "llr" }

// Config returns the configuration in force, defaults filled in.
func (s *Stage) Config() Config { return s.cfg }

// SetActive switches the sender of protected port i on or off, as an
// operator's override: the neighbour's protection requests change
// nothing until Release. False when i is not protected. Safe from any
// goroutine: the worker sees it at its next packet. Off, frames cross
// unprotected (the receiver at the other end passes them through) or
// watched (Config.Watch); the frames already numbered are still
// recovered and acknowledged.
func (s *Stage) SetActive(i int, on bool) bool {
	if !s.Protected(i) {
		return false
	}
	s.links[i].pinned.Store(true)
	s.links[i].off.Store(!on)
	return true
}

// Release ends an operator's override of port i: the sender keeps its
// state, and the neighbour's protection requests switch it on again.
// False when i is not protected. Safe from any goroutine.
func (s *Stage) Release(i int) bool {
	if !s.Protected(i) {
		return false
	}
	s.links[i].pinned.Store(false)
	return true
}

// Pinned reports whether an operator's override holds port i's sender.
func (s *Stage) Pinned(i int) bool { return s.Protected(i) && s.links[i].pinned.Load() }

// RequestProtection asks the neighbour at the other end of port i to
// protect what it sends on the link, which this switch measured losing
// a fraction loss of it: one ShimProtect frame at the worker's next
// poll, carrying the rate for the neighbour's Eq. 1. The corruption
// monitor calls it once per interval while the link corrupts; a lost
// request is made good by the next. False when i is not protected. Safe
// from any goroutine.
func (s *Stage) RequestProtection(i int, loss float64) bool {
	if !s.Protected(i) {
		return false
	}
	s.links[i].ask.Store(uint32(rocev2.LossCode(loss)))
	return true
}

// NeighbourLoss returns the loss rate the neighbour reported in its
// last protection request for port i, 0 before any.
func (s *Stage) NeighbourLoss(i int) float64 {
	if !s.Protected(i) {
		return 0
	}
	return rocev2.LossOfCode(uint8(s.links[i].lossCode.Load()))
}

// Active reports whether the sender of port i protects what it sends.
func (s *Stage) Active(i int) bool { return s.Protected(i) && !s.links[i].off.Load() }

// Protected reports whether port i is protected.
func (s *Stage) Protected(i int) bool { return i >= 0 && i < MaxPorts && s.links[i] != nil }

// Wrap returns the port the worker must use for port index i, which must
// be protected: p itself wrapped in a *Port that shares this stage's
// state for the link. mem is the worker's frame memory.
func (s *Stage) Wrap(i int, p dataplane.Port, mem *dataplane.Mem) (*Port, error) {
	if !s.Protected(i) {
		return nil, fmt.Errorf("llr: port %d (%s) is not protected", i, p.Name())
	}
	l := s.links[i]
	if s.cfg.TxFrames > 0 {
		mem.EnableHolds()
	}
	l.mem = mem
	return &Port{inner: p, mem: mem, l: l}, nil
}

// Stats returns the live counters; only from the worker's goroutine (or
// after it stopped). Other goroutines use Snapshot.
func (s *Stage) Stats() Stats { return s.st }

// Snapshot returns the counters as last published, about once a
// millisecond of worker time. It is safe from any goroutine.
func (s *Stage) Snapshot() Stats { return s.pub.Load() }

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (s *Stage) Publish(now int64) { s.pub.Store(now, &s.st) }

// resolve finds the queue indices of port l.port, once. Split so that
// the test inlines into protect, which runs it for every packet: about
// 39 instructions a packet of BenchmarkPipelineForward/stages
// (callgrind, 2026-12-01).
func (s *Stage) resolve(c *dataplane.Ctx, l *link) bool {
	return l.resolved || s.resolveFirst(c, l)
}

func (s *Stage) resolveFirst(c *dataplane.Ctx, l *link) bool {
	if int(l.port) >= c.NumPorts() {
		return false
	}
	e := c.Egress(int(l.port))
	l.dataQ, l.retxQ = e.QueueIndex(s.cfg.DataQueue), e.QueueIndex(s.cfg.RetransmitQueue)
	l.ctrlQ, l.idleQ = e.QueueIndex(s.cfg.ControlQueue), e.QueueIndex(s.cfg.IdleQueue)
	if l.dataQ < 0 || l.retxQ < 0 || l.ctrlQ < 0 || l.idleQ < 0 {
		return false // counted as unprotected; tord checks the queues exist
	}
	l.resolved = true
	l.lrate = s.cfg.RetxRate
	if l.lrate == 0 {
		l.lrate = DefaultRetxRate
		if r := e.RateBps(); r > 0 {
			l.lrate = max(r/2, 1)
		}
	}
	burst := s.cfg.RetxBurst
	if burst == 0 {
		burst = s.cfg.TxBuffer
	}
	l.burst = int64(min(nsAt(uint64(burst), l.lrate), math.MaxInt64/4))
	l.tat = math.MinInt64 / 4 // full
	return true
}

// nsAt returns how long n bytes take at rate bit/s, in ns, saturating
// rather than overflowing.
func nsAt(n, rate uint64) uint64 {
	hi, lo := bits.Mul64(n, 8e9)
	if hi >= rate {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, rate)
	return q
}

// budget charges n bytes of retransmission to l's bucket; when there is
// no room it returns false and how long until there is.
func (s *Stage) budget(now int64, l *link, n int) (bool, int64) {
	cost := int64(min(nsAt(uint64(n), l.lrate), math.MaxInt32))
	t := max(l.tat, now)
	if over := t + cost - now - l.burst; over > 0 {
		return false, over
	}
	l.tat = t + cost
	return true, 0
}

// Process implements dataplane.Stage: every frame the pipeline forwards
// to a protected port's data queue gets the next sequence number, the
// shim, and a copy in the Tx buffer (§3.1, appendix A.1).
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	s.calls++
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward || p.Out >= MaxPorts {
			continue
		}
		if l := s.links[p.Out]; l != nil {
			s.protect(c, l, p)
		}
	}
}

func (s *Stage) protect(c *dataplane.Ctx, l *link, p *dataplane.Packet) {
	st := l.st
	// A sender switched off numbers its frames only with Config.Watch,
	// and only once nothing it protected is still unacknowledged: a
	// watched frame keeps no copy, so it must not sit among
	// sequences that may be asked for.
	watch := false
	if l.off.Load() {
		if !s.cfg.Watch || l.inflight() > 0 {
			st.UnprotectedOff++
			return
		}
		watch = true
	}
	if !l.established {
		// The neighbour does not follow this side's numbering yet
		// (either side just started): a numbered frame could pass
		// for one of an old session. One round trip at most.
		st.UnprotectedSync++
		return
	}
	if !s.resolve(c, l) || int(p.Queue) != l.dataQ {
		st.UnprotectedQueue++
		return
	}
	if l.batchCall != s.calls {
		l.batchCall, l.batchBytes = s.calls, 0
	}
	n := int(p.Len) + rocev2.ShimLen
	switch m := &p.Meta; {
	case m.Kind == rocev2.KindMACControl || m.Kind == rocev2.KindLinkCtrl:
		return
	case m.ShimOff != 0:
		st.UnprotectedShim++
		return
	case s.cfg.MaxFrame > 0 && n > s.cfg.MaxFrame:
		st.UnprotectedTooBig++
		l.batchBytes += int(p.Len)
		return
	}
	// A frame the data queue will refuse is a congestion drop before the
	// link, not Protego's to recover: leave it unsequenced.
	e := c.Egress(int(l.port))
	if depth, _ := e.Depth(l.dataQ); depth+l.batchBytes+n > e.Limit(l.dataQ) {
		return
	}
	if !watch && l.inflight() >= len(l.txh)-1 {
		st.UnprotectedTxFull++
		l.batchBytes += int(p.Len)
		return
	}
	// The frame's room found once: Offset, Frame and Bytes each
	// aligned the address anew, about 20 instructions a packet
	// (callgrind, BenchmarkPipelineForward/stages, 2026-12-01).
	off := c.Mem.Offset(p.Addr) // frames need not be a power of two (the simulator's are not)
	room := c.Mem.Room(p.Addr - off)
	head := off >= rocev2.ShimLen
	if !head && uint64(len(room))-off-uint64(p.Len) < rocev2.ShimLen {
		st.UnprotectedNoRoom++
		l.batchBytes += int(p.Len)
		return
	}
	if !head && c.Mem.Held(p.Addr) {
		// NetRT's pool keeps this frame whole (netrt.Config.InPlace),
		// and moving it forward would change all of it: the shim goes
		// into a copy, with headroom, which then goes on instead.
		a, ok := c.Mem.Unshare(p.Addr, int(p.Len), rocev2.ShimLen)
		if !ok {
			st.UnprotectedNoRoom++
			l.batchBytes += int(p.Len)
			return
		}
		p.Addr, off, room, head = a, rocev2.ShimLen, c.Mem.Room(a-rocev2.ShimLen), true
	}
	// The Tx buffer's bytes are reckoned before the shim goes in, so
	// that a frame they refuse is left as it came.
	var h uint32
	if !watch {
		ok := false
		if h, ok = l.tx.take(n); !ok {
			st.UnprotectedTxFull++
			l.batchBytes += int(p.Len)
			return
		}
	}
	so := rocev2.EthernetLen
	if p.Meta.VLAN {
		so += rocev2.VLANTagLen
	}
	inner := binary.BigEndian.Uint16(room[off+uint64(so)-2:])
	// Make room: move the addresses back into the headroom, or the rest
	// of the frame forward into the tailroom.
	var f []byte
	if head {
		p.Addr -= rocev2.ShimLen
		f = room[off-rocev2.ShimLen : off-rocev2.ShimLen+uint64(n)]
		moveAddrs(f, f[rocev2.ShimLen:], so-2)
	} else {
		f = room[off : off+uint64(n)]
		copy(f[so+rocev2.ShimLen:], f[so:int(p.Len)])
	}
	binary.BigEndian.PutUint16(f[so-2:so], rocev2.EtherTypeShim)
	seq := l.next
	p.Len = uint16(n)
	shiftMeta(&p.Meta, uint16(so), seq)
	l.batchBytes += n
	st.ShimBytes += rocev2.ShimLen
	l.next = seq.Add(1)
	if watch {
		rocev2.Shim(f[so:so+rocev2.ShimLen]).Set(seq, rocev2.ShimWatch, 0, inner)
		l.una = l.next // nothing to acknowledge
		st.Watched++
		return
	}
	rocev2.Shim(f[so:so+rocev2.ShimLen]).Set(seq, rocev2.ShimOriginal, 0, inner)
	i := int(seq) & (len(l.txh) - 1)
	l.txh[i] = h
	if l.held < s.cfg.TxFrames && c.Mem.Hold(p.Addr) {
		// The frame itself, not a copy: a 1 KB copy and the cache
		// lines it wrote were about a fifth of
		// BenchmarkPipelineForward/stages over plain forwarding.
		t := &l.txf[i]
		t.addr, t.ecn, t.held = p.Addr, p.Meta.ECN, true
		l.held++
	} else {
		l.tx.write(h, f)
		st.TxCopied++
	}
	st.Protected++
	st.TxBytes = l.tx.span()
	st.TxBytesMax = max(st.TxBytesMax, st.TxBytes)
	st.TxFrames = l.inflight()
	st.TxHeld = l.held
}

// shiftMeta keeps a frame's parsed offsets true after the shim went in
// at so, so that any stage after llr sees the frame as the classifier
// would.
func shiftMeta(m *rocev2.Meta, so uint16, seq psn.Link) {
	m.L3Off = shift(m.L3Off)
	m.L4Off = shift(m.L4Off)
	m.BTHOff = shift(m.BTHOff)
	m.PayloadOff = shift(m.PayloadOff)
	m.ICRCOff = shift(m.ICRCOff)
	m.End = shift(m.End)
	m.ShimOff, m.ShimType, m.LinkSeq = so, rocev2.ShimOriginal, seq
}

func shift(o uint16) uint16 {
	if o == 0 {
		return 0
	}
	return o + rocev2.ShimLen
}

// Poll implements dataplane.Source: the work of every protected port
// that needs a clock or makes frames.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	work := 0
	for _, l := range s.ports {
		work += s.service(c, l)
	}
	s.pub.Maybe(c.Now, &s.st)
	return work
}

// The deadlines a port keeps one timer for, each in the argument of its
// timers above the port (timerOther: deadlines armed as they arise). A
// deadline's timer is armed again only when it must fire earlier than
// the one armed, so each kind has one timer pending, two at most while
// an earlier replaces a later. Before, a firing timer cleared the dummy
// and ACK deadlines' flags whichever it was, and the receiver armed two
// timers for every batch of fresh holes: 170 timers armed at once on a
// side of TestTimersBounded, where one a kind is enough.
const (
	timerOther   = iota
	timerDummy   // the next dummy (idle)
	timerAck     // the stale-ACK deadline (ackStale)
	timerRetry   // the head of line's notice retry (receiver)
	timerTimeout // the head of line's ackNoTimeout (receiver)
	timerKinds
)

// Timer implements dataplane.Timed: arg is the port whose deadline came
// and, above it, which deadline.
func (s *Stage) Timer(c *dataplane.Ctx, arg uint64) {
	port, kind := arg&0xffff, arg>>16
	if port >= MaxPorts || s.links[port] == nil {
		return
	}
	l := s.links[port]
	if kind < timerKinds {
		l.wake[kind] = 0
	}
	s.service(c, l)
}

// after arms a timer d from now for a deadline of no kind.
func (s *Stage) after(c *dataplane.Ctx, l *link, d int64) {
	s.arm(c, l, max(d, 1), timerOther)
}

// wakeAt makes sure a timer of kind fires by at: it arms one unless one
// of that kind is armed for at or earlier.
func (s *Stage) wakeAt(c *dataplane.Ctx, l *link, at int64, kind uint64) {
	if w := l.wake[kind]; w != 0 && w <= at {
		return
	}
	if s.arm(c, l, max(at-c.Now, 1), kind) {
		l.wake[kind] = c.Now + max(at-c.Now, 1)
	}
}

// arm arms a timer d from now and says whether it could.
func (s *Stage) arm(c *dataplane.Ctx, l *link, d int64, kind uint64) bool {
	if !c.After(d, kind<<16|uint64(l.port)) {
		l.st.TimerFull++
		return false
	}
	return true
}

func (s *Stage) service(c *dataplane.Ctx, l *link) int {
	if !s.resolve(c, l) {
		return 0
	}
	if l.inflight() == 0 && !l.pending && l.reqN == 0 && l.hN == 0 && l.fresh == 0 && l.established && !l.syncAsk && !l.paused &&
		(l.rx == nil || l.rx.span() == 0) && l.ask.Load() == 0 {
		// Nothing sent unacknowledged, nothing to acknowledge, ask
		// for, release or send: an idle link, polled in every loop.
		l.st.TxFrames = 0
		return 0
	}
	work := s.session(c, l) + s.retransmit(c, l)
	// A plain load first: the swap, a locked instruction, only when the
	// monitor asked (once a second at most).
	if l.ask.Load() != 0 {
		code := l.ask.Swap(0)
		if s.ctrl(c, l, rocev2.ShimProtect, 0, uint8(code), l.ctrlQ) {
			l.st.ProtectAsked++
			work++
		} else {
			l.ask.CompareAndSwap(0, code) // no frame now: at the next poll
		}
	}
	work += s.receiver(c, l)
	s.backpressure(c, l)
	work += s.idle(c, l) + s.ackStale(c, l)
	l.st.TxFrames = l.inflight()
	return work
}

// session sends the sync this side owes the neighbour, and while no
// session is established, one every syncEvery, backing off.
func (s *Stage) session(c *dataplane.Ctx, l *link) int {
	due := !l.established && c.Now-l.syncAt >= l.syncEvery
	if !l.syncAsk && !due {
		return 0
	}
	p, sh, ok := s.frame(c, l, l.ctrlQ)
	if !ok {
		return 0
	}
	flags := uint8(0)
	if !l.established {
		flags = rocev2.SyncNeed
	}
	sh.SetSync(l.wireNext, flags, l.peerEpoch, l.epoch) // Seq stamped again as it leaves
	if !c.Emit(&p) {
		return 0
	}
	l.st.SyncsSent++
	l.syncAsk = false
	if !l.established {
		if due {
			l.syncEvery = min(2*l.syncEvery, maxSyncInterval)
		}
		l.syncAt = c.Now
		s.after(c, l, l.syncEvery)
	}
	return 1
}

// copies is Eq. 1 with the configured loss rate, else the one the
// neighbour's protection request reported, else the one the sender
// measures.
func (s *Stage) copies(l *link) int {
	if s.cfg.Copies > 0 {
		return s.cfg.Copies
	}
	actual := s.cfg.ActualLoss
	if actual == 0 {
		actual = l.neighbourLoss
	}
	if actual == 0 && l.st.Protected > 0 {
		actual = float64(l.st.LossesNotified) / float64(l.st.Protected)
	}
	return Copies(s.cfg.TargetLoss, actual)
}

// retransmit serves the loss notices: copies of each named sequence on
// the retransmit queue (§3.4, appendix A.2).
func (s *Stage) retransmit(c *dataplane.Ctx, l *link) int {
	if l.reqN == 0 {
		// Eq. 1 takes two logarithms: only when there is something to
		// send (computed every poll, it was 15 % of a protecting
		// tord's CPU at 0.6 Gbit/s).
		return 0
	}
	work := 0
	k := s.copies(l)
	for l.reqN > 0 {
		r := &l.reqs[l.reqHead]
		for r.n > 0 {
			seq := r.first
			if seq.Diff(l.una) >= 0 && seq.Diff(l.next) < 0 { // else acknowledged meanwhile
				h := l.txh[int(seq)&(len(l.txh)-1)]
				n := l.tx.length(h)
				for ; r.done < k; r.done++ {
					if ok, wait := s.budget(c.Now, l, n); !ok {
						// Past the budget: the rest when it has room
						// (the timer wakes a sleeping worker).
						if !l.waiting {
							l.waiting = true
							l.st.RetxLimited++
							s.after(c, l, wait)
						}
						return work
					}
					l.waiting = false
					addr, room, ok := c.Alloc()
					if !ok {
						// Out of frames: the remaining copies at the
						// next Poll, not all of them again.
						l.st.NoFrame++
						return work
					}
					if l.txf != nil && l.txf[int(seq)&(len(l.txh)-1)].held {
						l.readHeld(int(seq)&(len(l.txh)-1), room[:n])
					} else {
						l.tx.read(h, room)
					}
					rocev2.Shim(room[shimAt(room[:n]):]).SetSeq(seq, rocev2.ShimRetransmit)
					p := dataplane.Packet{Addr: addr, Len: uint16(n), Out: l.port, Queue: uint8(l.retxQ)}
					if !c.Emit(&p) {
						l.st.RetxRefused++
						continue
					}
					l.st.Copies++
					work++
				}
				l.st.Retransmitted++
			}
			r.first, r.n, r.done = seq.Add(1), r.n-1, 0
		}
		l.reqHead = (l.reqHead + 1) % reqCap
		l.reqN--
	}
	l.waiting = false // every notice served
	return work
}

// frame builds one of llr's own minimum-size frames for queue q and
// returns it with its shim for the caller to fill and emit.
func (s *Stage) frame(c *dataplane.Ctx, l *link, q int) (dataplane.Packet, rocev2.Shim, bool) {
	addr, room, ok := c.Alloc()
	if !ok {
		l.st.NoFrame++
		return dataplane.Packet{}, nil, false
	}
	const n = 60
	f := room[:n]
	clear(f)
	copy(f[0:6], l.peer[:])
	src := c.Port(int(l.port)).MAC()
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:14], rocev2.EtherTypeShim)
	return dataplane.Packet{Addr: addr, Len: n, Out: l.port, Queue: uint8(q)}, rocev2.Shim(f[14 : 14+rocev2.ShimLen]), true
}

// ctrl builds one of llr's own frames (loss notice, ACK, dummy, protect
// request) and queues it on q; the ACK is stamped as it leaves.
func (s *Stage) ctrl(c *dataplane.Ctx, l *link, typ uint8, seq psn.Link, count uint8, q int) bool {
	p, sh, ok := s.frame(c, l, q)
	if !ok {
		return false
	}
	sh.Set(seq, typ, count, 0)
	return c.Emit(&p)
}

// notice sends loss notices for the missing sequences of [first,
// first+n), 255 at most per notice, on the control queue.
func (s *Stage) notice(c *dataplane.Ctx, l *link, first psn.Link, n int) int {
	sent := 0
	for n > 0 {
		// skip what arrived meanwhile
		for n > 0 && l.has(first) {
			first, n = first.Add(1), n-1
		}
		k := 0
		for k < n && k < 255 && !l.has(first.Add(k)) {
			k++
		}
		if k == 0 {
			break
		}
		if s.ctrl(c, l, rocev2.ShimLoss, first, uint8(k), l.ctrlQ) {
			l.st.NoticesSent++
			sent++
		}
		first, n = first.Add(k), n-k
	}
	return sent
}

// receiver sends the notices of new holes, names a head of line again
// when its notice seems lost, and skips it at ackNoTimeout (§3.5).
func (s *Stage) receiver(c *dataplane.Ctx, l *link) int {
	work := 0
	now := c.Now
	if l.ackNo != l.stuckAt {
		l.headWaitEnd(now)
		l.stuckAt, l.stuckSince = l.ackNo, now
	}
	l.headWaitSee(now)
	if l.fresh > 0 {
		for i := l.hN - l.fresh; i < l.hN; i++ {
			h := &l.holes[(l.hHead+i)%holeCap]
			h.at, h.noticed, h.fresh = now, now, false
			work += s.notice(c, l, h.first, h.n)
		}
		l.fresh = 0
	}
	for l.hN > 0 {
		h := &l.holes[l.hHead]
		if h.first.Add(h.n).Diff(l.ackNo) <= 0 {
			l.hHead = (l.hHead + 1) % holeCap
			l.hN--
			continue
		}
		if l.has(l.ackNo) || l.ackNo.Diff(h.first) < 0 {
			break // the head of line is here (Blocking: being released) or not known lost
		}
		if now-max(h.at, l.stuckSince) >= s.cfg.AckTimeout {
			// ackNoTimeout: give up the missing run at the head.
			l.st.AckTimeouts++
			l.waitSkip = true
			end := h.first.Add(h.n)
			for l.ackNo.Diff(end) < 0 && !l.has(l.ackNo) {
				l.ackNo = l.ackNo.Add(1)
				l.st.Skipped++
			}
			l.unmarkDelivered()
			l.pending = true
			work++
			continue
		}
		if now-h.noticed >= s.cfg.NoticeRetry {
			h.noticed = now
			n := h.first.Add(h.n).Diff(l.ackNo)
			if k := s.notice(c, l, l.ackNo, min(n, 255)); k > 0 {
				l.st.NoticeRetries += uint64(k)
				work += k
			}
		}
		// The head's deadlines; the holes behind it get theirs when
		// they reach the head.
		s.wakeAt(c, l, h.noticed+s.cfg.NoticeRetry, timerRetry)
		s.wakeAt(c, l, max(h.at, l.stuckSince)+s.cfg.AckTimeout, timerTimeout)
		break
	}
	if l.high.Diff(l.ackNo) < 0 {
		l.high = l.ackNo
	}
	return work
}

// headWaitSee notes, at a poll of a stand of ackNo, frames held behind
// it and the head itself held (PortStats.HeadWait*).
func (l *link) headWaitSee(now int64) {
	if l.rx == nil || l.rx.span() == 0 {
		return
	}
	if l.waitFrom == 0 {
		l.waitFrom, l.waitRetries, l.waitSkip, l.waitPeak = now, l.st.NoticeRetries, false, 0
	}
	if l.presentFrom == 0 && l.has(l.ackNo) {
		l.presentFrom = now
	}
	l.waitPeak = max(l.waitPeak, l.rx.span())
}

// headWaitEnd closes the stand of ackNo that just ended at now, keeping
// it if it is the longest with frames held.
func (l *link) headWaitEnd(now int64) {
	if l.waitFrom == 0 {
		return
	}
	if d := now - l.waitFrom; d > l.st.HeadWaitMax {
		st := l.st
		st.HeadWaitMax, st.HeadWaitRetries, st.HeadWaitRxBytesMax = d, st.NoticeRetries-l.waitRetries, l.waitPeak
		st.HeadWaitPresent, st.HeadWaitSkipped = 0, 0
		if l.presentFrom != 0 {
			st.HeadWaitPresent = now - l.presentFrom
		}
		if l.waitSkip {
			st.HeadWaitSkipped = 1
		}
	}
	l.waitFrom, l.presentFrom, l.waitSkip = 0, 0, false
}

// unmarkDelivered moves ackNo past the sequences that NonBlocking mode
// forwarded ahead of it; Blocking mode releases them from the buffer.
func (l *link) unmarkDelivered() {
	if l.rx != nil {
		return
	}
	for l.has(l.ackNo) {
		l.unmark(l.ackNo)
		l.ackNo = l.ackNo.Add(1)
	}
}

// ackStale sends an explicit ACK on the control queue when the
// neighbour's copy of ackNo has been stale for DummyInterval and no frame
// carried one meanwhile: with the reverse data queue busy and its sender
// off (or all its frames unshimmed), the idle queue never runs, and the
// neighbour's Tx buffer would fill. One per DummyInterval at most, so
// the control level cannot crowd out data.
func (s *Stage) ackStale(c *dataplane.Ctx, l *link) int {
	if l.st.AcksCarried != l.carried {
		l.carried, l.ackAt = l.st.AcksCarried, c.Now
	}
	if !l.pending {
		l.ackAt = c.Now
		return 0
	}
	if wait := l.ackAt + s.cfg.DummyInterval - c.Now; wait > 0 {
		s.wakeAt(c, l, c.Now+wait, timerAck)
		return 0
	}
	if !s.ctrl(c, l, rocev2.ShimAck, 0, 0, l.ctrlQ) {
		return 0
	}
	l.ackAt = c.Now
	l.st.AcksControl++
	return 1
}

// backpressure is Algorithm 2 on the reordering buffer's level. Pauses
// are short, PauseTime, and refreshed at half their length while the
// buffer stays above Resume, so that the loss of any one PFC frame costs
// little: a lost pause is made good by the next refresh, a lost resume by
// the pause running out (a 0xffff-quanta pause, as Algorithm 2 implies,
// would stall the link for 33 ms at 1 Gbit/s).
func (s *Stage) backpressure(c *dataplane.Ctx, l *link) {
	if l.rx == nil {
		return
	}
	q := l.rx.span()
	if !l.paused && q < s.cfg.Pause {
		return // the common case, every poll: no division
	}
	prio := s.cfg.PFCPriority
	var times [8]uint16
	rate := max(c.Egress(int(l.port)).PauseRateBps(), 1)
	quanta := uint64(s.cfg.PauseTime) * rate / 512 / 1e9
	quanta = min(max(quanta, 1), 0xffff)
	dur := int64(quanta * 512 * 1e9 / rate)
	switch {
	case !l.paused && q >= s.cfg.Pause, l.paused && q > s.cfg.Resume && c.Now-l.pausAt >= dur/2:
		times[prio] = uint16(quanta)
		if c.SendPFC(int(l.port), 1<<prio, times) {
			l.paused, l.pausAt = true, c.Now
			l.st.PauseSent++
			s.after(c, l, dur/2)
		}
	case l.paused && q <= s.cfg.Resume:
		if c.SendPFC(int(l.port), 1<<prio, times) {
			l.paused = false
			l.st.ResumeSent++
		}
	}
}

// idle keeps one frame of llr's own on the idle queue when there is
// something to say: a dummy when frames are unacknowledged and the data
// queue is empty (§3.2), else an explicit ACK when the neighbour's copy
// of ackNo is stale (§3.1). The idle queue is served only when the
// queues above it are empty or paused, so these frames take no bandwidth
// from traffic; one at a time, they cannot flood.
func (s *Stage) idle(c *dataplane.Ctx, l *link) int {
	e := c.Egress(int(l.port))
	if _, n := e.Depth(l.idleQ); n > 0 {
		return 0
	}
	if l.inflight() > 0 {
		if d, _ := e.Depth(l.dataQ); d == 0 {
			if l.dummyPos != l.next || c.Now-l.dummyAt >= s.cfg.DummyInterval {
				if s.ctrl(c, l, rocev2.ShimDummy, l.next, 0, l.idleQ) {
					l.dummyPos, l.dummyAt = l.next, c.Now
					l.st.Dummies++
					return 1
				}
				return 0
			}
			s.wakeAt(c, l, l.dummyAt+s.cfg.DummyInterval, timerDummy)
		}
	}
	if l.pending {
		if s.ctrl(c, l, rocev2.ShimAck, 0, 0, l.idleQ) {
			l.st.Acks++
			return 1
		}
	}
	return 0
}
