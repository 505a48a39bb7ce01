package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/tor/pipeline"
)

// runFakeSeries is runFake with transfers that last long enough for the
// sampler to scrape tor1 a few times.
func runFakeSeries(t *testing.T, exp Experiment, delay time.Duration, args ...string) (*fakeFabric, *fakePerf, *Results) {
	t.Helper()
	parseExperiment(t, exp, args...)
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	fab := fabricOf(t, o)
	perf := &fakePerf{fab: fab, delay: delay}
	res := newResults(exp, fab.plan, "testbed run "+exp.Name()+" "+strings.Join(args, " "))
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	return fab, perf, res
}

func TestDCQCNFairnessWithFakes(t *testing.T) {
	fab, perf, res := runFakeSeries(t, newDCQCNFairness(), 300*time.Millisecond, "--sample", "20ms", "--count", "10",
		"--senders", "2", "--dcqcn", "rpg-time-reset=300, dcqcn-rpg-ai-rate=5")
	o := fab.plan.Options
	if o.Topology != "dumbbell" || o.Senders != 2 || o.Receivers != 2 || !o.ECN || o.BottleneckRate != "200M" ||
		o.QueueLimit != "256KiB" || o.ECNMin != "20KB" || o.ECNMax != "100KB" {
		t.Fatalf("options %+v", o)
	}
	// One run with DCQCN, one without, two flows each, paced at the
	// bottleneck's rate; only DCQCN's carry a line rate and parameters.
	if len(perf.transfers) != 4 || len(res.Runs) != 2 {
		t.Fatalf("%d transfers, %d runs; want 4 and 2", len(perf.transfers), len(res.Runs))
	}
	for i, tr := range perf.transfers {
		cc := []string{"dcqcn", "dcqcn", "none", "none"}[i]
		if tr.CC != cc || tr.Rate != "200M" || tr.Transport != "gbn" || tr.Depth != 0 {
			t.Errorf("transfer %d: %+v, want cc %s paced at 200M", i, tr, cc)
		}
	}
	dc := perf.transfers[0]
	if dc.LineRate != "200M" || !maps.Equal(dc.DCQCN, map[string]string{"rpg-ai-rate": "5", "rpg-time-reset": "300"}) {
		t.Errorf("the DCQCN transfer: line rate %q, DCQCN %v", dc.LineRate, dc.DCQCN)
	}
	if none := perf.transfers[2]; none.LineRate != "" || len(none.DCQCN) != 0 {
		t.Errorf("the transfer without DCQCN: line rate %q, DCQCN %v", none.LineRate, none.DCQCN)
	}

	s := res.Runs[0].Series
	if s == nil || s.Node != "tor1" || s.Port != "tor2" || !slices.Equal(s.FlowPorts, []string{"h1", "h2"}) || len(s.T) < 5 {
		t.Fatalf("series %+v: want tor1's queue toward tor2 and h1, h2 sampled several times", s)
	}
	if s.Kmin != 20e3 || s.Kmax != 100e3 || s.Limit != 256<<10 || len(s.Ends) != 2 || s.Ends[0] < 0.25 {
		t.Errorf("series thresholds %v/%v/%v, ends %v", s.Kmin, s.Kmax, s.Limit, s.Ends)
	}
	cells := cellsOf(t, res)
	if len(cells) != 2 {
		t.Fatalf("%d cells, want one per cc", len(cells))
	}
	hasKeys(t, cells[0], "transport", "cc", "senders", "goodput_gbps", "fct_us", "queue_drops", "drops", "trimmed",
		"pfc_pauses", "ce_marked", "cnps_sent", "cnps_received", "rate_cuts", "jain_last_half", "flow_rates_mbps", "depth")
	// The fake's h2 receives twice h1's bytes: Jain's index is 0.9.
	if j, ok := cells[0]["jain_last_half"].(float64); !ok || math.Abs(j-0.9) > 1e-9 {
		t.Errorf("jain_last_half %v, want 0.9", cells[0]["jain_last_half"])
	}
	d := cells[0]["depth"].(map[string]any)
	if d["in_band"] != 1.0 || d["mean_bytes"] != 50e3 || d["kmax_bytes"] != 100e3 {
		t.Errorf("depth %v: want every sample at 50 KB, in [20 KB, 100 KB]", d)
	}
	if cells[0]["cc"] != "dcqcn" || cells[1]["cc"] != "none" {
		t.Errorf("cells %v", cells)
	}
	if len(res.Table.Rows) != 2 || res.Table.Rows[0][5] != "0.900" {
		t.Errorf("table %v", res.Table.Rows)
	}

	// The plots: depth and per-flow rates over time.
	dir := t.TempDir()
	files, err := WritePlots(dir, newDCQCNFairnessPlots(t), GroupRuns(res.Runs))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"depth-gbn-2.png", "rates-gbn-dcqcn-2.png", "rates-gbn-none-2.png"}
	for _, f := range want {
		if !slices.Contains(files, filepath.Join(dir, f)) {
			t.Errorf("plots %v lack %s", files, f)
		}
	}
}

