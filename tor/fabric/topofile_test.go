package fabric

import (
	"testing"

	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// TestTopologyFiles: fabrics read from topology files (rocetor's and
// ns-3's topology.txt, tor/topo/testdata) carry flows end to end over
// their own rates and delays, across the upper tiers, with every frame
// accounted.
func TestTopologyFiles(t *testing.T) {
	for _, c := range []struct {
		spec  string
		upper []string // switches the cross-rack flows must cross
		flows []workload.Flow
	}{
		{"file:../topo/testdata/two-racks.topo", []string{"spine"},
			[]workload.Flow{{Src: 0, Dst: 2, Size: 256 << 10, After: -1}, {Src: 3, Dst: 1, Size: 256 << 10, After: -1},
				{Src: 1, Dst: 0, Size: 64 << 10, After: -1}}},
		// h0, h1 under s4; h2, h3 under s5; s4 and s5 meet at s6 and s7
		// (tier 2); s8 and s9 (tier 3) above them are on no shortest
		// path.
		{"ns3:../topo/testdata/ns3-fattree.txt", []string{"s6", "s7"},
			[]workload.Flow{{Src: 0, Dst: 2, Size: 256 << 10, After: -1}, {Src: 1, Dst: 3, Size: 256 << 10, After: -1},
				{Src: 2, Dst: 1, Size: 256 << 10, After: -1}, {Src: 3, Dst: 0, Size: 256 << 10, After: -1}}},
	} {
		tp, err := topo.Parse(c.spec, topo.DefaultTiers())
		if err != nil {
			t.Fatal(err)
		}
		n, err := Build(tp, Options{Seed: 1, MaxQPs: QPsNeeded(c.flows, 1)})
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		res, err := n.Run(c.flows, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		balanced(t, res)
		if res.Completed != len(c.flows) {
			t.Fatalf("%s: completed %d of %d flows", c.spec, res.Completed, len(c.flows))
		}
		tx := map[string]uint64{}
		for _, s := range res.SwitchResults {
			for _, p := range s.Ports {
				tx[s.Name] += p.TxPackets
			}
		}
		var upper uint64
		for _, s := range c.upper {
			upper += tx[s]
		}
		if upper == 0 {
			t.Errorf("%s: nothing crossed %v: %v", c.spec, c.upper, tx)
		}
		t.Logf("%s: %d switches, p50 slowdown %.3f, packets sent per switch %v", c.spec, res.Switches, res.All.P50Slowdown, tx)
	}
}
