package dataplane

import "rocetor/rocev2"

// Stage is one step of the switch pipeline: a state machine with no I/O,
// no goroutines and no clock of its own (DESIGN.md, "The stage
// contract"). Process is handed a batch whose packets it may forward
// (set Out and Queue), drop (Packet.Drop with a reason) or take (set
// Verdict to Taken; the stage then owns the frame and must later Emit or
// Discard it through the Ctx). It looks only at packets whose Verdict is
// Forward: earlier stages have settled the others. Stages run in
// configuration order; packets left with Forward go to their egress
// queue after the last stage.
type Stage interface {
	Name() string
	Process(c *Ctx, b *Batch)
}

// Timed is implemented by stages that arm timers with Ctx.After.
type Timed interface {
	Timer(c *Ctx, arg uint64)
}

// Source is implemented by stages that originate traffic rather than only
// react to it, such as a software RNIC's sender. The worker calls Poll once
// per loop, after the receive batches and timers and before transmission;
// Poll builds frames with Ctx.Alloc and queues them with Ctx.Emit, and
// returns how many it made so an idle worker can sleep. It should stop
// while the egress queue it feeds is near its budget
// (Ctx.Egress(port).Depth): that is the backpressure of a NIC's tx ring.
type Source interface {
	Poll(c *Ctx) int
}

// Ctx is what a stage may do besides looking at its batch. The worker
// passes the same Ctx to every call; it is valid only during the call.
type Ctx struct {
	// Now is the worker's clock in nanoseconds, read once per loop.
	Now int64
	// Since is the time of the worker's previous loop (Now in its
	// first): the frames a port hands over in this loop arrived in
	// (Since, Now], unless its ring held more than a batch. RxTime
	// spreads a batch over that interval.
	Since int64
	// Mem holds the frames; Mem.Frame(p) gives a packet's bytes.
	Mem   *Mem
	w     *Worker
	stage uint16
}

// RxTime is the best time this worker has for the arrival of packet i
// of a batch of n a port handed over in this loop: the batch spread
// evenly over (Since, Now], the last at Now. Neither an AF_XDP ring
// nor a memory port stamps frames, and the loop reads its clock once,
// so every frame of a batch would otherwise carry Now; a software
// RNIC's DCQCN notification point, which paces CNPs by the arrival of
// CE-marked frames (min_time_between_cnps), then answered a whole
// batch's marks with one CNP (nic, Endpoint.Process). The frames of
// a bottleneck drained at its rate do arrive spread over the
// interval; a burst that came in at the interval's end is spread
// wider than it came. In the simulator a node steps at every
// arrival (dataplane/sim), so a batch is one frame and RxTime its
// exact arrival, unless the node was off its CPU (a stall).
func (c *Ctx) RxTime(i, n int) int64 {
	if n <= 1 || c.Now <= c.Since {
		return c.Now
	}
	return c.Since + (c.Now-c.Since)*int64(i+1)/int64(n)
}

// NumPorts returns the number of ports of the worker.
func (c *Ctx) NumPorts() int { return len(c.w.ports) }

// Port returns port i.
func (c *Ctx) Port(i int) Port { return c.w.ports[i] }

// OwnsPort reports whether this worker sends on port i itself: always
// without a handoff; with one, when the port's egress is this worker's
// (WorkerConfig.PortOwner), so that a frame it queues there is
// transmitted and given back on this worker's memory.
func (c *Ctx) OwnsPort(i int) bool {
	po := c.w.cfg.PortOwner
	return po == nil || po[i] == c.w.cfg.ID
}

// Egress returns the egress of port i, for queue-depth readings.
func (c *Ctx) Egress(i int) *Egress { return c.w.egress[i] }

// QueueDepth returns the bytes waiting in queue q of port i (q ==
// NumQueues: its MAC control queue). On a switch whose ports each have
// one owner worker (WorkerConfig.PortOwner) another worker's queues
// hold nothing of port i: it reads the depth the owner published at the
// end of its last loop, at most a loop old. On a shared port (PortOwner
// -1) it is this worker's share's depth, which the stage weighs against
// its share's budgets (Egress: limits and thresholds cut into the
// workers' parts). Stages that estimate a port's delay (NetRT) or route by depth (adaptive routing) read it
// here rather than from Egress.
func (c *Ctx) QueueDepth(i, q int) int {
	w := c.w
	if o := w.portOwner(uint16(i)); o >= 0 && o != w.cfg.ID {
		return w.ho.egress[o][i].Seen(q)
	}
	e := w.egress[i]
	if q == e.NumQueues() {
		b, _ := e.ControlDepth()
		return b
	}
	b, _ := e.Depth(q)
	return b
}

// Classifier returns the worker's classifier, for stages that re-parse a
// frame they rewrote.
func (c *Ctx) Classifier() rocev2.Classifier { return c.w.cfg.Classifier }

// Emit sends a packet the stage owns (one it took earlier or built)
// toward port p.Out, queue p.Queue, through the stages after the calling
// one, as if it had left the calling stage in a batch: a NetRT
// retransmission meets trimming and is numbered by llr like any frame
// bound for that queue. The frame is classified again first (stages need
// not fill Meta for frames they build). Emit returns false when a later
// stage dropped the packet or its queue refused it; the frame has then
// been freed and the drop counted. It returns true when the packet was
// queued or a later stage took it.
func (c *Ctx) Emit(p *Packet) bool {
	if cp := c.w.cap; cp != nil && cp.Point == CaptureStage && cp.Stage == int(c.stage) && int(p.Out) == cp.Port {
		cp.add(c.w.mem.Frame(p))
	}
	return c.w.emit(c.stage, p)
}

// Discard frees a frame the stage owns and counts the drop under r (and
// as a header-only packet's when p.Meta says it is one).
func (c *Ctx) Discard(p *Packet, r Reason) { c.w.dropPacket(p, r) }

// Consume frees a frame the stage owns, or a packet of its batch it has
// finished with (its Verdict becomes Taken), and counts it consumed
// (Snapshot.Consumed): the frame ended here as intended — a software
// RNIC delivered it to its transport — and was not lost.
func (c *Ctx) Consume(p *Packet) {
	p.Verdict = Taken
	c.w.st.Consumed++
	c.w.mem.Release(p.Addr)
}

// Alloc takes a free frame for a packet the stage builds (counted in
// Snapshot.Built). The returned slice is the whole frame, aliasing Mem.
// ok is false, with the shortage counted (ReasonNoFrame), when frame
// memory is exhausted. A frame taken must leave by Emit, Discard or
// Consume, or be held by the stage, which then counts it among its held
// frames: the worker's books balance only so.
func (c *Ctx) Alloc() (addr uint64, room []byte, ok bool) {
	addr, ok = c.w.mem.Alloc()
	if !ok {
		c.w.st.Drops[ReasonNoFrame]++
		return 0, nil, false
	}
	c.w.st.Built++
	return addr, c.w.mem.Room(addr), true
}

// After arms a timer that calls the current stage's Timer method with arg
// after delay nanoseconds. It returns false when the timer heap is full.
func (c *Ctx) After(delay int64, arg uint64) bool {
	return c.w.timers.Arm(c.Now+delay, c.stage, arg)
}

// SendPFC sends an 802.1Qbb PFC frame out of port i, ahead of all its
// queues: priorities enabled in the vector pause for times[p] quanta, or
// resume when the time is zero.
func (c *Ctx) SendPFC(port int, enable uint8, times [8]uint16) bool {
	return c.w.sendPFC(port, enable, times)
}
