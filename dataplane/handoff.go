package dataplane

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"rocetor/rocev2"
)

// Handoff connects the workers of one switch so that a frame that
// arrives at a worker that does not own it reaches its owner without a
// copy, as VPP's handoff does: one bounded single-producer
// single-consumer ring of Packets for each ordered pair of workers, and
// one of frame addresses carrying frames freed by a worker that did not
// allocate them back to the one that did (SharedMems). A worker owns the
// flows (NetRT's state) and the ports (an egress's queues, shaper and
// budgets, trimming, llr's sender and receiver) its WorkerConfig.Owner
// and PortOwner give it, so every such state has one writer whatever the
// number of workers.
//
// A full ring drops the frame, counted (ReasonHandoffFull), as VPP's
// handoff counts a congestion drop: leaving it in the sender's rx ring
// instead would stall every other flow that worker serves behind one
// slow owner, and the sender cannot hold the frames it already took
// without a budget of its own; the rings are sized so that a worker
// may fall a burst behind (handoffBurst).
//
// A worker pushes what it hands during a loop and publishes the pushes
// once, at the end of Step (a batch, as the AF_XDP rings are), then
// wakes the receiving worker if it sleeps. A receiving worker drains its
// inbound rings at the start of each Step, before it polls its ports.
//
// The rings are the only state workers share; each end of each ring is
// used by one worker's thread. Counters (Snapshot.Handed, the
// ReasonHandoffFull drops) are the sending worker's. Make one with
// NewHandoff (the zero value is not ready); Workers and Wakeups are safe
// from any goroutine.
type Handoff struct {
	n     int
	rings [][]*spsc[handed] // [from][to]; nil where from == to
	back  [][]*spsc[uint64] // [from][to]: frames of to that from freed
	// sleeping[w] is set while worker w waits in poll(2), whose set
	// includes efd[w]: a worker that hands it frames writes the eventfd.
	sleeping []paddedBool
	efd      []int
	wakes    []paddedUint64 // wakeups sent to each worker
	// egress is each worker's egress by port, for the queue depths a
	// port's owner publishes (Ctx.QueueDepth); set by NewWorker.
	egress [][]*Egress
}

// handed is one frame on a handoff ring: the packet as the sender left
// it (classified, routed when At > 0) and the stage the owner resumes
// it at. At 0 is a frame fresh from the wire (a MAC control frame is
// acted on first); At == the number of stages means enqueue it.
type handed struct {
	Packet
	At uint16
}

// HandoffRing is the smallest default size of each handoff ring, in
// packets: four batches, so a worker may hand a whole received batch to
// a peer that is three loops behind before the ring refuses
// (ReasonHandoffFull).
const HandoffRing = 4 * BatchSize

// handoffBurst is what the rings into one worker take in all by default
// (each ring its share, at least HandoffRing): the frames its peers may
// hand it while it wakes from poll(2) or waits for a CPU. With 256 per
// ring, a 400-frame burst into a two-queue veth, all for the other
// worker, lost 43 frames as handoff_full in 2 of 6 runs
// (TestTordWorkers, 2026-11-28).
const handoffBurst = 4096

// ErrHandoff wraps Handoff configuration errors.
var ErrHandoff = errors.New("dataplane: handoff")

// NewHandoff makes the rings between n workers, each ringSize packets (a
// power of two; 0 means each ring's share of handoffBurst, at least
// HandoffRing), and their wake-up eventfds. Close
// releases the eventfds once the workers have stopped.
func NewHandoff(n, ringSize int) (*Handoff, error) {
	if n < 2 || n > 64 {
		return nil, fmt.Errorf("%w: %d workers, want 2 to 64", ErrHandoff, n)
	}
	if ringSize == 0 {
		ringSize = HandoffRing
		for ringSize*2 <= handoffBurst/(n-1) {
			ringSize *= 2
		}
	}
	if ringSize < BatchSize || ringSize&(ringSize-1) != 0 {
		return nil, fmt.Errorf("%w: ring of %d packets, want a power of two ≥ %d", ErrHandoff, ringSize, BatchSize)
	}
	h := &Handoff{n: n, sleeping: make([]paddedBool, n), wakes: make([]paddedUint64, n), egress: make([][]*Egress, n)}
	h.rings = make([][]*spsc[handed], n)
	h.back = make([][]*spsc[uint64], n)
	for from := range h.rings {
		h.rings[from] = make([]*spsc[handed], n)
		h.back[from] = make([]*spsc[uint64], n)
		for to := range h.rings[from] {
			if from != to {
				h.rings[from][to] = newSPSC[handed](ringSize)
				h.back[from][to] = newSPSC[uint64](backRing)
			}
		}
	}
	for range n {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("%w: eventfd: %w", ErrHandoff, err)
		}
		h.efd = append(h.efd, fd)
	}
	return h, nil
}

