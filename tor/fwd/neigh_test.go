package fwd

import (
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
)

// TestNeighTable checks neighTable against a Go map: every neighbour
// found with its latest MAC, IPv4-mapped and IPv6 addresses on several
// ports, and addresses or ports it does not have missed, at fill levels
// up to its limit of half its slots.
func TestNeighTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 4, 100, 1024} {
		want := map[neighKey]rocev2.MAC{}
		var keys []neighKey
		for len(keys) < n {
			var k neighKey
			if rng.IntN(2) == 0 {
				k.addr[10], k.addr[11] = 0xff, 0xff
				k.addr[12], k.addr[13], k.addr[14], k.addr[15] = 10, 0, byte(rng.IntN(4)), byte(rng.IntN(256))
			} else {
				k.addr[0], k.addr[1], k.addr[15] = 0xfd, 0, byte(rng.IntN(256))
			}
			k.port = uint16(rng.IntN(4))
			keys = append(keys, k)
			want[k] = rocev2.MAC{2, 0, 0, 0, byte(len(keys) >> 8), byte(len(keys))}
		}
		nt := newNeighTable(len(keys))
		for i, k := range keys {
			nt.put(k, rocev2.MAC{2, 0, 0, 0, byte((i + 1) >> 8), byte(i + 1)})
		}
		for k, mac := range want {
			if got, ok := nt.get(&k.addr, k.port); !ok || got != mac {
				t.Fatalf("%d neighbours: %v on %d: %v %v, want %v", n, k.addr, k.port, got, ok, mac)
			}
			miss := k
			miss.port += 4
			if _, ok := nt.get(&miss.addr, miss.port); ok {
				t.Fatalf("%d neighbours: %v found on port %d", n, miss.addr, miss.port)
			}
		}
		var none [16]byte
		if _, ok := nt.get(&none, 0); ok {
			t.Fatalf("%d neighbours: the zero address found", n)
		}
	}
}
