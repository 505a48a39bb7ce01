package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFabric is a chain whose switches count like tord would: each
// scrape adds 100 received and transmitted packets per port, and core
// adds impair drops in proportion to the loss rate in force.
type fakeFabric struct {
	plan      *Plan
	st        *State
	imp       Impairment
	netrt     bool
	reconfigs []Options
	sets      []Impairment
	scrapes   int
	counts    map[string]Sample
	// ScrapeNode's, from the sampler's goroutine.
	mu          sync.Mutex
	nodeScrapes int
	failSet     bool
}

func newFakeFabric(t *testing.T) *fakeFabric {
	p := mustPlan(t, "chain", nil)
	st := &State{Name: "rtb-chain", Plan: p, Switches: map[string]*SwitchState{}}
	for _, n := range p.Switches() {
		st.Switches[n.Name] = &SwitchState{Netns: n.Netns, PID: 1000, MetricsURL: "http://127.0.0.1:9478/metrics"}
	}
	return &fakeFabric{plan: p, st: st, counts: map[string]Sample{}}
}

func (f *fakeFabric) Plan() *Plan            { return f.plan }
func (f *fakeFabric) State() *State          { return f.st }
func (f *fakeFabric) Impairment() Impairment { return f.imp }
func (f *fakeFabric) Reconfigure(ctx context.Context, o Options) error {
	f.plan.Options = o
	f.netrt = o.NetRT
	f.reconfigs = append(f.reconfigs, o)
	return nil
}

func (f *fakeFabric) SetImpairment(ctx context.Context, m Impairment) error {
	if f.failSet {
		return errors.New("restart failed")
	}
	f.sets = append(f.sets, m)
	f.imp = m
	return nil
}

func (f *fakeFabric) Scrape(ctx context.Context) (map[string]Sample, error) {
	f.scrapes++
	out := map[string]Sample{}
	for _, n := range f.plan.Switches() {
		c := f.counts[n.Name]
		if c == nil {
			c = Sample{}
			f.counts[n.Name] = c
		}
		for _, port := range f.plan.Ports(n.Name) {
			c[fmt.Sprintf(`rocetor_port_rx_packets_total{port="%s"}`, port)] += 100
			c[fmt.Sprintf(`rocetor_port_tx_packets_total{port="%s"}`, port)] += 100
		}
		if n.Name == "core" {
			c[`rocetor_impair_destroyed_total{cause="loss",class="data",direction="egress",port="tor2"}`] += f.imp.Loss * 1000
		}
		c[`rocetor_drops_total{reason="no_neighbour"}`] += 1
		c[`rocetor_queue_depth_bytes{port="x",queue="data"}`] = 5
		s := Sample{}
		for k, v := range c {
			s[k] = v
		}
		out[n.Name] = s
	}
	return out, nil
}

// ScrapeNode is what a tord's bottleneck would show through a run: the
// plan's bottleneck queue with its ECN thresholds and limit, a depth
// between them, and each port receiving 1 MB more per scrape, ports
// named h1 … hN one flow each.
func (f *fakeFabric) ScrapeNode(ctx context.Context, node string) (Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodeScrapes++
	_, port := f.plan.Bottleneck()
	q := fmt.Sprintf(`{port="%s",queue="data"}`, port)
	s := Sample{"rocetor_queue_depth_bytes" + q: 50e3, "rocetor_queue_limit_bytes" + q: 256 << 10,
		"rocetor_queue_drops_total" + q: 0, "rocetor_queue_ce_marked_total" + q: float64(10 * f.nodeScrapes)}
	if f.plan.Options.ECN {
		s["rocetor_queue_ecn_min_threshold_bytes"+q], s["rocetor_queue_ecn_max_threshold_bytes"+q] = 20e3, 100e3
	}
	for i, p := range f.plan.Ports(node) {
		s[fmt.Sprintf(`rocetor_port_rx_bytes_total{port="%s"}`, p)] = float64((i + 1) * 1e6 * f.nodeScrapes)
	}
	return s, nil
}

