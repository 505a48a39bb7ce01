package simnet

import (
	"testing"

	"rocetor/tor/lab"
)

// TestFiveWayFaSRPool is why FaSR resends more than one packet per drop
// under five-way's ci incast (seed 1, no DCQCN; docs/experiments.md,
// five-way): its shared SR pool, sized for the 160-packet window (7
// units, 23 bitmap blocks of 16 bits, seed 001 §III-D's 20 and 70 per
// 500 packets), runs out of blocks while the receiver's QPs recover
// from the incast's long runs of losses, and each recovery that finds
// none falls back to Go-Back-N (§III-C): the receiver discards what
// arrives out of order and the sender resends from UNACK, packets that
// had arrived included. With the pool sized for the seed's 500 packets
// (--fasr-pool-bdp 500, one change) no recovery falls back, and FaSR
// resends exactly what the switches dropped, as IRN does.
func TestFiveWayFaSRPool(t *testing.T) {
	cell := func(args ...string) *lab.FabricRun {
		res := runResults(t, "five-way", append([]string{"--scale", "ci", "--scenarios", "incast", "--schemes", "fasr", "--cc", "none"}, args...)...)
		if len(res.Runs) != 1 || res.Runs[0].Fabric == nil {
			t.Fatalf("%d runs: want one", len(res.Runs))
		}
		return res.Runs[0].Fabric
	}
	drops := func(f *lab.FabricRun) int64 { return int64(f.Drops["queue_full"]) }
	d := cell()
	fa, h := d.SR.FaSR, d.HostCounters
	t.Logf("pool for 160: %d drops, %d resent (%d for SACKs, %d Go-Back-N, %d after expiries), %d fallbacks, %d duplicates",
		drops(d), h["Retransmits"], fa["SACKRetransmits"], fa["GBNResends"], fa["RestartResends"], fa["GBNFallbacks"], h["Duplicates"])
	switch {
	case drops(d) == 0 || h["Retransmits"] <= drops(d):
		t.Errorf("%d drops, %d resent: want more resent than dropped", drops(d), h["Retransmits"])
	case fa["SACKRetransmits"]+fa["GBNResends"]+fa["RestartResends"] != h["Retransmits"]:
		t.Errorf("FaSR's resends %d + %d + %d: want the hosts' %d", fa["SACKRetransmits"], fa["GBNResends"], fa["RestartResends"], h["Retransmits"])
	case fa["BlocksExhausted"] == 0 || fa["GBNFallbacks"] == 0 || fa["GBNResends"] == 0 || fa["PeakBlocks"] != fa["Blocks"]:
		t.Errorf("blocks exhausted %d, fallbacks %d, Go-Back-N resends %d, peak %d of %d blocks: want the pool run out",
			fa["BlocksExhausted"], fa["GBNFallbacks"], fa["GBNResends"], fa["PeakBlocks"], fa["Blocks"])
	case h["Timeouts"] != 0:
		t.Errorf("%d timeouts: want none", h["Timeouts"])
	}
	s := cell("--fasr-pool-bdp", "500")
	fa, h = s.SR.FaSR, s.HostCounters
	t.Logf("pool for 500: %d drops, %d resent, %d fallbacks, peak %d of %d blocks", drops(s), h["Retransmits"], fa["GBNFallbacks"], fa["PeakBlocks"], fa["Blocks"])
	if h["Retransmits"] != drops(s) || fa["GBNFallbacks"] != 0 || fa["BlocksExhausted"] != 0 || h["Duplicates"] != 0 {
		t.Errorf("pool for 500: %d drops, %d resent, %d fallbacks, %d blocks exhausted, %d duplicates: want one resend a drop and no fallback",
			drops(s), h["Retransmits"], fa["GBNFallbacks"], fa["BlocksExhausted"], h["Duplicates"])
	}
}
