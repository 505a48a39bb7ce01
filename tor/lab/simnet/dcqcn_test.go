package simnet

import (
	"encoding/json"
	"math"
	"testing"

	"rocetor/tor/lab"
)

// The testbed's delays as the simulator's: ~300 µs between two hosts of
// the dumbbell (three links each way) is what the testbed's software
// round trip is (Backend.HostDelay), so DCQCN's feedback is as late.
var testbedDelays = []string{"--delay", "50us", "--fabric-delay", "50us"}

// flowCC is what a transfer's endpoints reported of DCQCN (roceperf's
// JSON, which the simulator writes too).
type flowCC struct {
	CNPsReceived int64 `json:"cnps_received"`
	CC           *struct {
		Rate struct {
			Mean float64 `json:"mean_bps"`
			Min  float64 `json:"min_bps"`
		} `json:"rate"`
	} `json:"cc"`
	Server struct {
		CEReceived int64 `json:"ce_received"`
		CNPsSent   int64 `json:"cnps_sent"`
	} `json:"server"`
}

// TestDCQCNIncastBinds: dcqcn-incast at the testbed's parameters (the
// experiment's defaults: 4 senders at 200 Mbit/s into a 200 Mbit/s port
// whose queue, 448 KiB, is below their four Go-Back-N windows). Without
// DCQCN the bottleneck overflows; with it nothing drops there, the
// queue stays well below its limit, each sender's DCQCN rate falls to
// about its share of the port, and the receivers' notification points
// answer the CE marks with CNPs: at least 90 % of the marks divided by
// the frames a QP receives per min_time_between_cnps.
func TestDCQCNIncastBinds(t *testing.T) {
	res := runResults(t, "dcqcn-incast", append(testbedDelays, "--sample", "10ms", "--count", "128")...)
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2 (dcqcn, none)", len(res.Runs))
	}
	const line, senders, cnpInterval = 200e6, 4, 200e-6 // testbedDCQCN's min_time_between_cnps
	for _, r := range res.Runs {
		if r.Error != "" || r.Series == nil {
			t.Fatalf("%v: error %q, series %v", r.Point, r.Error, r.Series != nil)
		}
		s := r.Series
		drops := s.Drops[len(s.Drops)-1]
		d := s.DepthStats()
		t.Logf("cc %s: %v drops, depth max %.0f KB of %.0f KB, %.0f%% of samples in [Kmin, Kmax]", r.Point["cc"], drops,
			d.Max/1e3, s.Limit/1e3, d.InBand*100)
		if r.Point["cc"] == "none" {
			if drops == 0 {
				t.Errorf("without DCQCN: no drop at the bottleneck: its queue holds the senders' windows")
			}
			continue
		}
		if drops != 0 || d.Max > 0.6*s.Limit || d.InBand < 0.5 {
			t.Errorf("with DCQCN: %v drops, depth max %.0f of %.0f bytes, %.0f%% in band; want none, below 60 %% of the limit, mostly in band",
				drops, d.Max, s.Limit, d.InBand*100)
		}
		if len(s.CCRate) != senders {
			t.Fatalf("rate traces of %d senders, want %d", len(s.CCRate), senders)
		}
		for i, f := range r.Flows {
			checkRateFalls(t, i, s.CCRate[i], line, line/senders)
			checkCNPs(t, i, f, cnpInterval)
		}
	}
}

// checkRateFalls: a sender's DCQCN rate trace starts at the line rate
// and falls under congestion, to a mean near its share.
func checkRateFalls(t *testing.T, i int, trace []float64, line, share float64) {
	t.Helper()
	var mean float64
	lowest := line
	for _, v := range trace[1:] {
		mean += v
		lowest = min(lowest, v)
	}
	mean /= float64(len(trace) - 1)
	t.Logf("sender %d: DCQCN rate from %.0f Mbit/s: lowest %.0f, mean %.0f Mbit/s", i, trace[0]/1e6, lowest/1e6, mean/1e6)
	if trace[0] != line || lowest > share || mean > 1.5*share || mean < 0.5*share {
		t.Errorf("sender %d: DCQCN rate starts at %.0f, lowest %.0f, mean %.0f Mbit/s; want from the line rate down to about %.0f",
			i, trace[0]/1e6, lowest/1e6, mean/1e6, share/1e6)
	}
}

// checkCNPs: the receiver answered its CE marks with CNPs at least as
// often as min_time_between_cnps lets it, within 10 %: marks ÷ the
// frames of the QP one interval spans. With the QP's frames d apart, a
// CNP holds back the marks of the next ⌈interval/d⌉ − 1 frames at
// most, so a notification point that timestamps each frame answers at
// least one mark in ⌈interval/d⌉; one on the batch clock answers one
// mark per receive batch, fewer when batches hold several frames of a
// QP (TestDCQCNStalledReceivers).
func checkCNPs(t *testing.T, i int, f *lab.PerfResult, interval float64) {
	t.Helper()
	var c flowCC
	if err := json.Unmarshal(f.ClientRaw, &c); err != nil {
		t.Fatal(err)
	}
	perInterval := math.Ceil(float64(f.Client.PacketsSent) / f.Client.DurationS * interval)
	want := 0.9 * float64(c.Server.CEReceived) / max(perInterval, 1)
	t.Logf("flow %d: %d CE marks, %.0f frames per CNP interval, %d CNPs (want ≥ %.0f), %d received",
		i, c.Server.CEReceived, perInterval, c.Server.CNPsSent, want, c.CNPsReceived)
	if c.Server.CEReceived == 0 || float64(c.Server.CNPsSent) < want || c.CNPsReceived != c.Server.CNPsSent {
		t.Errorf("flow %d: %d CNPs sent, %d received for %d marks; want at least %.0f, all received", i, c.Server.CNPsSent,
			c.CNPsReceived, c.Server.CEReceived, want)
	}
}

