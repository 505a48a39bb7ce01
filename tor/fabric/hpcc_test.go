package fabric

import (
	"slices"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/workload"
)

// TestHPCCIncast: 4 senders at 10 Gbit/s into one receiver behind the
// other switch, the bottleneck's queue limited to 1 MiB, every flow
// allowed 1 MiB in flight. With every switch stamping INT (int: {}),
// HPCC reads the bottleneck's queue and rate from the records its ACKs
// echo and, once the first round trip's line-rate burst has drained,
// holds the queue near empty while the link stays busy, and nothing is
// dropped. Without a congestion control the queue sits at its limit and
// overflows; with HPCC but switches that do not stamp, HPCC sees no hop,
// keeps the line rate and overflows the same.
func TestHPCCIncast(t *testing.T) {
	senders := []int{0, 1, 2, 3}
	flows := workload.Incast(senders, 8, 8<<20)
	const size = 4 * 8 << 20
	for _, c := range []struct{ cc, sw string }{
		{"hpcc", "int: {}\n"}, {"none", "int: {}\n"}, {"hpcc", ""},
	} {
		o := Options{Seed: 1, CC: c.cc, Switch: c.sw + "egress: {queue_limit: 1MiB}\n", MaxMessage: 8 << 20, BDP: 1024}
		res, p := dumbbellRun(t, 10e9, 8, o, flows)
		end := p.together(senders)
		half := end / 2
		tail := p.depth[half : end+1]
		drops := res.Drops["queue_full"]
		// The bytes the four sent in the last half, against what the
		// bottleneck could carry meanwhile.
		sent := uint64(0)
		for _, h := range senders {
			sent += p.sent[end][h] - p.sent[half][h]
		}
		busy := float64(sent) * 8 / (10e9 * float64(p.t[end]-p.t[half]) / float64(sim.Second))
		t.Logf("cc %s, %q: peak depth %d B, last half: peak %d B, mean %d B; drops %d; sent/capacity %.2f (of %d B)",
			c.cc, c.sw, slices.Max(p.depth), slices.Max(tail), mean(tail), drops, busy, size)
		if c.cc == "hpcc" && c.sw != "" {
			if slices.Max(tail) > 16<<10 || mean(tail) > 4<<10 || drops != 0 || busy < 0.9 {
				t.Errorf("HPCC with INT: last half peak %d B (want ≤ 16 KiB), mean %d B (want ≤ 4 KiB), %d drops (want none), sent/capacity %.2f (want ≥ 0.9)",
					slices.Max(tail), mean(tail), drops, busy)
			}
		} else if mean(tail) < 512<<10 || drops == 0 {
			t.Errorf("cc %s, %q: last half mean depth %d B (want ≥ 512 KiB), %d drops (want some)", c.cc, c.sw, mean(tail), drops)
		}
	}
}

func mean(x []int) int {
	s := 0
	for _, v := range x {
		s += v
	}
	return s / max(len(x), 1)
}
