package dataplane

import (
	"math/rand"
	"sort"
	"testing"
)

// TestTimersReference checks the heap against sorting, the slow reference.
func TestTimersReference(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	tm := NewTimers(1000)
	var ref []int64
	for i := 0; i < 1000; i++ {
		at := r.Int63n(1e6)
		if !tm.Arm(at, 0, uint64(at)) {
			t.Fatal("arm refused below capacity")
		}
		ref = append(ref, at)
	}
	if tm.Arm(1, 0, 0) || tm.Refused != 1 {
		t.Fatal("arm beyond capacity must be refused and counted")
	}
	sort.Slice(ref, func(i, j int) bool { return ref[i] < ref[j] })
	for i, want := range ref {
		if _, _, ok := tm.Pop(want - 1); ok && i < len(ref) && ref[i] > want-1 {
			t.Fatal("popped a timer before its deadline")
		}
		_, arg, ok := tm.Pop(want)
		if !ok || int64(arg) != want {
			t.Fatalf("pop %d: got %d %v, want %d", i, arg, ok, want)
		}
	}
	if tm.Len() != 0 {
		t.Fatal("heap not empty")
	}
}

// TestTimersGrowOnDemand checks that a large capacity holds little until
// timers are armed, and that arming below the high-water mark does not
// allocate.
func TestTimersGrowOnDemand(t *testing.T) {
	tm := NewTimers(1 << 16)
	if c := cap(tm.h); c > 64 {
		t.Fatalf("room for %d timers before any is armed, want at most 64", c)
	}
	for i := 0; i < 500; i++ {
		tm.Arm(int64(i), 0, 0)
	}
	for tm.Len() > 0 {
		tm.Pop(1 << 40)
	}
	allocs := testing.AllocsPerRun(10, func() {
		for i := 0; i < 500; i++ {
			tm.Arm(int64(i), 0, 0)
		}
		for tm.Len() > 0 {
			tm.Pop(1 << 40)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations arming below the high-water mark", allocs)
	}
}
