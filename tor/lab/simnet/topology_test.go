package simnet

import (
	"reflect"
	"testing"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/lab"
	"rocetor/tor/topo"
)

// TestTopology: the simulation's topology is the plan's (tor/topo's
// shape, the testbed's names and order) with the plan's rate on every
// link, a sender's link at its transfer's rate, and the backend's
// delays by tier; the plan's own topology is left without rates.
func TestTopology(t *testing.T) {
	o := lab.DefaultOptions("dumbbell")
	o.Prefix, o.Senders, o.Rate = "torsim-", 2, "2G"
	p, err := lab.NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fabric{b: &Backend{HostDelay: 3 * time.Microsecond, FabricDelay: 7 * time.Microsecond}, plan: p}
	tp, err := f.topology([]lab.Transfer{{From: "h1", To: "h3", Rate: "500M"}, {From: "h2", To: "h3", Rate: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := topo.Dumbbell(2, 1, topo.Tiers{}); tp.Name != want.Name || !reflect.DeepEqual(tp.Nodes, want.Nodes) {
		t.Fatalf("nodes %+v, want %+v", tp.Nodes, want.Nodes)
	}
	host, fabric := 3*sim.Microsecond, 7*sim.Microsecond
	want := []topo.LinkSpec{{A: 2, B: 0, RateBps: 500e6, Delay: host}, {A: 2, B: 1, RateBps: 2e9, Delay: host},
		{A: 2, B: 3, RateBps: 2e9, Delay: fabric}, {A: 3, B: 4, RateBps: 2e9, Delay: host}}
	if !reflect.DeepEqual(tp.Links, want) {
		t.Errorf("links %+v, want %+v", tp.Links, want)
	}
	for _, l := range p.Topo.Links {
		if l.RateBps != 0 || l.Delay != 0 {
			t.Fatalf("the plan's topology changed: %+v", p.Topo.Links)
		}
	}
}
