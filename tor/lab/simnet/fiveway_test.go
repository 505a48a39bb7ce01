package simnet

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

// TestFiveWayCI is five-way at --scale ci (a leaf-spine of 8 hosts,
// 500 µs of WebSearch, a 6-to-1 incast; every scheme, scenario and
// congestion control: 60 cells): the mechanisms' outcomes, as rocetor
// shows them (docs/experiments.md, five-way).
//
//   - Every scheme completes every flow in every cell, but DCP where
//     corruption reaches it: a corrupted frame is destroyed, not
//     trimmed, so DCP has no header-only packet to resend from and
//     falls back to its coarse timeout, which resends the whole message
//     and recounts it from zero (seed 002 §4.5); a 3 MB message at 1e-3
//     on two fabric links rarely arrives whole, and after RetryLimit
//     expiries the work request fails.
//   - Under corruption alone, every scheme with llr on the fabric links
//     (which covers every lossy link) resends nothing end to end and
//     never times out; DCP behind llr completes every flow.
//   - NetRT on every ToR recovers every gap but those whose recovery
//     outlasts its 128-packet bitmap (WaitSpan): the hosts resend end
//     to end only then.
//   - PFC drops nothing anywhere, and pauses under the incast; the
//     incast does congest (lossy GBN drops), and DCP trims instead of
//     dropping.
func TestFiveWayCI(t *testing.T) {
	if e, ok := lab.Find("five-way"); !ok || e.NoTestbed == "" || e.NoSim != "" {
		t.Fatalf("five-way's entry: %+v: want the simulator's alone", e)
	}
	res := runResults(t, "five-way", "--scale", "ci")
	runs := map[string]*lab.FabricRun{}
	for i := range res.Runs {
		r := &res.Runs[i]
		if r.Error != "" || r.Fabric == nil {
			t.Fatalf("%v: %s", r.Point, r.Error)
		}
		runs[r.Point["scenario"]+"/"+r.Point["cc"]+"/"+r.Point["scheme"]] = r.Fabric
	}
	if len(runs) != 60 {
		t.Fatalf("%d cells, want 3 scenarios × 2 ccs × 10 schemes", len(runs))
	}
	for _, k := range slices.Sorted(maps.Keys(runs)) {
		p := strings.Split(k, "/")
		checkFiveWayCell(t, k, p[0], p[2], runs[k])
	}
}

func checkFiveWayCell(t *testing.T, k, scen, scheme string, f *lab.FabricRun) {
	t.Helper()
	h, done := f.HostCounters, f.Completed == f.Flows
	dcpHit := scheme == "dcp" && scen != "incast" || scheme == "dcp+llr" && scen == "both"
	switch {
	case !dcpHit && !done:
		t.Errorf("%s: %d of %d flows completed", k, f.Completed, f.Flows)
	case scheme == "dcp" && scen == "corrupt" && (done || h["CompletionsErr"] == 0 || h["Timeouts"] == 0):
		t.Errorf("%s: %d of %d flows, %d failed, %d timeouts: DCP completes under corruption now; assert it here",
			k, f.Completed, f.Flows, h["CompletionsErr"], h["Timeouts"])
	}
	if scen != "incast" && fiveCorrupted(f) == 0 {
		t.Errorf("%s: no frame corrupted", k)
	}
	if scen == "corrupt" && strings.Contains(scheme, "llr") {
		if h["Retransmits"] != 0 || h["Timeouts"] != 0 || f.Stages["llr"]["Ports.Retransmitted"] == 0 {
			t.Errorf("%s: %d e2e retransmissions, %d timeouts, llr resent %d: want none, none, some", k, h["Retransmits"], h["Timeouts"],
				f.Stages["llr"]["Ports.Retransmitted"])
		}
	}
	if scen == "corrupt" && scheme == "netrt" {
		d := f.Stages["netrt_dst"]
		if d["Ports.Gaps"] == 0 || d["Ports.Recovered"]+d["Ports.WaitSpan"] != d["Ports.Gaps"] || h["Timeouts"] != 0 ||
			(d["Ports.WaitSpan"] == 0) != (h["Retransmits"] == 0) {
			t.Errorf("%s: NetRT saw %d gaps, recovered %d, %d past its bitmap; hosts resent %d, %d timeouts", k, d["Ports.Gaps"],
				d["Ports.Recovered"], d["Ports.WaitSpan"], h["Retransmits"], h["Timeouts"])
		}
	}
	switch {
	case scheme == "gbn+pfc" && len(f.Drops) != 0:
		t.Errorf("%s: PFC dropped %v", k, f.Drops)
	case scheme == "gbn+pfc" && scen != "corrupt" && f.PFCFrames == 0:
		t.Errorf("%s: the incast never paused", k)
	case scheme == "gbn" && scen != "corrupt" && f.Drops["queue_full"] == 0:
		t.Errorf("%s: the incast dropped nothing", k)
	case strings.HasPrefix(scheme, "dcp") && scen != "corrupt" && (f.Stages["trim"]["Ports.Trimmed"] == 0 || f.Drops["queue_full"] != 0):
		t.Errorf("%s: DCP trimmed %d, dropped %d on full queues", k, f.Stages["trim"]["Ports.Trimmed"], f.Drops["queue_full"])
	}
}

// fiveCorrupted are the frames the links' corruption destroyed.
func fiveCorrupted(f *lab.FabricRun) int64 {
	var n int64
	for k, v := range f.Stages["impair"] {
		if strings.HasPrefix(k, "Destroyed.") {
			n += v
		}
	}
	return n
}
