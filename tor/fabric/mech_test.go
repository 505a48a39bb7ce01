package fabric

import (
	"encoding/json"
	"math"
	"testing"

	"rocetor/tor/impair"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// Each mechanism runs a small experiment in the simulator, as CI can
// afford on every change: it must complete every flow, its own counters
// must show it at work, and a second run with the seed must give the
// same JSON, byte for byte.

const lossy = `
impair:
  rules: [{port: fabric, direction: egress, match: roce, loss: 0.01}]
`

func mech(t *testing.T, shape string, o Options, flows []workload.Flow) *Result {
	t.Helper()
	res := run(t, shape, o, func(int) []workload.Flow { return flows })
	again := run(t, shape, o, func(int) []workload.Flow { return flows })
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("two runs with one seed differ")
	}
	if res.Completed != len(flows) {
		t.Fatalf("completed %d of %d flows (%d failed)", res.Completed, len(flows), res.Failed)
	}
	return res
}

func both(size int) []workload.Flow {
	return []workload.Flow{{Src: 0, Dst: 1, Size: size, After: -1}, {Src: 1, Dst: 0, Size: size, After: -1}}
}

func incast(n, size int) []workload.Flow {
	var s []int
	for i := 1; i <= n; i++ {
		s = append(s, i)
	}
	return workload.Incast(s, 0, size)
}

// TestMechNetRT: NetRT between the chain's ToRs recovers the fabric's
// losses: its ToRs retransmit, GBN's hosts do not.
//
// Tail probes are on: without them no later packet shows the
// destination ToR a message's lost tail, and the host recovers it after
// a timeout (16 retransmissions, 16 pool entries expired, at seeds 1
// and 10). With them the hosts resend nothing at seeds 1–12.
func TestMechNetRT(t *testing.T) {
	o := Options{Seed: 1, Switch: "netrt: {fabric: [fabric], tail_probe: 20us}\n" + lossy}
	res := mech(t, "chain", o, both(256<<10))
	src := res.Stages["netrt_src"]
	if src["Ports.Retrans"]+src["Ports.Paced"] == 0 {
		t.Fatalf("NetRT retransmitted nothing: %v", src)
	}
	if h := res.HostCounters; h["Retransmits"] != 0 || h["Timeouts"] != 0 {
		t.Errorf("behind NetRT the hosts retransmitted %d packets and timed out %d times, want none", h["Retransmits"], h["Timeouts"])
	}
	// Each loss once, and a tail probe may resend a packet that was not
	// lost (its ACK was, or had not come back yet).
	if r, lost, probes := src["Ports.Retrans"], res.Stages["impair"]["Destroyed.data"], src["Ports.TailProbes"]; r < lost || r > lost+probes {
		t.Errorf("NetRT's ToRs retransmitted %d packets for %d data packets lost and %d tail probes", r, lost, probes)
	}
	off := run(t, "chain", Options{Seed: 2, Switch: lossy}, func(int) []workload.Flow { return both(256 << 10) })
	if on, e2e := res.HostCounters["Retransmits"], off.HostCounters["Retransmits"]; on >= e2e {
		t.Errorf("end-to-end retransmissions: %d with NetRT, %d without", on, e2e)
	}
	t.Logf("netrt_src %v; host retransmits %d (without NetRT %d); impair %v", src, res.HostCounters["Retransmits"], off.HostCounters["Retransmits"], res.Stages["impair"])
}

// TestMechTrim: DCP's trimming switch turns the incast's excess into
// header-only packets, which DCP's RNIC retransmits from.
func TestMechTrim(t *testing.T) {
	o := Options{Seed: 1, Transport: "dcp", Switch: "trim: {}\negress: {queue_limit: 256KiB}\n"}
	res := mech(t, "dumbbell:hosts=4", o, incast(3, 512<<10))
	if res.Stages["trim"]["Ports.Trimmed"] == 0 {
		t.Fatalf("nothing trimmed: %v", res.Stages["trim"])
	}
	if h := res.HostCounters; h["Retransmits"] != res.Stages["trim"]["Ports.Trimmed"] || h["Timeouts"] != 0 {
		t.Errorf("DCP retransmitted %d packets for %d trimmed, with %d timeouts: want exactly the trimmed ones, no timeout",
			h["Retransmits"], res.Stages["trim"]["Ports.Trimmed"], h["Timeouts"])
	}
	t.Logf("trim %v; hosts %v", res.Stages["trim"], res.HostCounters["Retransmits"])
}

