package dataplane

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// QueueConfig describes one egress queue of a port.
type QueueConfig struct {
	Name string
	// Level is the strict-priority level: a queue is served only when every
	// queue of a higher level is empty, paused or out of credit.
	Level int
	// Weight is the queue's share among non-empty queues of its level,
	// served by deficit round robin with a quantum of Weight × Quantum
	// bytes, so shares are of bytes, not packets (DCP's WRR weight is a
	// ratio of traffic volume, seed 002 §4.2).
	Weight int
	// Limit is the byte budget; a packet that would exceed it is dropped
	// with ReasonQueueFull.
	Limit int
	// PFC is the 802.1Qbb priority (0–7) whose pause frames stop this
	// queue, or -1 if pause frames never stop it.
	PFC int
	// ECN is the queue's ECN marking profile (DCQCN's Kmin, Kmax,
	// Pmax); the zero value marks nothing.
	ECN ECNProfile
	// Reserve and Alpha place the queue in the switch's shared buffer
	// (EgressConfig.Shared; SharedBuffer): Reserve bytes are the
	// queue's own; beyond them it takes from its port's reserve
	// (EgressConfig.PortReserve) while that has bytes free, and then
	// may hold up to Alpha × the pool's free bytes in the pool. Limit
	// still caps the queue. Without a shared buffer both are ignored.
	Reserve int
	Alpha   float64
}

// EgressConfig describes the egress side of a port: its queues, the
// shaped link rate and the DRR quantum.
type EgressConfig struct {
	Queues []QueueConfig
	// RateBps is the link rate in bits per second the token bucket shapes
	// to; 0 sends as fast as the port takes frames.
	RateBps uint64
	// BurstBytes is the token bucket depth; 0 means half a millisecond at
	// RateBps, and at least two 9 KB frames. A worker that loses its CPU
	// for a moment would otherwise lose the credit of that moment: two
	// frames (147 µs at 1 Gb/s) shaped a 1 Gb/s port to 0.37 Gb/s on a
	// busy two-core machine (docs/performance.md, overload run).
	BurstBytes int
	// Quantum is the DRR quantum per unit of weight in bytes; 0 means 1500.
	Quantum int
	// PauseRateBps converts PFC quanta into time (512 bit times each); 0
	// means RateBps, or 10 Gb/s when the port is unshaped.
	PauseRateBps uint64
	// MarkAt is where the queues with an ECN profile decide marks.
	MarkAt MarkPoint
	// Shared, when not nil, is the switch's shared buffer the queues
	// draw on beyond their reserves (SharedBuffer); nil: each queue
	// has its Limit and nothing else.
	Shared *SharedBuffer
	// PortReserve is the port's reserve in the shared buffer: bytes
	// its queues share beyond their own reserves before they draw on
	// the pool (SharedBuffer). Ignored without Shared.
	PortReserve int
	// Ring is the entries each queue's ring is made with at its first
	// frame, a power of two; 0 means 256. A ring grows, doubling, to what the queue's
	// byte budget needs in minimum-size frames as frames come (an
	// allocation each time it passes its deepest yet), so it bounds
	// nothing: it is how much memory an idle or shallow queue costs. A
	// simulator's thousands of ports start small, as a ring a queue
	// walks round is memory the run touches (tor/fabric: 16).
	Ring int
}

// ErrEgressConfig wraps every egress configuration error.
var ErrEgressConfig = errors.New("dataplane: egress config")

// DefaultEgress returns the queue layout the switch stages expect, from
// most to least urgent: "control" (PFC-exempt, header-only and NetRT
// messages), "retransmit" (recovered packets), "data" (PFC priority 3, the
// usual RoCE class), and "idle" (self-replenishing link filler). Each
// holds limit bytes.
func DefaultEgress(rateBps uint64, limit int) EgressConfig {
	return EgressConfig{
		RateBps: rateBps,
		Queues: []QueueConfig{
			{Name: "control", Level: 3, Weight: 1, Limit: limit, PFC: -1},
			{Name: "retransmit", Level: 2, Weight: 1, Limit: limit, PFC: -1},
			{Name: "data", Level: 1, Weight: 1, Limit: limit, PFC: 3},
			{Name: "idle", Level: 0, Weight: 1, Limit: limit, PFC: -1},
		},
	}
}

