package fabric

import (
	"encoding/json"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// ringFlows has every host of the five-switch ring send to the host
// two switches on: each switch's ring port carries its own host's flow
// and the one passing through, twice what the link takes.
func ringFlows(size int) []workload.Flow {
	var fs []workload.Flow
	for i := 0; i < 5; i++ {
		fs = append(fs, workload.Flow{Src: i, Dst: (i + 2) % 5, Size: size, After: -1})
	}
	return fs
}

func ringRun(t *testing.T, sw string, until sim.Time) *Result {
	t.Helper()
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = 10e9, 10e9
	tp, err := topo.Parse("file:../topo/testdata/ring5.topo", ti)
	if err != nil {
		t.Fatal(err)
	}
	flows := ringFlows(512 << 10)
	n, err := Build(tp, Options{Seed: 1, Switch: sw, MaxQPs: QPsNeeded(flows, 1)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(flows, RunOptions{Until: until})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPFCDeadlockRing: PFC on buffer thresholds deadlocks the ring —
// every ring port is paused by the next switch, whose queue for the
// switch after is paused in turn — and no flow completes in 200 ms of
// simulated time. The PFC watchdog finds the stalled queues and, by
// dropping what they hold or by sending it in spite of the pauses,
// breaks the cycle: every flow completes, and the storms are counted.
func TestPFCDeadlockRing(t *testing.T) {
	const pfc = "egress: {queue_limit: 256KiB}\npfc:\n  xoff: 64KiB\n  xon: 32KiB\n"
	const until = 200 * sim.Millisecond
	stuck := ringRun(t, pfc, until)
	if stuck.Completed != 0 {
		t.Fatalf("without the watchdog the ring completed %d flows: no deadlock to break (%d PFC frames)", stuck.Completed, stuck.PFCFrames)
	}
	for _, action := range []string{"drop", "forward"} {
		res := ringRun(t, pfc+"  watchdog: {detection: 1ms, restoration: 2ms, action: "+action+"}\n", until)
		var storms, restores uint64
		for _, s := range res.SwitchResults {
			for _, p := range s.Ports {
				storms += p.WDStorms
				restores += p.WDRestores
			}
		}
		// Forwarding, the switches still pause each other until the
		// last flow completes, which ends the run: nothing restores.
		if res.Completed != len(ringFlows(0)) || storms == 0 || action == "drop" && restores == 0 {
			t.Fatalf("%s: completed %d of %d flows, %d storms, %d restored", action, res.Completed, len(ringFlows(0)), storms, restores)
		}
		if action == "drop" {
			// The watchdog runs on the worker's clock: a run repeats.
			again := ringRun(t, pfc+"  watchdog: {detection: 1ms, restoration: 2ms, action: drop}\n", until)
			if a, b := mustJSON(t, res), mustJSON(t, again); a != b {
				t.Error("two runs with one seed differ")
			}
		}
		if d := res.Drops["pfc_watchdog"]; (d > 0) != (action == "drop") {
			t.Errorf("%s: %d frames dropped by the watchdog", action, d)
		}
		t.Logf("%s: %d storms, %d restored, drops %v, host retransmits %d, p99 slowdown %.1f", action, storms, restores,
			res.Drops, res.HostCounters["Retransmits"], res.All.P99Slowdown)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSharedBufferHeadroom: the shared-buffer incast of
// TestSharedBufferIncast with PFC on a static xoff the pool never lets
// a queue reach. Without headroom the dynamic thresholds drop; with a
// headroom per lossless port, kept out of the pool, the frames they
// refuse go into headroom and pause the senders instead: no drop.
func TestSharedBufferHeadroom(t *testing.T) {
	const senders = 6
	ti := topo.Tiers{HostRate: 1e9, FabricRate: 10e9, HostDelay: 2 * sim.Microsecond, FabricDelay: 2 * sim.Microsecond}
	var flows []workload.Flow
	for s := 0; s < senders; s++ {
		dst := senders
		if s >= 4 {
			dst = senders + 1
		}
		for k := 0; k < 8; k++ {
			flows = append(flows, workload.Flow{Src: s, Dst: dst, Size: 64 << 10, After: -1})
		}
	}
	run := func(pfc string) *Result {
		t.Helper()
		n, err := Build(topo.Dumbbell(senders, 2, ti), Options{Seed: 1, Switch: sharedBufferYAML + pfc, MaxQPs: QPsNeeded(flows, 1)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := n.Run(flows, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != len(flows) {
			t.Fatalf("%q: completed %d of %d flows", pfc, res.Completed, len(flows))
		}
		return res
	}
	const pfc = "pfc:\n  xoff: 512KiB\n  xon: 256KiB\n"
	without := run(pfc)
	if without.Drops["buffer_threshold"] == 0 {
		t.Fatalf("without headroom nothing met a threshold (drops %v): the test shows nothing", without.Drops)
	}
	with := run(pfc + "  headroom: 16KiB\n")
	if len(with.Drops) != 0 || with.PFCFrames == 0 {
		t.Fatalf("with headroom: drops %v, %d PFC frames: want no drop, senders paused", with.Drops, with.PFCFrames)
	}
	t.Logf("without headroom: drops %v, %d host retransmits; with: %d PFC frames, p99 slowdown %.2f",
		without.Drops, without.HostCounters["Retransmits"], with.PFCFrames, with.All.P99Slowdown)
}
