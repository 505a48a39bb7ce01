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
