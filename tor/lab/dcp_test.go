package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fabricOf is a fake fabric on the topology an experiment sets up.
func fabricOf(t *testing.T, o Options) *fakeFabric {
	t.Helper()
	o.Prefix = DefaultPrefix(o.Topology)
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeFabric(t)
	f.plan, f.imp = p, o.Impairment()
	return f
}

// runFake parses args into exp, sets it up and runs it on a fake fabric
// of the topology it asks for.
func runFake(t *testing.T, exp Experiment, args ...string) (*fakeFabric, *fakePerf, *Results) {
	t.Helper()
	parseExperiment(t, exp, args...)
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	fab := fabricOf(t, o)
	perf := &fakePerf{fab: fab}
	res := newResults(exp, fab.plan, "testbed run "+exp.Name()+" "+strings.Join(args, " "))
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	return fab, perf, res
}

// cellsOf returns the JSON array --json would write.
func cellsOf(t *testing.T, res *Results) []map[string]any {
	t.Helper()
	b, err := json.Marshal(res.cells())
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func hasKeys(t *testing.T, c map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := c[k]; !ok {
			t.Errorf("cell lacks %q: %v", k, c)
		}
	}
}

func TestDCPLossWithFakes(t *testing.T) {
	fab, perf, res := runFake(t, newDCPLoss(), "--losses", "0.001,0.05", "--count", "5")
	// DCP with trimming and GBN with dropping at each loss rate, then
	// the lossless DCP reference's three runs.
	var got []string
	for i, tr := range perf.transfers {
		got = append(got, tr.Transport)
		if i < 4 && (fab.sets[i].Trim != (tr.Transport == "dcp")) {
			t.Errorf("run %d (%s) with impairment %+v", i, tr.Transport, fab.sets[i])
		}
	}
	if !slices.Equal(got, []string{"dcp", "gbn", "dcp", "gbn", "dcp", "dcp", "dcp"}) {
		t.Errorf("transports %v", got)
	}
	cells := cellsOf(t, res)
	if len(cells) != 2 {
		t.Fatalf("%d cells, want one per loss rate", len(cells))
	}
	hasKeys(t, cells[1], "loss", "dcp_goodput_gbps", "dcp_lossless_goodput_gbps", "gbn_goodput_gbps")
	if cells[1]["loss"] != 0.05 || cells[1]["dcp_lossless_goodput_gbps"] != 1.0 {
		t.Errorf("cell %v", cells[1])
	}
}

// TestDCPLossUncleanReference: a lossless DCP run that retransmitted or
// timed out gives no dcp_of_lossless.
func TestDCPLossUncleanReference(t *testing.T) {
	exp := newDCPLoss()
	parseExperiment(t, exp, "--losses", "0.01", "--count", "5")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	fab := fabricOf(t, o)
	perf := &fakePerf{fab: fab, spurious: map[string]int{"dcp": -1}}
	res := newResults(exp, fab.plan, "testbed run dcp-loss")
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	cells := cellsOf(t, res)
	if len(cells) != 1 || cells[0]["dcp_of_lossless"] != nil || cells[0]["lossless_clean"] != false ||
		cells[0]["lossless_timeouts"] != 2.0 || cells[0]["dcp_over_gbn"] == nil {
		t.Errorf("cells %v: want no dcp_of_lossless, the reference's 2 timeouts, DCP / GBN still", cells)
	}
	if got := res.Table.Rows[0][3]; got != "no reference (5 retx, 2 timeouts, 0 switch drops; 0 of 3 runs clean)" {
		t.Errorf("of lossless %q", got)
	}
}

func TestDCPIncastWithFakes(t *testing.T) {
	fab, perf, res := runFake(t, newDCPIncast(), "--senders", "2,3", "--incast-degree", "3")
	if o := fab.plan.Options; o.Topology != "dumbbell" || o.Senders != 3 || o.Receivers != 3 || o.IncastDegree != 3 {
		t.Fatalf("options %+v", o)
	}
	if len(perf.transfers) != 2*(2+3) {
		t.Fatalf("%d transfers, want 10", len(perf.transfers))
	}
	pairs := map[string]bool{}
	for _, tr := range perf.transfers {
		pairs[tr.From+">"+tr.To] = true
	}
	if !pairs["h1>h4"] || !pairs["h3>h6"] || pairs["h1>h5"] {
		t.Errorf("pairs %v: want sender i to receiver i", pairs)
	}
	var trims []bool
	for _, r := range fab.reconfigs {
		trims = append(trims, r.Trim)
	}
	if !slices.Equal(trims, []bool{true, false, true, false}) {
		t.Errorf("trimming per run %v, want on for dcp, off for gbn", trims)
	}
	cells := cellsOf(t, res)
	if len(cells) != 2 {
		t.Fatalf("%d cells", len(cells))
	}
	hasKeys(t, cells[0], "senders", "ho_drops", "ho_packets", "goodput_gbps", "fct_us")
	if fct := cells[1]["fct_us"].(map[string]any); fct["p50"] == nil || fct["p99"] == nil || cells[1]["goodput_gbps"] != 3.0 {
		t.Errorf("cell %v", cells[1])
	}
}

