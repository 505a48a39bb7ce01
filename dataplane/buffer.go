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
//   - each egress queue owns a static reserve (QueueConfig.Reserve) that
//     does not count against the pool;
//   - beyond its reserve a queue draws on the shared pool, and may grow
//     only while its shared bytes, the arriving frame's included, are at
//     most α × (pool − bytes the pool has lent), α being the queue's
//     (QueueConfig.Alpha): a queue's threshold falls as the buffer
//     fills, so no queue can take the buffer from the others, and a
//     large α lets a class take more of what is free than a small one;
//   - the pool's bytes are never over-committed: a frame is admitted
//     only by a compare-and-swap that keeps them within the pool.
//
// A frame refused by the rule is dropped as ReasonBufferThreshold and
// counted in its queue's QueueStats.ThresholdDrops (and Drops).
//
// One SharedBuffer serves every queue of every port of every worker of
// a switch (EgressConfig.Shared): the lent bytes are one word, updated
// by a compare-and-swap loop on admission and an atomic add on
// departure, the approach of tor/netrt.Budgets. No lock is taken and
// nothing is allocated. With W workers that each queue on their own
// share of every port (no handoff), a port's queue is W queues, each
// with its share of the reserve and each judged by its own length.
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
// size less every queue's reserve.
func NewSharedBuffer(size int64) *SharedBuffer {
	return &SharedBuffer{size: max(size, 0)}
}

// Size returns the pool's bytes.
func (b *SharedBuffer) Size() int64 { return b.size }

// Used returns the bytes queues hold beyond their reserves.
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

// Threshold returns the most bytes a queue with reserve bytes of its own
// and factor α (fixed point, alphaFixed) may hold now: its reserve plus α
// times the pool's free bytes.
func (b *SharedBuffer) threshold(reserve int, alpha int64) int {
	free := b.size - b.used.Load()
	return reserve + int(alpha*max(free, 0)>>AlphaShift)
}

// admit decides a frame of n bytes for a queue holding bytes, with its
// reserve and α, and takes from the pool what it draws beyond the
// reserve. It reports false, taking nothing, when the frame would pass
// the queue's threshold or the pool.
func (b *SharedBuffer) admit(bytes, n, reserve int, alpha int64) bool {
	over := int64(bytes + n - reserve) // the queue's shared bytes after
	if over <= 0 {
		return true // within the reserve
	}
	need := min(int64(n), over) // what this frame draws from the pool
	for {
		used := b.used.Load()
		free := b.size - used
		if need > free || over > alpha*free>>AlphaShift {
			return false
		}
		if b.used.CompareAndSwap(used, used+need) {
			return true
		}
	}
}

// charge takes from the pool what a frame of n bytes joining a queue
// that holds bytes draws beyond the reserve, whatever the threshold and
// the pool's free bytes: a frame admitted into PFC headroom, which the
// pool's owner kept out of its size (IngressPFC.Headroom), so that the
// buffer itself is not over-committed. release returns it as any other.
func (b *SharedBuffer) charge(bytes, n, reserve int) {
	if over := bytes + n - reserve; over > 0 {
		b.used.Add(int64(min(n, over)))
	}
}

// release returns to the pool what a frame of n bytes leaving a queue
// that held bytes (with it) had drawn beyond the reserve.
func (b *SharedBuffer) release(bytes, n, reserve int) {
	if over := bytes - reserve; over > 0 {
		b.used.Add(-int64(min(n, over)))
	}
}
