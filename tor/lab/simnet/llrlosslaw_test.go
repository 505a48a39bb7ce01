package simnet

import (
	"math"
	"strconv"
	"testing"
)

// TestLLRLossLawCI asserts seed 003's §4.1 law on one corrupting link of
// rocetor's llr (llr-loss-law at ci: 100,000 data packets a cell) and
// what rocetor shows beside it: under the law's own conditions (only
// the data's direction corrupts, no notice retry) the effective loss
// is p^(k+1) within a factor of 3 where it is countable, and a second
// copy divides it by ten at least; on a link corrupting both ways the
// loss notice's own loss makes it about p·(p+p^k), far above p^(k+1)
// with two copies; tor/llr's notice retry gives nothing up at any rate
// of the run.
func TestLLRLossLawCI(t *testing.T) {
	res := runResults(t, "llr-loss-law", "--scale", "ci")
	runs := fabricRuns(t, res, "case", "copies", "rate")
	eff := func(k string) float64 {
		r := runs[k]
		if r == nil || r.Extra["expected"] < 90_000 {
			t.Fatalf("%s: no run, or too few sequences: %v", k, r)
		}
		return r.Extra["skipped"] / r.Extra["expected"]
	}
	within := func(k string, want float64) {
		if got := eff(k); !(got >= want/3 && got <= 3*want) {
			t.Errorf("%s: effective loss %.3g, want %.3g within a factor of 3", k, got, want)
		}
	}
	for _, p := range []float64{0.03, 0.01} {
		within("protego-oneway/1/"+strconv.FormatFloat(p, 'g', -1, 64), p*p)
	}
	if one, two := eff("protego-oneway/1/0.03"), eff("protego-oneway/2/0.03"); !(two > 0 && two <= 3*math.Pow(0.03, 3) && two*10 <= one) {
		t.Errorf("one way at 3e-2: effective loss %.3g with one copy, %.3g with two; want two copies within 3 × p³ (%.3g), > 0, and a tenth of one's at most",
			one, two, math.Pow(0.03, 3))
	}
	both := eff("protego/2/0.03")
	within("protego/2/0.03", 0.03*(0.03+0.03*0.03))
	if both < 10*math.Pow(0.03, 3) {
		t.Errorf("both ways without notice retry at 3e-2: effective loss %.3g, want the lost notices' ≥ 10 × p³", both)
	}
	for k, r := range runs {
		if len(k) > 8 && k[:8] == "rocetor/" && (r.Extra["skipped"] != 0 || r.Extra["lost"] == 0) {
			t.Errorf("%s: %v lost, %v skipped: want losses, none given up (notice retry)", k, r.Extra["lost"], r.Extra["skipped"])
		}
	}
	if r := runs["rocetor/2/0.03"]; r.Extra["notice_retries"] == 0 {
		t.Errorf("rocetor at 3e-2: no notice retried: the run did not test the retry")
	}
}
