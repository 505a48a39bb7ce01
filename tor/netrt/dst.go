package netrt

import (
	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Flow states of DstToR's ternary state machine (seed 000, §III-C-2, Fig. 4).
const (
	Ordered uint8 = iota // packets arrive in order and are forwarded
	ReTx                 // a gap: later packets are held, requests go out
	Waiting              // in-network recovery failed: end-to-end GBN runs
)

// span is how far past ePSN the 128-bit bitmap reaches: bit i stands for
// PSN ePSN+1+i, so ePSN+128 is the last PSN a flow can hold.
const span = 128

// sweep bounds the entries a new flow inspects for an idle one when the
// table is full, so that a full table costs a bounded amount per packet
// (each packet of the new flow moves the hand on, so a later one finds
// what the first missed), and the duplicates SrcToR's eviction samples.
const sweep = 32

// dflow is DstToR's state for one flow: 112 bytes (TestDstFlowBytes), of
// which the ePSN, bitmap and state are the 21 that seed 000's Table II
// counts; the key (36) tells flows apart, the rest serves the request
// timer, the requests' route, the backoff, a held NAK, reclaiming and
// the Miss counters (prev, naked).
// Fields are in size order so that there is little padding.
type dflow struct {
	key     rocev2.FlowKey
	epsn    psn.PSN
	bm      rocev2.Bitmap128 // bit i: PSN epsn+1+i is held
	last    int64            // last packet seen, for reclaiming
	until   int64            // end of the Backoff after giving up; 0 if it never gave up
	head    int32            // held packets, a list sorted by PSN; -1 if none
	nak     int32            // the host's NAK, held while the network recovers what it names; -1 if none
	heard   uint32           // DstToR.heard when the last request left
	prev    psn.PSN          // the last data packet's PSN from the fabric, for the Miss counters
	first   psn.PSN          // the PSN the entry began at, for ResyncsEarly
	reqMAC  rocev2.MAC
	reqPort uint16 // port requests leave by
	// gen is the request timer's generation. 16 bits: a stale timer
	// would need 65,536 changes of its flow in one request interval to
	// match, and the entry stays within 112 bytes (TestDstFlowBytes).
	gen uint16
	// fwdBatch is the low bits of the serial of the last batch that
	// left a packet of the flow forwarded in place. A stale match only
	// costs flushBatch a scan that finds nothing.
	fwdBatch uint16
	requests uint8 // requests sent for the current ePSN that count against MaxRequests (≤ 255)
	silent   uint8 // requests re-sent for it while nothing came from the fabric (≤ SilentRequests)
	state    uint8
	out      uint8 // host port (< MaxPorts), where its transitions and requests count
	serve    bool  // source in Config.Prefixes; decided when the entry is made
	// answered is set once a hole of the flow filled after a request,
	// or a notice came: the peer ToR runs NetRT, so giving up on one
	// hole (its retransmissions lost) is no reason to back off.
	answered bool
	naked    bool // a host's sequence NAK passed since the flow's last go-back (GoBacksNAK)
}

// heldPkt is one packet in the reordering buffer.
type heldPkt struct {
	p    dataplane.Packet
	psn  psn.PSN
	next int32
	flow int32 // the entry holding it; -1 while free
}

// DstToR is the destination-ToR stage of NetRT (seed 000, §III-C-2,
// §III-D): it checks the order of each flow's data packets on their way
// to a host, holds out-of-order ones in a reordering buffer, asks the
// source ToR for the missing ones, and releases the buffer in order.
//
// It holds at most Config.BufferBytes bytes of frames per host port (the
// port they will leave by; with Config.Budgets, together with the other
// workers' buffers) and Config.BufferFrames frames in all. It
// must run after fwd (it releases packets to the egress the pipeline
// chose). One
// DstToR per worker; it is not safe for concurrent use except Snapshot
// and Busiest. Build it with NewDstToR.
type DstToR struct {
	cfg    Config
	flows  []dflow
	fill   int // flows[:fill] have been used; the rest never were
	index  flowIndex[dflow, *dflow]
	pairs  map[pair]int32 // the newest flow of each address pair, for NAKs
	hand   int            // reclaim clock hand
	recent int32          // the entry last found

	buf  []heldPkt
	free []int32

	// Request timers the worker refused (entry | generation<<32), armed
	// again by the next call that finds room: a flow in ReTx without its
	// timer would hold its packets until the hosts' RTO.
	stalled []uint64

	mem   *dataplane.Mem
	batch uint64 // serial number of the batch being processed
	// heard counts the frames that came from fabric ports: a request
	// after which it did not move went out while the fabric was silent
	// (Timer). It wraps; 2^32 frames within one request interval do not
	// happen.
	heard uint32
	spec  rocev2.Spec

	st      DstStats
	occ     occupancy
	now     int64  // worker time of the current call
	pubAt   int64  // worker time of the last publication
	ticking bool   // the publication timer is armed
	scratch dstPub // built here, so that publishing does not allocate
	pub     dataplane.Published[dstPub]
}

// NewDstToR returns a DstToR with the configuration c.
func NewDstToR(c Config) (*DstToR, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &DstToR{cfg: c, flows: make([]dflow, c.Flows), index: newFlowIndex[dflow](c.Flows),
		pairs: make(map[pair]int32, c.Flows),
		buf:   make([]heldPkt, c.BufferFrames), free: make([]int32, c.BufferFrames),
		stalled: make([]uint64, 0, c.Flows)}
	for i := range d.free {
		d.free[i] = int32(len(d.free) - 1 - i)
		d.buf[i].flow = -1
	}
	return d, nil
}

// Name implements dataplane.Stage.
func (d *DstToR) Name() string { return "netrt-dst" }

// Config returns the configuration in force, defaults filled in.
func (d *DstToR) Config() Config { return d.cfg }

// Process implements dataplane.Stage.
func (d *DstToR) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	d.mem, d.now = c.Mem, c.Now
	d.batch++
	d.st.Calls++
	if len(d.stalled) > 0 {
		d.rearm(c)
	}
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		if isData(&p.Meta) {
			if d.cfg.fabric(p.In) && d.cfg.host(p.Out) {
				d.heard++
				d.st.Packets++
				if p.Out >= MaxPorts {
					d.st.HighPort++
					continue
				}
				d.data(c, b, i)
			}
			continue
		}
		m := &p.Meta
		switch {
		case m.Opcode == rocev2.NetRTOpcode:
			if d.cfg.fabric(p.In) {
				d.heard++
			}
			if n := netRT(c, p); n != nil && n.Type() == rocev2.NetRTUnfulfilled && d.cfg.host(p.Out) {
				d.unfulfilled(c, b, i, n)
			}
		case m.Kind == rocev2.KindRoCE && m.Reason == rocev2.ReasonNone && m.Ext&rocev2.ExtAETH != 0 &&
			d.cfg.host(p.In) && d.cfg.fabric(p.Out):
			d.nak(c, p)
		}
	}
	if !d.ticking {
		// A timer publishes what the last activity left, even when no
		// packet follows it; Process also publishes, in case the timer
		// heap was full.
		d.ticking = c.After(publishEvery, pubTimer)
	}
	if c.Now-d.pubAt >= publishEvery {
		d.publish(c.Now)
	}
}