// fakePerf answers like roceperf would, with FCTs that grow with the
// fabric's loss; transport "broken" fails as roceperf exits 1.
type fakePerf struct {
	mu        sync.Mutex // MeasureAll calls Transfer from several goroutines
	fab       *fakeFabric
	transfers []Transfer
	// spurious: the lossless runs of these transports retransmit 5
	// packets and time out twice, as a starved testbed's do; a count
	// below 0 means all of them, n ≥ 1 the first n.
	spurious map[string]int
	// delay is how long each transfer takes, concurrent ones side by
	// side (for the sampler of MeasureSeries).
	delay time.Duration
}

func (p *fakePerf) Transfer(ctx context.Context, t Transfer) (*PerfResult, error) {
	time.Sleep(p.delay)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.transfers = append(p.transfers, t)
	if t.Transport == "broken" {
		return nil, fmt.Errorf("%w: retry exhausted", ErrPerf)
	}
	loss := p.fab.imp.Loss
	s := Summary{Transport: t.Transport, Op: t.Op, Size: int64(t.Size), Count: int64(t.Count), QPs: int64(t.QPs),
		Messages: int64(t.Count), Bytes: int64(t.Size * t.Count), DurationS: 1, GoodputGbps: 1 - 10*loss,
		FCT:         FCT{P50: 100 + 1e4*loss, P99: 200 + 1e5*loss, P999: 300, Mean: 120, Max: 400},
		RetxPackets: int64(1e4 * loss), Timeouts: int64(100 * loss), VerifiedBytes: int64(t.Size * t.Count)}
	if n := p.spurious[t.Transport]; loss == 0 && n != 0 {
		s.RetxPackets, s.Timeouts = 5, 2
		p.spurious[t.Transport] = n - 1
	}
	s.Start = fakeEpoch
	s.End = s.Start.Add(time.Duration(s.DurationS * float64(time.Second)))
	raw, _ := json.Marshal(s)
	return &PerfResult{Client: s, ClientRaw: raw}, nil
}

// fakeEpoch is when every fake transfer starts.
var fakeEpoch = time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)

func (p *fakePerf) Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error) {
	return roundOf(ctx, p.Transfer, ts)
}

// roundOf is a fake's Round: the transfers one after the other through
// transfer, their errors joined.
func roundOf(ctx context.Context, transfer func(context.Context, Transfer) (*PerfResult, error), ts []Transfer) ([]*PerfResult, error) {
	out := make([]*PerfResult, len(ts))
	var errs []error
	for i, t := range ts {
		var err error
		if out[i], err = transfer(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("%s → %s: %w", t.From, t.To, err))
		}
	}
	return out, errors.Join(errs...)
}

func parseExperiment(t *testing.T, exp Experiment, args ...string) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	exp.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
}