// Validate checks the configuration and names the first bad field.
func (c *EgressConfig) Validate() error {
	if len(c.Queues) == 0 || len(c.Queues) > 16 {
		return fmt.Errorf("%w: %d queues, want 1 to 16", ErrEgressConfig, len(c.Queues))
	}
	if c.Ring < 0 || c.Ring&(c.Ring-1) != 0 {
		return fmt.Errorf("%w: ring of %d entries, want a power of two", ErrEgressConfig, c.Ring)
	}
	for i, q := range c.Queues {
		switch {
		case q.Weight < 1:
			return fmt.Errorf("%w: queue %d (%s): weight %d, want ≥ 1", ErrEgressConfig, i, q.Name, q.Weight)
		case q.Limit < 64:
			return fmt.Errorf("%w: queue %d (%s): limit %d bytes, want ≥ 64", ErrEgressConfig, i, q.Name, q.Limit)
		case q.PFC < -1 || q.PFC > 7:
			return fmt.Errorf("%w: queue %d (%s): pfc priority %d, want -1 or 0–7", ErrEgressConfig, i, q.Name, q.PFC)
		}
		if err := q.ECN.Validate(); err != nil {
			return fmt.Errorf("%w: queue %d (%s): ecn: %v", ErrEgressConfig, i, q.Name, err)
		}
		if c.Shared == nil {
			continue
		}
		if q.Reserve < 0 || q.Reserve > q.Limit {
			return fmt.Errorf("%w: queue %d (%s): reserve %d bytes, want 0 to the limit (%d)", ErrEgressConfig, i, q.Name, q.Reserve, q.Limit)
		}
		if err := validAlpha(q.Alpha); err != nil {
			return fmt.Errorf("%w: queue %d (%s): %v", ErrEgressConfig, i, q.Name, err)
		}
	}
	if c.Shared != nil && c.PortReserve < 0 {
		return fmt.Errorf("%w: port reserve %d bytes, want ≥ 0", ErrEgressConfig, c.PortReserve)
	}
	if c.BurstBytes < 0 || c.Quantum < 0 {
		return fmt.Errorf("%w: negative burst or quantum", ErrEgressConfig)
	}
	if c.MarkAt > MarkEnqueue {
		return fmt.Errorf("%w: mark point %d", ErrEgressConfig, c.MarkAt)
	}
	return nil
}

// entry is a queued frame: only what transmission, ECN marking and
// ingress PFC need, 16 bytes (the marking and ingress fields fill padding).
type entry struct {
	addr uint64
	len  uint16
	l3   uint16 // offset of the IP header, when ecn != 0
	ecn  uint8  // ECN bits at enqueue; 0 (Not-ECT) for what marking skips
	v6   bool
	in   uint16 // the ingress port (Packet.In), NoPort for what no port brought
}

// queue is a FIFO ring of frames with byte accounting.
type queue struct {
	cfg     QueueConfig
	ring    []entry // power-of-two capacity, grown up to max; none until the first push
	first   int     // the entries the ring is made with (EgressConfig.Ring)
	max     int     // the most entries the ring may grow to
	head    uint32
	tail    uint32
	bytes   int
	deficit int
	quantum int
	// alone marks the only queue of its level, which is served without
	// DRR (see pick).
	alone bool
	bit   uint16 // the queue's bit in Egress.busy
	ecn   ecnCurve
	// pool is the shared buffer (nil: none), with the queue's reserve
	// and α in fixed point (AlphaShift); port is its port's reserve.
	// ported and pooled are the queue's bytes in the port's reserve
	// and in the pool (SharedBuffer).
	pool    *SharedBuffer
	port    *portReserve
	reserve int
	alpha   int64
	ported  int
	pooled  int
	// headroom lets the next push pass the pool's threshold into PFC
	// headroom (IngressPFC.Headroom); the worker sets it per frame.
	headroom bool
	stats    QueueStats
}

// QueueStats are the counters of one egress queue.
type QueueStats struct {
	Enqueued, Dequeued uint64
	Bytes              uint64 // bytes dequeued
	Drops              uint64 // frames refused at the byte limit or the dynamic threshold
	DropBytes          uint64
	// ThresholdDrops counts, among Drops, the frames the shared
	// buffer's dynamic threshold refused (SharedBuffer).
	ThresholdDrops uint64
	MaxDepthBytes  int // high-water mark
	// ECT counts the ECN-capable frames (ECT(0), ECT(1) or already CE)
	// that passed the queue's marking point, whether or not it marks.
	ECT uint64
	// Marked counts the frames the queue marked CE (ECT → CE).
	Marked uint64
}