// lookup finds or makes the flow of p; -1 when the table is full.
func (d *DstToR) lookup(now int64, p *dataplane.Packet) int32 {
	key := &p.Meta.Flow
	// Packets of one flow come in trains: try the last flow found first,
	// its QP first of all, which tells most flows apart for free. One
	// flow: 17 ns a packet against 27; 10,000 round robin: no change
	// (BenchmarkDstInOrder).
	if i := d.recent; i < int32(d.fill) && d.flows[i].key.Equal(key) {
		return i
	}
	if i := d.index.find(d.flows, key); i >= 0 {
		d.recent = i
		return i
	}
	i := d.fill
	if i < len(d.flows) {
		d.fill++
	} else if i = d.idle(now); i < 0 {
		d.st.TableFull++
		return -1
	}
	f := &d.flows[i]
	// The generation survives reuse, so a stale request timer of the
	// entry's previous flow cannot match the new one.
	*f = dflow{key: *key, epsn: p.Meta.PSN, prev: p.Meta.PSN.Add(-1), first: p.Meta.PSN, last: now, head: -1, nak: -1, gen: f.gen + 1,
		out: uint8(p.Out), serve: d.cfg.remote(key.Src)}
	d.index.insert(d.flows, int32(i))
	d.pairs[pair{key.Src, key.Dst}] = int32(i)
	d.st.Flows++
	if f.serve {
		d.st.FlowsOrdered++
	}
	return int32(i)
}

