package nic

import (
	"fmt"
	"time"
)

// QPCache models an RNIC that keeps its QP contexts (QPCs) in an on-chip
// cache of a byte budget and fetches the others from host memory over
// PCIe: FaSR's explanation of IRN's and commodity RoCE's throughput loss
// at thousands of QPs (seed 001 §V-C 1, Fig. 7(b): "when the number of
// QPs exceeds 256, CX6 suffers a drop in throughput due to frequent cache
// misses … when concurrent QPs exceed 2K, IRN suffers throughput
// performance slippage due to cache misses"; Fig. 7(c) at 5K QPs).
// Without it (Bytes 0, the default) every context is on chip at no cost,
// as rocetor's software RNIC keeps them.
//
// A context is Context bytes (what every RC QP keeps, the seed's 256 B)
// plus the transport's SR state per QP (SRState.PerQP: IRN's bitmaps,
// FaSR's pool pointers, nothing for Go-Back-N), all QPs alike; a
// transport's shared SR state (FaSR's pool, SRState.Shared) is on chip
// for good and comes off the budget first. The cache holds as many
// contexts as the rest fits, least recently used out first.
//
// A QP's context is on chip from its creation while the cache has room
// (a NIC writes it then). The endpoint looks a QP's context up for every frame it receives for
// the QP and for every turn the QP gets to send. A miss fetches it:
// Miss of the NIC's pipeline, during which it processes nothing (the
// seed's §II: a NIC that waits on the host "needs to pause the pipeline
// … the backlog of packets waiting to be processed will also
// increase"). The endpoint only counts that time (StalledUntil); whoever
// runs the worker honours it — the simulator takes the host off its CPU
// until then (tor/fabric, sim.Node.Stall), frames waiting in its receive
// ring meanwhile; tord does not (a real host's time is its own). Misses
// within one worker step add up: k misses stall the pipeline k × Miss,
// and the step's frames after a miss are handled up to that much early.
type QPCache struct {
	// Bytes is the cache's budget; 0 turns the model off.
	Bytes int
	// Miss is the time one fetch holds the pipeline.
	Miss time.Duration
	// Context is the bytes every QP's context takes besides its SR
	// state (default 256: seed 001 §V-A, "each QP on FaSR, IRN, and
	// SRNIC on FPGA requires 256B QPC overhead"; CX3's too, §II).
	Context int
}

// qpcNone marks the ends of qpc's list.
const qpcNone = -1

// qpc is the cache: a least-recently-used list of the QPs whose contexts
// are on chip, linked through per-QP indices (most recent at head), all
// sized at setup, so a lookup allocates nothing.
type qpc struct {
	slots      int // contexts that fit
	used       int
	miss       int64 // ns
	until      int64 // the pipeline's fetches end then (ns)
	head, tail int32
	prev, next []int32
	in         []bool
}

// newQPC builds the cache of c for maxQPs QPs whose transport keeps sr;
// nil when c is off.
func newQPC(c QPCache, sr SRState, maxQPs int) (*qpc, error) {
	if c.Bytes == 0 {
		return nil, nil
	}
	if c.Context == 0 {
		c.Context = 256
	}
	ctx := c.Context + sr.PerQP
	switch {
	case c.Bytes < 0 || c.Miss < 0 || c.Context < 0:
		return nil, fmt.Errorf("%w: QP-context cache %d B, miss %v, context %d B", ErrConfig, c.Bytes, c.Miss, c.Context)
	case c.Bytes-sr.Shared < ctx:
		return nil, fmt.Errorf("%w: QP-context cache of %d B holds no %d-byte context beside %d B of shared SR state",
			ErrConfig, c.Bytes, ctx, sr.Shared)
	}
	q := &qpc{slots: (c.Bytes - sr.Shared) / ctx, miss: int64(c.Miss), head: qpcNone, tail: qpcNone,
		prev: make([]int32, maxQPs), next: make([]int32, maxQPs), in: make([]bool, maxQPs)}
	return q, nil
}

// touch looks QP i's context up at now: a hit moves it to the front; a
// miss fetches it, evicting the least recently used context if the
// cache is full, and holds the pipeline Miss longer. It reports a hit.
func (c *qpc) touch(i int32, now int64) bool {
	if c.in[i] {
		if c.head != i {
			c.unlink(i)
			c.pushFront(i)
		}
		return true
	}
	if c.used == c.slots {
		t := c.tail
		c.unlink(t)
		c.in[t] = false
		c.used--
	}
	c.in[i] = true
	c.used++
	c.pushFront(i)
	c.until = max(c.until, now) + c.miss
	return false
}

// load puts QP i's context on chip at its creation, as a NIC writes it
// when the QP is created, if the cache has room; with none, the QP's
// first lookup fetches it. So a cache that holds every context never
// misses.
func (c *qpc) load(i int32) {
	if c.used < c.slots && !c.in[i] {
		c.in[i] = true
		c.used++
		c.pushFront(i)
	}
}

func (c *qpc) unlink(i int32) {
	p, n := c.prev[i], c.next[i]
	if p == qpcNone {
		c.head = n
	} else {
		c.next[p] = n
	}
	if n == qpcNone {
		c.tail = p
	} else {
		c.prev[n] = p
	}
}

func (c *qpc) pushFront(i int32) {
	c.prev[i], c.next[i] = qpcNone, c.head
	if c.head != qpcNone {
		c.prev[c.head] = i
	}
	c.head = i
	if c.tail == qpcNone {
		c.tail = i
	}
}

// lookup counts a context lookup of q (Config.QPCache) at now.
func (e *Endpoint) lookup(q *QP, now int64) {
	if e.qpc == nil {
		return
	}
	if e.qpc.touch(int32(q.idx), now) {
		e.st.QPCHits++
		return
	}
	e.st.QPCMisses++
	e.st.QPCStallNs += uint64(e.qpc.miss)
}

// StalledUntil returns the time, on the worker's clock, until which the
// NIC's pipeline waits for QP contexts it fetched (Config.QPCache); 0
// without the cache. The simulator keeps the host off its CPU until
// then.
func (e *Endpoint) StalledUntil() int64 {
	if e.qpc == nil {
		return 0
	}
	return e.qpc.until
}

// QPCSlots returns how many QP contexts the cache holds (0 without one).
func (e *Endpoint) QPCSlots() int {
	if e.qpc == nil {
		return 0
	}
	return e.qpc.slots
}