func (q *queue) packets() int { return int(q.tail - q.head) }

// push results: queued, or dropped at the limit or the shared buffer's
// threshold.
const (
	pushed = iota
	pushFull
	pushThreshold
	pushHeadroom // queued past the pool's threshold, into PFC headroom
)

func (q *queue) push(e entry) int {
	r, slot := q.take(int(e.len))
	if slot != nil {
		// Field by field, not *slot = e: the struct copy spilled e
		// to the stack in narrow stores and read it back in one
		// 16-byte load, which the store buffer cannot forward.
		slot.addr, slot.len, slot.l3, slot.ecn, slot.v6, slot.in = e.addr, e.len, e.l3, e.ecn, e.v6, e.in
	}
	return r
}

// take admits a frame of n bytes, counts it queued and returns its slot
// at the tail for the caller to fill, or nil with the reason it is
// refused (pushFull, pushThreshold).
//
// The caller fills the slot, not push from an entry it is given: push
// spilled its entry argument to the stack (it makes calls) and read it
// back field by field into the ring; that copy was a quarter of push's
// CPU time in BenchmarkWorkerForwardParts/unverified (perf annotate,
// 2026-11-29). With take, that benchmark's CPU time per frame went from
// 63.3 to 61.1 ns (medians of 10 paired rounds, 10M − 2M frames each,
// GOMAXPROCS=1, perf stat -e task-clock; median paired difference
// −2.2 ns).
func (q *queue) take(n int) (int, *entry) {
	if !q.room(n) {
		return q.takeSlow(n)
	}
	return pushed, q.claim(n)
}

// room reports whether a frame of n bytes is the common case take
// admits at once: room in the ring, under the byte limit, no shared
// buffer to charge.
func (q *queue) room(n int) bool {
	return q.packets() < len(q.ring) && q.bytes+n <= q.cfg.Limit && q.pool == nil
}

// claim counts a frame of n bytes queued and returns its slot at the
// tail, which the caller has made sure exists.
func (q *queue) claim(n int) *entry {
	r := &q.ring[q.tail&uint32(len(q.ring)-1)]
	q.tail++
	q.bytes += n
	q.stats.Enqueued++
	q.stats.MaxDepthBytes = max(q.stats.MaxDepthBytes, q.bytes)
	return r
}

// takeSlow is take for a frame that finds the ring full, passes the
// byte limit or is charged to a shared buffer; take itself is the
// common case alone, which skips their branches. Measured in
// BenchmarkWorkerForwardParts/unverified's worker: 1.4 and 1.6 ns less
// a frame (median paired differences, two runs of 61 rounds, 4,000
// batches each way alternating in one process, thread CPU time,
// GOMAXPROCS=1, 57 and 59 of 61 rounds lower; 2026-11-29, load 5).
func (q *queue) takeSlow(n int) (int, *entry) {
	if q.packets() == len(q.ring) && len(q.ring) < q.max {
		q.grow()
	}
	if q.bytes+n > q.cfg.Limit || q.packets() == len(q.ring) {
		q.stats.Drops++
		q.stats.DropBytes += uint64(n)
		return pushFull, nil
	}
	res := pushed
	if q.pool != nil && !q.admit(n) {
		if !q.headroom {
			q.stats.Drops++
			q.stats.DropBytes += uint64(n)
			q.stats.ThresholdDrops++
			return pushThreshold, nil
		}
		q.charge(n)
		res = pushHeadroom
	}
	r := &q.ring[q.tail&uint32(len(q.ring)-1)]
	q.tail++
	q.bytes += n
	q.stats.Enqueued++
	if q.bytes > q.stats.MaxDepthBytes {
		q.stats.MaxDepthBytes = q.bytes
	}
	return res, r
}

// grow doubles the ring. Rings start small and grow to the depth the
// queue reaches: a ring sized for its byte limit in minimum-size frames
// (16 K entries for 1 MiB) is walked whole by the indices however
// shallow the queue, and a fabric simulation's thousands of ports then
// spent most of their time missing the cache (10 µs a packet-hop for a
// k = 16 fat tree, 2026-11-25). A queue grows at most log2(max/256)
// times, each at a new high-water mark.
//
// A ring is made at its queue's first frame, not with the queue: most
// of a switch's queues carry no traffic class of a run (a fabric
// simulation's workloads use one or two of four), and a k = 16 fat
// tree's 30,720 rings of 16 entries were 10 MB of its resident memory
// (htsim's 1,024-host permutation, tor/fabric), 8 MB of them in queues
// no frame ever entered.
func (q *queue) grow() {
	n := 2 * len(q.ring)
	if n == 0 {
		n = q.first
	}
	r := make([]entry, n)
	for i := q.head; i != q.tail; i++ {
		r[i&uint32(len(r)-1)] = q.ring[i&uint32(len(q.ring)-1)]
	}
	q.ring = r
}