// idle finds an entry idle for IdleTimeout with nothing held (Ordered or
// Waiting), unindexes it and returns it; -1 if none of sweep entries
// from the hand is.
func (d *DstToR) idle(now int64) int {
	for range sweep {
		i := d.hand
		d.hand++
		if d.hand == len(d.flows) {
			d.hand = 0
		}
		f := &d.flows[i]
		if f.head >= 0 || f.state == ReTx || now-f.last < d.cfg.IdleTimeout {
			continue
		}
		d.index.remove(d.flows, int32(i))
		if pk := (pair{f.key.Src, f.key.Dst}); d.pairs[pk] == int32(i) {
			delete(d.pairs, pk)
		}
		d.st.Flows--
		if f.serve {
			*d.gauge(f.state)--
		}
		d.st.Reclaimed++
		return i
	}
	return -1
}

// gauge returns the count of served flows in state s.
func (d *DstToR) gauge(s uint8) *int {
	switch s {
	case ReTx:
		return &d.st.FlowsReTx
	case Waiting:
		return &d.st.FlowsWaiting
	}
	return &d.st.FlowsOrdered
}

func (d *DstToR) setState(f *dflow, s uint8) {
	*d.gauge(f.state)--
	f.state = s
	*d.gauge(s)++
}

// data handles data packet i of b, which is on its way to host port
// p.Out < MaxPorts (Algorithm 2, HandleDataPacket).
func (d *DstToR) data(c *dataplane.Ctx, b *dataplane.Batch, i int) {
	p := &b.Pkts[i]
	fi := d.lookup(c.Now, p)
	if fi < 0 {
		return
	}
	f := &d.flows[fi]
	f.last = c.Now
	if !f.serve {
		d.st.Foreign++
		return
	}
	ps := &d.st.Ports[p.Out]
	n := p.Meta.PSN.Diff(f.epsn)
	var miss uint64
	if n != 0 || f.prev.Add(1) != p.Meta.PSN {
		miss = d.missing(ps, f, p.Meta.PSN, n)
	} else {
		// In order: what missing does then, without its call and PSN
		// arithmetic (37 instructions a packet, callgrind, 2026-12-01).
		f.prev = p.Meta.PSN
	}
	cat := &ps.MissRequested // where miss counts, by the outcome below
	switch {
	case n == 0:
		ps.InOrder++
		// Only a hole filled in ReTx is the peer's answer; in Waiting
		// ePSN is the end hosts' go-back-N (and requests is 0 there).
		if f.state == ReTx && f.requests > 0 {
			f.answered = true
		}
		f.requests, f.silent = 0, 0
		if f.head < 0 && f.state != ReTx {
			// The fast path: forward in place. Nothing is held, so the
			// bitmap is empty and needs no shift. (ReTx with nothing
			// held holds a NAK: advance answers it.)
			if f.state == Waiting {
				d.setState(f, Ordered)
				d.st.Ports[f.out].Resumed++
			}
			f.epsn = f.epsn.Add(1)
			f.fwdBatch = uint16(d.batch)
			return
		}
		d.flushBatch(c, b, i, f)
		p.Verdict = dataplane.Taken
		c.Emit(p)
		d.advance(c, f)
	case n < 0:
		ps.Late++ // a duplicate or an end-to-end retransmission: the RNIC decides
		f.fwdBatch = uint16(d.batch)
	case f.state == Waiting:
		ps.Passed++ // not blocked: the RNIC's go-back-N is recovering
		f.fwdBatch = uint16(d.batch)
		cat = &ps.MissPassed
	case f.state == Ordered:
		switch {
		case c.Now < f.until:
			// Backing off: the peer did not answer lately. Waiting
			// passes the flow until the end hosts bring ePSN.
			ps.WaitBackoff++
			d.setState(f, Waiting)
			f.fwdBatch = uint16(d.batch)
			cat = &ps.MissPassed
		case n > span:
			// Forwarded, and the flow stays Ordered. ReTx moves to
			// Waiting here because the held packets would reach the
			// RNIC behind this one; with nothing held that cannot
			// happen. The hole is wider than a request can name, so
			// the RNIC's go-back-N repairs it; staying Ordered lets a
			// later in-window gap still be held and repaired from the
			// source ToR, so that the RNIC gets those packets in order
			// rather than discarding them, as Waiting would have it.
			ps.Beyond++
			f.fwdBatch = uint16(d.batch)
			cat = &ps.MissBeyond
		case !d.hold(p, fi, f, n):
			ps.Full++ // as beyond the span: nothing held, nothing overtaken
			f.fwdBatch = uint16(d.batch)
			cat = &ps.MissFull
		default:
			if f.until != 0 {
				f.until = 0
				ps.Retries++
			}
			d.setState(f, ReTx)
			ps.Gaps++
			f.out = uint8(p.Out)
			f.reqPort, f.reqMAC = next(&d.cfg, f.key.Src, p.In, c.Mem.Frame(p))
			f.gen++
			if d.cfg.RequestDelay > 0 {
				// Give a reordered packet time to arrive first; the
				// timer sends the first request.
				d.after(c, d.cfg.RequestDelay, uint64(fi)|uint64(f.gen)<<32)
			} else {
				d.request(c, fi, f)
			}
		}
	case n > span:
		// In ReTx: forwarding this packet now would put it ahead of the
		// held ones. In-network recovery cannot cover it, so give it up
		// to the RNIC's go-back-N, releasing the held packets first.
		ps.WaitSpan++
		cat = &ps.MissWaited
		d.wait(c, b, i, f, p)
	case f.bm.Has(n - 1):
		ps.Duplicates++
		p.Drop(ReasonDuplicate)
	case !d.hold(p, fi, f, n):
		ps.WaitBudget++ // the budget is spent: as beyond the span
		cat = &ps.MissWaited
		d.wait(c, b, i, f, p)
	}
	*cat += miss
}

