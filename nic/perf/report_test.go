package perf

import (
	"bytes"
	"math"
	"math/rand/v2"
	"rocetor/nic/cc"
	"rocetor/nic/fasr"
	"slices"
	"strings"
	"testing"
	"time"
)

// refLat is the latency summary computed the slow, obvious way from the
// sorted samples: the reference LatStatsOf must agree with.
func refLat(samples []int64) LatStats {
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	at := func(q float64) float64 { // nearest rank: the ceil(q·n)-th smallest
		r := int(math.Ceil(q * float64(n)))
		return float64(s[max(r, 1)-1])
	}
	med := float64(s[n/2])
	if n%2 == 0 {
		med = float64(s[n/2-1]+s[n/2]) / 2
	}
	var sum, sq float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(n)
	for _, v := range s {
		sq += (float64(v) - mean) * (float64(v) - mean)
	}
	us := func(v float64) float64 { return math.Round(v) / 1e3 }
	return LatStats{Min: us(float64(s[0])), Max: us(float64(s[n-1])), Typical: us(med), Avg: us(mean),
		Stdev: us(math.Sqrt(sq / float64(n))), P99: us(at(0.99)), P999: us(at(0.999))}
}

// TestLatStats: the latency columns are the sorted samples' minimum,
// maximum, median, mean, deviation and nearest-rank percentiles, for
// counts odd and even, small and large, with ties, in any order.
func TestLatStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 1000, 1001, 4096, 100000} {
		s := make([]int64, n)
		for i := range s {
			// A long tail, as latencies have, and ties.
			s[i] = 1000 + rng.Int64N(500) + int64(rng.ExpFloat64()*2000)/10*10
		}
		got, want := LatStatsOf(s), refLat(s)
		for name, pair := range map[string][2]float64{
			"t_min": {got.Min, want.Min}, "t_max": {got.Max, want.Max}, "t_typical": {got.Typical, want.Typical},
			"t_avg": {got.Avg, want.Avg}, "t_stdev": {got.Stdev, want.Stdev}, "p99": {got.P99, want.P99},
			"p99.9": {got.P999, want.P999},
		} {
			if math.Abs(pair[0]-pair[1]) > 0.0015 {
				t.Errorf("%d samples: %s = %v, want %v", n, name, pair[0], pair[1])
			}
		}
		// Each order-statistic column is one of the samples.
		for _, v := range []float64{got.Min, got.Max, got.P99, got.P999} {
			if !slices.Contains(s, int64(math.Round(v*1e3))) {
				t.Errorf("%d samples: %v µs is not a sample", n, v)
			}
		}
	}
	// Pinned by hand: 1..1000 µs.
	var s []int64
	for i := int64(1000); i >= 1; i-- {
		s = append(s, i*1000)
	}
	l := LatStatsOf(s)
	if l.Min != 1 || l.Max != 1000 || l.Typical != 500.5 || l.Avg != 500.5 || l.P99 != 990 || l.P999 != 999 ||
		math.Abs(l.Stdev-288.675) > 0.001 {
		t.Errorf("1..1000 µs: %+v", l)
	}
	if z := LatStatsOf(nil); z != (LatStats{}) {
		t.Errorf("no samples: %+v", z)
	}
}

// TestPeak: perftest's BW peak is the best messages-per-time of any
// stretch from a post to a later completion.
func TestPeak(t *testing.T) {
	// Four 1000-byte messages posted at 0 and completing at 10, 20, 30
	// and 40 µs: the best stretch is all four in 40 µs, 100 ns each,
	// 80 Gbit/s... of 8000 bits per 100 ns = 80 Gb/s.
	posts := []int64{0, 0, 0, 0}
	dones := []int64{10000, 20000, 30000, 40000}
	if g := peakGbps(posts, dones, 1000); g != 0.8 {
		t.Errorf("peak %v Gbit/s, want 0.8", g)
	}
	// A later burst is faster: messages 2 and 3 posted at 30 µs and
	// done at 31 and 32 µs: 2 × 8000 bits in 2 µs = 8 Gbit/s.
	posts = []int64{0, 0, 30000, 30000}
	dones = []int64{10000, 20000, 31000, 32000}
	if g := peakGbps(posts, dones, 1000); g != 8 {
		t.Errorf("peak %v Gbit/s, want 8", g)
	}
	if g := peakGbps(nil, nil, 1000); g != 0 {
		t.Errorf("no messages: %v", g)
	}
}

