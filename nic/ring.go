package nic

import "sync/atomic"

// spsc is a bounded single-producer, single-consumer ring. The producer
// and the consumer may be different goroutines: the atomic tail store
// publishes the slot written before it, and the atomic head store frees
// the slot read before it, so the ring itself carries the happens-before
// edges the verbs API relies on (a buffer filled before Post is seen by
// the worker; data placed before a completion is seen by PollCQ). It
// never allocates after construction.
type spsc[T any] struct {
	buf  []T
	mask uint64
	_    [64]byte // keep the consumer's and producer's words on separate cache lines
	head atomic.Uint64
	_    [56]byte
	tail atomic.Uint64
	_    [56]byte
}

// newSPSC returns a ring of at least n slots (a power of two).
func newSPSC[T any](n int) *spsc[T] {
	c := 1
	for c < n {
		c <<= 1
	}
	return &spsc[T]{buf: make([]T, c), mask: uint64(c - 1)}
}

// push copies *v into the ring; false when it is full. Producer only.
func (r *spsc[T]) push(v *T) bool {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[t&r.mask] = *v
	r.tail.Store(t + 1)
	return true
}

// pop copies the oldest entry into *v; false when empty. Consumer only.
func (r *spsc[T]) pop(v *T) bool {
	h := r.head.Load()
	if h == r.tail.Load() {
		return false
	}
	*v = r.buf[h&r.mask]
	r.head.Store(h + 1)
	return true
}