// TestMechLLR: link-local retransmission on the lossy switch-to-switch
// link recovers its losses before the hosts see them.
func TestMechLLR(t *testing.T) {
	o := Options{Seed: 1, Switch: "llr: {ports: [fabric]}\n" + lossy}
	res := mech(t, "link", o, both(256<<10))
	if res.Stages["llr"]["Ports.Retransmitted"] == 0 {
		t.Fatalf("llr retransmitted nothing: %v", res.Stages["llr"])
	}
	if r := res.HostCounters["Timeouts"]; r > 0 {
		t.Errorf("%d host timeouts behind llr", r)
	}
	l := res.Stages["llr"]
	if l["Ports.AckTimeouts"] != 0 || l["Ports.Skipped"] != 0 {
		t.Errorf("llr gave up %d times, skipping %d sequences", l["Ports.AckTimeouts"], l["Ports.Skipped"])
	}
	if r := res.HostCounters["Retransmits"]; r != 0 {
		t.Errorf("the hosts retransmitted %d packets behind llr", r)
	}
	if l["Ports.Retransmitted"] != l["Ports.LossesDetected"] || l["Ports.Retransmitted"] < res.Stages["impair"]["Destroyed.data"] {
		t.Errorf("llr retransmitted %d frames for %d losses detected, %d data frames lost", l["Ports.Retransmitted"],
			l["Ports.LossesDetected"], res.Stages["impair"]["Destroyed.data"])
	}
	t.Logf("llr %v; host retransmits %d; impair %v", res.Stages["llr"], res.HostCounters["Retransmits"], res.Stages["impair"])
}

// TestMechSR: IRN's and FaSR's selective repeat recover the fabric's
// losses end to end.
func TestMechSR(t *testing.T) {
	for _, tr := range []string{"irn", "fasr", "gbn"} {
		t.Run(tr, func(t *testing.T) {
			res := mech(t, "chain", Options{Seed: 1, Transport: tr, Switch: lossy}, both(256<<10))
			h := res.HostCounters
			if h["Retransmits"] == 0 {
				t.Fatal("no retransmission on a lossy fabric")
			}
			if tr != "gbn" {
				// Selective repeat: each lost data packet is sent
				// again once; what a lost ACK or NAK made it resend
				// arrives as a duplicate. No timeouts.
				if lost := res.Stages["impair"]["Destroyed.data"]; h["Retransmits"]-h["Duplicates"] != lost || h["Timeouts"] != 0 {
					t.Errorf("%d retransmissions, %d duplicates, %d timeouts for %d data packets lost", h["Retransmits"],
						h["Duplicates"], h["Timeouts"], lost)
				}
			}
			t.Logf("%s: retransmits %d, timeouts %d, p99 slowdown %.2f; impair %v; hosts %v", tr, res.HostCounters["Retransmits"],
				res.HostCounters["Timeouts"], res.All.P99Slowdown, res.Stages["impair"], res.HostCounters)
		})
	}
}

// TestMechDCP: loss on the wire, trimmed as dcp-loss trims it (core's
// port toward the receiver's ToR trims the DCP data it picks): DCP
// resends exactly the trimmed packets and never times out.
func TestMechDCP(t *testing.T) {
	core := "impair:\n  rules: [{port: tor2, direction: egress, match: fabric, loss: 0.01, trim: true}]\n"
	o := Options{Seed: 1, Transport: "dcp", SwitchFor: map[string]string{"core": core}}
	res := mech(t, "chain", o, []workload.Flow{{Src: 0, Dst: 1, Size: 1 << 20, After: -1}})
	h, trimmed := res.HostCounters, res.Stages["impair"]["Dir.Trimmed"]
	if trimmed == 0 || h["Retransmits"] != trimmed || h["Timeouts"] != 0 {
		t.Errorf("%d trimmed, %d retransmitted, %d timeouts: want as many retransmitted as trimmed, no timeout",
			trimmed, h["Retransmits"], h["Timeouts"])
	}
}

// TestMechPFC: PFC on buffer thresholds makes the incast lossless where
// the same queues without it drop: no drop, no retransmission, no
// timeout, and the senders' ToR ports paused.
func TestMechPFC(t *testing.T) {
	q := "egress: {queue_limit: 128KiB}\n"
	res := mech(t, "dumbbell:hosts=4", Options{Seed: 1, Switch: q + "pfc: {xoff: 16KiB, xon: 8KiB}\n"}, incast(3, 512<<10))
	h := res.HostCounters
	if len(res.Drops) != 0 || h["Retransmits"] != 0 || h["Timeouts"] != 0 {
		t.Errorf("with PFC: drops %v, %d retransmissions, %d timeouts: want none", res.Drops, h["Retransmits"], h["Timeouts"])
	}
	if res.PFCFrames == 0 || res.HostPFCPauseNs == 0 {
		t.Errorf("%d PFC frames, senders paused %d ns: the incast never paused a sender", res.PFCFrames, res.HostPFCPauseNs)
	}
	off := run(t, "dumbbell:hosts=4", Options{Seed: 1, Switch: q}, func(int) []workload.Flow { return incast(3, 512<<10) })
	if off.Drops["queue_full"] == 0 {
		t.Errorf("without PFC the incast dropped nothing (%v): the test shows nothing", off.Drops)
	}
	t.Logf("PFC frames %d, hosts paused %d ns, switches %d ns, p99 slowdown %.2f; without: drops %v, retransmits %d", res.PFCFrames, res.HostPFCPauseNs, res.PFCPauseNs,
		res.All.P99Slowdown, off.Drops, off.HostCounters["Retransmits"])
}