// newDCQCNFairnessPlots are dcqcn-fairness's plots with its defaults.
func newDCQCNFairnessPlots(t *testing.T) []PlotSpec {
	e := newDCQCNFairness()
	parseExperiment(t, e, "--senders", "2")
	if _, err := e.Setup(); err != nil {
		t.Fatal(err)
	}
	return e.Plots()
}

func TestDCQCNIncastWithFakes(t *testing.T) {
	fab, perf, res := runFakeSeries(t, newDCQCNIncast(), 0, "--senders", "2,3", "--transports", "gbn,netrt,dcp", "--cc", "dcqcn,none")
	if o := fab.plan.Options; o.Senders != 3 || o.Receivers != 3 {
		t.Fatalf("options %+v: want 3 senders and 3 receivers", o)
	}
	// Per transport: NetRT on the ToRs for netrt, DCP parsing and
	// trimming for dcp.
	var fabrics []string
	for _, r := range fab.reconfigs {
		fabrics = append(fabrics, fmt.Sprintf("netrt=%v dcp=%v trim=%v ecn=%v", r.NetRT, r.DCP, r.Trim, r.ECN))
	}
	want := []string{"netrt=false dcp=false trim=false ecn=true", "netrt=true dcp=false trim=false ecn=true", "netrt=false dcp=true trim=true ecn=true"}
	if !slices.Equal(fabrics, want) {
		t.Errorf("fabrics %v, want %v", fabrics, want)
	}
	if len(perf.transfers) != 3*2*(2+3) {
		t.Fatalf("%d transfers, want 30", len(perf.transfers))
	}
	var endpoints []string
	pairs := map[string]bool{}
	for _, tr := range perf.transfers {
		if !slices.Contains(endpoints, tr.Transport) {
			endpoints = append(endpoints, tr.Transport)
		}
		pairs[tr.From+">"+tr.To] = true
	}
	if !slices.Equal(endpoints, []string{"gbn", "dcp"}) {
		t.Errorf("endpoint transports %v: netrt runs gbn endpoints", endpoints)
	}
	if !pairs["h1>h4"] || !pairs["h3>h6"] || pairs["h1>h5"] {
		t.Errorf("pairs %v: want sender i to receiver i", pairs)
	}
	// 1 MiB posted per flow (Go-Back-N's window always full) into a
	// queue below four windows (dcqcnDefaults).
	if d := perf.transfers[0].Depth; d != 16 || fab.plan.Options.QueueLimit != "448KiB" {
		t.Errorf("depth %d, queue limit %s; want 16 WRITEs and 448KiB", d, fab.plan.Options.QueueLimit)
	}
	cells := cellsOf(t, res)
	if len(cells) != 12 {
		t.Fatalf("%d cells, want 12", len(cells))
	}
	// Transfers that take no time leave no rate to judge: null, not 0.
	if c := cells[11]; c["transport"] != "dcp" || c["cc"] != "none" || c["senders"] != 3.0 || c["jain_last_half"] != nil {
		t.Errorf("last cell %v", c)
	}
	e := newDCQCNIncast()
	parseExperiment(t, e, "--senders", "2,3", "--transports", "gbn,netrt,dcp")
	if _, err := e.Setup(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, e.Plots(), GroupRuns(res.Runs))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3*2*3+2 || !slices.Contains(files, filepath.Join(dir, "drops.png")) {
		t.Errorf("plots %v", files)
	}
}

func TestDCQCNSetupErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--transports", "tcp"},
		{"--cc", "timely"},
		{"--senders", "0"},
		{"--senders", ""},
		{"--dcqcn", "rpg-time-reset"},
		{"--count", "0"},
		{"--sample", "0s"},
		{"--line-rate", "fast"},
		{"--transports", "dcp", "--trim-threshold", "1MiB"},
	} {
		e := newDCQCNIncast()
		parseExperiment(t, e, args...)
		if _, err := e.Setup(); !errors.Is(err, ErrUsage) {
			t.Errorf("Setup with %q = %v, want a usage error", args, err)
		}
	}
	// --ecn=false leaves the thresholds out rather than refusing them.
	e := newDCQCNFairness()
	parseExperiment(t, e, "--ecn=false")
	o, err := e.Setup()
	if err != nil || o.ECN || o.ECNMin != "" {
		t.Errorf("--ecn=false: %+v, %v", o, err)
	}
}