func TestLossSweepWithFakes(t *testing.T) {
	exp := newLossSweep()
	parseExperiment(t, exp, "--losses", "0,0.001,0.01", "--transports", "gbn,broken", "--size", "4096",
		"--count", "50", "--repeat", "2", "--burst", "2")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Topology != "chain" || o.Loss != 0 || o.Burst != 2 {
		t.Errorf("Setup() = %+v, want the chain starting at loss 0 with burst 2", o)
	}
	fab := newFakeFabric(t)
	fab.imp = o.Impairment()
	perf := &fakePerf{fab: fab}
	var out bytes.Buffer
	res := newResults(exp, fab.plan, "testbed run loss-sweep")
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf, Out: &out}, res); err != nil {
		t.Fatal(err)
	}

	// 3 losses × 2 transports × 2 repeats, loss outermost so each loss
	// rate restarts the core once.
	if len(res.Runs) != 12 || len(perf.transfers) != 12 {
		t.Fatalf("%d runs, %d transfers; want 12", len(res.Runs), len(perf.transfers))
	}
	var losses []float64
	for _, m := range fab.sets {
		losses = append(losses, m.Loss)
		if m.Burst != 2 || m.Seed != 1 {
			t.Errorf("impairment %+v lost the burst length or seed", m)
		}
	}
	if !slices.Equal(losses, []float64{0, 0.001, 0.01}) {
		t.Errorf("impairments set %v, want 0, 0.001, 0.01 in order", losses)
	}
	tr := perf.transfers[0]
	if tr.From != "h1" || tr.To != "h2" || tr.Op != "write" || tr.Size != 4096 || tr.Count != 50 || tr.Rate != "1G" || tr.MTU != 1024 {
		t.Errorf("transfer %+v, want a 50 × 4096 B write h1 → h2 paced at the switches' 1G", tr)
	}
	// Each run sees exactly what the switches counted during it.
	for _, r := range res.Runs {
		if r.Point["transport"] == "broken" {
			if r.Error == "" || r.Perf != nil {
				t.Errorf("broken run: error %q, perf %v; want the failure recorded", r.Error, r.Perf)
			}
			continue
		}
		if r.Error != "" {
			t.Errorf("run %v failed: %s", r.Point, r.Error)
		}
		core := r.Switches["core"]
		if got := core.Sum("rocetor_port_rx_packets_total", `port="tor1"`); got != 100 {
			t.Errorf("run %v: core rx delta %v, want 100", r.Point, got)
		}
		want := map[string]float64{"0": 0, "0.001": 1, "0.01": 10}[r.Point["loss"]]
		if got := r.ImpairDrops(); got != want {
			t.Errorf("run %v: impair drops %v, want %v", r.Point, got, want)
		}
		if got := r.OtherDrops(); got != 3 {
			t.Errorf("run %v: other drops %v, want 3 (one no_neighbour per switch)", r.Point, got)
		}
		if core[`rocetor_queue_depth_bytes{port="x",queue="data"}`] != 5 {
			t.Errorf("run %v: gauge not kept as its value after the run", r.Point)
		}
	}

	// The table: one row per point, medians over repeats.
	tab := res.Table
	if len(tab.Rows) != 6 {
		t.Fatalf("%d table rows, want 6:\n%v", len(tab.Rows), tab.Rows)
	}
	col := func(name string) int { return slices.Index(tab.Columns, name) }
	row := tab.Rows[4] // loss 0.01, gbn
	if row[col("transport")] != "gbn" || row[col("loss")] != "0.01" || row[col("ok runs")] != "2/2" ||
		row[col("messages")] != "50" || row[col("FCT p99 (µs)")] != "1200" || row[col("impair drops")] != "10" ||
		row[col("retx packets")] != "100" || row[col("goodput (Gbit/s)")] != "0.900" {
		t.Errorf("row for gbn at 1%%: %q (columns %q)", row, tab.Columns)
	}
	if broken := tab.Rows[5]; broken[col("ok runs")] != "0/2" || broken[col("FCT p50 (µs)")] != "–" {
		t.Errorf("row for the failing transport: %q", broken)
	}
	if !strings.Contains(out.String(), "run loss=0.01 transport=gbn #2: 50 messages") ||
		!strings.Contains(out.String(), "transport=broken: FAILED") {
		t.Errorf("progress output:\n%s", out.String())
	}
	if res.Params["size"] != "4096" || res.Params["host_rate"] != "1G" {
		t.Errorf("params %v", res.Params)
	}

	// Writing: JSON that reads back, Markdown with the table, PNG plots.
	dir := t.TempDir()
	res.Finished = res.Started
	var stdout bytes.Buffer
	rc := Output{JSON: "-", Record: filepath.Join(dir, "r.json"), MD: filepath.Join(dir, "r.md"), Plot: dir, Stdout: &stdout}
	var printed bytes.Buffer
	if err := writeResults(res, exp, rc, &printed); err != nil {
		t.Fatal(err)
	}
	// --json -: one array on standard output, an object per run.
	var cells []RunCell
	if err := json.Unmarshal(stdout.Bytes(), &cells); err != nil || len(cells) != 12 || cells[4].Summary == nil ||
		cells[4].FCT.P99 != 300 || cells[4].Point["transport"] == "" {
		t.Fatalf("--json -: %v, %d cells:\n%s", err, len(cells), stdout.String())
	}
	if strings.Contains(printed.String(), "[") && strings.Contains(printed.String(), `"point"`) {
		t.Error("the JSON went to the progress output")
	}
	b, err := os.ReadFile(rc.Record)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != resultsSchema || len(back.Runs) != 12 || back.Runs[4].Perf.Client.FCT.P99 != 300 ||
		back.Runs[4].Switches["core"][`rocetor_impair_destroyed_total{cause="loss",class="data",direction="egress",port="tor2"}`] != 1 {
		t.Errorf("results JSON did not round-trip: schema %d, %d runs, run 4 %+v", back.Schema, len(back.Runs), back.Runs[4])
	}
	md, _ := os.ReadFile(rc.MD)
	if !strings.Contains(string(md), "# loss-sweep") || !strings.Contains(string(md), "| gbn ") ||
		!strings.Contains(string(md), "Failed runs:") {
		t.Errorf("Markdown:\n%s", md)
	}
	for _, f := range []string{"fct_p99.png", "goodput.png"} {
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(printed.String(), "| transport |") {
		t.Errorf("the table was not printed:\n%s", printed.String())
	}
}