// missing counts what data packet PSN q of f shows about the packets
// before it (DstPortStats' Miss counters, GoBacks) and returns the PSNs
// at or above ePSN (n = q − ePSN) it shows missing, for the caller to
// count by its outcome; those below ePSN count here, as copies of
// delivered packets. A sender's pass sends its PSNs in order, so on one
// path the PSNs between its previous packet (prev) and q were lost.
// At or below prev, at or below ePSN outside ReTx, the sender went back
// N (its resend starts at ePSN or below) and a new pass begins; above
// ePSN, or at it in ReTx, it is the source ToR's retransmission of a
// hole (or, sprayed, a packet overtaken), and the pass goes on. A
// resend's own losses before its first packet arrives, and before it
// passes prev, are in no counter.
func (d *DstToR) missing(ps *DstPortStats, f *dflow, q psn.PSN, n int) uint64 {
	from := f.prev.Add(1)
	skipped := q.Diff(from)
	if skipped < 0 {
		if n > 0 || n == 0 && f.state == ReTx {
			return 0
		}
		f.prev = q
		ps.GoBacks++
		if f.naked {
			ps.GoBacksNAK++
			f.naked = false
		}
		return 0
	}
	f.prev = q
	if below := -from.Diff(f.epsn); below > 0 {
		ps.MissDelivered += uint64(min(below, skipped))
	}
	return uint64(max(min(n, skipped), 0))
}

