package netrt

import (
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
)

// TestSrcLookupCache: lookup's one-entry cache answers as the index
// does, across flows interleaved at random and entries reclaimed by
// idle (a 4-entry table, 8 flows, time moving past IdleTimeout).
func TestSrcLookupCache(t *testing.T) {
	s, err := NewSrcToR(Config{Fabric: 1, Flows: 4, IdleTimeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]rocev2.FlowKey, 8)
	for i := range keys {
		keys[i].Src[15], keys[i].Dst[15], keys[i].QP = byte(i), 9, uint32(i%3)
	}
	now, found, full := int64(0), 0, 0
	for range 5000 {
		now += int64(rng.IntN(4))
		k := &keys[rng.IntN(len(keys))]
		if rng.IntN(3) > 0 { // runs of one flow, as in a batch
			k = &keys[0]
		}
		i := s.lookup(now, k)
		if i < 0 {
			full++
			continue
		}
		if s.flows[i].key != *k {
			t.Fatalf("lookup of flow %d returned entry %d, of flow %d", k.Src[15], i, s.flows[i].key.Src[15])
		}
		if j, ok := s.index[*k]; !ok || j != i {
			t.Fatalf("lookup %d, index %d %v", i, j, ok)
		}
		s.flows[i].last = now
		found++
	}
	if full == 0 || s.st.Reclaimed == 0 || found == 0 {
		t.Fatalf("not exercised: %d found, %d refused, %d reclaimed", found, full, s.st.Reclaimed)
	}
}
