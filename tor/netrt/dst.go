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

// dflow is DstToR's state for one flow.
type dflow struct {
	key      rocev2.FlowKey
	epsn     psn.PSN
	bm       rocev2.Bitmap128 // bit i: PSN epsn+1+i is held
	state    uint8
	used     bool
	head     int32 // held packets, a list sorted by PSN; -1 if none
	held     int32
	gen      uint32 // request timer generation
	requests int    // requests sent for the current ePSN
	reqPort  uint16 // port requests leave by (the data's ingress)
	reqMAC   rocev2.MAC
	last     int64 // last packet seen, for reclaiming
	fwdBatch uint64
}

// held is one packet in the reordering buffer.
type heldPkt struct {
	p    dataplane.Packet
	psn  psn.PSN
	next int32
}

// DstToR is the destination-ToR stage of NetRT (seed 000, §III-C-2,
// §III-D): it checks the order of each flow's data packets on their way
// to a host, holds out-of-order ones in a reordering buffer, asks the
// source ToR for the missing ones, and releases the buffer in order.
//
// It holds at most Config.BufferBytes bytes (and BufferFrames frames) of
// frames; a packet that would exceed the budget is forwarded out of
// order instead. It must run after fwd (it releases packets to the egress
// the pipeline chose) and should run last: held packets skip the stages
// after it. One DstToR per worker; it is not safe for concurrent use
// except Snapshot. Build it with NewDstToR.
type DstToR struct {
	cfg   Config
	flows []dflow
	index map[rocev2.FlowKey]int32
	hand  int // reclaim clock hand

	buf      []heldPkt
	free     []int32
	bufBytes int

	mem   *dataplane.Mem
	batch uint64 // serial number of the batch being processed
	spec  rocev2.Spec

	st  DstStats
	pub dataplane.Published[DstStats]
}

// NewDstToR returns a DstToR with the configuration c.
func NewDstToR(c Config) (*DstToR, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &DstToR{cfg: c, flows: make([]dflow, c.Flows), index: make(map[rocev2.FlowKey]int32, c.Flows),
		buf: make([]heldPkt, c.BufferFrames), free: make([]int32, c.BufferFrames)}
	for i := range d.free {
		d.free[i] = int32(len(d.free) - 1 - i)
	}
	return d, nil
}

// Name implements dataplane.Stage.
func (d *DstToR) Name() string { return "netrt-dst" }

// Process implements dataplane.Stage.
func (d *DstToR) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	d.mem = c.Mem
	d.batch++
	d.st.Calls++
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		if isData(&p.Meta) {
			if d.cfg.fabric(p.In) && d.cfg.host(p.Out) {
				d.st.Packets++
				d.data(c, b, i)
			}
			continue
		}
		if n := netRT(c, p); n != nil && n.Type() == rocev2.NetRTUnfulfilled && d.cfg.host(p.Out) {
			d.unfulfilled(c, p, n)
		}
	}
	d.pub.Maybe(c.Now, &d.st)
}

// lookup finds or makes the flow of key; -1 when the table is full.
func (d *DstToR) lookup(now int64, key *rocev2.FlowKey, first psn.PSN) int32 {
	if i, ok := d.index[*key]; ok {
		return i
	}
	for k := 0; k < len(d.flows) && k < 16+len(d.index); k++ {
		i := d.hand
		d.hand++
		if d.hand == len(d.flows) {
			d.hand = 0
		}
		f := &d.flows[i]
		if f.used {
			if f.state != Ordered || f.held != 0 || now-f.last < d.cfg.IdleTimeout {
				continue
			}
			delete(d.index, f.key)
			d.st.Reclaimed++
		}
		// The generation survives reuse, so a stale request timer of
		// the entry's previous flow cannot match the new one.
		*f = dflow{key: *key, epsn: first, used: true, head: -1, last: now, gen: f.gen + 1}
		d.index[*key] = int32(i)
		d.st.Flows = len(d.index)
		return int32(i)
	}
	d.st.TableFull++
	return -1
}

// data handles data packet i of b, which is on its way to a host.
func (d *DstToR) data(c *dataplane.Ctx, b *dataplane.Batch, i int) {
	p := &b.Pkts[i]
	fi := d.lookup(c.Now, &p.Meta.Flow, p.Meta.PSN)
	if fi < 0 {
		return
	}
	f := &d.flows[fi]
	f.last = c.Now
	n := p.Meta.PSN.Diff(f.epsn)
	switch {
	case n == 0:
		d.st.InOrder++
		f.requests = 0
		if f.state == Waiting {
			f.state = Ordered
			d.st.Recovered++
		}
		if f.held == 0 {
			// The fast path: forward in place.
			f.epsn = f.epsn.Add(1)
			f.bm = f.bm.Shift()
			f.fwdBatch = d.batch
			return
		}
		d.flushBatch(c, b, i, f)
		p.Verdict = dataplane.Taken
		c.Emit(p)
		d.advance(c, f)
	case n < 0:
		d.st.Late++ // a duplicate or an end-to-end retransmission: the RNIC decides
		f.fwdBatch = d.batch
	case f.state == Waiting:
		d.st.Passed++ // not blocked: the RNIC's GBN is recovering
		f.fwdBatch = d.batch
	case n > 128:
		d.st.OutOfWindow++
		f.fwdBatch = d.batch
	case f.bm.Has(n - 1):
		d.st.Duplicates++
		p.Drop(ReasonDuplicate)
	default:
		if !d.hold(p, f, n) {
			d.st.ReorderFull++
			f.fwdBatch = d.batch
			return
		}
		if f.state == Ordered {
			f.state = ReTx
			d.st.Gaps++
			f.reqPort, f.reqMAC = next(&d.cfg, f.key.Src, p.In, c.Mem.Frame(p))
			f.gen++
			f.requests = 0
			d.request(c, fi, f)
		}
	}
}