// hold takes p into f's buffer at offset n from ePSN; false when the
// port's byte budget or the stage's frames have no room.
func (d *DstToR) hold(p *dataplane.Packet, fi int32, f *dflow, n int) bool {
	ps := &d.st.Ports[p.Out]
	if len(d.free) == 0 || ps.Bytes+int(p.Len) > d.cfg.BufferBytes {
		return false
	}
	if sh := d.cfg.Budgets; sh != nil && !take(&sh.ports[p.Out].buf, int(p.Len), d.cfg.BufferBytes) {
		return false // the other workers hold the rest of the port's budget
	}
	e := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	h := &d.buf[e]
	h.p, h.psn, h.flow = *p, p.Meta.PSN, fi
	// Insert sorted by PSN; packets mostly arrive in order behind a
	// hole, so the list is walked to its end.
	prev := int32(-1)
	for k := f.head; k >= 0 && d.buf[k].psn.Less(h.psn); k = d.buf[k].next {
		prev = k
	}
	if prev < 0 {
		h.next, f.head = f.head, e
	} else {
		h.next, d.buf[prev].next = d.buf[prev].next, e
	}
	f.bm = f.bm.Set(n - 1)
	ps.Held++
	ps.Frames++
	d.occ.add(p.Out, d.now, ps.Bytes, &ps.ByteSeconds)
	ps.Bytes += int(p.Len)
	ps.MaxBytes = max(ps.MaxBytes, ps.Bytes)
	d.st.Frames++
	d.st.Bytes += int(p.Len)
	p.Verdict = dataplane.Taken
	return true
}

// pop removes and returns the lowest held packet of f.
func (d *DstToR) pop(f *dflow) dataplane.Packet {
	e := f.head
	h := &d.buf[e]
	f.head = h.next
	h.flow = -1
	ps := &d.st.Ports[h.p.Out]
	ps.Frames--
	d.occ.add(h.p.Out, d.now, ps.Bytes, &ps.ByteSeconds)
	ps.Bytes -= int(h.p.Len)
	if sh := d.cfg.Budgets; sh != nil {
		sh.ports[h.p.Out].buf.Add(-int64(h.p.Len))
	}
	d.st.Frames--
	d.st.Bytes -= int(h.p.Len)
	d.free = append(d.free, e) // within its capacity, BufferFrames
	return h.p
}

// advance moves f past the ePSN just forwarded and releases the buffer
// in order (Algorithm 1); back to Ordered when it empties. A NAK held
// for that PSN is answered: the host has it now.
func (d *DstToR) advance(c *dataplane.Ctx, f *dflow) {
	if f.nak >= 0 {
		h := d.unholdNAK(f)
		d.st.Ports[f.out].NAKAnswered++
		c.Discard(&h.p, ReasonNAKAnswered)
	}
	for {
		next := f.bm.Has(0) // ePSN+1 is held
		f.bm = f.bm.Shift()
		f.epsn = f.epsn.Add(1)
		if !next {
			break
		}
		p := d.pop(f)
		d.st.Ports[p.Out].Released++
		c.Emit(&p)
	}
	if f.head < 0 {
		d.setState(f, Ordered)
		f.gen++ // stop the request timer
		d.st.Ports[f.out].Recovered++
	}
}

// flushBatch emits, in batch order, the packets of f that this batch
// left with Forward before packet i, so that packets about to be
// emitted from the buffer cannot overtake them.
func (d *DstToR) flushBatch(c *dataplane.Ctx, b *dataplane.Batch, i int, f *dflow) {
	if f.fwdBatch != uint16(d.batch) {
		return
	}
	for k := 0; k < i; k++ {
		q := &b.Pkts[k]
		if q.Verdict == dataplane.Forward && isData(&q.Meta) && q.Meta.Flow == f.key && d.cfg.fabric(q.In) && d.cfg.host(q.Out) {
			q.Verdict = dataplane.Taken
			c.Emit(q)
		}
	}
}

// request sends f's retransmission request and arms the timer that
// re-sends it; a refused timer is counted (TimerFull) and armed again
// as soon as the worker has room.
func (d *DstToR) request(c *dataplane.Ctx, fi int32, f *dflow) {
	f.requests++
	f.heard = d.heard
	k := &f.key
	ps := &d.st.Ports[f.out]
	bm := f.bm
	if f.nak >= 0 {
		// What the host missed runs up to the ePSN its NAK found
		// (kept in the NAK's entry). Unless a packet beyond it is held,
		// which names the run as missing already, mark that PSN as if
		// held: a request names the PSNs below its highest bit.
		if end := d.buf[f.nak].psn.Diff(f.epsn) - 1; end > highest(bm) || bm == (rocev2.Bitmap128{}) {
			bm = bm.Set(end)
		}
	}
	if send(c, &d.spec, f.reqPort, f.reqMAC, k.Dst, k.Src, k.QP, rocev2.NetRTRequest, f.epsn, bm) {
		ps.Requests++
	} else {
		ps.SendFailed++
	}
	d.after(c, d.cfg.RequestInterval, uint64(fi)|uint64(f.gen)<<32)
}