// backRing is the size of each ring of freed frames. A freeing worker
// that finds it full keeps the frames (Mem.owed) and tries again on its
// next loop, so its size bounds no frame, only how many go back per
// loop.
const backRing = 1024

// Workers returns the number of workers the rings connect.
func (h *Handoff) Workers() int { return h.n }

// Wakeups returns how many times worker w was woken for frames handed to
// it while it slept.
func (h *Handoff) Wakeups(w int) uint64 { return h.wakes[w].Load() }

// Close closes the wake-up eventfds. Call DrainHandoff first: frames
// still on the rings are counted nowhere else.
func (h *Handoff) Close() error {
	for _, fd := range h.efd {
		unix.Close(fd)
	}
	h.efd = nil
	return nil
}

// Waiting returns how many frames worker from handed to worker to that
// it has not taken yet (published and not drained); any goroutine. A
// benchmark paces what it gives a worker by it, as PFC would a wire.
func (h *Handoff) Waiting(from, to int) int {
	r := h.rings[from][to]
	if r == nil {
		return 0
	}
	return int(r.tail.Load() - r.head.Load())
}

// pending reports whether any ring into worker to holds frames.
func (h *Handoff) pending(to int) bool {
	for from := range h.n {
		if r := h.rings[from][to]; r != nil && r.ready() {
			return true
		}
	}
	return false
}

// wake wakes worker to if it sleeps.
func (h *Handoff) wake(to int) {
	if h.sleeping[to].Load() && h.sleeping[to].CompareAndSwap(true, false) {
		h.wakes[to].Add(1)
		var one = [8]byte{1}
		_, _ = unix.Write(h.efd[to], one[:]) // EAGAIN: a wakeup is already pending
	}
}

// cacheLine pads the ring's indices apart so that producer and consumer
// do not share a line.
type cacheLine [64]byte

// paddedBool and paddedUint64 keep each worker's flag and count of
// Handoff.sleeping and wakes on lines of their own: a worker that goes
// to sleep writes its flag, which every peer reads once per loop
// (Handoff.wake), and adjacent flags would make each peer's read miss.
type paddedBool struct {
	atomic.Bool
	_ [64 - 4]byte
}

type paddedUint64 struct {
	atomic.Uint64
	_ [64 - 8]byte
}

// spsc is a bounded single-producer single-consumer ring (gVisor's and
// the AF_XDP rings' shape): the producer writes at its private tail and
// publishes it with one store per batch; the consumer reads up to the
// published tail and publishes its head once per batch. Each side keeps
// a cached copy of the other's index, so an atomic load happens only when
// the cached one says full (producer) or empty (consumer). Its size is a
// power of two.
type spsc[T any] struct {
	_    cacheLine
	head atomic.Uint64 // consumer's published position
	_    cacheLine
	tail atomic.Uint64 // producer's published position
	_    cacheLine
	// producer's
	ptail, phead uint64
	_            cacheLine
	// consumer's
	chead, ctail uint64
	_            cacheLine
	mask         uint64
	buf          []T
}

func newSPSC[T any](size int) *spsc[T] {
	return &spsc[T]{mask: uint64(size - 1), buf: make([]T, size)}
}

// push writes v at the producer's tail without publishing it; false when
// the ring is full.
func (r *spsc[T]) push(v *T) bool {
	if r.ptail-r.phead > r.mask {
		r.phead = r.head.Load()
		if r.ptail-r.phead > r.mask {
			return false
		}
	}
	r.buf[r.ptail&r.mask] = *v
	r.ptail++
	return true
}

// slot returns the entry at the producer's tail for the caller to fill
// in place, or nil when the ring is full; produce then adds it. The
// handoff builds a handed entry straight in its slot rather than in a
// local copied in by push: one copy of a ~100-byte entry per frame
// instead of two.
func (r *spsc[T]) slot() *T {
	if r.ptail-r.phead > r.mask {
		r.phead = r.head.Load()
		if r.ptail-r.phead > r.mask {
			return nil
		}
	}
	return &r.buf[r.ptail&r.mask]
}

// produce adds the entry slot returned, without publishing it.
func (r *spsc[T]) produce() { r.ptail++ }