func TestLossSweepStopsOnCancel(t *testing.T) {
	exp := newLossSweep()
	parseExperiment(t, exp, "--losses", "0,0.01")
	if _, err := exp.Setup(); err != nil {
		t.Fatal(err)
	}
	fab := newFakeFabric(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := newResults(exp, fab.plan, "")
	err := exp.Run(ctx, &Env{Fabric: fab, Perf: &fakePerf{fab: fab}}, res)
	if !errors.Is(err, context.Canceled) || len(res.Runs) != 0 {
		t.Errorf("Run on a cancelled context = %v with %d runs, want context.Canceled and none", err, len(res.Runs))
	}
}

func TestLossSweepImpairmentFailure(t *testing.T) {
	exp := newLossSweep()
	parseExperiment(t, exp)
	if _, err := exp.Setup(); err != nil {
		t.Fatal(err)
	}
	fab := newFakeFabric(t)
	fab.failSet = true
	res := newResults(exp, fab.plan, "")
	err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: &fakePerf{fab: fab}}, res)
	if err == nil || !strings.Contains(err.Error(), "loss 0") {
		t.Errorf("Run = %v, want the failed reconfiguration with the loss rate", err)
	}
}

func TestLossSweepSetupErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--losses", "0,abc"},
		{"--losses", "1"},
		{"--losses", ""},
		{"--transports", " "},
		{"--op", "atomic"},
		{"--count", "0"},
		{"--losses", "0.9", "--burst", "2"},
	} {
		exp := newLossSweep()
		parseExperiment(t, exp, args...)
		if _, err := exp.Setup(); !errors.Is(err, ErrUsage) {
			t.Errorf("Setup with %q = %v, want a usage error", args, err)
		}
	}
}

func TestDemoWithFakes(t *testing.T) {
	exp := newDemo()
	parseExperiment(t, exp, "--count", "10")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Topology != "chain" || o.Loss != 0.01 {
		t.Errorf("demo's testbed %+v, want the chain with 1%% loss", o)
	}
	fab := newFakeFabric(t)
	fab.imp = o.Impairment()
	var out bytes.Buffer
	res := newResults(exp, fab.plan, "")
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: &fakePerf{fab: fab}, Out: &out}, res); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"ip netns exec rtb-chain-core curl -s http://127.0.0.1:9478/metrics",
		"ip netns exec rtb-chain-tor1 curl",
		"core  rx packets: tor1 100, tor2 100",
		"impaired wire: 10 frames destroyed (10 data, 0 control)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	if len(res.Runs) != 2 || res.Runs[0].Point["netrt"] != "false" || res.Runs[1].Point["netrt"] != "true" ||
		len(res.Table.Rows) != 1 || res.Table.Rows[0][0] != "1%" {
		t.Errorf("demo: %d runs, table %v; want GBN without and with NetRT at 1%%", len(res.Runs), res.Table.Rows)
	}
}

