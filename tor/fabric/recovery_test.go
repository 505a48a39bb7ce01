package fabric

import (
	"testing"
)

// TestResultSR: a run's result carries the hosts' SR memory by the one
// accounting (nic.SRState) and, for fasr, its counters and pool use.
func TestResultSR(t *testing.T) {
	for _, tr := range []string{"gbn", "irn", "fasr"} {
		res := mech(t, "chain", Options{Seed: 1, Transport: tr, Switch: lossy}, both(256<<10))
		sr := res.SR
		if sr.QPs == 0 || sr.HostBytes != sr.PerQPBytes*sr.QPs+sr.SharedBytes {
			t.Errorf("%s: SR %+v: want the QPs' bytes and the shared", tr, sr)
		}
		switch tr {
		case "gbn":
			if sr.HostBytes != 0 || sr.FaSR != nil {
				t.Errorf("gbn keeps SR state: %+v", sr)
			}
		case "irn":
			if sr.PerQPBytes == 0 || sr.SharedBytes != 0 || sr.FaSR != nil {
				t.Errorf("irn: %+v: want per-QP state only", sr)
			}
		case "fasr":
			f := sr.FaSR
			if sr.SharedBytes == 0 || f["Units"] == 0 || f["PeakUnits"] == 0 || f["FastOps"] == 0 {
				t.Errorf("fasr: %+v: want a shared pool, used, and its fast path", sr)
			}
		}
	}
}

// TestResultLLRPorts: the impaired links and both ends of a protected
// one are in the result, each end with the link's rate and what it
// sent and received.
func TestResultLLRPorts(t *testing.T) {
	o := Options{Seed: 1, Switch: "llr: {ports: [fabric]}\n",
		LinkLoss: &LinkLoss{Links: []LinkRate{{A: "tor1", B: "tor2", Rate: 0.01, Corrupt: true}}}}
	res := mech(t, "link", o, both(256<<10))
	if len(res.Links) != 1 || res.Links[0].Rate != 0.01 || !res.Links[0].Corrupt {
		t.Fatalf("links %+v: want tor1-tor2 corrupting at 0.01", res.Links)
	}
	ends := map[string]LLRPortResult{}
	for _, p := range res.LLRPorts {
		ends[p.Switch+">"+p.Port] = p
	}
	a, b := ends["tor1>tor2"], ends["tor2>tor1"]
	if len(ends) != 2 || a.Rate != 0.01 || b.Rate != 0.01 {
		t.Fatalf("protected ports %+v: want tor1's and tor2's, at the link's rate", res.LLRPorts)
	}
	for _, p := range []LLRPortResult{a, b} {
		if p.Protected == 0 || p.Expected == 0 || p.TxBytesMax == 0 {
			t.Errorf("%s %s: %+v: want frames protected, expected and buffered", p.Switch, p.Port, p)
		}
	}
	if a.LossesDetected+b.LossesDetected == 0 || a.Retransmitted+b.Retransmitted == 0 {
		t.Errorf("no loss found or resent at 1 %%: %+v %+v", a, b)
	}
}
