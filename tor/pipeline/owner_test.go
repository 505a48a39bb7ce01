package pipeline

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Both directions of a host pair, and every QP between them, map to one
// worker; the pairs spread over the workers.
func TestPairOwner(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		seen := map[int]int{}
		for i := range 256 {
			a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}).As16()
			b := netip.MustParseAddr("fd00::2:2").As16()
			k := rocev2.FlowKey{Src: a, Dst: b, QP: uint32(i)}
			o := PairOwner(&k, n)
			if r := k.Reverse(7); PairOwner(&r, n) != o {
				t.Fatalf("%d workers: %v and its reverse map to %d and %d", n, k, o, PairOwner(&r, n))
			}
			seen[o]++
		}
		for w := range n {
			if seen[w] < 256/n/2 {
				t.Errorf("%d workers: worker %d owns %d of 256 pairs", n, w, seen[w])
			}
		}
	}
}

// Owners gives llr links to worker 0, deals the other ports round the
// workers, sends MAC control to the port's owner and leaves what is not
// RoCE where it arrived.
func TestOwners(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ports = []string{"a", "b", "c", "d"}
	cfg.Workers = 3
	cfg.LLR.Ports = []string{"b"}
	o := NewOwners(&cfg)
	if got := o.Ports(); got[0] != 0 || got[1] != 0 || got[2] != 2 || got[3] != 0 {
		t.Fatalf("port owners %v, want [0 0 2 0]", got)
	}
	p := &dataplane.Packet{In: 2}
	p.Meta.Kind = rocev2.KindMACControl
	if o.Flow(p, nil) != 2 {
		t.Error("a PFC frame goes to the owner of the port it pauses")
	}
	p.Meta.Kind = rocev2.KindIP
	if o.Flow(p, nil) != -1 {
		t.Error("plain IP has no owner")
	}
}