func TestPercentile(t *testing.T) {
	var s []int64
	for i := int64(1); i <= 1000; i++ {
		s = append(s, i)
	}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0, 1}} {
		if got := Percentile(s, tc.q); got != tc.want {
			t.Errorf("Percentile(1..1000, %v) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if got := Percentile([]int64{7}, 0.999); got != 7 {
		t.Errorf("one value: %d", got)
	}
	if got := Percentile[int64](nil, 0.5); got != 0 {
		t.Errorf("no values: %d", got)
	}
	// Nearest rank: p99 of 10 values is the largest, p50 the fifth.
	ten := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	if Percentile(ten, 0.99) != 100 || Percentile(ten, 0.5) != 50 {
		t.Errorf("p99, p50 of ten: %d, %d", Percentile(ten, 0.99), Percentile(ten, 0.5))
	}
	f := FCTOf([]int64{3000, 1000, 2000})
	if f.P50 != 2 || f.Max != 3 || f.Mean != 2 {
		t.Errorf("fctOf = %+v", f)
	}
}

// TestReportWall: start and end are the run's ends on the wall clock,
// found from the session clock's reading at a known wall time; a run
// with nothing completed has neither.
func TestReportWall(t *testing.T) {
	wall := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	var r Report
	r.setRun([]int64{500, 700}, 1_000, 3_001_000, 4096) // 3 ms on the session clock
	r.setWall(1_000, 3_001_000, 5_001_000, wall)        // read 2 ms after the last completion
	if want := wall.Add(-5 * time.Millisecond); !r.Start.Equal(want) || !r.End.Equal(wall.Add(-2*time.Millisecond)) {
		t.Errorf("start %v, end %v; want %v and 3 ms later", r.Start, r.End, want)
	}
	var none Report
	none.setRun(nil, -1, 0, 4096)
	none.setWall(-1, 0, 10, wall)
	var b bytes.Buffer
	if none.writeJSON(&b); strings.Contains(b.String(), `"start"`) || !none.Start.IsZero() {
		t.Errorf("a run without completions has a start: %s", b.String())
	}
}

func TestPattern(t *testing.T) {
	const size = 1 << 20
	b := make([]byte, size)
	fill(b, 42)
	if err := check(b, 42); err != nil {
		t.Fatal(err)
	}
	if check(b, 43) == nil {
		t.Error("message 42's payload passes as message 43's")
	}
	b[777777] ^= 1
	if err := check(b, 42); err == nil || !strings.Contains(err.Error(), "byte 777777") {
		t.Errorf("flipped bit: %v", err)
	}
	b[777777] ^= 1
	// A chunk placed one MTU off shows.
	copy(b[4096:5120], b[3072:4096])
	if check(b, 42) == nil {
		t.Error("a chunk shifted by 1 KiB passes")
	}
	// Short messages too.
	for n := 1; n < 100; n++ {
		fill(b[:n], uint64(n))
		if err := check(b[:n], uint64(n)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportDCP pins the DCP names of the JSON report and the table.
func TestReportDCP(t *testing.T) {
	d := &DCPCounters{HOBounced: 1, HOReturned: 2, HORetransmits: 3, FallbackTimeouts: 4, RetransQOverflows: 5,
		Duplicates: 6, TrackingBytes: 192, HONotReturned: 7}
	r := &Report{Transport: "dcp", Counters: Counters{QPContextBytes: 732, QPQueueBytes: 2184, DCP: d,
		Drops: map[string]uint64{"dcp_retransq_full": 5}, HODrops: map[string]uint64{"dcp_retransq_full": 5}},
		Server: &Counters{DCP: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"qp_context_bytes":732`, `"qp_queue_bytes":2184`, `"dcp":{`, `"ho_bounced":1`,
		`"ho_returned":2`, `"ho_retransmits":3`, `"ho_stale":0`, `"ho_duplicates":0`, `"retransq_overflows":5`,
		`"fallback_timeouts":4`, `"fallback_retransmits":0`, `"duplicates":6`, `"unanchored":0`, `"recounts":0`,
		`"poisoned":0`, `"deferred":0`, `"tracking_bytes_per_qp":192`, `"server":{`, `"ho_not_returned":7`,
		`"ho_drops":{"dcp_retransq_full":5}`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"HO returned 2", "HO retransmits 3", "RetransQ overflows 5", "fallback timeouts 4",
		"HO bounced 1 (not returned 7)", "HO drops ", "duplicates 6", "732 B context, 2184 B queues (DCP tracking 192 B)"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
}

// TestReportIRN pins the IRN names of the JSON report and the table.
func TestReportIRN(t *testing.T) {
	d := &IRNCounters{OutOfOrder: 1, NACKsSent: 2, NACKsReceived: 3, SACKs: 4, Recoveries: 5, Retransmits: 6,
		TimeoutsLow: 7, TimeoutsHigh: 8, WindowFull: 9, MaxInFlight: 128, Window: 128, BitmapBytes: 64}
	r := &Report{Transport: "irn", Counters: Counters{QPContextBytes: 552, QPQueueBytes: 4608, IRN: d},
		Server: &Counters{IRN: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"irn":{`, `"out_of_order":1`, `"nacks_sent":2`, `"nacks_received":3`, `"sacks":4`,
		`"recoveries":5`, `"recovery_retransmits":6`, `"timeouts_low":7`, `"timeouts_high":8`, `"window_full":9`,
		`"max_in_flight":128`, `"window_packets":128`, `"bitmap_bytes_per_qp":64`, `"early_reads":0`,
		`"read_reissues":0`, `"duplicates":0`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"NACKs 3 (SACKs 4)", "recoveries 5", "timeouts low 7 high 8", "window 128",
		"out of order 1", "NACKs sent 2", "IRN bitmaps 64 B"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
}

// TestReportCC pins the congestion names of the JSON report and the table.
func TestReportCC(t *testing.T) {
	c := &CCCounters{Name: "dcqcn", RateCuts: 7, CNPsHeld: 3, FastRecovery: 4, AdditiveInc: 5, HyperInc: 6,
		LineBps: 10e9, Rate: &cc.RateSummary{QPs: 2, Min: 1e9, Mean: 4e9, Final: 5e9}}
	r := &Report{Transport: "gbn", Counters: Counters{CEReceived: 1, CNPsSent: 0, CNPsReceived: 2, CC: c},
		Server: &Counters{CEReceived: 9, CNPsSent: 8, CC: c}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"ce_received":1`, `"cnps_sent":0`, `"cnps_received":2`, `"rate_cuts":7`,
		`"cnps_held":3`, `"fast_recovery":4`, `"additive_increase":5`, `"hyper_increase":6`, `"line_bps":10000000000`,
		`"rate":{"qps":2,"min_bps":1000000000,"mean_bps":4000000000,"final_bps":5000000000}`, `"cnps_sent":8`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"CE received 1  CNPs sent 0  received 2", "rate cuts 7",
		"min 1.000  mean 4.000  final 5.000", "server congestion  CE received 9  CNPs sent 8"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
}

// TestReportTimely pins TIMELY's figures: ccCountersOf maps its
// counters onto the shared names and adds the RTT samples.
func TestReportTimely(t *testing.T) {
	x, err := cc.NewTimely(10e9, cc.DefaultTimelyConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := ccCountersOf(x)
	c.RTTSamples, c.RTTMinUS, c.RTTMaxUS = 12, 2.5, 480
	r := &Report{Transport: "irn", Counters: Counters{CC: c}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"cc":{"name":"timely"`, `"line_bps":10000000000`, `"rtt_samples":12`, `"rtt_min_us":2.5`,
		`"rtt_max_us":480`, `"rate":{"qps":0`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	if k := "RTT  12 samples  min 2.5 µs  max 480.0 µs"; !strings.Contains(strings.Join(strings.Fields(table.String()), " "), strings.Join(strings.Fields(k), " ")) {
		t.Errorf("table lacks %q:\n%s", k, table.String())
	}
}

// TestReportFaSR pins the FaSR names of the JSON report and the table.
func TestReportFaSR(t *testing.T) {
	tr, _ := fasr.New(fasr.Config{})
	d := fasrCountersOf(tr)
	d.Recoveries, d.FastEntries, d.SlowEntries, d.FNACKsSent, d.SACKs, d.LostGaps, d.SACKLossGaps = 1, 2, 3, 4, 5, 6, 7
	d.FastOps, d.SlowOps, d.FastPathRatio, d.PeakUnits, d.Timeouts1 = 9, 1, 0.9, 8, 10
	r := &Report{Transport: "fasr", Counters: Counters{QPContextBytes: 412, QPQueueBytes: 5632, FaSR: d},
		Server: &Counters{FaSR: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"fasr":{`, `"recoveries":1`, `"fast_entries":2`, `"slow_entries":3`, `"fnacks_sent":4`,
		`"sacks":5`, `"lost_gaps":6`, `"sack_loss_gaps":7`, `"fast_ops":9`, `"slow_ops":1`, `"fast_path_ratio":0.9`,
		`"peak_units":8`, `"timeouts_lost1":10`, `"units":20`, `"blocks":70`, `"state_bytes_per_qp":36`,
		`"shared_pool_bytes":784`, `"gbn_fallbacks":0`, `"lost_overflows":0`, `"compressions":0`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"SACKs 5 (gaps lost 6, SACK loss 7)", "timeouts by lost-cnt 0/1/>1 0/10/0",
		"recoveries 1 (fast 2, slow 3; fast-path ratio 0.90)", "FNACKs 4", "pool peak 8/20 units",
		"FaSR 36 B; shared pool 784 B"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
}

// TestRandomBase: every run's QPNs stay within 24 bits whatever base
// it draws, at the most QPs a run has.
func TestRandomBase(t *testing.T) {
	for range 10000 {
		if b := randomBase(); b < 0x100 || uint64(b)+MaxQPs > 1<<24 {
			t.Fatalf("base QPN %#x: %d QPs from it leave the 24-bit space", b, MaxQPs)
		}
	}
	if !orderTolerant("fasr") || orderTolerant("gbn") {
		t.Error("fasr places packets in any order, gbn does not")
	}
}

// TestSweepSizes: -a's sizes are perftest's, 2 B to 8 MiB by powers of
// two.
func TestSweepSizes(t *testing.T) {
	if got := sweepSizes(); len(got) != 23 || got[0] != 2 || got[22] != 8<<20 {
		t.Errorf("sweep sizes %v", got)
	}
}