// hold takes p into f's buffer at offset n from ePSN; false when the
// budget has no room.
func (d *DstToR) hold(p *dataplane.Packet, f *dflow, n int) bool {
	if len(d.free) == 0 || d.bufBytes+int(p.Len) > d.cfg.BufferBytes {
		return false
	}
	e := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	h := &d.buf[e]
	h.p, h.psn = *p, p.Meta.PSN
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
	f.held++
	d.bufBytes += int(p.Len)
	d.st.Held++
	d.st.HeldBytes = d.bufBytes
	d.st.MaxHeldBytes = max(d.st.MaxHeldBytes, d.bufBytes)
	p.Verdict = dataplane.Taken
	return true
}

// pop removes and returns the lowest held packet of f.
func (d *DstToR) pop(f *dflow) dataplane.Packet {
	e := f.head
	h := &d.buf[e]
	f.head = h.next
	f.held--
	d.bufBytes -= int(h.p.Len)
	d.st.HeldBytes = d.bufBytes
	d.free = append(d.free, e)
	return h.p
}

// advance moves f past the ePSN just forwarded and releases the buffer
// in order (Algorithm 1).
func (d *DstToR) advance(c *dataplane.Ctx, f *dflow) {
	for {
		next := f.bm.Has(0) // ePSN+1 is held
		f.bm = f.bm.Shift()
		f.epsn = f.epsn.Add(1)
		if !next {
			break
		}
		p := d.pop(f)
		d.st.Released++
		c.Emit(&p)
	}
	if f.bm.Empty() && f.state == ReTx {
		f.state = Ordered
		f.gen++ // stop the request timer
		d.st.Recovered++
	}
}

// flushBatch emits, in batch order, the packets of f that this batch
// left with Forward before packet i, so that packets about to be
// emitted from the buffer cannot overtake them.
func (d *DstToR) flushBatch(c *dataplane.Ctx, b *dataplane.Batch, i int, f *dflow) {
	if f.fwdBatch != d.batch {
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
// re-sends it.
func (d *DstToR) request(c *dataplane.Ctx, fi int32, f *dflow) {
	f.requests++
	k := &f.key
	if send(c, &d.spec, f.reqPort, f.reqMAC, k.Dst, k.Src, k.QP, rocev2.NetRTRequest, f.epsn, f.bm) {
		d.st.Requests++
	} else {
		d.st.SendFailed++
	}
	if !c.After(d.cfg.RequestInterval, uint64(fi)|uint64(f.gen)<<32) {
		d.st.TimerFull++
	}
}

// Timer implements dataplane.Timed: the request interval of a flow.
func (d *DstToR) Timer(c *dataplane.Ctx, arg uint64) {
	d.mem = c.Mem
	fi := int32(uint32(arg))
	if int(fi) >= len(d.flows) {
		return
	}
	f := &d.flows[fi]
	if f.gen != uint32(arg>>32) || f.state != ReTx {
		return
	}
	if f.requests >= d.cfg.MaxRequests {
		d.st.GaveUp++
		d.wait(c, f)
		return
	}
	d.st.Resent++
	d.request(c, fi, f)
}

// unfulfilled handles an unfulfilled notice (Algorithm 2,
// HandleNetRTMessage), consuming it.
func (d *DstToR) unfulfilled(c *dataplane.Ctx, p *dataplane.Packet, n rocev2.NetRT) {
	d.st.Notices++
	p.Drop(ReasonConsumed)
	fi, ok := d.index[p.Meta.Flow]
	if !ok {
		d.st.Unknown++
		return
	}
	f := &d.flows[fi]
	if f.state != ReTx || n.PSN() != f.epsn {
		d.st.Stale++
		return
	}
	d.wait(c, f)
}

// wait moves f to Waiting: it forwards the lowest held packet, so the
// receiving RNIC sees the gap and starts go-back-N, then flushes the
// rest of the buffer by forwarding it in PSN order. The paper's
// "buffer.clear()" could also mean dropping them; forwarding is chosen
// because the RNIC discards what it cannot use anyway, the paper says
// the buffer is "released", and dropping would turn a packet the switch
// already received into a loss.
func (d *DstToR) wait(c *dataplane.Ctx, f *dflow) {
	f.state = Waiting
	f.gen++
	d.st.Waits++
	for f.head >= 0 {
		p := d.pop(f)
		d.st.Flushed++
		c.Emit(&p)
	}
	f.bm = rocev2.Bitmap128{}
}

// Close frees every held frame; call it once the worker has stopped.
func (d *DstToR) Close() error {
	for i := range d.flows {
		f := &d.flows[i]
		for f.used && f.head >= 0 {
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
	return d.pub.Load()
}