func (q *queue) peek() *entry { return &q.ring[q.head&uint32(len(q.ring)-1)] }

// pop removes the head entry and returns its slot in the ring, valid
// until the next push to q. A pointer, not a copy: entry has more fields
// than the compiler keeps a struct in registers for, so a copy was
// stored to the stack field by field and read back with one 16-byte
// load, which could not take its bytes from those narrower stores and
// waited for them to reach the cache. That copy was over half of
// Egress.Dequeue's CPU time in BenchmarkWorkerForwardParts/unverified
// (perf annotate, 2026-11-29).
func (q *queue) pop() *entry {
	e := &q.ring[q.head&uint32(len(q.ring)-1)]
	q.head++
	if q.pool != nil {
		q.release(int(e.len))
	}
	q.bytes -= int(e.len)
	q.stats.Dequeued++
	q.stats.Bytes += uint64(e.len)
	return e
}

// next is pop without its counters, which Dequeue adds once for the
// frames it takes from a queue in a row, and without the shared
// buffer's release, which Dequeue makes: small enough to be inlined.
// Dequeue called pop for every frame; with next, the worker of
// BenchmarkWorkerForwardParts/unverified took 1.75 ns less a frame
// (median paired difference in two runs of 61 rounds, 4,000 batches
// each way alternating in one process, thread CPU time, GOMAXPROCS=1,
// 43 and 44 of 61 rounds lower; 2026-11-29, load 5).
func (q *queue) next() *entry {
	e := &q.ring[q.head&uint32(len(q.ring)-1)]
	q.head++
	q.bytes -= int(e.len)
	return e
}

// Egress is the MMU of one port: byte-limited queues, a strict-priority
// plus deficit-round-robin scheduler, a token-bucket shaper at the link
// rate, and PFC pause state. It is owned by one worker and not safe for
// concurrent use. Its zero value is not usable; see NewEgress.
type Egress struct {
	queues []queue
	levels []level // highest first
	// busy has the bit of every queue that may hold frames: set when a
	// frame is queued, cleared by pick when it finds the queue empty
	// (whoever emptied it), so that pick visits the queues with frames
	// only. pick walked every queue of every level above the one it
	// served; with llr's and trimming's queues on a port that was 70
	// instructions a frame (callgrind, BenchmarkPipelineForward/stages,
	// 2026-11-30).
	busy uint16
	// away says another worker of a handoff owns the port
	// (WorkerConfig.PortOwner): this worker hands it the packets
	// for it (Worker.handEgress, enqueue), and dispatchPlain looks
	// here, on the line it reads queues from.
	away     bool
	rate     uint64
	burst    int
	tokens   int
	last     int64
	pauseBps uint64
	// pausedUntil is when each PFC priority may send again (ns);
	// pauseEnd is the latest of them, before which pick asks which
	// queues are paused, and pfcMask the bits of each priority's
	// queues.
	pausedUntil [8]int64
	pauseEnd    int64
	pfcMask     [8]uint16
	pausedNs    int64
	// backlog is the bytes in all queues, kept as frames come and go:
	// a worker asks for it on every port every loop.
	backlog int
	ctrl    queue // MAC control frames: never paused, never shaped
	// reserve is the port's reserve in the shared buffer, which its
	// queues point to.
	reserve portReserve
	markAt  MarkPoint
	mem     *Mem     // where marked frames live (UseMem)
	rng     rand.PCG // the marking draws; seeded, so runs repeat
	// seen is the depth of each queue (and, last, of the MAC control
	// queue) as the owning worker last published it (Publish), for the
	// other workers of a handoff, which may not read the queues.
	seen []atomic.Int64
	// seenEmpty says every depth in seen is 0: the last Publish found
	// the egress empty.
	seenEmpty bool
}