// publish makes the pushes visible to the consumer; it reports whether
// there were any.
func (r *spsc[T]) publish() bool {
	if r.ptail == r.tail.Load() {
		return false
	}
	r.tail.Store(r.ptail)
	return true
}

// pop copies up to len(out) published entries into out and frees their
// slots.
func (r *spsc[T]) pop(out []T) int {
	if r.chead == r.ctail {
		r.ctail = r.tail.Load()
		if r.chead == r.ctail {
			return 0
		}
	}
	n := min(int(r.ctail-r.chead), len(out))
	for i := range n {
		out[i] = r.buf[(r.chead+uint64(i))&r.mask]
	}
	r.chead += uint64(n)
	r.head.Store(r.chead)
	return n
}

// peek returns up to max published entries from the consumer's head,
// in place: as many as lie contiguous before the end of the buffer.
// They stay the consumer's to read until release frees them. The
// handoff resumes handed packets straight from their slots rather than
// from a copy (pop).
func (r *spsc[T]) peek(max int) []T {
	if r.chead == r.ctail {
		r.ctail = r.tail.Load()
		if r.chead == r.ctail {
			return nil
		}
	}
	i := r.chead & r.mask
	n := min(r.ctail-r.chead, uint64(len(r.buf))-i, uint64(max))
	return r.buf[i : i+n]
}

// release frees the first n entries peek returned and publishes the
// head.
func (r *spsc[T]) release(n int) {
	r.chead += uint64(n)
	r.head.Store(r.chead)
}

// ready reports whether the consumer would find something; any thread.
func (r *spsc[T]) ready() bool { return r.tail.Load() != r.head.Load() }

// clearWake consumes a pending wakeup of worker w's eventfd.
func (h *Handoff) clearWake(w int) {
	var b [8]byte
	_, _ = unix.Read(h.efd[w], b[:]) // EAGAIN: none pending
}

// hand pushes p onto the ring to worker to, to resume at stage at, and
// marks it Taken; when the ring is full it marks it dropped
// (ReasonHandoffFull) and returns false.
func (w *Worker) hand(p *Packet, to int, at uint16) bool {
	r := w.ho.rings[w.cfg.ID][to]
	e := r.slot()
	if e == nil {
		p.Drop(ReasonHandoffFull)
		return false
	}
	e.Packet, e.At = *p, at
	// It goes on forwarding there, whatever a stage that emits it
	// left in its Verdict (a held packet's is Taken).
	e.Verdict, e.Reason = Forward, 0
	r.produce()
	w.st.Handed[to]++
	p.Verdict = Taken
	return true
}

// handEgress hands the packets of b bound for a port another worker owns
// to that worker, to resume at EgressStage, and takes them out of b.
func (w *Worker) handEgress(b *Batch) {
	eg := w.egress
	for j := 0; j < b.N; j++ {
		// Not away: this worker's port, or a shared one, on whose
		// share of it this worker queues (WorkerConfig.PortOwner).
		p := &b.Pkts[j]
		if p.Verdict == Forward && int(p.Out) < len(eg) && eg[p.Out].away && w.hand(p, w.cfg.PortOwner[p.Out], uint16(w.egressAt)) {
			w.gone |= 1 << j
		}
	}
	if w.gone != 0 {
		w.compact(b)
	}
}

// compact takes the packets marked in w.gone, handed away, out of b, so
// that the stages after the handoff count each packet once, on the
// worker that runs them.
func (w *Worker) compact(b *Batch) {
	k := 0
	for j := 0; j < b.N; j++ {
		if w.gone&(1<<j) != 0 {
			continue
		}
		if k != j {
			b.Pkts[k] = b.Pkts[j]
		}
		k++
	}
	b.N, w.gone = k, 0
}

// drainHandoff takes back the frames other workers freed and runs what
// they handed this worker, each from the stage it was handed at, and
// returns how many it ran.
func (w *Worker) drainHandoff() int {
	w.mem.reclaim()
	work := 0
	for from := range w.ho.rings {
		r := w.ho.rings[from][w.cfg.ID]
		if r == nil {
			continue
		}
		// A batch at a time, read in place (peek), for as long as
		// whole batches come, as the AF_XDP rings are read.
		for {
			in := r.peek(BatchSize)
			if len(in) == 0 {
				break
			}
			work += len(in)
			w.resume(in)
			r.release(len(in))
			if len(in) < BatchSize && r.chead&r.mask != 0 {
				break // short, and not for the end of the buffer
			}
		}
	}
	return work
}

