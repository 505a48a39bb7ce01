package fwd

import (
	"net/netip"
	"slices"
	"testing"

	"rocetor/rocev2"
)

// TestTableSharesGroups checks that routes with the same next hops share
// one copy of them (Table.group), as a fat tree's switch sends most of
// its routes up one group, and that every route still answers with its
// own next hops: a list with another gateway, or the same in another
// order (which the hash spreads differently), is a group of its own.
func TestTableSharesGroups(t *testing.T) {
	up := func(gw byte) []NextHop {
		var l []NextHop
		for p := uint16(4); p < 8; p++ {
			l = append(l, NextHop{Port: p, Gateway: netip.AddrFrom4([4]byte{11, 0, gw, byte(p)})})
		}
		return l
	}
	tc := &TableConfig{}
	for p := uint16(4); p < 8; p++ {
		tc.Neighbours = append(tc.Neighbours, Neighbour{Port: p, Addr: netip.AddrFrom4([4]byte{11, 0, 0, byte(p)}), MAC: rocev2.MAC{2, 0, 0, 0, 0, byte(p)}})
	}
	want := map[netip.Prefix][]NextHop{}
	add := func(p netip.Prefix, nh []NextHop) {
		tc.Routes = append(tc.Routes, Route{Prefix: p, NextHops: nh})
		want[p] = nh
	}
	for i := 0; i < 90; i++ {
		add(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24), up(0))
	}
	for i := 0; i < 10; i++ {
		add(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24), []NextHop{{Port: uint16(i % 4)}})
	}
	add(netip.MustParsePrefix("10.2.0.0/24"), up(1))
	rev := up(0)
	slices.Reverse(rev)
	add(netip.MustParsePrefix("10.3.0.0/24"), rev)
	tab := mustTable(t, tc)
	// Groups: up(0), four single ports, up(1), up(0) reversed.
	if n := len(tab.hops); n != 4+4+4+4 {
		t.Fatalf("%d next hops held for %d routes, want 16: routes with the same next hops share them", n, len(tc.Routes))
	}
	for p, nh := range want {
		r, local, ok := tab.Lookup(p.Addr().Next())
		if !ok || local || r.Prefix != p || !slices.Equal(r.NextHops, nh) {
			t.Fatalf("%s: route %v (ok %v), want next hops %v", p, r, ok, nh)
		}
	}
	for _, r := range tab.Config().Routes {
		if !slices.Equal(r.NextHops, want[r.Prefix]) {
			t.Fatalf("Config: %s via %v, want %v", r.Prefix, r.NextHops, want[r.Prefix])
		}
	}
	if port, mac, ok := tab.NextHop(netip.MustParseAddr("10.0.7.1")); !ok || port != 4 || mac[5] != 4 {
		t.Fatalf("next hop of a shared group: port %d MAC %v (ok %v), want port 4's resolved neighbour", port, mac, ok)
	}
	if _, _, ok := tab.NextHop(netip.MustParseAddr("10.2.0.1")); ok {
		t.Fatal("a group of unresolved gateways resolved through another group's neighbours")
	}
}