// The catalogue is sorted by name, and every entry makes the experiment
// of its name, whose default flags set up a valid testbed.
func TestExperimentsRegistered(t *testing.T) {
	if !slices.IsSorted(Names()) {
		t.Errorf("catalogue not sorted: %v", Names())
	}
	for _, e := range Catalogue {
		name := e.Name
		exp := e.New()
		if exp.Name() != name || exp.Synopsis() == "" {
			t.Errorf("experiment %q: Name %q, Synopsis %q", name, exp.Name(), exp.Synopsis())
		}
		parseExperiment(t, exp)
		o, err := exp.Setup()
		if err != nil {
			t.Errorf("%s: Setup with default flags: %v", name, err)
			continue
		}
		if _, ok := exp.(FabricScale); ok != (e.NoTestbed != "") {
			t.Errorf("%s: FabricScale %v, NoTestbed %q: a fabric-scale experiment is the simulator's alone", name, ok, e.NoTestbed)
		}
		if e.NoTestbed != "" {
			continue // its Options open no testbed
		}
		o.Prefix = DefaultPrefix(o.Topology)
		if err := o.Validate(); err != nil {
			t.Errorf("%s: default testbed invalid: %v", name, err)
		}
	}
}

// netrtPerf is fakePerf whose GBN retransmits only without NetRT, and
// whose ToRs report occupancy only with it.
type netrtPerf struct{ fakePerf }

func (p *netrtPerf) Transfer(ctx context.Context, t Transfer) (*PerfResult, error) {
	r, err := p.fakePerf.Transfer(ctx, t)
	if err == nil && p.fab.netrt {
		r.Client.RetxPackets = 0
		r.Client.FCT.Mean /= 4
	}
	return r, err
}

