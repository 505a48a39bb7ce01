package sim

import (
	"fmt"
	"math/rand/v2"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// LinkConfig describes one full-duplex link.
type LinkConfig struct {
	RateBps uint64 // bits per second, each way
	Delay   Time   // propagation, each way
	// Overhead is the bytes the wire adds to each frame (preamble and
	// delimiter 8, FCS 4, inter-frame gap 12: 24); 0 counts the frame
	// alone, as htsim and ns-3's point-to-point device do.
	Overhead int
	// RxRing is each receiving port's ring of frames not yet taken by
	// its worker; a frame that finds it full is lost (RxRefused).
	// Default 1024.
	RxRing int
}

// PortStats are a port's wire counters.
type PortStats struct {
	TxFrames, TxBytes uint64 // frames and bytes (without Overhead) sent
	BusyTime          Time   // time spent serializing
	RxFrames          uint64 // frames delivered into the ring
	RxRefused         uint64 // frames lost: the ring was full
	// RxNoFrame counts frames lost because the receiving worker's Mem
	// had no free frame to copy them into, counted as they leave the
	// sender (when the copy is made, as a NIC's DMA needs a buffer).
	// Every frame a port's peer sends is RxFrames, RxRefused or
	// RxNoFrame here, or in flight (the peer's InFlight).
	RxNoFrame uint64
}

// Port is one end of a link, a dataplane.Port whose Transmit completes
// at serialization time: TxRoom is 1 while the wire is free and 0 while
// it serializes, so the worker dequeues a frame exactly when the wire
// can take it and the rest wait in its egress queues. Received frames
// come from the in-memory port underneath (Receive, Pending), copied
// into the worker's Mem as they arrive. Like every port it belongs to
// its worker's goroutine, here the simulation's.
type Port struct {
	*dataplane.MemPort
	sim  *Sim
	mem  *dataplane.Mem
	node int // the actor to wake when a frame arrives (-1 until Attach)
	out  *wire
	cfg  LinkConfig
	busy Time
	st   PortStats
	// jitter, rng, lastAt: SetJitter's; lastAt is when the last frame
	// sent arrives, which no later frame may precede.
	jitter, lastAt Time
	rng            *rand.Rand
}

// NewPort returns a port named name with address mac whose frames live
// in mem. It carries nothing until Connect joins it to another.
func NewPort(s *Sim, name string, mac rocev2.MAC, mem *dataplane.Mem, rxRing int) *Port {
	if rxRing == 0 {
		rxRing = 1024
	}
	return &Port{MemPort: dataplane.NewMemPort(name, mac, mem, rxRing), sim: s, mem: mem, node: -1}
}

// Attach names the actor (the port's Node) woken when a frame arrives.
func (p *Port) Attach(node int) { p.node = node }

// TxRoom implements dataplane.Port: 1 while the wire is free.
func (p *Port) TxRoom() int {
	if p.out == nil || p.sim.now < p.busy {
		return 0
	}
	return 1
}

// TxFree returns when the wire is free again (in the past if it is).
func (p *Port) TxFree() Time { return p.busy }

// Transmit implements dataplane.Port: it takes the first frame if the
// wire is free, puts it on the wire, due at the far end Delay after its
// last bit, and gives the frame back to Mem.
func (p *Port) Transmit(pkts []dataplane.Packet) int {
	if len(pkts) == 0 || p.TxRoom() == 0 {
		return 0
	}
	pk := &pkts[0]
	f := p.mem.Frame(pk)
	ser := Time(uint64(len(f)+p.cfg.Overhead) * 8 * uint64(Second) / p.cfg.RateBps)
	start := p.sim.now
	p.busy = start + ser
	p.st.TxFrames++
	p.st.TxBytes += uint64(len(f))
	p.st.BusyTime += ser
	at := p.busy + p.cfg.Delay
	if p.jitter > 0 {
		at = max(at+Time(p.rng.Int64N(int64(p.jitter))), p.lastAt)
		p.lastAt = at
	}
	p.out.push(p.mem, pk, at)
	return 1
}

// SetJitter delays each frame the port sends by a draw from rng,
// uniform in [0, d), beyond the link's delay, but never so far that it
// would arrive before the frame sent ahead of it: the wire stays in
// order. It is the spread of a NIC's transmit timing or a switch's
// forwarding latency. It only adds delay, so the link's delay still
// bounds the partitions' lookahead.
func (p *Port) SetJitter(d Time, rng *rand.Rand) { p.jitter, p.rng = d, rng }

// WireStats returns the wire counters.
func (p *Port) WireStats() PortStats {
	s := p.st
	s.RxRefused = p.MemPort.Stats().InjectRefused
	return s
}

// InFlight returns the frames on the wire from this port: sent, not yet
// arrived. They count in the receiving worker's Mem (a frame of it is
// taken as the frame leaves), so a long link needs frame memory at its far end
// for rate × delay of frames.
func (p *Port) InFlight() int {
	if p.out == nil {
		return 0
	}
	return p.out.n
}

// Config returns the link's configuration.
func (p *Port) Config() LinkConfig { return p.cfg }

// wire is one direction of a link: frames in flight, in order, each due
// at its arrival. Its event is its head frame's arrival, as an htsim
// pipe schedules only its head. It lives in the receiver's partition
// (sim is the receiving port's): its events are arrivals there.
type wire struct {
	sim  *Sim
	id   int
	to   *Port
	q    []inflight // ring, a power of two long (a mask, not a division, wraps it)
	head int
	n    int
	// trade: the two ends' memories are ranges of one area
	// (dataplane.NewMemAt), so a frame crosses without a copy.
	trade bool
	// x, between partitions (Group): the frames the sender put on
	// the wire in a window, copied out of its memory, which the
	// receiver copies into its own at the start of the next (drain);
	// from is the sender's partition, whose epoch picks the buffer.
	x    *[2]exchange
	from *Sim
	// xroom is the bytes an exchange's data is made with (NewGroup,
	// exchangeRoom).
	xroom int
}

// exchange is one window's frames of a link direction between two
// partitions, in the order sent: records whose addr is an offset into
// data. It is bounded by what the wire can carry in a window — rate ×
// lookahead — and its room is reused from window to window.
type exchange struct {
	recs []inflight
	data []byte
}

// inflight is a frame on the wire. It takes a frame of the receiving
// worker's Mem as it leaves — the sender's own frame, traded for a free
// one, when the two memories share an area, else a copy — and is handed
// to the port's ring when its last bit arrives.
type inflight struct {
	at   Time
	addr uint64
	len  uint16
}

func (w *wire) push(from *dataplane.Mem, pk *dataplane.Packet, at Time) {
	if w.x != nil {
		// Another partition's: its memory is another goroutine's.
		// The frame is copied out and taken into the receiver's
		// memory when the window ends (drain).
		x := &w.x[w.from.epoch&1]
		if x.data == nil {
			x.data = make([]byte, 0, w.xroom)
		}
		x.recs = append(x.recs, inflight{at: at, addr: uint64(len(x.data)), len: pk.Len})
		x.data = append(x.data, from.Frame(pk)...)
		from.Release(pk.Addr)
		return
	}
	addr, ok := w.to.mem.Alloc()
	if !ok {
		w.to.st.RxNoFrame++
		from.Release(pk.Addr)
		return
	}
	if w.trade && !from.Held(pk.Addr) {
		// One area: the receiver takes the sender's frame and the
		// sender the free one, each memory keeping its count, as a
		// copy into the free frame would; the copy was a fifth of the
		// CPU of a k = 8 fat tree's run. A frame the sender still
		// holds (llr's Tx buffer) stays the sender's: copied.
		from.Release(addr)
		addr = pk.Addr
	} else {
		copy(w.to.mem.Room(addr), from.Frame(pk))
		from.Release(pk.Addr)
	}
	w.enqueue(addr, pk.Len, at)
}

// enqueue puts a frame of the receiver's memory in flight, due at at.
func (w *wire) enqueue(addr uint64, n uint16, at Time) {
	if w.n == len(w.q) {
		q := make([]inflight, max(16, 2*len(w.q)))
		for i := 0; i < w.n; i++ {
			q[i] = w.q[(w.head+i)&(len(w.q)-1)]
		}
		w.q, w.head = q, 0
	}
	w.q[(w.head+w.n)&(len(w.q)-1)] = inflight{at: at, addr: addr, len: n}
	w.n++
	if w.n == 1 {
		w.sim.Wake(w.id, at)
	}
}

// drain takes the frames of exchange x into the receiver's memory and
// puts them in flight, in the order sent; a frame that finds no free
// frame there is lost and counted as push counts it.
func (w *wire) drain(x *exchange) {
	for _, r := range x.recs {
		addr, ok := w.to.mem.Alloc()
		if !ok {
			w.to.st.RxNoFrame++
			continue
		}
		copy(w.to.mem.Room(addr), x.data[r.addr:r.addr+uint64(r.len)])
		w.enqueue(addr, r.len, r.at)
	}
	x.recs, x.data = x.recs[:0], x.data[:0]
}

// Fire delivers the frames due now into the receiving port's ring and
// wakes its node.
func (w *wire) Fire(now Time) {
	got := false
	for w.n > 0 && w.q[w.head].at <= now {
		e := w.q[w.head]
		if w.to.Deliver(e.addr, int(e.len)) {
			w.to.st.RxFrames++
			got = true
		}
		w.head = (w.head + 1) & (len(w.q) - 1)
		w.n--
	}
	if got && w.to.node >= 0 {
		w.sim.Wake(w.to.node, now)
	}
	if w.n > 0 {
		w.sim.Wake(w.id, w.q[w.head].at)
	}
}

// Connect joins a and b with a full-duplex link. Each direction runs
// in its receiver's partition (Sim.Part): between two partitions a
// frame is copied across at the end of the window it was sent in
// (Group), so such a link needs a delay, the lookahead. s is the
// simulation the ports belong to, or one of its partitions.
func Connect(s *Sim, a, b *Port, c LinkConfig) error {
	if c.RateBps == 0 {
		return fmt.Errorf("sim: link %s–%s: no rate", a.Name(), b.Name())
	}
	if a.out != nil || b.out != nil {
		return fmt.Errorf("sim: link %s–%s: a port is connected already", a.Name(), b.Name())
	}
	if a.sim.ids != s.ids || b.sim.ids != s.ids {
		return fmt.Errorf("sim: link %s–%s: ports of another simulation", a.Name(), b.Name())
	}
	cross := a.sim != b.sim
	if cross && c.Delay <= 0 {
		return fmt.Errorf("sim: link %s–%s: between partitions without a delay", a.Name(), b.Name())
	}
	a.cfg, b.cfg = c, c
	trade := !cross && sameArea(a.mem, b.mem)
	a.out = &wire{sim: b.sim, to: b, trade: trade, from: a.sim}
	b.out = &wire{sim: a.sim, to: a, trade: trade, from: b.sim}
	a.out.id, b.out.id = b.sim.Add(a.out), a.sim.Add(b.out)
	if cross {
		a.out.x, b.out.x = new([2]exchange), new([2]exchange)
		b.sim.cross = append(b.sim.cross, a.out)
		a.sim.cross = append(a.sim.cross, b.out)
	}
	return nil
}

// sameArea tells whether two memories are ranges of one area with one
// frame size (dataplane.NewMemAt), so that either may take the other's
// frames.
func sameArea(a, b *dataplane.Mem) bool {
	x, y := a.Buf(), b.Buf()
	return a.FrameSize() == b.FrameSize() && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
}