// resume runs handed packets through the stages from the one each was
// handed at, a batch per run of equal stages.
func (w *Worker) resume(in []handed) {
	b := &w.batch
	for i := 0; i < len(in); {
		at := in[i].At
		if at == pauseAt {
			w.sharedPause(&in[i].Packet)
			i++
			continue
		}
		if at == rawAt {
			p := &in[i].Packet
			if x := w.inbox[p.In]; x == nil || !x.push(p) {
				w.drop(p.Addr, p.Len, ReasonHandoffFull)
			}
			i++
			continue
		}
		b.N = 0
		for ; i < len(in) && in[i].At == at; i++ {
			b.Pkts[b.N] = in[i].Packet
			b.N++
		}
		if at == 0 {
			// Fresh from the wire: a MAC control frame was handed
			// to the owner of the port it pauses.
			for j := 0; j < b.N; j++ {
				if p := &b.Pkts[j]; p.Meta.Kind == rocev2.KindMACControl {
					w.control(int(p.In), p, w.mem.Frame(p))
				}
			}
		}
		from := int(at)
		if from == w.egressAt && from < len(w.stages) {
			// Handed to this worker because it owns the ports
			// they go to: handEgress would find none to hand.
			w.stage(from, b)
			from++
		}
		w.process(from, b)
		w.dispatch(b)
	}
}

// flushHandoff publishes this loop's handed packets and freed frames and
// wakes the workers handed to.
func (w *Worker) flushHandoff() {
	for to, r := range w.ho.rings[w.cfg.ID] {
		if r != nil && r.publish() {
			w.ho.wake(to)
		}
	}
	w.mem.flushBack()
}

// pauseAt is the At of a pause another worker received on a shared port
// (sharePause): the receiver honours it on its share of the port.
const pauseAt = 0xfffe

// sharedPort reports whether port i is shared: every worker queues on
// its own share of it (WorkerConfig.PortOwner -1).
func (w *Worker) sharedPort(i int) bool {
	return w.egressAt >= 0 && w.cfg.PortOwner[i] < 0
}

// sharePause hands every other worker a pause this worker received on
// shared port in — op is the MAC control opcode, enable and t the PFC
// priorities (filtered by IngressPFC.Priorities) and their times, or
// t[0] a PAUSE's — so that every share of the paused port stops, as
// one port's egress does (802.1Qbb): a peer that pauses a port pauses
// all of it, whichever worker's rx queue the NIC put the pause in. The
// pause travels as a frame this worker builds, one per worker: the
// receiving one acts on it (sharedPause) and counts nothing, as the
// pause is counted once, here. Pauses are rare next to data, so the
// frames cost nothing per data packet. Without a frame or room on the
// ring the copy is lost, counted (ReasonNoFrame, ReasonHandoffFull):
// the peer sends its pause again within its time, as PFC does.
func (w *Worker) sharePause(in int, op uint16, enable uint8, t *[8]uint16) {
	for o := range w.ho.Workers() {
		if o == w.cfg.ID {
			continue
		}
		addr, ok := w.mem.Alloc()
		if !ok {
			w.st.Drops[ReasonNoFrame]++
			continue
		}
		var n int
		if op == rocev2.MACControlPause {
			n, _ = rocev2.BuildPause(w.mem.Room(addr), w.ports[in].MAC(), t[0])
		} else {
			n, _ = rocev2.BuildPFC(w.mem.Room(addr), w.ports[in].MAC(), enable, *t)
		}
		p := Packet{Addr: addr, Len: uint16(n), In: uint16(in), Out: NoPort}
		if !w.hand(&p, o, pauseAt) {
			w.drop(addr, p.Len, ReasonHandoffFull)
		}
	}
}

// sharedPause honours a pause another worker received on shared port
// p.In on this worker's share of it (sharePause), and frees its frame.
func (w *Worker) sharedPause(p *Packet) {
	c := rocev2.MACControl(w.mem.Frame(p)[14:])
	in := int(p.In)
	switch c.Opcode() {
	case rocev2.MACControlPFC:
		var t [8]uint16
		for k := range t {
			t[k] = c.Time(k)
		}
		w.pausePFC(in, c.ClassEnable(), &t)
	case rocev2.MACControlPause:
		w.egress[in].PauseAll(w.ctx.Now, c.PauseTime())
	}
	w.mem.Release(p.Addr)
}

// rawAt is the At of a frame handed before classification, received on
// a port whose link another worker owns (WorkerConfig.LinkOwner): the
// owner receives it through its Inbox on that port, as if from the wire.
const rawAt = 0xffff