// after arms a request timer, or keeps it for rearm when the worker
// refuses it (counted).
func (d *DstToR) after(c *dataplane.Ctx, delay int64, arg uint64) {
	if !c.After(delay, arg) {
		d.st.TimerFull++
		if len(d.stalled) < cap(d.stalled) { // a flow is there at most once per generation
			d.stalled = append(d.stalled, arg)
		}
	}
}

// rearm arms the request timers the worker refused, oldest first, until
// it refuses again; those of flows that moved on (another generation, no
// longer in ReTx) are dropped.
func (d *DstToR) rearm(c *dataplane.Ctx) {
	k := 0
	for ; k < len(d.stalled); k++ {
		arg := d.stalled[k]
		f := &d.flows[uint32(arg)]
		if f.gen != uint16(arg>>32) || f.state != ReTx {
			continue
		}
		if !c.After(d.cfg.RequestInterval, arg) {
			break
		}
	}
	d.stalled = d.stalled[:copy(d.stalled, d.stalled[k:])]
}

// Timer implements dataplane.Timed: the request interval of a flow
// (arg: entry | generation<<32), or publication (pubTimer).
func (d *DstToR) Timer(c *dataplane.Ctx, arg uint64) {
	d.mem, d.now = c.Mem, c.Now
	if arg == pubTimer {
		// The last publication after activity: the next activity arms
		// the timer again, so an idle worker is not woken for nothing.
		d.ticking = false
		d.publish(c.Now)
		return
	}
	if len(d.stalled) > 0 {
		d.rearm(c) // the timer that fired left room
	}
	if !d.ticking {
		d.ticking = c.After(publishEvery, pubTimer)
	}
	fi := int32(uint32(arg))
	if fi < 0 || int(fi) >= d.fill {
		return
	}
	f := &d.flows[fi]
	if f.gen != uint16(arg>>32) || f.state != ReTx {
		return
	}
	resend := f.requests > 0
	if resend && f.heard == d.heard && int(f.silent) < d.cfg.SilentRequests {
		// Nothing came from the fabric since the last request: the
		// peer ToR or a switch on the way is off its CPU (or the link
		// is down), which says nothing about whether it would answer.
		// The request is sent again but not counted, so that a pause
		// longer than MaxRequests×RequestInterval does not make the
		// flow give up on a peer that answers when it is back (a tord
		// worker descheduled for 9 ms gave up 1.3 ms before its answer:
		// docs/experiments.md "Why tor2 gave up"). SilentRequests bounds
		// it: a fabric silent for good still ends in Waiting.
		f.silent++
		f.requests--
		d.st.Ports[f.out].Silent++
	}
	if int(f.requests) >= d.cfg.MaxRequests {
		// No answer: fall back to the end hosts. A peer that never
		// answered this flow may not run NetRT at all, so keep out of
		// in-network recovery for Backoff (§III-A, best effort); one
		// that did lost this hole's retransmissions, or the requests.
		d.st.Ports[f.out].WaitGaveUp++
		if !f.answered {
			f.until = c.Now + d.cfg.Backoff
		}
		d.wait(c, nil, 0, f, nil)
		return
	}
	if resend {
		d.st.Ports[f.out].Resent++
	}
	d.request(c, fi, f)
}