// TestMechDCQCN: ECN marking at the incast's bottleneck and DCQCN's
// CNPs.
func TestMechDCQCN(t *testing.T) {
	o := Options{Seed: 1, CC: "dcqcn", Switch: "ecn: {}\n"}
	res := mech(t, "dumbbell:hosts=4", o, incast(3, 512<<10))
	if res.ECNMarked == 0 || res.HostCounters["CNPsSent"] == 0 {
		t.Fatalf("marks %d, CNPs %d", res.ECNMarked, res.HostCounters["CNPsSent"])
	}
	t.Logf("marks %d, CNPs sent %d received %d", res.ECNMarked, res.HostCounters["CNPsSent"], res.HostCounters["CNPsRecv"])
}

// TestWireImpairment: loss on the wire, tor/impair's model wrapped on
// the switch ports, destroys the share of frames it is set to, within
// three standard deviations; and every frame the wire lost is
// recovered.
func TestWireImpairment(t *testing.T) {
	const p = 0.02
	o := Options{Seed: 5, Transport: "irn", Switch: "impair:\n  rules: [{port: fabric, direction: egress, loss: 0.02}]\n"}
	tp, err := topo.Parse("link", topo.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	n, err := Build(tp, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run([]workload.Flow{{Src: 0, Dst: 1, Size: 4 << 20, After: -1}}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	if res.Completed != 1 {
		t.Fatalf("flow not completed")
	}
	var matched, lost uint64
	for _, s := range n.Switches {
		for _, ip := range s.Pipe.Impairs {
			d := ip.Counters().Dir[impair.Egress]
			matched += d.Matched
			lost += d.Caused(impair.CauseLoss)
		}
	}
	rate := float64(lost) / float64(matched)
	sd := math.Sqrt(p * (1 - p) / float64(matched))
	if math.Abs(rate-p) > 3*sd {
		t.Fatalf("lost %d of %d frames (%.4f), want %.2f ± %.4f", lost, matched, rate, p, 3*sd)
	}
	t.Logf("lost %d of %d (%.4f); host retransmits %d", lost, matched, rate, res.HostCounters["Retransmits"])
}

// TestMultipath: the routes from the topology give the multipath modes
// every path: one flow sprayed, or adaptively routed over uplinks a
// quarter of its rate, crosses all four cores; ECMP keeps it on one.
func TestMultipath(t *testing.T) {
	for _, c := range []struct {
		mode  string
		cores int
	}{{"ecmp", 1}, {"spray", 4}, {"adaptive", 4}} {
		t.Run(c.mode, func(t *testing.T) {
			ti := topo.DefaultTiers()
			ti.FabricRate = 25e9
			tp, err := topo.Parse("multipath:paths=4", ti)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Build(tp, Options{Seed: 1, Transport: "irn", Switch: "forwarding: {multipath: " + c.mode + "}\n"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := n.Run([]workload.Flow{{Src: 0, Dst: 1, Size: 2 << 20, After: -1}}, RunOptions{})
			if err != nil || res.Completed != 1 {
				t.Fatalf("completed %v, %v", res, err)
			}
			balanced(t, res)
			used := 0
			for _, s := range res.SwitchResults {
				if len(s.Name) > 4 && s.Name[:4] == "core" && len(s.Ports) > 0 {
					used++
				}
			}
			// ECMP: the data takes one core, the ACKs perhaps another.
			if c.mode == "ecmp" && used > 2 || c.mode != "ecmp" && used != c.cores {
				t.Fatalf("%s: %d cores carried traffic", c.mode, used)
			}
		})
	}
}

// TestHeldFrames: frames an impaired port holds — copies waiting for a
// busy wire, frames delayed or held back to reorder — leave when due,
// and a node whose held frames wait for its wire sleeps until the wire
// frees instead of stepping every nanosecond.
func TestHeldFrames(t *testing.T) {
	rules := "impair:\n  rules: [{port: fabric, direction: egress, match: roce, duplicate: 0.3, reorder: {p: 0.05, delay: 3us}, delay: {mean: 2us, jitter: 1us}}]\n"
	tp, err := topo.Parse("link", topo.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	n, err := Build(tp, Options{Seed: 2, Transport: "irn", Switch: rules})
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run([]workload.Flow{{Src: 0, Dst: 1, Size: 1 << 20, After: -1}, {Src: 1, Dst: 0, Size: 1 << 20, After: -1}}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	if res.Completed != 2 {
		t.Fatalf("completed %d of 2", res.Completed)
	}
	im := res.Stages["impair"]
	if im["Dir.Duplicated"] == 0 || im["Dir.Reordered"] == 0 || im["Dir.Delayed"] == 0 {
		t.Fatalf("impairment did nothing: %v", im)
	}
	// A wire-free wake per frame and a step per arrival, about: a node
	// that polled its held frames every nanosecond took 18 steps a
	// packet-hop here.
	if res.Steps > 4*res.PacketHops {
		t.Fatalf("%d steps (%d idle) for %d packet-hops: a node polls", res.Steps, res.IdleSteps, res.PacketHops)
	}
	t.Logf("impair %v; %d steps, %d idle; %d events", im, res.Steps, res.IdleSteps, res.Events)
}
