package nic

import (
	"slices"
	"testing"
)

// TestSched: the QP whose turn was cut short goes first with what is
// left of it, then the urgent list, then the round, each first in, first
// out; a QP moves from the round to the urgent list in place.
func TestSched(t *testing.T) {
	s := newSched(8)
	for _, i := range []uint32{0, 1, 2, 3} {
		s.push(listRound, i)
	}
	s.push(listUrgent, 5)
	s.remove(2) // promoted: out of the round …
	s.push(listUrgent, 2)
	s.push(listUrgent, 6)
	s.remove(6) // … and one urgent QP gone again
	s.cut(7, 3)
	var order []uint32
	var bursts []int
	for {
		i, n, ok := s.pop(16)
		if !ok {
			break
		}
		if s.in[i] != listNone {
			t.Errorf("QP %d popped but still in list %d", i, s.in[i])
		}
		order, bursts = append(order, i), append(bursts, n)
	}
	if !slices.Equal(order, []uint32{7, 5, 2, 0, 1, 3}) || !slices.Equal(bursts, []int{3, 16, 16, 16, 16, 16}) {
		t.Errorf("served %v with turns %v; want [7 5 2 0 1 3] with [3 16 16 16 16 16]", order, bursts)
	}
	// Emptied, every list links afresh.
	s.push(listRound, 4)
	if i, _, ok := s.pop(16); !ok || i != 4 {
		t.Errorf("after emptying: %d, %v", i, ok)
	}
}