// TestDCQCNStalledReceivers: the receivers off their CPU 1 ms of every
// 2 ms take a QP's frames of a millisecond in one receive batch, as the
// testbed's roceperf takes an AF_XDP batch after a sleep. Their
// notification points still answer the marks as checkCNPs wants,
// because the endpoint reads each frame's time from its place in the
// batch (dataplane.Ctx.RxTime); on the loop's clock they answered a
// third of the marks where at least 45 % is wanted.
func TestDCQCNStalledReceivers(t *testing.T) {
	res := runResults(t, "dcqcn-incast", append(testbedDelays, "--sample", "10ms", "--count", "128", "--cc", "dcqcn",
		"--stall", "h[5-8]:1ms/2ms:fixed")...)
	r := res.Runs[0]
	if r.Error != "" || len(r.Flows) != 4 {
		t.Fatalf("%v: error %q, %d flows", r.Point, r.Error, len(r.Flows))
	}
	for i, f := range r.Flows {
		checkCNPs(t, i, f, 200e-6)
	}
}

// TestDCQCNFairness: dcqcn-fairness's four flows at the testbed's
// parameters: with DCQCN each converges to its quarter of the
// bottleneck (Jain's index over the last half of the time they all
// ran) and the queue sits between Kmin and Kmax; without, the queue
// sits at its limit.
func TestDCQCNFairness(t *testing.T) {
	res := runResults(t, "dcqcn-fairness", append(testbedDelays, "--sample", "10ms", "--count", "128")...)
	for _, r := range res.Runs {
		s := r.Series
		if r.Error != "" || s == nil {
			t.Fatalf("%v: error %q", r.Point, r.Error)
		}
		d, rates := s.DepthStats(), s.FlowRates(s.LastHalf())
		jain := lab.Jain(rates)
		t.Logf("cc %s: rates %.0f Mbit/s, Jain %.3f, depth mean %.0f KB, %.0f%% in band, %.0f%% at the limit",
			r.Point["cc"], rates, jain, d.Mean/1e3, d.InBand*100, d.AtLimit*100)
		if r.Point["cc"] == "none" {
			if d.AtLimit < 0.5 {
				t.Errorf("without DCQCN the queue was at its limit in %.0f%% of the samples: no congestion to control", d.AtLimit*100)
			}
			continue
		}
		if jain < 0.98 || d.InBand < 0.7 {
			t.Errorf("with DCQCN: Jain %.3f, %.0f%% of samples in [Kmin, Kmax]; want ≥ 0.98 and most", jain, d.InBand*100)
		}
		for i, x := range rates {
			if x < 0.8*50 || x > 1.2*50 {
				t.Errorf("flow %d: %.0f Mbit/s over the last half, want about 50", i, x)
			}
		}
	}
}

// TestDCQCNIncastRTO: receivers off their CPU 12 ms of every 40 ms, as
// the testbed's hosts can be when ten processes share two CPUs, hold
// their ACKs for longer than roceperf's 16 ms RTO once the queue adds
// its delay: Go-Back-N's timers fire with nothing lost, every fire sends
// a window again behind the one still queued, and the bottleneck drops —
// the signature of the testbed's dcqcn-incast runs of 2026-11-29 (30–50
// timeouts per flow, NAKs 0–7). With dcqcn-incast's RTO (dcqcnRTO:
// IRN's rule, a full queue's drain plus the round trip) no timer fires
// and nothing drops.
func TestDCQCNIncastRTO(t *testing.T) {
	for _, c := range []struct {
		rto             string
		timeouts, drops bool
	}{{"16ms", true, true}, {"", false, false}} {
		args := append(testbedDelays, "--count", "128", "--cc", "dcqcn", "--stall", "h[5-8]:12ms/40ms:fixed")
		if c.rto != "" {
			args = append(args, "--rto", c.rto)
		}
		res := runResults(t, "dcqcn-incast", args...)
		r := res.Runs[0]
		if r.Error != "" {
			t.Fatalf("rto %q: %s", c.rto, r.Error)
		}
		var timeouts, naks int64
		for _, f := range r.Flows {
			timeouts += f.Client.Timeouts
			naks += f.Client.NaksReceived
		}
		drops := r.Series.Drops[len(r.Series.Drops)-1]
		t.Logf("rto %q: %d timeouts, %d NAKs, %v drops", c.rto, timeouts, naks, drops)
		if (timeouts > 0) != c.timeouts || (drops > 0) != c.drops {
			t.Errorf("rto %q: %d timeouts, %v drops; want timeouts %v, drops %v", c.rto, timeouts, drops, c.timeouts, c.drops)
		}
	}
}