// level is one strict-priority level of an egress: its queues share it
// by deficit round robin.
type level struct {
	qs       []int  // queue indices
	mask     uint16 // their bits
	rr       int    // the round-robin pointer, an index into qs
	credited bool   // whether the queue at rr got its quantum this visit
}

// NewEgress builds an egress from a validated configuration.
func NewEgress(c EgressConfig) (*Egress, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := &Egress{rate: c.RateBps, burst: c.BurstBytes, pauseBps: c.PauseRateBps, markAt: c.MarkAt}
	e.reserve.size = c.PortReserve
	e.seedECN(0)
	if e.burst == 0 {
		e.burst = max(2*9216, int(c.RateBps/8/2000))
	}
	e.tokens = e.burst
	if e.pauseBps == 0 {
		e.pauseBps = c.RateBps
		if e.pauseBps == 0 {
			e.pauseBps = 10e9
		}
	}
	quantum := c.Quantum
	if quantum == 0 {
		quantum = 1500
	}
	ring := 256
	if c.Ring > 0 {
		ring = c.Ring
	}
	e.queues = make([]queue, len(c.Queues))
	byLevel := map[int][]int{}
	var lv []int
	for i, qc := range c.Queues {
		// Room for the byte limit in minimum-size frames, so the ring
		// never fills before the byte budget does.
		n := 1
		for n < qc.Limit/60+1 {
			n <<= 1
		}
		e.queues[i] = queue{cfg: qc, first: min(n, ring), max: n, quantum: qc.Weight * quantum, ecn: compileECN(qc.ECN), bit: 1 << i}
		if c.Shared != nil {
			e.queues[i].pool, e.queues[i].port, e.queues[i].reserve, e.queues[i].alpha = c.Shared, &e.reserve, qc.Reserve, alphaFixed(qc.Alpha)
		}
		if qc.PFC >= 0 {
			e.pfcMask[qc.PFC] |= 1 << i
		}
		if _, ok := byLevel[qc.Level]; !ok {
			lv = append(lv, qc.Level)
		}
		byLevel[qc.Level] = append(byLevel[qc.Level], i)
	}
	// highest level first
	for i := 1; i < len(lv); i++ {
		for j := i; j > 0 && lv[j] > lv[j-1]; j-- {
			lv[j], lv[j-1] = lv[j-1], lv[j]
		}
	}
	for _, l := range lv {
		v := level{qs: byLevel[l]}
		for _, qi := range v.qs {
			v.mask |= 1 << qi
		}
		e.levels = append(e.levels, v)
		if len(v.qs) == 1 {
			e.queues[v.qs[0]].alone = true
		}
	}
	// The MAC control ring grows as the others do (it holds a pause or
	// two at a time, when PFC is on at all).
	e.ctrl = queue{cfg: QueueConfig{Name: "mac-control", Limit: 64 * 64, PFC: -1}, first: min(64, ring), max: 64}
	// Other workers read seen and nothing else of this egress: 64
	// bytes either side keep the small allocation off the lines of
	// whatever the allocator puts next to it (another worker's hot
	// state, another port's seen).
	n := len(e.queues) + 1
	e.seen = make([]atomic.Int64, n+16)[8 : 8+n : 8+n]
	return e, nil
}

// Publish records each queue's depth for Seen. Only the worker that owns
// the egress calls it; a handoff's port owner does once per loop.
//
// It stores only the depths that changed: a store takes the line from
// every worker that read it (Ctx.QueueDepth, per packet for NetRT), and
// the owner publishes once per loop, busy or idle, while most loops
// change few queues.
func (e *Egress) Publish() {
	// An egress empty now and at the last Publish has nothing new to
	// store, and a port's owner publishes every loop, mostly with
	// the queues drained (backlog counts every queue and the MAC
	// control queue): the loop over the queues was about a tenth of
	// Worker.Step's own samples with two workers
	// (BenchmarkPipelineScaleWorkPaired, perf annotate, 2026-11-29).
	if e.backlog == 0 {
		if e.seenEmpty {
			return
		}
		e.seenEmpty = true
	} else {
		e.seenEmpty = false
	}
	for i := range e.queues {
		if v := int64(e.queues[i].bytes); e.seen[i].Load() != v {
			e.seen[i].Store(v)
		}
	}
	if v := int64(e.ctrl.bytes); e.seen[len(e.queues)].Load() != v {
		e.seen[len(e.queues)].Store(v)
	}
}

// Seen returns the bytes in queue q as last published (Publish); q ==
// NumQueues is the MAC control queue. Safe from any goroutine.
func (e *Egress) Seen(q int) int { return int(e.seen[q].Load()) }