// nak follows the receiving RNIC: a sequence-error NAK on its way from
// the host to the sender names the PSN the RNIC expects. When that is
// not the flow's ePSN, the RNIC lost something after this switch (a full
// egress queue, a host drop) or the flow's entry began mid-stream (its
// first packet seen was not its lowest, as spraying makes common), and
// the sender is about to go back to that PSN: the flow adopts it, so the
// resent packets are put in order again instead of passing as late
// ones, which a sprayed fabric would reorder into the next NAK. Held
// packets are flushed first (they lie beyond what the RNIC will take).
// In Waiting only ePSN moves: go-back-N is already what runs.
func (d *DstToR) nak(c *dataplane.Ctx, p *dataplane.Packet) {
	m := &p.Meta
	a := rocev2.AETH(c.Mem.Frame(p)[m.ExtOff(rocev2.ExtAETH):])
	if syn := a.Syndrome(); !syn.IsNAK() || syn.Value() != rocev2.NakPSNSeqError {
		return
	}
	// The NAK travels on the flow's reversed addresses with the
	// requester's QP, which the data packets do not show: the flow is
	// found by that QP when both ends use the same QPN, and otherwise as
	// the newest flow of the address pair (with several QPs between two
	// hosts, possibly another one's: that flow then takes a wrong ePSN
	// and leaves its next gaps to the end hosts until it resyncs; nothing
	// is lost). Held by that other flow, the NAK could even be answered
	// by its PSN and never reach the sender, whose RTO then recovers:
	// that needs the other QP's ePSN within 128 above the NAK's PSN,
	// unlikely with the random first PSNs RNICs choose per QP.
	key := m.Flow.Reverse(m.Flow.QP)
	fi := d.index.find(d.flows, &key)
	if fi < 0 {
		var ok bool
		if fi, ok = d.pairs[pair{m.Flow.Dst, m.Flow.Src}]; !ok {
			d.st.NAKUnknown++
			return
		}
	}
	f := &d.flows[fi]
	if !f.serve {
		return
	}
	if m.PSN == f.epsn {
		f.naked = true // passed on: the sender will go back N
		return
	}
	if back := f.epsn.Diff(m.PSN); back > 0 {
		d.st.Ports[f.out].MissNAKed += uint64(back)
	}
	if d.holdNAK(c, fi, f, p) {
		return
	}
	f.naked = true
	d.st.Ports[f.out].Resyncs++
	if f.first.Diff(m.PSN) > 0 {
		d.st.Ports[f.out].ResyncsEarly++
	}
	if f.state != Waiting {
		if f.head >= 0 || f.nak >= 0 {
			d.wait(c, nil, 0, f, nil) // a NAK held for an earlier PSN goes first
		} else {
			f.gen++ // stop a request timer
		}
		d.setState(f, Ordered)
		f.requests, f.silent = 0, 0
	}
	f.epsn, f.bm = m.PSN, rocev2.Bitmap128{}
}

// holdNAK tries to recover in the network what the host's sequence NAK
// p says it missed: the PSNs from the one it names, x, up to the flow's
// ePSN, which this switch forwarded (a loss after it) or never saw (the
// flow's entry began after a loss, as when its first packet was lost).
// The source ToR pools them until the host acknowledges them, so the
// flow goes to ReTx with ePSN x, asks for them all, and holds the NAK:
// answered (dropped) when x arrives, sent on if the flow falls back to
// Waiting (notice, give-up), so that the sender's go-back-N runs only
// when the network could not help. Going beyond the paper, whose
// DstToR knows of no loss after it. False, and the NAK goes on as
// before, when the flow is in Waiting, backing off (its peer may not
// run NetRT) or already holds a NAK, when x lies before the ePSN by
// more than the bitmap's span or the held packets would then lie beyond
// it, or when no frame entry is free.
func (d *DstToR) holdNAK(c *dataplane.Ctx, fi int32, f *dflow, p *dataplane.Packet) bool {
	x := p.Meta.PSN
	back := f.epsn.Diff(x)
	if f.state == Waiting || c.Now < f.until || f.nak >= 0 || back <= 0 || back > span || len(d.free) == 0 ||
		f.head >= 0 && highest(f.bm)+back >= span {
		return false
	}
	e := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	// The NAK's entry keeps the ePSN it found: the end of the run the
	// requests name as missing.
	d.buf[e] = heldPkt{p: *p, psn: f.epsn, next: -1, flow: fi}
	p.Verdict = dataplane.Taken
	f.nak = e
	d.st.NAKs++
	var bm rocev2.Bitmap128
	for k := f.head; k >= 0; k = d.buf[k].next {
		bm = bm.Set(d.buf[k].psn.Diff(x) - 1)
	}
	f.epsn, f.bm = x, bm
	if f.state == Ordered {
		d.setState(f, ReTx)
	}
	d.st.Ports[f.out].NAKHeld++
	f.requests, f.silent = 0, 0
	f.gen++
	// fwd sent the NAK toward the sender; the requests go that way.
	f.reqPort = p.Out
	copy(f.reqMAC[:], c.Mem.Frame(p)[0:6])
	d.request(c, fi, f)
	return true
}