func TestNetRTLossWithFakes(t *testing.T) {
	exp := newNetRTLoss()
	parseExperiment(t, exp, "--losses", "0.01,0.05", "--sizes", "10000,1000000", "--count", "5")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Topology != "chain" || o.NetRT || o.Loss != 0.01 {
		t.Errorf("Setup() = %+v, want the chain without NetRT at the first loss", o)
	}
	fab := newFakeFabric(t)
	var toggles []bool
	perf := &netrtPerf{fakePerf{fab: fab}}
	res := newResults(exp, fab.plan, "testbed run netrt-loss")
	if err := exp.Run(context.Background(), &Env{Fabric: &toggling{fab, &toggles}, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 8 || !slices.Equal(toggles, []bool{false, true, false, true, false, true, false, true}) {
		t.Fatalf("%d runs, NetRT toggled %v; want 8 runs alternating off, on", len(res.Runs), toggles)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != 4 {
		t.Fatalf("cells %v, %v; want 4", back.Cells, err)
	}
	c := back.Cells[3]
	for _, k := range []string{"loss", "size", "baseline", "netrt", "pool_peak_bytes", "reorder_peak_bytes"} {
		if _, ok := c[k]; !ok {
			t.Errorf("cell lacks %q: %v", k, c)
		}
	}
	if c["loss"] != 0.05 || c["size"] != 1e6 || c["fct_reduction"] != 0.75 {
		t.Errorf("last cell %v, want loss 0.05, size 1e6, FCT reduction 0.75", c)
	}
	for _, mode := range []string{"baseline", "netrt"} {
		m := c[mode].(map[string]any)
		fct, ok := m["fct_us"].(map[string]any)
		if !ok || fct["mean"] == nil || fct["p50"] == nil || fct["p99"] == nil || m["e2e_retx"] == nil {
			t.Errorf("%s: %v, want fct_us {mean, p50, p99} and e2e_retx", mode, m)
		}
	}
	if c["netrt"].(map[string]any)["e2e_retx"] != 0.0 || c["baseline"].(map[string]any)["e2e_retx"] == 0.0 {
		t.Errorf("e2e_retx: baseline %v, netrt %v", c["baseline"], c["netrt"])
	}
	if len(res.Table.Rows) != 4 {
		t.Errorf("table rows %d, want 4", len(res.Table.Rows))
	}
}

// toggling records every NetRT setting.
type toggling struct {
	*fakeFabric
	toggles *[]bool
}

func (f *toggling) Reconfigure(ctx context.Context, o Options) error {
	*f.toggles = append(*f.toggles, o.NetRT)
	return f.fakeFabric.Reconfigure(ctx, o)
}

func TestNetRTMultipathSetup(t *testing.T) {
	exp := newNetRTMultipath()
	parseExperiment(t, exp, "--paths", "3", "--skew", "50us")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if exp.Name() != "netrt-multipath" || o.Topology != "multipath" || o.Paths != 3 || o.Multipath != "spray" ||
		o.Skew != 50*time.Microsecond || o.Loss != 0 {
		t.Errorf("Setup() = %+v", o)
	}
}

// fakeBackend brings up fake fabrics and counts the tear-downs.
type fakeBackend struct {
	t        *testing.T
	fab      *fakeFabric
	closed   int
	closeErr error
}

func (b *fakeBackend) Name() string { return "fake" }

func (b *fakeBackend) Open(ctx context.Context, o Options, out io.Writer) (*Env, func() error, error) {
	b.fab = fabricOf(b.t, o)
	close := func() error {
		b.closed++
		return b.closeErr
	}
	return &Env{Fabric: b.fab, Perf: &fakePerf{fab: b.fab}, Out: out}, close, nil
}

// RunExperiment opens the backend's fabric, runs the experiment on it,
// writes the results with the backend's name, and tears the fabric down
// once, joining its error to the run's; a record without a backend (one
// written before there were two) still reads.
func TestRunExperimentOnBackend(t *testing.T) {
	exp := newLossSweep()
	parseExperiment(t, exp, "--losses", "0,0.01", "--transports", "gbn", "--count", "5")
	b := &fakeBackend{t: t}
	dir := t.TempDir()
	var progress bytes.Buffer
	out := Output{Record: filepath.Join(dir, "r.json"), MD: filepath.Join(dir, "r.md"), Command: "testbed run loss-sweep", Out: &progress}
	res, err := RunExperiment(context.Background(), exp, b, out)
	if err != nil || b.closed != 1 || res.Backend != "fake" || len(res.Runs) == 0 {
		t.Fatalf("RunExperiment: %v, closed %d, backend %q, %d runs", err, b.closed, res.Backend, len(res.Runs))
	}
	back, err := ReadResults(out.Record)
	if err != nil || back.Backend != "fake" || back.Command != "testbed run loss-sweep" || len(back.Runs) != len(res.Runs) {
		t.Errorf("the record: %v, %+v", err, back)
	}
	if !strings.Contains(progress.String(), "| transport") {
		t.Errorf("no table in the progress output:\n%s", progress.String())
	}
	b.closeErr = errors.New("tear down: gone")
	if _, err := RunExperiment(context.Background(), exp, b, Output{}); err == nil || !strings.Contains(err.Error(), "tear down: gone") || b.closed != 2 {
		t.Errorf("a failed tear-down: %v, closed %d", err, b.closed)
	}
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte(`{"schema":1,"experiment":"loss-sweep","command":"testbed run loss-sweep","runs":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadResults(old); err != nil || r.Backend != "" || r.Experiment != "loss-sweep" {
		t.Errorf("a record without a backend: %v, %+v", err, r)
	}
}

func TestNetRTMultipathFabricIncastSetup(t *testing.T) {
	for _, args := range [][]string{
		{"--incast", "-1"},
		{"--incast", "33"},                       // more than a ToR's 32 servers
		{"--incast", "15", "--fabric", "1,4,32"}, // no second ToR to send to
	} {
		exp := newNetRTMultipathFabric()
		parseExperiment(t, exp, args...)
		if _, err := exp.Setup(); !errors.Is(err, ErrUsage) {
			t.Errorf("Setup with %q = %v, want a usage error", args, err)
		}
	}
}