// NumQueues returns the number of queues.
func (e *Egress) NumQueues() int { return len(e.queues) }

// QueueName returns the name of queue q.
func (e *Egress) QueueName(q int) string { return e.queues[q].cfg.Name }

// QueueIndex returns the index of the queue with the given name, or -1.
func (e *Egress) QueueIndex(name string) int {
	for i := range e.queues {
		if e.queues[i].cfg.Name == name {
			return i
		}
	}
	return -1
}

// Depth returns the bytes and frames waiting in queue q.
func (e *Egress) Depth(q int) (bytes, packets int) {
	return e.queues[q].bytes, e.queues[q].packets()
}

// ControlDepth returns the bytes and frames of MAC control (PFC, PAUSE)
// waiting ahead of every queue (EnqueueControl).
func (e *Egress) ControlDepth() (bytes, packets int) {
	return e.ctrl.bytes, e.ctrl.packets()
}

// RateBps returns the link rate the shaper holds the port to, in bits
// per second; 0 when the port is unshaped. Stages that pace their own
// traffic (NetRT's retransmissions) derive their rates from it.
func (e *Egress) RateBps() uint64 { return e.rate }

// PauseRateBps returns the rate PFC quanta are timed at: the configured
// PauseRateBps, else RateBps, else 10 Gb/s. A stage that sends pause
// frames on the port uses it to know how long its pause lasts.
func (e *Egress) PauseRateBps() uint64 { return e.pauseBps }

// Limit returns the byte budget of queue q.
func (e *Egress) Limit(q int) int { return e.queues[q].cfg.Limit }

// Stats returns the counters of queue q.
func (e *Egress) Stats(q int) QueueStats { return e.queues[q].stats }

// Shared returns the shared buffer the queues draw on, or nil.
func (e *Egress) Shared() *SharedBuffer {
	if len(e.queues) == 0 {
		return nil
	}
	return e.queues[0].pool
}

// Threshold returns the most bytes queue q may hold now: its limit
// without a shared buffer, else its reserve, the port-reserve bytes it
// holds or could take, and α times the pool's free bytes, at most its
// limit. Safe from any goroutine only without a shared buffer or
// through a Snapshot.
func (e *Egress) Threshold(q int) int {
	qu := &e.queues[q]
	if qu.pool == nil {
		return qu.cfg.Limit
	}
	return min(qu.threshold(), qu.cfg.Limit)
}

// PortReserve returns the port's reserve in the shared buffer and the
// bytes its queues hold of it; 0, 0 without a shared buffer. Only the
// owning worker may call it; others read a Snapshot.
func (e *Egress) PortReserve() (size, held int) {
	if e.Shared() == nil {
		return 0, 0
	}
	return e.reserve.size, e.reserve.held
}

// Enqueue appends a frame to queue q. It returns false, having counted a
// drop, when the queue's byte budget or its shared-buffer threshold
// would be exceeded; the caller still owns the frame then. The frame is
// not ECN marked; see EnqueuePacket.
func (e *Egress) Enqueue(q int, addr uint64, n int) bool {
	if e.queues[q].push(entry{addr: addr, len: uint16(n), in: NoPort}) != pushed {
		return false
	}
	e.backlog += n
	e.busy |= e.queues[q].bit
	return true
}

// EnqueuePacket appends p's frame to queue p.Queue as Enqueue does,
// keeping from p.Meta what ECN marking needs; with MarkEnqueue it marks
// here, on the depth the frame finds. p.Meta must describe the frame as
// it is now.
func (e *Egress) EnqueuePacket(p *Packet) bool {
	return e.enqueuePacket(p) == pushed
}

// enqueuePacket is EnqueuePacket, saying why it refused (push's
// results).
func (e *Egress) enqueuePacket(p *Packet) int {
	q := &e.queues[p.Queue]
	depth := q.bytes
	// take's common case inlined (room, claim), not called: 1.1 and
	// 1.6 ns less a frame in BenchmarkWorkerForwardParts/unverified's
	// worker (median paired differences, two runs of 61 rounds, 4,000
	// batches each way alternating in one process, thread CPU time,
	// GOMAXPROCS=1, 47 and 53 of 61 rounds lower; 2026-11-29, load 5).
	r, en := pushed, (*entry)(nil)
	if n := int(p.Len); q.room(n) {
		en = q.claim(n)
	} else if r, en = q.take(n); en == nil {
		return r
	}
	en.addr, en.len, en.in = p.Addr, p.Len, p.In
	en.ecn, en.l3, en.v6 = ecnOf(p)
	e.backlog += int(p.Len)
	e.busy |= q.bit
	if e.markAt == MarkEnqueue && en.ecn != ecnNotECT {
		// the entry in the ring, so that it remembers a mark
		e.mark(q, en, depth)
	}
	return r
}