// unholdNAK takes f's held NAK out of the buffer and returns it.
func (d *DstToR) unholdNAK(f *dflow) *heldPkt {
	h := &d.buf[f.nak]
	h.flow = -1
	d.free = append(d.free, f.nak)
	f.nak = -1
	d.st.NAKs--
	return h
}

// unfulfilled handles the unfulfilled notice i of b (Algorithm 2,
// HandleNetRTMessage), consuming it.
func (d *DstToR) unfulfilled(c *dataplane.Ctx, b *dataplane.Batch, i int, n rocev2.NetRT) {
	p := &b.Pkts[i]
	d.st.Notices++
	p.Drop(ReasonConsumed)
	fi := d.index.find(d.flows, &p.Meta.Flow)
	if fi < 0 {
		d.st.Unknown++
		return
	}
	f := &d.flows[fi]
	if f.state != ReTx || n.PSN() != f.epsn {
		d.st.Stale++
		return
	}
	f.answered = true
	d.st.Ports[f.out].WaitUnfulfilled++
	d.wait(c, b, i, f, nil)
}

// wait moves f to Waiting: it forwards the lowest held packet, so the
// receiving RNIC sees the gap and starts go-back-N, then flushes the
// rest of the buffer by forwarding it in PSN order. The paper's
// "buffer.clear()" could also mean dropping them; forwarding is chosen
// because the RNIC discards what it cannot use anyway, the paper says
// the buffer is "released", and dropping would turn a packet the switch
// already received into a loss.
//
// trig, if not nil, is the batch packet that forced the move; it goes
// out among the flushed ones by PSN. b is nil when a timer calls;
// otherwise the packets of f that b forwarded before packet i go first.
func (d *DstToR) wait(c *dataplane.Ctx, b *dataplane.Batch, i int, f *dflow, trig *dataplane.Packet) {
	if b != nil {
		d.flushBatch(c, b, i, f)
	}
	d.setState(f, Waiting)
	f.gen++                     // stop the request timer
	f.requests, f.silent = 0, 0 // the next gap's requests start afresh
	if f.nak >= 0 {
		// The network could not recover what the host asked for:
		// its NAK goes on, first, and the sender goes back N.
		h := d.unholdNAK(f)
		d.st.Ports[f.out].NAKReleased++
		f.naked = true
		c.Emit(&h.p)
	}
	for f.head >= 0 {
		if trig != nil && trig.Meta.PSN.Less(d.buf[f.head].psn) {
			trig.Verdict = dataplane.Taken
			c.Emit(trig)
			trig = nil
		}
		p := d.pop(f)
		d.st.Ports[p.Out].Flushed++
		c.Emit(&p)
	}
	if trig != nil {
		trig.Verdict = dataplane.Taken
		c.Emit(trig)
	}
	f.bm = rocev2.Bitmap128{}
}

// Close frees every held frame; call it once the worker has stopped.
func (d *DstToR) Close() error {
	for i := range d.flows[:d.fill] {
		f := &d.flows[i]
		if f.nak >= 0 {
			h := d.unholdNAK(f)
			if d.mem != nil {
				d.mem.Release(h.p.Addr)
			}
		}
		for f.head >= 0 {
			p := d.pop(f)
			if d.mem != nil {
				d.mem.Release(p.Addr)
			}
			d.st.Dropped++
		}
	}
	return nil
}

// Stats returns the live counters; call it from the worker's goroutine
// only (others use Snapshot).
func (d *DstToR) Stats() DstStats { return d.st }

// Snapshot returns the counters as last published (about once a
// millisecond of worker time). It is safe from any goroutine.
func (d *DstToR) Snapshot() DstStats {
	return d.pub.Load().st
}

// Publish stores the counters and the busiest flows for Snapshot and
// Busiest now, at worker time now. Call it from the worker's goroutine,
// or after the worker stopped (a simulator at the end of a run).
func (d *DstToR) Publish(now int64) { d.publish(now) }