// The dumbbell's switches with --ecn, thresholds, a queue limit and a
// bottleneck rate: every switch marks (with the profile as tord's
// "default"), every queue has the limit, and only tor1's port toward
// tor2 is shaped to the bottleneck's rate.
func TestECNTordConfigs(t *testing.T) {
	p := mustPlan(t, "dumbbell", func(o *Options) {
		o.ECN, o.ECNMin, o.ECNMax, o.ECNPMax, o.QueueLimit, o.BottleneckRate = true, "20KB", "100KB", 20, "256KiB", "200M"
	})
	if node, port := p.Bottleneck(); node != "tor1" || port != "tor2" {
		t.Errorf("bottleneck %s/%s", node, port)
	}
	for node, c := range p.TordConfigs() {
		b, err := MarshalTordConfig(node, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pipeline.ParseConfig(b, node); err != nil {
			t.Fatalf("%s: %v\n%s", node, err, b)
		}
		var doc struct {
			Egress struct {
				QueueLimit string            `yaml:"queue_limit"`
				PortRates  map[string]string `yaml:"port_rates"`
			} `yaml:"egress"`
			ECN map[string]any `yaml:"ecn"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		prof := fmt.Sprint(doc.ECN["profiles"])
		if doc.Egress.QueueLimit != "256KiB" || prof != "map[default:map[max_threshold:100KB min_threshold:20KB probability:20]]" {
			t.Errorf("%s: queue limit %q, ecn %v\n%s", node, doc.Egress.QueueLimit, doc.ECN, b)
		}
		if want := map[string]string{"tor2": "200M"}; node == "tor1" && fmt.Sprint(doc.Egress.PortRates) != fmt.Sprint(want) ||
			node != "tor1" && doc.Egress.PortRates != nil {
			t.Errorf("%s: port rates %v", node, doc.Egress.PortRates)
		}
	}
	// --ecn alone: "ecn: {}", tord's rate-derived profile.
	p = mustPlan(t, "chain", func(o *Options) { o.ECN = true })
	b, _ := MarshalTordConfig("core", p.TordConfigs()["core"])
	if !strings.Contains(string(b), "\necn: {}\n") {
		t.Errorf("--ecn alone:\n%s", b)
	}
	if node, port := p.Bottleneck(); node != "tor1" || port != "core" {
		t.Errorf("chain's bottleneck %s/%s", node, port)
	}
	b, _ = MarshalTordConfig("core", mustPlan(t, "chain", nil).TordConfigs()["core"])
	if strings.Contains(string(b), "ecn") || strings.Contains(string(b), "queue_limit") {
		t.Errorf("without --ecn or --queue-limit:\n%s", b)
	}
}

func TestECNOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"thresholds-need-ecn", func(o *Options) { o.ECNMin = "20KB" }, "--ecn"},
		{"min", func(o *Options) { o.ECN, o.ECNMin = true, "lots" }, "--ecn-min"},
		{"max", func(o *Options) { o.ECN, o.ECNMax = true, "lots" }, "--ecn-max"},
		{"order", func(o *Options) { o.ECN, o.ECNMin, o.ECNMax = true, "100KB", "20KB" }, "--ecn-min"},
		{"pmax", func(o *Options) { o.ECN, o.ECNPMax = true, 120 }, "--ecn-pmax"},
		{"min-over-limit", func(o *Options) { o.ECN, o.ECNMin, o.QueueLimit = true, "300KB", "256KiB" }, "queue limit"},
		{"limit", func(o *Options) { o.QueueLimit = "1KiB" }, "--queue-limit"},
		{"bottleneck", func(o *Options) { o.BottleneckRate = "slow" }, "--bottleneck-rate"},
		{"bottleneck-multipath", func(o *Options) { o.Topology, o.BottleneckRate = "multipath", "100M" }, "--bottleneck-rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions("chain")
			o.Prefix = "rtb-chain-"
			c.edit(&o)
			err := o.Validate()
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want a usage error naming %s", err, c.want)
			}
		})
	}
}

// The series' statistics on a hand-made run: two flows from 0 to 2 s
// (the second ends at 2.2 s), h1 at 100 Mbit/s, h2 at 300 Mbit/s until
// 1 s and 100 Mbit/s after; the depth climbs through the thresholds.
func TestSeriesStats(t *testing.T) {
	s := &Series{Kmin: 20e3, Kmax: 100e3, Limit: 200e3, Ends: []float64{2, 2.2}, FlowPorts: []string{"h1", "h2"}, Interval: 0.1}
	mb := 1e6 / 8 // bytes in a megabit
	var rx1, rx2 float64
	for k := 0; k <= 22; k++ {
		t := float64(k) / 10
		s.T = append(s.T, t)
		s.Depth = append(s.Depth, []float64{0, 10e3, 50e3, 90e3, 150e3, 195e3}[k%6])
		s.RxBytes = [][]float64{append(safe(s.RxBytes, 0), rx1), append(safe(s.RxBytes, 1), rx2)}
		rx1 += 10 * mb // 100 Mbit/s over 0.1 s
		if t < 1 {
			rx2 += 30 * mb
		} else {
			rx2 += 10 * mb
		}
	}
	if got := s.Together(); got != 2 {
		t.Errorf("Together() = %v, want 2 (the first end)", got)
	}
	if got := s.Started(); got != 0.1 {
		t.Errorf("Started() = %v, want 0.1 (the first sample with bytes from both)", got)
	}
	from, to := s.LastHalf()
	rates := s.FlowRates(from, to)
	if len(rates) != 2 || math.Abs(rates[0]-100) > 1e-6 || math.Abs(rates[1]-100) > 1e-6 {
		t.Errorf("FlowRates over the last half %v, want 100 and 100 Mbit/s", rates)
	}
	if j := Jain(rates); math.Abs(j-1) > 1e-9 {
		t.Errorf("Jain over the last half %v, want 1", j)
	}
	if j := Jain(s.FlowRates(0, 1)); math.Abs(j-0.8) > 1e-9 {
		t.Errorf("Jain over the first second %v, want (100+300)²/(2·(100²+300²)) = 0.8", j)
	}
	if !math.IsNaN(Jain(nil)) || !math.IsNaN(Jain([]float64{0, 0})) || Jain([]float64{5, 0}) != 0.5 {
		t.Error("Jain of nothing, of zeros, of one flow with everything")
	}
	if s.FlowRates(0.5, 0.55) != nil {
		t.Error("FlowRates with one sample in the window")
	}
	// Samples 1 … 20 (t ≤ 2 s; the first, before the flows, left out):
	// depths cycle 10, 50, 90, 150, 195, 0 KB.
	d := s.DepthStats()
	if d.Samples != 20 || d.Max != 195e3 || d.InBand != 7.0/20 || d.BelowMin != 7.0/20 || d.AboveMax != 6.0/20 || d.AtLimit != 3.0/20 {
		t.Errorf("DepthStats %+v", d)
	}
	r := s.Rates()
	if len(r) != 2 || len(r[0]) != 22 || math.Abs(r[1][0].Y-300) > 1e-6 || math.Abs(r[1][21].Y-100) > 1e-6 || r[1][0].X != 0.1 {
		t.Errorf("Rates %v", r)
	}
	// A last sample 1 ms after the one before replaces it, measured
	// from the one before that.
	s.T = append(s.T, 2.201)
	s.RxBytes[0] = append(s.RxBytes[0], rx1-10*mb+0.1*mb) // 0.1 Mbit after the sample at 2.2 s
	s.RxBytes[1] = append(s.RxBytes[1], rx2-10*mb)
	r = s.Rates()
	if last := r[0][len(r[0])-1]; len(r[0]) != 22 || last.X != 2.201 || math.Abs(last.Y-10.1/0.101) > 1e-6 {
		t.Errorf("Rates with a last sample 1 ms late: %v", r[0][len(r[0])-3:])
	}
}

// A flow that starts late moves the span where the flows compete.
func TestSeriesLateStart(t *testing.T) {
	s := &Series{T: []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5}, Depth: make([]float64, 6), Ends: []float64{0.5, 0.5},
		RxBytes: [][]float64{{0, 1, 2, 3, 4, 5}, {0, 0, 0, 1, 2, 3}}}
	if s.Started() != 0.3 {
		t.Errorf("Started() = %v, want 0.3", s.Started())
	}
	if from, to := s.LastHalf(); from != 0.4 || to != 0.5 {
		t.Errorf("LastHalf() = %v, %v; want 0.4, 0.5", from, to)
	}
	if d := s.DepthStats(); d.Samples != 3 {
		t.Errorf("DepthStats over %d samples, want 3 (0.3 to 0.5)", d.Samples)
	}
	s.RxBytes[1] = make([]float64, 6)
	if s.Started() != 0 {
		t.Errorf("a flow that never started: Started() = %v, want 0", s.Started())
	}
}

func safe(x [][]float64, i int) []float64 {
	if i < len(x) {
		return x[i]
	}
	return nil
}

// The Markdown's context line names the bottleneck, the queue limit and
// the marking profile.
func TestMarkdownCongestionContext(t *testing.T) {
	_, _, res := runFakeSeries(t, newDCQCNFairness(), 0, "--count", "1")
	var b strings.Builder
	res.Markdown(&b)
	if want := "bottleneck 200M, queue limit 256KiB, ECN marking (Kmin 20KB, Kmax 100KB, Pmax 20%)"; !strings.Contains(b.String(), want) {
		t.Errorf("Markdown lacks %q:\n%s", want, b.String())
	}
	if got := (Options{ECN: true}).Congestion(); got != ", ECN marking (tord's rate-derived profile)" {
		t.Errorf("--ecn alone: %q", got)
	}
}

// On a testbed reused from another experiment (--reuse) the switches get
// the experiment's marking, bottleneck and queue limit all the same.
func TestDCQCNReusedTestbed(t *testing.T) {
	e := newDCQCNIncast()
	parseExperiment(t, e, "--senders", "2")
	if _, err := e.Setup(); err != nil {
		t.Fatal(err)
	}
	plain := DefaultOptions("dumbbell")
	fab := fabricOf(t, plain) // one receiver: too few
	res := newResults(e, fab.plan, "testbed run dcqcn-incast --reuse")
	if err := e.Run(context.Background(), &Env{Fabric: fab, Perf: &fakePerf{fab: fab}}, res); !errors.Is(err, ErrUsage) {
		t.Fatalf("on a dumbbell with one receiver: %v, want a usage error", err)
	}
	plain.Receivers = 2
	fab = fabricOf(t, plain)
	res = newResults(e, fab.plan, "testbed run dcqcn-incast --reuse")
	if err := e.Run(context.Background(), &Env{Fabric: fab, Perf: &fakePerf{fab: fab}}, res); err != nil {
		t.Fatal(err)
	}
	if len(fab.reconfigs) == 0 {
		t.Fatal("no reconfiguration")
	}
	o := fab.reconfigs[0]
	if !o.ECN || o.ECNMin != "20KB" || o.BottleneckRate != "200M" || o.QueueLimit != "448KiB" || o.Senders != 2 {
		t.Errorf("reused testbed reconfigured to %+v", o)
	}
}

// A netrt cell carries the NetRT counters that tell the source ToR's
// retransmissions apart from the senders', and its table row shows
// them; other transports' cells have none.
func TestDCQCNCellNetRT(t *testing.T) {
	r := &Run{Switches: map[string]Sample{
		"tor1": {
			`rocetor_netrt_retransmitted_total{port="tor2"}`:            150,
			`rocetor_netrt_tail_probes_total{port="tor2"}`:              3,
			`rocetor_netrt_tail_probes_deferred_total{port="tor2"}`:     7,
			`rocetor_netrt_requests_received_total{port="tor2"}`:        4,
			`rocetor_netrt_retransmit_in_queue_total{port="tor2"}`:      20,
			`rocetor_queue_drops_total{port="tor2",queue="data"}`:       5,
			`rocetor_queue_drops_total{port="tor2",queue="retransmit"}`: 2,
		},
		"tor2": {
			`rocetor_netrt_data_packets_total{outcome="late",port="h3"}`:     90,
			`rocetor_netrt_data_packets_total{outcome="late",port="h4"}`:     10,
			`rocetor_netrt_data_packets_total{outcome="in_order",port="h3"}`: 1000,
		},
	}}
	c := dcqcnCellOf(r, "netrt", "dcqcn", 2, "tor1", "tor2")
	want := dcqcnNetRT{Retransmitted: 150, TailProbes: 3, ProbesDeferred: 7, Requests: 4, InQueue: 20, Late: 100, RetxQueueDrops: 2}
	if c.NetRT == nil || *c.NetRT != want || c.QueueDrops != 7 {
		t.Fatalf("netrt %+v, queue drops %v; want %+v, 7", c.NetRT, c.QueueDrops, want)
	}
	tab := dcqcnTable([]DCQCNCell{c, dcqcnCellOf(r, "gbn", "dcqcn", 2, "tor1", "tor2")})
	col := slices.Index(tab.Columns, "NetRT resent / probes / late")
	if col < 0 || tab.Rows[0][col] != "150 / 3 / 100" || tab.Rows[1][col] != "–" {
		t.Fatalf("table %q %q", tab.Columns, tab.Rows)
	}
}
