package fabric

import (
	"strings"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// TestByInput: with egress.by_input in the switches' configuration the
// port two senders share toward one receiver serves them from a data
// queue each, the queue of the port each came in by, and every flow
// completes; without it one data queue carries both.
func TestByInput(t *testing.T) {
	ti := topo.Tiers{HostRate: 50e9, FabricRate: 50e9, HostDelay: 500 * sim.Nanosecond, FabricDelay: 500 * sim.Nanosecond}
	tp := topo.LeafSpine(3, 1, 1, ti)
	flows := []workload.Flow{{Src: 1, Dst: 0, Size: 200_000, After: -1}, {Src: 2, Dst: 0, Size: 200_000, After: -1}}
	for _, byInput := range []bool{false, true} {
		sw := "egress: {queue_limit: 1MiB}\n"
		if byInput {
			sw = "egress: {queue_limit: 1MiB, by_input: true}\n"
		}
		res := runOnce(t, tp, Options{Seed: 1, Switch: sw, MaxQPs: QPsNeeded(flows, 1)}, flows)
		if res.Completed != len(flows) {
			t.Fatalf("by_input %v: %d of %d flows completed", byInput, res.Completed, len(flows))
		}
		most := 0 // the most data queues one port sent from
		for _, s := range res.SwitchResults {
			for _, p := range s.Ports {
				n := 0
				for _, q := range p.Queues {
					if strings.HasPrefix(q.Name, "data") && q.Dequeued > 0 {
						n++
					}
				}
				most = max(most, n)
			}
		}
		if want := map[bool]int{false: 1, true: 2}[byInput]; most != want {
			t.Errorf("by_input %v: a port sent from %d data queues at most, want %d", byInput, most, want)
		}
	}
}
