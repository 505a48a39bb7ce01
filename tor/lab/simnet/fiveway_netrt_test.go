package simnet

import (
	"testing"

	"rocetor/tor/lab"
)

// TestFiveWayNetRTCongestionAvoidance pins down why NetRT is worse than
// go-back-N alone in five-way's incast cell (docs/experiments.md,
// five-way): NetRT's congestion avoidance (seed 000 §III-C 3, K_l 20 KB
// and K_h 100 KB, §IV-A) paces the retransmissions of the incast's long
// runs of losses at down to 1 % of the port's rate while the destination
// ToR holds the flow behind them, so the hosts time out; with the
// thresholds out of reach (no pacing, no pause) NetRT's hosts never time
// out and resend less end to end than go-back-N alone. One seed, no
// DCQCN: the cell the docs' one-change table starts from.
func TestFiveWayNetRTCongestionAvoidance(t *testing.T) {
	cell := func(args ...string) map[string]*lab.FabricRun {
		t.Helper()
		args = append([]string{"--scale", "ci", "--scenarios", "incast", "--cc", "none"}, args...)
		res := runResults(t, "five-way", args...)
		runs := map[string]*lab.FabricRun{}
		for i := range res.Runs {
			r := &res.Runs[i]
			if r.Error != "" || r.Fabric == nil || r.Fabric.Completed != r.Fabric.Flows {
				t.Fatalf("%v: %s: flows not all done", r.Point, r.Error)
			}
			runs[r.Point["scheme"]] = r.Fabric
		}
		return runs
	}
	def := cell("--schemes", "gbn,netrt")
	off := cell("--schemes", "netrt", "--netrt", "k_low: 64MiB, k_high: 128MiB")["netrt"]
	gbn, on := def["gbn"], def["netrt"]
	src := on.Stages["netrt_src"]
	if gbn.HostCounters["Timeouts"] != 0 {
		t.Errorf("go-back-N alone timed out %d times: the cell changed, re-measure", gbn.HostCounters["Timeouts"])
	}
	if src["Ports.Paced"] == 0 || src["Ports.Pauses"] == 0 || on.HostCounters["Timeouts"] == 0 {
		t.Errorf("NetRT at its defaults paced %d, paused %d times, hosts timed out %d times: want all three",
			src["Ports.Paced"], src["Ports.Pauses"], on.HostCounters["Timeouts"])
	}
	srcOff := off.Stages["netrt_src"]
	if srcOff["Ports.Paced"] != 0 || srcOff["Ports.Pauses"] != 0 || srcOff["Ports.Retrans"] == 0 {
		t.Errorf("thresholds out of reach: paced %d, paused %d, resent %d at line rate: want 0, 0, some",
			srcOff["Ports.Paced"], srcOff["Ports.Pauses"], srcOff["Ports.Retrans"])
	}
	if off.HostCounters["Timeouts"] != 0 || off.HostCounters["Retransmits"] >= gbn.HostCounters["Retransmits"] {
		t.Errorf("without congestion avoidance the hosts timed out %d times and resent %d (go-back-N alone %d): want none and fewer",
			off.HostCounters["Timeouts"], off.HostCounters["Retransmits"], gbn.HostCounters["Retransmits"])
	}
}
