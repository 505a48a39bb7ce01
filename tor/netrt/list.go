package netrt

// A pooled duplicate is on up to five lists at once, each an intrusive
// doubly linked list through dup.on[list], so that every move is O(1)
// and allocates nothing.
const (
	onFlow  = iota // its flow's duplicates, oldest first
	onExp          // all duplicates, by exp
	onPort         // its port's duplicates, oldest first: eviction's sample
	onProbe        // flows' newest duplicates, by pat
	onPace         // its port's pacing FIFO, while queued
	nLists
)

// link is a duplicate's place on one list; -1 ends it.
type link struct{ prev, next int32 }

// ends are a list's first and last duplicates; -1 when empty.
type ends struct{ head, tail int32 }

var noEnds = ends{-1, -1}

// pushBack appends e to l, list k.
func (s *SrcToR) pushBack(l *ends, k int, e int32) {
	s.dups[e].on[k] = link{l.tail, -1}
	if l.tail >= 0 {
		s.dups[l.tail].on[k].next = e
	} else {
		l.head = e
	}
	l.tail = e
}

// pushFront puts e first on l, list k.
func (s *SrcToR) pushFront(l *ends, k int, e int32) {
	s.dups[e].on[k] = link{-1, l.head}
	if l.head >= 0 {
		s.dups[l.head].on[k].prev = e
	} else {
		l.tail = e
	}
	l.head = e
}

// drop takes e off l, list k.
func (s *SrcToR) drop(l *ends, k int, e int32) {
	lk := s.dups[e].on[k]
	if lk.prev >= 0 {
		s.dups[lk.prev].on[k].next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next >= 0 {
		s.dups[lk.next].on[k].prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	s.dups[e].on[k] = link{-1, -1}
}
