package fabric

import (
	"slices"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// The namespace testbed's dcqcn-fairness and dcqcn-incast tests can only
// check that DCQCN's loop closes: on two shared CPUs the flows' rates and
// the queue's depth depend on the scheduler. Here the same switch and RNIC
// code runs on simulated time, so the outcomes DCQCN promises can be
// asserted: fair shares, a queue held between ECN's thresholds, and an
// incast of up to 4 senders that does not overflow the bottleneck.

// probe samples, every interval, the depth of one switch port's egress
// and the bytes each host has sent.
type probe struct {
	n       *Network
	id      int
	sw, prt int
	every   sim.Time
	t       []sim.Time
	depth   []int
	sent    [][]uint64 // per sample, per host
}

func newProbe(n *Network, sw, port int, every sim.Time) *probe {
	p := &probe{n: n, sw: sw, prt: port, every: every}
	p.id = n.Sim.Add(p)
	n.Sim.Wake(p.id, 0)
	return p
}

func (p *probe) Fire(now sim.Time) {
	p.t = append(p.t, now)
	p.depth = append(p.depth, p.n.Switches[p.sw].Node.W.Egress(p.prt).Backlog())
	s := make([]uint64, len(p.n.Hosts))
	for i, h := range p.n.Hosts {
		s[i] = h.Node.Ports[0].WireStats().TxBytes
	}
	p.sent = append(p.sent, s)
	p.n.Sim.Wake(p.id, now+p.every)
}

// together is the last sample at which every sender was still sending:
// the first sample from which one of them sends no more.
func (p *probe) together(senders []int) int {
	end := len(p.t) - 1
	for _, h := range senders {
		last := p.sent[len(p.sent)-1][h]
		for i := range p.sent {
			if p.sent[i][h] == last {
				end = min(end, i)
				break
			}
		}
	}
	return end
}

// jain is Jain's fairness index of the senders' bytes between samples a
// and b.
func (p *probe) jain(senders []int, a, b int) float64 {
	var sum, sq float64
	for _, h := range senders {
		x := float64(p.sent[b][h] - p.sent[a][h])
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(senders)) * sq)
}

// share is the fraction of samples in [a, b] whose depth is in [lo, hi].
func (p *probe) share(a, b, lo, hi int) float64 {
	k := 0
	for _, d := range p.depth[a : b+1] {
		if d >= lo && d <= hi {
			k++
		}
	}
	return float64(k) / float64(b-a+1)
}

// fabricPortOf is the index of switch sw's first port toward another
// switch: on the dumbbell, the bottleneck.
func fabricPortOf(t *testing.T, n *Network, sw int) int {
	for p, k := range n.Switches[sw].kinds {
		if k == fabricPort {
			return p
		}
	}
	t.Fatal("no fabric port")
	return -1
}