// EnqueueControl queues a MAC control frame (PFC, PAUSE) ahead of every
// data queue; pause and shaping do not apply to it.
func (e *Egress) EnqueueControl(addr uint64, n int) bool {
	if e.ctrl.push(entry{addr: addr, len: uint16(n), in: NoPort}) != pushed {
		return false
	}
	e.backlog += n
	return true
}

// Pause applies a received PFC frame: for each priority enabled in the
// vector, stop its queues for times[p] quanta of 512 bit times, or resume
// them when the time is zero.
func (e *Egress) Pause(now int64, enable uint8, times *[8]uint16) {
	for p := 0; p < 8; p++ {
		if enable&(1<<p) == 0 {
			continue
		}
		until := now + int64(uint64(times[p])*512*1e9/e.pauseBps)
		// Pause time in force: what the new deadline adds past now,
		// or takes back from the old one (a resume, time 0).
		e.pausedNs += until - max(e.pausedUntil[p], now)
		e.pausedUntil[p] = until
	}
	e.pauseEnd = slices.Max(e.pausedUntil[:])
}

// PausedNs returns the PFC pause time this egress has been given, summed
// over priorities, in nanoseconds: pauses that a later frame shortened
// or resumed count only until then.
func (e *Egress) PausedNs() int64 { return e.pausedNs }

// PauseAll applies an 802.3x PAUSE, which stops every priority.
func (e *Egress) PauseAll(now int64, quanta uint16) {
	t := [8]uint16{quanta, quanta, quanta, quanta, quanta, quanta, quanta, quanta}
	e.Pause(now, 0xff, &t)
}

// Paused reports whether queue q is stopped by PFC at time now.
func (e *Egress) Paused(now int64, q int) bool {
	p := e.queues[q].cfg.PFC
	return p >= 0 && now < e.pausedUntil[p]
}

// Backlog returns the bytes waiting in all queues.
func (e *Egress) Backlog() int { return e.backlog }

// Next returns when Dequeue can next give a frame, if the queues hold
// any (ok): now when one may go at once, else when the shaper has a
// token again or the PFC pause that stops every backlogged queue ends.
// A worker sleeps until then instead of polling a queue that cannot
// move.
func (e *Egress) Next(now int64) (at int64, ok bool) {
	if e.backlog == 0 {
		return 0, false
	}
	if e.ctrl.packets() > 0 {
		return now, true
	}
	at = math.MaxInt64
	for i := range e.queues {
		if e.queues[i].packets() == 0 {
			continue
		}
		ok = true
		t := now
		if p := e.queues[i].cfg.PFC; p >= 0 && e.pausedUntil[p] > t {
			t = e.pausedUntil[p]
		}
		at = min(at, t)
	}
	if !ok {
		return 0, false
	}
	if e.rate > 0 && e.tokens <= 0 {
		// Dequeue adds a token per 8e9/rate ns after last.
		need := uint64(1 - e.tokens)
		at = max(at, e.last+int64((need*8e9+e.rate-1)/e.rate))
	}
	return max(at, now), true
}

