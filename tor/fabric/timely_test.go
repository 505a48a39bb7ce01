package fabric

import (
	"math/rand/v2"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// TestTimelyCounters runs a 10-to-1 incast under TIMELY and reads its
// counters from the hosts: every RTT sample took one of Algorithm 1's
// branches, the incast's queue puts some samples above T_low (gradient
// or T_high decisions, not only increases below it), and the lowest and
// highest samples are one host's, not sums.
func TestTimelyCounters(t *testing.T) {
	tp := topo.LeafSpine(11, 1, 1, topo.Tiers{HostRate: 40e9, FabricRate: 40e9,
		HostDelay: 1000 * sim.Nanosecond, FabricDelay: 1000 * sim.Nanosecond})
	wl := workload.Spec{Name: "sequential-incast", Incast: 10, Racks: Racks(tp)}
	flows, err := wl.Flows(len(tp.Hosts()), 40e9, rand.New(rand.NewPCG(1, sim.Seed(1, 6))))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Seed: 1, Transport: "irn", CC: "timely", BDP: 32, MaxMessage: workload.SeqIncastSize,
		MaxQPs: QPsNeeded(flows, 1), Switch: "egress: {queue_limit: 4MiB}\n"}
	res := runOnce(t, tp, o, flows)
	if res.Completed != len(flows) {
		t.Fatalf("%d of %d flows completed", res.Completed, len(flows))
	}
	h := res.HostCounters
	n := h["Timely.Samples"]
	branches := h["Timely.LowInc"] + h["Timely.HighCuts"] + h["Timely.GradInc"] + h["Timely.HAIInc"] + h["Timely.GradCuts"]
	t.Logf("%d samples: %d below T_low, %d above T_high, %d gradient increases, %d hyperactive, %d gradient cuts; RTT %d–%d ns",
		n, h["Timely.LowInc"], h["Timely.HighCuts"], h["Timely.GradInc"], h["Timely.HAIInc"], h["Timely.GradCuts"], h["Timely.RTTMin"], h["Timely.RTTMax"])
	switch {
	case n == 0 || branches != n:
		t.Errorf("%d samples, %d branch decisions: want as many, and some", n, branches)
	case h["Timely.LowInc"] == n:
		t.Errorf("every sample below T_low: want the incast's queue to show")
	case h["Timely.RTTMin"] <= 0 || h["Timely.RTTMin"] > h["Timely.RTTMax"] || h["Timely.RTTMax"] > int64(res.SimTimeNs):
		t.Errorf("RTT %d–%d ns: want one sample's range within the %d ns run", h["Timely.RTTMin"], h["Timely.RTTMax"], res.SimTimeNs)
	}
}