// Inbox is a port of a link's owner that also receives the frames other
// workers took from their queues of that link and handed over
// (WorkerConfig.LinkOwner): a link-level protocol under it (tor/llr's
// receiver wraps it) then sees every frame of the link, whichever rx
// queue the NIC steered it to. Frames already on the owner pass straight
// through. Like every port it belongs to its worker's thread; make it
// with NewInbox.
type Inbox struct {
	Port
	q    []Packet // FIFO ring of handed frames
	head int
	n    int
	// Refused counts handed frames the full inbox dropped.
	Refused uint64
}

// NewInbox wraps inner with room for size handed frames.
func NewInbox(inner Port, size int) *Inbox {
	return &Inbox{Port: inner, q: make([]Packet, max(size, BatchSize))}
}

// Inner implements Wrapper.
func (x *Inbox) Inner() Port { return x.Port }

// Receive implements Port: the inner port's frames, then handed ones.
func (x *Inbox) Receive(b *Batch) int {
	k := x.Port.Receive(b)
	for x.n > 0 && b.N < BatchSize {
		b.Pkts[b.N] = x.q[x.head]
		b.N++
		x.head = (x.head + 1) % len(x.q)
		x.n--
		k++
	}
	return k
}

// Pending implements Pender: handed frames wait here.
func (x *Inbox) Pending() int {
	n := x.n
	if r, ok := x.Port.(Pender); ok {
		n += r.Pending()
	}
	return n
}

// push queues a handed frame; false when the inbox is full.
func (x *Inbox) push(p *Packet) bool {
	if x.n == len(x.q) {
		x.Refused++
		return false
	}
	x.q[(x.head+x.n)%len(x.q)] = Packet{Addr: p.Addr, Len: p.Len}
	x.n++
	return true
}

// handRaw hands the frames of b, received on port in, whose link worker
// to owns, before classification; a full ring drops them.
func (w *Worker) handRaw(in int, to int, b *Batch) {
	r := w.ho.rings[w.cfg.ID][to]
	for j := 0; j < b.N; j++ {
		e := handed{Packet: Packet{Addr: b.Pkts[j].Addr, Len: b.Pkts[j].Len, In: uint16(in)}, At: rawAt}
		if !r.push(&e) {
			w.drop(e.Addr, e.Len, ReasonHandoffFull)
			continue
		}
		w.st.Handed[to]++
	}
	b.N = 0
}

// DrainHandoff accounts for what the handoff rings still hold once every
// worker of ws, the workers of one Handoff, has stopped (each Run has
// returned; a test has stopped stepping them): a frame handed to a
// worker that did not take it, on a ring or in one of its Inboxes, is
// dropped there as ReasonShutdown, and each frame a worker freed for
// another goes back to the Mem that allocated it. So every handed frame
// is either delivered or a counted drop, and each Mem's InUse counts
// only the frames its ports and stages still hold. It runs each
// worker's side of the rings from the calling goroutine — which is why
// the workers must have stopped — publishes their counters, and returns
// how many frames it dropped. Workers without a Handoff are skipped.
func DrainHandoff(ws []*Worker) uint64 {
	var dropped uint64
	for _, w := range ws {
		if w.ho == nil {
			continue
		}
		// A worker publishes its pushes at the end of each loop; one
		// stopped between a push and its publication would leave it
		// unseen.
		for _, r := range w.ho.rings[w.cfg.ID] {
			if r != nil {
				r.publish()
			}
		}
	}
	for _, w := range ws {
		if w.ho == nil {
			continue
		}
		for from := range w.ho.rings {
			r := w.ho.rings[from][w.cfg.ID]
			if r == nil {
				continue
			}
			for in := r.peek(BatchSize); len(in) > 0; in = r.peek(BatchSize) {
				for i := range in {
					w.dropPacket(&in[i].Packet, ReasonShutdown)
				}
				dropped += uint64(len(in))
				r.release(len(in))
			}
		}
		for _, x := range w.inbox {
			for ; x != nil && x.n > 0; x.n-- {
				w.drop(x.q[x.head].Addr, x.q[x.head].Len, ReasonShutdown)
				x.head = (x.head + 1) % len(x.q)
				dropped++
			}
		}
	}
	// Frames freed for another worker, by the drops above or before
	// the stop, go home; a ring back full keeps the rest owed for the
	// next round.
	for owed := true; owed; {
		owed = false
		for _, w := range ws {
			if w.ho != nil {
				w.mem.flushBack()
			}
		}
		for _, w := range ws {
			if w.ho != nil {
				w.mem.reclaim()
				owed = owed || w.mem.owes()
			}
		}
	}
	for _, w := range ws {
		w.publish(w.clock())
	}
	return dropped
}
