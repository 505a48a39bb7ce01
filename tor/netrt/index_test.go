package netrt

import (
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
)

// TestFlowIndex checks flowIndex against a map over random inserts and
// removals in a small table, where runs are long and wrap around.
func TestFlowIndex(t *testing.T) {
	for _, entries := range []int{1, 3, 16, 100} {
		rng := rand.New(rand.NewPCG(uint64(entries), 7))
		x := newFlowIndex[dflow](entries)
		if n := len(x.slot); n < 2*entries || n&(n-1) != 0 {
			t.Fatalf("%d slots for %d entries", n, entries)
		}
		flows := make([]dflow, entries)
		ref := map[rocev2.FlowKey]int32{}
		keyOf := func(i int) rocev2.FlowKey {
			i++ // never the zero key, which marks an empty entry here
			return rocev2.FlowKey{Src: [16]byte{15: byte(i)}, Dst: [16]byte{0: byte(i >> 8)}, QP: uint32(i % 7)}
		}
		for op := 0; op < 20000; op++ {
			e := int32(rng.IntN(entries))
			f := &flows[e]
			if _, ok := ref[f.key]; ok && f.key != (rocev2.FlowKey{}) {
				x.remove(flows, e)
				delete(ref, f.key)
			}
			f.key = keyOf(rng.IntN(4 * entries))
			if _, ok := ref[f.key]; ok {
				f.key = rocev2.FlowKey{} // in use by another entry: leave e empty
			} else {
				x.insert(flows, e)
				ref[f.key] = e
			}
			for k, want := range ref {
				if got := x.find(flows, &k); got != want {
					t.Fatalf("%d entries, op %d: find %v = %d, want %d", entries, op, k, got, want)
				}
			}
			if miss := keyOf(4*entries + 1); x.find(flows, &miss) != -1 {
				t.Fatalf("found a key never inserted")
			}
			n := 0
			for _, s := range x.slot {
				if s != 0 {
					n++
				}
			}
			if n != len(ref) {
				t.Fatalf("%d slots in use, %d keys", n, len(ref))
			}
		}
	}
}