// dumbbellRun runs flows on a dumbbell of hosts hosts a side at 10
// Gbit/s everywhere, probing tor1's port toward tor2 every 20 µs.
func dumbbellRun(t *testing.T, rate uint64, hosts int, o Options, flows []workload.Flow) (*Result, *probe) {
	t.Helper()
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = rate, rate
	tp := topo.Dumbbell(hosts, hosts, ti)
	o.MaxQPs = QPsNeeded(flows, 1)
	n, err := Build(tp, o)
	if err != nil {
		t.Fatal(err)
	}
	p := newProbe(n, 0, fabricPortOf(t, n, 0), 20*sim.Microsecond)
	res, err := n.Run(flows, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(flows) {
		t.Fatalf("completed %d of %d flows", res.Completed, len(flows))
	}
	balanced(t, res)
	return res, p
}

// TestDCQCNFairness: two flows through one 10 Gbit/s bottleneck with
// tord's built-in marking profile (40 KB / 160 KB / 20 % at that rate).
// With DCQCN they share it fairly and hold its queue between Kmin and
// Kmax; without, the queue sits at its limit, 224 KiB, below the two
// flows' 256 KiB in flight (Go-Back-N's 128-packet window each), and
// overflows.
func TestDCQCNFairness(t *testing.T) {
	const kmin, kmax, limit = 40_000, 160_000, 224 << 10
	sw := "ecn: {}\negress: {queue_limit: 224KiB}\n"
	// 32 MiB each: 27 ms side by side, many times DCQCN's timers
	// (rpg_time_reset 300 µs), so the last half is past convergence.
	flows := []workload.Flow{{Src: 0, Dst: 2, Size: 32 << 20, After: -1}, {Src: 1, Dst: 3, Size: 32 << 20, After: -1}}
	senders := []int{0, 1}
	for _, cc := range []string{"dcqcn", "none"} {
		res, p := dumbbellRun(t, 10e9, 2, Options{Seed: 1, CC: cc, Switch: sw, MaxMessage: 32 << 20}, flows)
		end := p.together(senders)
		half := end / 2
		j := p.jain(senders, half, end)
		band := p.share(half, end, kmin, kmax)
		above := p.share(half, end, kmax+1, limit)
		drops := res.Drops["queue_full"]
		t.Logf("%s: %d samples together; last half: Jain %.3f, depth in [Kmin, Kmax] %.0f %%, above Kmax %.0f %%; drops %d, marks %d, CNPs %d",
			cc, end+1, j, 100*band, 100*above, drops, res.ECNMarked, res.HostCounters["CNPsRecv"])
		if cc == "dcqcn" {
			if j < 0.9 || band < 0.5 || drops != 0 {
				t.Errorf("with DCQCN: Jain %.3f (want ≥ 0.9), in band %.0f %% of the time (want most), %d drops (want none)", j, 100*band, drops)
			}
		} else if above < 0.9 || drops == 0 {
			t.Errorf("without DCQCN: above Kmax %.0f %% of the time (want ≥ 90 %%), %d drops (want some)", 100*above, drops)
		}
	}
}

// TestDCQCNIncast: n senders at 10 Gbit/s into one receiver behind the
// other switch, the bottleneck's queue limited to 1 MiB, each flow
// keeping up to 1 MiB in flight (a 1,024-packet window): without a
// congestion control the queue overflows. With DCQCN, for 2 and 4
// senders, it stays below its limit and nothing is dropped there. At 8
// it does not: the first round trip's marks cut every sender to almost
// nothing for 700 µs, alpha decays meanwhile, and when the senders come
// back their cuts are too small to stop the queue (DCQCN's paper pairs
// it with PFC for such bursts); it still drops far less than without.
func TestDCQCNIncast(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		var senders []int
		for i := 0; i < n; i++ {
			senders = append(senders, i)
		}
		flows := workload.Incast(senders, 8, 8<<20)
		var drops [2]uint64
		for i, cc := range []string{"dcqcn", "none"} {
			o := Options{Seed: 1, CC: cc, Switch: "ecn: {}\negress: {queue_limit: 1MiB}\n", MaxMessage: 8 << 20, BDP: 1024}
			res, p := dumbbellRun(t, 10e9, 8, o, flows)
			drops[i] = res.Drops["queue_full"]
			t.Logf("%d senders, %s: peak depth %d B, drops %d, marks %d, CNPs %d, timeouts %d", n, cc, slices.Max(p.depth), drops[i],
				res.ECNMarked, res.HostCounters["CNPsRecv"], res.HostCounters["Timeouts"])
		}
		switch {
		case drops[1] == 0:
			t.Errorf("%d senders without DCQCN: no drop", n)
		case n <= 4 && drops[0] != 0:
			t.Errorf("%d senders with DCQCN: %d drops at the bottleneck", n, drops[0])
		case drops[0] >= drops[1]/2:
			t.Errorf("%d senders: %d drops with DCQCN, %d without", n, drops[0], drops[1])
		}
	}
}
