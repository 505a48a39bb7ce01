package fabric

import (
	"math/rand/v2"
	"testing"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// TestIRNTimeoutsSplit runs netrt-incast's IRN cell at 30 senders (seed
// 000 Fig. 8: 500 KB each, 10 µs apart, into one host at 50 Gbit/s,
// DCQCN; RTO_high 200 µs, RTO_low 100 µs, BDP-FC 32 packets), where
// nothing is dropped and yet IRN times out: the host counters split
// the endpoint's Timeouts into IRN's RTO_low and RTO_high expiries
// (TimeoutsLow, TimeoutsHigh), and every retransmission arrives as a
// duplicate. Most expiries are RTO_high's, on packets that had arrived
// while the receiver coalesced its ACK (every 16 in-order packets): with
// an ACK for every packet no RTO_high expires and nothing is resent
// (docs/experiments.md, netrt-incast).
func TestIRNTimeoutsSplit(t *testing.T) {
	tp := topo.LeafSpine(31, 1, 1, topo.Tiers{HostRate: 50e9, FabricRate: 50e9,
		HostDelay: 500 * sim.Nanosecond, FabricDelay: 500 * sim.Nanosecond})
	wl := workload.Spec{Name: "sequential-incast", Incast: 30, Racks: Racks(tp)}
	flows, err := wl.Flows(len(tp.Hosts()), 50e9, rand.New(rand.NewPCG(1, sim.Seed(1, 6))))
	if err != nil {
		t.Fatal(err)
	}
	run := func(transport string, ackEvery int) *Result {
		o := Options{Seed: 1, Transport: transport, CC: "dcqcn", BDP: 32, RTO: 200 * time.Microsecond,
			RTOLow: 100 * time.Microsecond, IRNAckEvery: ackEvery, MaxMessage: workload.SeqIncastSize,
			MaxQPs: QPsNeeded(flows, 1), Switch: "egress: {queue_limit: 1MiB}\necn: {}\n"}
		if transport == "gbn" {
			o.RTOLow = 0
		}
		res := runOnce(t, tp, o, flows)
		if res.Completed != len(flows) {
			t.Fatalf("%s: %d of %d flows completed", transport, res.Completed, len(flows))
		}
		return res
	}
	h := run("irn", 0).HostCounters
	t.Logf("irn: %d timeouts (%d RTO_low, %d RTO_high), %d retransmits, %d duplicates",
		h["Timeouts"], h["TimeoutsLow"], h["TimeoutsHigh"], h["Retransmits"], h["Duplicates"])
	switch {
	case h["TimeoutsLow"] == 0 || h["TimeoutsHigh"] == 0 || h["TimeoutsLow"]+h["TimeoutsHigh"] != h["Timeouts"]:
		t.Errorf("RTO_low %d + RTO_high %d expiries: want both and their sum the %d timeouts", h["TimeoutsLow"], h["TimeoutsHigh"], h["Timeouts"])
	case h["TimeoutsHigh"] <= h["TimeoutsLow"]:
		t.Errorf("RTO_high %d expiries, RTO_low %d: want RTO_high the one expiring", h["TimeoutsHigh"], h["TimeoutsLow"])
	case h["Retransmits"] == 0 || h["Duplicates"] != h["Retransmits"]:
		t.Errorf("%d retransmits, %d duplicates received: want every one resent spuriously", h["Retransmits"], h["Duplicates"])
	}
	a := run("irn", 1).HostCounters
	t.Logf("irn, an ACK per packet: %d timeouts (%d RTO_low, %d RTO_high), %d retransmits", a["Timeouts"], a["TimeoutsLow"], a["TimeoutsHigh"], a["Retransmits"])
	if a["TimeoutsHigh"] != 0 || a["Retransmits"] != 0 {
		t.Errorf("an ACK per packet: %d RTO_high expiries, %d retransmits: want none", a["TimeoutsHigh"], a["Retransmits"])
	}
	if g := run("gbn", 0).HostCounters; g["TimeoutsLow"] != 0 || g["TimeoutsHigh"] != 0 {
		t.Errorf("gbn: RTO_low %d, RTO_high %d: want IRN's counters left out", g["TimeoutsLow"], g["TimeoutsHigh"])
	}
}
