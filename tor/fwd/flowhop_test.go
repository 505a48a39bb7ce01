package fwd

import (
	"net/netip"
	"testing"
)

// TestFlowHop: FlowHop names the port the packet path sends each flow's
// packets to, under a seeded hash; a sprayed group, an unrouted address
// and a local one give no answer. With Config.Owned it answers as pick
// chooses among the owned members.
func TestFlowHop(t *testing.T) {
	var r *rig
	for _, owned := range [][]bool{{false, true, false, true, false}, nil} {
		cfg := DefaultConfig()
		cfg.HashSeed = 0x5eed
		cfg.Owned = owned // as pick chooses for a worker owning ports 1 and 3
		r = newRig(t, 5, cfg, multiTable(ECMP, 0, 1, 2, 3, 4))
		seen := map[uint16]bool{}
		for i := 0; i < 200; i++ {
			f := frame{src: "10.0.0.1", dst: "10.1.2.3", qp: uint32(i), sport: 0xc000 + uint16(i*7)}
			r.reset()
			r.send(build(t, f))
			want := -1
			for p := range r.sent {
				if len(r.sent[p]) == 1 {
					want = p
				}
			}
			got, ok := r.stage.FlowHop(netip.MustParseAddr(f.src), netip.MustParseAddr(f.dst), f.sport, f.qp)
			if !ok || int(got) != want {
				t.Fatalf("owning %v, flow %d: FlowHop says port %d (%v), the packet left by %d", owned, i, got, ok, want)
			}
			seen[got] = true
		}
		if n := map[bool]int{true: 2, false: 4}[owned != nil]; len(seen) != n {
			t.Errorf("owning %v, 200 flows over %d next hops, want %d", owned, len(seen), n)
		}
	}
	src := netip.MustParseAddr("10.0.0.1")
	if _, ok := r.stage.FlowHop(src, netip.MustParseAddr("192.168.0.1"), 1, 1); ok {
		t.Error("a hop for an address without a route")
	}
	sp := newRig(t, 5, DefaultConfig(), multiTable(Spray, 0, 1, 2))
	if _, ok := sp.stage.FlowHop(src, netip.MustParseAddr("10.1.2.3"), 1, 1); ok {
		t.Error("a per-flow hop through a sprayed group")
	}
	tc := baseTable()
	one := newRig(t, 4, DefaultConfig(), tc)
	if p, ok := one.stage.FlowHop(src, netip.MustParseAddr("10.0.2.9"), 1, 1); !ok || p != 2 {
		t.Errorf("single next hop: port %d, %v; want 2", p, ok)
	}
	if _, ok := one.stage.FlowHop(src, netip.MustParseAddr("10.0.66.1"), 1, 1); ok {
		t.Error("a hop through a blackhole route")
	}
}