func TestDCPARWithFakes(t *testing.T) {
	fab, _, res := runFake(t, newDCPAR(), "--ratios", "1,10")
	var modes []string
	for _, r := range fab.reconfigs {
		modes = append(modes, r.Multipath+" "+strings.Join(r.PathRates, "/"))
	}
	want := []string{"adaptive 1G/1000000000", "ecmp 1G/1000000000", "adaptive 1G/100000000", "ecmp 1G/100000000"}
	if !slices.Equal(modes, want) {
		t.Errorf("reconfigurations %v, want %v", modes, want)
	}
	cells := cellsOf(t, res)
	hasKeys(t, cells[1], "ratio", "dcp_goodput_gbps", "gbn_goodput_gbps")
	if cells[1]["ratio"] != "1:10" {
		t.Errorf("cell %v", cells[1])
	}
	p := mustPlan(t, "multipath", func(o *Options) { o.Senders, o.Receivers, o.PathRates = 2, 2, []string{"1G", "100M"} })
	if r := p.TordConfigs()["tor1"].Egress.PortRates; r["core2"] != 100e6 || r["core1"] != 1e9 {
		t.Errorf("tor1's port rates %v", r)
	}
}

// A record reads back as it was written, and its plots draw again from
// it with the recorded flags (testbed plot).
func TestPlotFromRecord(t *testing.T) {
	_, _, res := runFake(t, newDCPIncast(), "--senders", "2,3")
	dir := t.TempDir()
	record := filepath.Join(dir, "record.json")
	if err := res.WriteJSON(record); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(record)
	if err != nil {
		t.Fatal(err)
	}
	if got.Experiment != "dcp-incast" || len(got.Runs) != len(res.Runs) {
		t.Fatalf("read back %s with %d runs, want dcp-incast with %d", got.Experiment, len(got.Runs), len(res.Runs))
	}
	exp, ok := Lookup(got.Experiment)
	if !ok {
		t.Fatal("dcp-incast is not in the catalogue")
	}
	parseExperiment(t, exp, "--senders", "2,3")
	if _, err := exp.Setup(); err != nil {
		t.Fatal(err)
	}
	files, err := WritePlots(dir, exp.Plots(), GroupRuns(got.Runs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "goodput.png")); err != nil || !slices.Contains(files, filepath.Join(dir, "goodput.png")) {
		t.Errorf("plot: %v, files %q", err, files)
	}
	if _, err := ReadResults(filepath.Join(dir, "none.json")); err == nil {
		t.Error("a record that is not there reads")
	}
}

// TestHODrops counts a run's lost header-only packets from every place
// they die: the switches' rocetor_dcp_ho_drops_total (any queue, the tx
// ring, a stage) and both endpoints' ho_drops, leaving out the stale and
// duplicate ones a sender ignores; the control queue's drops of other
// frames do not count.
func TestHODrops(t *testing.T) {
	r := Run{
		Switches: map[string]Sample{
			"tor1": {`rocetor_dcp_ho_drops_total{reason="queue_full"}`: 2, `rocetor_queue_drops_total{port="s1",queue="control"}`: 9},
			"core": {`rocetor_dcp_ho_drops_total{reason="tx_full"}`: 1},
		},
		Flows: []*PerfResult{
			{Client: Summary{EndpointDrops: EndpointDrops{HODrops: map[string]int64{"dcp_retransq_full": 3, "nic_stale": 5, "nic_duplicate": 4}},
				Server: &EndpointDrops{HODrops: map[string]int64{"dcp_ho_not_returned": 1}}}},
			nil, // a failed flow
		},
	}
	if got := hoDrops(&r); got != 7 {
		t.Errorf("hoDrops = %v, want 7 (2 + 1 at the switches, 3 + 1 at the endpoints)", got)
	}
	r.Perf, r.Flows, r.Switches = r.Flows[0], nil, nil
	if got := hoDrops(&r); got != 4 {
		t.Errorf("single transfer, no switch drops: hoDrops = %v, want 4", got)
	}
}
