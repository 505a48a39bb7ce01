package dataplane

import (
	"fmt"
	"sync/atomic"
)

// SharedBuffer is a switch's shared packet buffer with dynamic queue
// thresholds (Choudhury and Hahne, "Dynamic queue length thresholds for
// shared-memory packet switches", 1998), as commodity switch MMUs and
// the ns-3 RDMA switch model (switch-mmu.cc) size their queues:
//
//   - each egress queue may own a static reserve (QueueConfig.Reserve),
//     and each port a static reserve its queues share
//     (EgressConfig.PortReserve), as Broadcom MMUs guarantee a minimum
//     per queue and per port; neither counts against the pool. A frame
//     fills its queue's reserve first, then its port's, then the pool;
//   - beyond the reserves a queue draws on the shared pool, and may grow
//     only while its bytes in the pool, the arriving frame's included,
//     are at most α × (pool − bytes the pool has lent), α being the
//     queue's (QueueConfig.Alpha): a queue's threshold falls as the
//     buffer fills, so no queue can take the buffer from the others, and
//     a large α lets a class take more of what is free than a small one;
//   - the pool's bytes are never over-committed: a frame is admitted
//     only by a compare-and-swap that keeps them within the pool.
//
// A frame that leaves gives back its queue's pool bytes first, then its
// port-reserve bytes, then its queue-reserve bytes: the layers drain in
// the reverse of the order they fill, so a queue holds port-reserve or
// pool bytes only while its own reserve is full, and what the pool lent
// returns to every port as soon as it can.
//
// A frame refused by the rule is dropped as ReasonBufferThreshold and
// counted in its queue's QueueStats.ThresholdDrops (and Drops).
//
// One SharedBuffer serves every queue of every port of every worker of
// a switch (EgressConfig.Shared): the lent bytes are one word, updated
// by a compare-and-swap loop on admission and an atomic add on
// departure, the approach of tor/netrt.Budgets. No lock is taken and
// nothing is allocated. A port's reserve is kept by its Egress, which
// one worker owns, in plain integers. With W workers that each queue on
// their own share of every port (no handoff), a port's queue is W
// queues, each with its share of the reserves and each judged by its
// own length.
//
// It is safe for concurrent use; its zero value is an empty pool of no
// bytes, in which queues hold only their reserves. Make one per switch
// with NewSharedBuffer.
type SharedBuffer struct {
	// used is alone on its cache line (and its neighbour): workers
	// hammer it, and nothing else should pay for that.
	_    [64]byte
	used atomic.Int64
	_    [56]byte
	size int64
}

// NewSharedBuffer returns an empty pool of size bytes: the buffer's
// size less every queue's and every port's reserve.
func NewSharedBuffer(size int64) *SharedBuffer {
	return &SharedBuffer{size: max(size, 0)}
}

// Size returns the pool's bytes.
func (b *SharedBuffer) Size() int64 { return b.size }

// Used returns the bytes queues hold beyond their queues' and ports'
// reserves.
func (b *SharedBuffer) Used() int64 { return b.used.Load() }

// AlphaShift is the fixed-point scale of a queue's α: QueueConfig.Alpha
// is rounded to a multiple of 2^-AlphaShift. α from 1/256 to 256
// therefore stays exact for powers of two, the values MMUs offer.
const AlphaShift = 8

// alphaFixed converts α to fixed point.
func alphaFixed(a float64) int64 { return int64(a*(1<<AlphaShift) + 0.5) }

// validAlpha checks α.
func validAlpha(a float64) error {
	if !(a >= 1.0/(1<<AlphaShift) && a <= 256) {
		return fmt.Errorf("alpha %v, want 1/256 to 256", a)
	}
	return nil
}

// portReserve is a port's reserve: the bytes its queues share beyond
// their own reserves and before the pool. The port's Egress owns it, so
// it needs no atomics.
type portReserve struct {
	size, held int
}

// admit decides a frame of n bytes for queue q and records which layer
// holds its bytes: the queue's reserve, then the port's, then the pool.
// It reports false, taking nothing, when the frame's pool bytes would
// pass the queue's threshold or the pool.
func (q *queue) admit(n int) bool {
	own := q.bytes - q.ported - q.pooled // in the queue's reserve
	need := n - max(q.reserve-own, 0)    // beyond the queue's reserve
	if need <= 0 {
		return true
	}
	port := min(need, q.port.size-q.port.held)
	need -= port
	if need > 0 && !q.pool.admit(q.pooled, need, q.alpha) {
		return false
	}
	q.port.held += port
	q.ported += port
	q.pooled += need
	return true
}

// release gives back a departing frame's n bytes: the pool's first,
// then the port reserve's.
func (q *queue) release(n int) {
	if p := min(n, q.pooled); p > 0 {
		q.pooled -= p
		q.pool.used.Add(-int64(p))
		n -= p
	}
	if p := min(n, q.ported); p > 0 {
		q.ported -= p
		q.port.held -= p
	}
}

// threshold returns the most bytes queue q may hold now: its reserve,
// the port-reserve bytes it holds and those still free, and α × the
// pool's free bytes.
func (q *queue) threshold() int {
	free := q.pool.size - q.pool.used.Load()
	return q.reserve + q.ported + q.port.size - q.port.held + int(q.alpha*max(free, 0)>>AlphaShift)
}

// admit takes need bytes from the pool for a queue that holds pooled
// bytes of it, with factor α (fixed point, alphaFixed). It reports
// false, taking nothing, when the queue's pool bytes would pass α × the
// free bytes or the pool.
func (b *SharedBuffer) admit(pooled, need int, alpha int64) bool {
	over := int64(pooled + need) // the queue's pool bytes after
	for {
		used := b.used.Load()
		free := b.size - used
		if int64(need) > free || over > alpha*free>>AlphaShift {
			return false
		}
		if b.used.CompareAndSwap(used, used+int64(need)) {
			return true
		}
	}
}

// charge takes a frame of n bytes into queue q as admit does, the
// queue's reserve first, then the port's, then the pool, but whatever
// the threshold and the pool's free bytes: a frame admitted into PFC
// headroom, which the pool's owner kept out of its size
// (IngressPFC.Headroom), so that the buffer itself is not
// over-committed. release gives it back as any other.
func (q *queue) charge(n int) {
	own := q.bytes - q.ported - q.pooled
	need := n - max(q.reserve-own, 0)
	if need <= 0 {
		return
	}
	port := min(need, q.port.size-q.port.held)
	need -= port
	q.pool.used.Add(int64(need))
	q.port.held += port
	q.ported += port
	q.pooled += need
}