// Dequeue moves up to len(out) frames that may be sent at time now into
// out, in scheduling order, and returns how many. Frames stay in their
// queues when the shaper has no tokens or their priority is paused.
// It sets each packet's Addr, Len, In, Queue, Out (NoPort), Verdict
// (Forward) and Reason; Meta is left as it was, since the queues keep
// none (a caller that needs it classifies the frame).
func (e *Egress) Dequeue(now int64, out []Packet) int {
	n := 0
	for n < len(out) && e.ctrl.packets() > 0 {
		en := e.ctrl.pop()
		e.backlog -= int(en.len)
		out[n].set(en.addr, en.len, NoPort, 0)
		n++
	}
	if e.rate > 0 {
		if dt := now - e.last; dt > 0 {
			add := int64(uint64(dt) * e.rate / 8e9)
			if add > 0 {
				e.tokens = int(min(int64(e.tokens)+add, int64(e.burst)))
				// keep the fractional part: advance last only by the
				// time the added tokens stand for
				e.last += int64(uint64(add) * 8e9 / e.rate)
			}
		} else if dt < 0 {
			e.last = now
		}
	}
	for n < len(out) {
		if e.rate > 0 && e.tokens <= 0 {
			break
		}
		q := e.pick(now)
		if q < 0 {
			break
		}
		qu := &e.queues[q]
		sent, bytes := 0, 0
		for {
			en := qu.next()
			if qu.pool != nil {
				qu.release(int(en.len))
			}
			sent++
			bytes += int(en.len)
			e.backlog -= int(en.len)
			if e.markAt == MarkDequeue && en.ecn != ecnNotECT {
				e.mark(qu, en, qu.bytes)
			}
			if !qu.alone {
				qu.deficit -= int(en.len)
			}
			if e.rate > 0 {
				e.tokens -= int(en.len)
			}
			out[n].set(en.addr, en.len, en.in, uint8(q))
			n++
			// pick would return q again, with nothing to change on
			// the way, while q holds frames and is the only queue
			// of its level or its deficit still covers its head
			// frame: no queue above it fills during Dequeue, pauses
			// are read at now, and q's level is credited. So q is
			// served here without a pick per frame, which walked
			// every level above it (pick was 3% of
			// BenchmarkWorkerForward/plain and, with the DRR
			// level of tor/trim's WRR, 9% of BenchmarkTrim; pprof,
			// 2026-11-28).
			if n == len(out) || qu.packets() == 0 || e.rate > 0 && e.tokens <= 0 ||
				!qu.alone && qu.deficit < int(qu.peek().len) {
				break
			}
		}
		qu.stats.Dequeued += uint64(sent)
		qu.stats.Bytes += uint64(bytes)
	}
	return n
}

// pick returns the queue to serve next, or -1. Within a level it runs
// deficit round robin (Shreedhar and Varghese): when the round-robin
// pointer reaches a queue, its deficit grows by its quantum once; the queue
// sends while the deficit covers its head frame, then the pointer moves on.
//
// The only queue of a level is served at once, without deficit: it has
// nobody to share with, and a small quantum (tor/trim sets 1 byte per
// unit of weight, so that a control:data weight ratio holds frame by
// frame) would otherwise cost it one visit per quantum of its head frame.
func (e *Egress) pick(now int64) int {
	busy := e.busy
	for b := busy; b != 0; b &= b - 1 {
		if qi := bits.TrailingZeros16(b); e.queues[qi].packets() == 0 {
			busy &^= 1 << qi
		}
	}
	e.busy = busy
	if now < e.pauseEnd {
		busy &^= e.paused(now)
	}
	if busy == 0 {
		return -1
	}
	for l := range e.levels {
		lv := &e.levels[l]
		if busy&lv.mask == 0 {
			continue
		}
		if len(lv.qs) == 1 {
			return lv.qs[0]
		}
		for {
			qi := lv.qs[lv.rr]
			q := &e.queues[qi]
			if busy&q.bit == 0 {
				q.deficit = 0
				lv.advance()
				continue
			}
			if !lv.credited {
				q.deficit += q.quantum
				lv.credited = true
			}
			if q.deficit >= int(q.peek().len) {
				return qi
			}
			lv.advance()
		}
	}
	return -1
}

// paused returns the bits of the queues PFC stops at time now.
func (e *Egress) paused(now int64) uint16 {
	var m uint16
	for p, until := range e.pausedUntil {
		if now < until {
			m |= e.pfcMask[p]
		}
	}
	return m
}

func (lv *level) advance() {
	if lv.rr++; lv.rr == len(lv.qs) {
		lv.rr = 0
	}
	lv.credited = false
}

// QueueIndexByName returns the index of the named queue in the
// configuration, or -1.
func (c EgressConfig) QueueIndexByName(name string) int {
	for i, q := range c.Queues {
		if q.Name == name {
			return i
		}
	}
	return -1
}

// flush releases every queued frame to mem without sending it.
func (e *Egress) flush(mem *Mem) {
	for q := -1; q < len(e.queues); q++ {
		qu := &e.ctrl
		if q >= 0 {
			qu = &e.queues[q]
		}
		for qu.packets() > 0 {
			en := qu.pop()
			e.backlog -= int(en.len)
			mem.Release(en.addr)
		}
	}
}
