package fwd

import (
	"net/netip"
	"sync/atomic"
)

// Misses carries neighbour misses from the workers to the control plane:
// a bounded lock-free ring (Vyukov's multi-producer queue) of (port,
// address) pairs. Workers add to it without blocking or allocating; when
// it is full a report is lost and counted, which is harmless because the
// stage reports a still-missing neighbour again after its MissInterval.
// One consumer, the mirror, takes reports out. Add is safe for concurrent
// use by any number of workers; Take and Wait belong to one goroutine.
// The zero value is not usable; see NewMisses.
type Misses struct {
	slots []missSlot
	mask  uint64
	head  atomic.Uint64 // next position to write, claimed by CAS
	tail  uint64        // next position to read; consumer only
	// pending is set by the first report after the consumer last
	// looked, so that only that report pays for a channel send.
	pending atomic.Bool
	wake    chan struct{}
	lost    atomic.Uint64
}

type missSlot struct {
	// seq is the position this slot may next be written at (seq == pos)
	// or read at (seq == pos+1); it orders the plain fields below.
	seq  atomic.Uint64
	port uint16
	addr [16]byte
}

// NewMisses returns a ring of at least size reports, rounded up to a
// power of two (minimum 16).
func NewMisses(size int) *Misses {
	n := 16
	for n < size {
		n <<= 1
	}
	q := &Misses{slots: make([]missSlot, n), mask: uint64(n - 1), wake: make(chan struct{}, 1)}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// Add reports that the neighbour addr (16-byte form, IPv4-mapped) on port
// is missing. It never blocks or allocates; it returns false, and counts
// the loss, when the ring is full.
func (q *Misses) Add(port uint16, addr *[16]byte) bool {
	pos := q.head.Load()
	for {
		s := &q.slots[pos&q.mask]
		seq := s.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if q.head.CompareAndSwap(pos, pos+1) {
				s.port, s.addr = port, *addr
				s.seq.Store(pos + 1)
				if !q.pending.Load() && q.pending.CompareAndSwap(false, true) {
					select {
					case q.wake <- struct{}{}:
					default:
					}
				}
				return true
			}
			pos = q.head.Load()
		case d < 0:
			// The slot still holds a report from one lap ago: full.
			q.lost.Add(1)
			return false
		default:
			pos = q.head.Load()
		}
	}
}

// Wait returns a channel that receives a value when reports may be
// waiting. After receiving, the consumer calls Take until it reports
// nothing left.
func (q *Misses) Wait() <-chan struct{} { return q.wake }

// Take removes the oldest report. ok is false when the ring is empty.
func (q *Misses) Take() (port uint16, addr netip.Addr, ok bool) {
	// Clear pending before looking, so a report added after the last
	// slot we read wakes us again.
	q.pending.Store(false)
	s := &q.slots[q.tail&q.mask]
	if s.seq.Load() != q.tail+1 {
		return 0, netip.Addr{}, false
	}
	port, addr = s.port, netip.AddrFrom16(s.addr).Unmap()
	s.seq.Store(q.tail + q.mask + 1)
	q.tail++
	return port, addr, true
}

// Lost returns how many reports were lost to a full ring.
func (q *Misses) Lost() uint64 { return q.lost.Load() }
