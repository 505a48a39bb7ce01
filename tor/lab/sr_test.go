package lab

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// srPerf is fakePerf whose summaries carry the endpoints' SR state as
// roceperf reports it (per QP × QPs + shared, client and server) and,
// for fasr, the receiver's fast-path share; gbn's goodput suffers more
// from loss than the others'.
//
// In a round (Round) the server's SR state is the round's, every
// client's QPs (one endpoint for all), and a sender in late starts and
// ends that much later.
type srPerf struct {
	fakePerf
	late     map[string]time.Duration
	roundQPs int // the QPs of the round running, 0 outside one
}

func (p *srPerf) Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error) {
	for _, t := range ts {
		p.roundQPs += t.QPs
	}
	defer func() { p.roundQPs = 0 }()
	return roundOf(ctx, p.Transfer, ts)
}

func (p *srPerf) Transfer(ctx context.Context, t Transfer) (*PerfResult, error) {
	r, err := p.fakePerf.Transfer(ctx, t)
	if err != nil {
		return r, err
	}
	r.Client.Start, r.Client.End = r.Client.Start.Add(p.late[t.From]), r.Client.End.Add(p.late[t.From])
	if t.Transport == "gbn" && !p.fab.netrt {
		r.Client.GoodputGbps = 1 - 40*p.fab.imp.Loss
	}
	per, shared := map[string]int{"gbn": 0, "irn": 80, "fasr": 8, "dcp": 197}[t.Transport], 0
	end := map[string]any{"sr_state_bytes_per_qp": per, "sr_shared_bytes": shared, "sr_bdp_packets": 0}
	if t.Transport == "irn" {
		end["sr_bdp_packets"] = 128
	}
	if t.Transport == "fasr" {
		shared = 232
		end["sr_shared_bytes"], end["sr_bdp_packets"] = shared, 128
		end["fasr"] = map[string]any{"fast_path_ratio": 0.9, "peak_units": 3, "units_exhausted": 0}
	}
	end["sr_state_bytes"] = per*t.QPs + shared
	var raw map[string]any
	if err := json.Unmarshal(r.ClientRaw, &raw); err != nil {
		return nil, err
	}
	server := map[string]any{}
	for k, v := range end {
		raw[k], server[k] = v, v
	}
	if p.roundQPs > 0 {
		server["sr_state_bytes"] = per*p.roundQPs + shared
	}
	raw["server"] = server
	r.ClientRaw, _ = json.Marshal(raw)
	return r, nil
}

func runFakeSR(t *testing.T, exp Experiment, args ...string) (*fakeFabric, *srPerf, *Results) {
	t.Helper()
	return runFakeSRSpurious(t, exp, nil, args...)
}

// runFakeSRSpurious is runFakeSR with the lossless runs of the transports
// in spurious retransmitting and timing out.
func runFakeSRSpurious(t *testing.T, exp Experiment, spurious map[string]int, args ...string) (*fakeFabric, *srPerf, *Results) {
	t.Helper()
	parseExperiment(t, exp, args...)
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	fab := fabricOf(t, o)
	perf := &srPerf{fakePerf: fakePerf{fab: fab, spurious: spurious}}
	res := newResults(exp, fab.plan, "testbed run "+exp.Name())
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	return fab, perf, res
}

func TestSRLossWithFakes(t *testing.T) {
	fab, perf, res := runFakeSR(t, newSRLoss(), "--transports", "gbn,fasr,netrt,dcp", "--losses", "0.001,0.01", "--count", "50",
		"--reference-runs", "1")
	// Per transport: its fabric, the lossy rates, then the lossless
	// reference (not a cell: 0 is not in --losses).
	var got []string
	for i, tr := range perf.transfers {
		set := fab.sets[i]
		got = append(got, tr.Transport+"@"+strconv.FormatFloat(set.Loss, 'g', -1, 64))
		if tr.Size != 8192 || tr.QPs != 1 || tr.Count != 50 || tr.Rate != srHostRate {
			t.Errorf("transfer %d: %+v", i, tr)
		}
		if set.Trim != (i >= 9 && set.Loss > 0) {
			t.Errorf("transfer %d (%s): impairment %+v: trimming is DCP's, dropping the others'", i, tr.Transport, set)
		}
	}
	want := []string{"gbn@0.001", "gbn@0.01", "gbn@0", "fasr@0.001", "fasr@0.01", "fasr@0",
		"gbn@0.001", "gbn@0.01", "gbn@0", "dcp@0.001", "dcp@0.01", "dcp@0"}
	if !slices.Equal(got, want) {
		t.Errorf("transfers %v\nwant %v", got, want)
	}
	var fabrics []string
	for _, o := range fab.reconfigs {
		fabrics = append(fabrics, strconv.FormatBool(o.NetRT)+"/"+strconv.FormatBool(o.DCP))
	}
	if !slices.Equal(fabrics, []string{"false/false", "false/false", "true/false", "false/true"}) {
		t.Errorf("fabrics (netrt/dcp) %v", fabrics)
	}
	cells := cellsOf(t, res)
	if len(cells) != 8 {
		t.Fatalf("%d cells, want 4 transports × 2 losses", len(cells))
	}
	hasKeys(t, cells[0], "transport", "loss", "goodput_gbps", "lossless_goodput_gbps", "goodput_ratio", "retx_packets",
		"timeouts", "lost_packets")
	gbn1, fasr1 := cells[1], cells[3]
	if gbn1["transport"] != "gbn" || gbn1["loss"] != 0.01 || fasr1["transport"] != "fasr" || fasr1["loss"] != 0.01 {
		t.Fatalf("cells %v", cells)
	}
	if r := fasr1["goodput_ratio"].(float64); r != 0.9 || fasr1["lossless_goodput_gbps"] != 1.0 {
		t.Errorf("fasr at 1%%: %v", fasr1)
	}
	if r := gbn1["goodput_ratio"].(float64); r > 0.61 || r < 0.59 {
		t.Errorf("gbn at 1%%: ratio %v, want 0.6 of its own lossless", r)
	}
	if _, ok := cells[5]["tor_retx"]; !ok || cells[5]["transport"] != "netrt" {
		t.Errorf("netrt cell lacks tor_retx: %v", cells[5])
	}
	if len(res.Table.Rows) != 8 || res.Table.Rows[3][4] != "90.0%" {
		t.Errorf("table %v", res.Table.Rows)
	}
	if last := fab.sets[len(fab.sets)-1]; last.Loss != 0 || last.Trim {
		t.Errorf("impairment left at %+v", last)
	}
	// The ratio plot reads each transport's lossless run.
	dir := t.TempDir()
	files, err := WritePlots(dir, newSRLoss().Plots(), GroupRuns(res.Runs))
	if err != nil || len(files) != 1 {
		t.Fatalf("plots %v: %v", files, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "goodput.png")); err != nil || st.Size() == 0 {
		t.Errorf("goodput.png: %v", err)
	}
}

func TestSRLossFlags(t *testing.T) {
	for _, args := range [][]string{{"--transports", "tcp"}, {"--losses", "1.5"}, {"--losses", ""}, {"--count", "0"}} {
		exp := newSRLoss()
		parseExperiment(t, exp, args...)
		if _, err := exp.Setup(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	// 0 listed: the lossless runs are cells too, ratio 1.
	_, _, res := runFakeSR(t, newSRLoss(), "--transports", "irn", "--losses", "0,0.02", "--count", "5")
	cells := cellsOf(t, res)
	if len(cells) != 2 || cells[0]["loss"] != 0.0 || cells[0]["goodput_ratio"] != 1.0 || cells[1]["loss"] != 0.02 {
		t.Errorf("cells %v", cells)
	}
}

func TestSRConcurrencyWithFakes(t *testing.T) {
	fab, perf, res := runFakeSR(t, newSRConcurrency(), "--senders", "1", "--qps", "16,5000", "--losses", "0,0.01", "--bdp", "500",
		"--reference-runs", "1")
	// --senders 1: the link, one client with every QP, paced at
	// --host-rate, as before there was a --senders.
	if fab.plan.Options.Topology != "link" {
		t.Errorf("topology %s, want link", fab.plan.Options.Topology)
	}
	// Lossy first, the lossless reference last; every transport at
	// every QP count; at least --per-qp messages per QP.
	if n := len(perf.transfers); n != 12 {
		t.Fatalf("%d transfers, want 3 transports × 2 QP counts × 2 losses", n)
	}
	for i, tr := range perf.transfers {
		lossy := i < 6
		if (fab.sets[min(i/6, len(fab.sets)-1)].Loss > 0) != lossy {
			t.Errorf("transfer %d at %+v", i, fab.sets)
		}
		if tr.Size != 4096 || tr.Count < 4*tr.QPs || tr.Count < 20000 || tr.Depth != 0 || tr.From != "h1" || tr.To != "h2" || tr.BDP != 500 ||
			tr.Rate != srHostRate {
			t.Errorf("transfer %d: %+v", i, tr)
		}
	}
	cells := cellsOf(t, res)
	if len(cells) != 12 {
		t.Fatalf("%d cells", len(cells))
	}
	hasKeys(t, cells[0], "transport", "qps", "loss", "goodput_gbps", "sr_state_bytes", "client_sr_state_bytes", "sr_bdp_packets",
		"lossless_goodput_gbps", "goodput_ratio", "senders")
	if _, ok := cells[0]["per_sender"]; ok || cells[0]["senders"] != 1.0 {
		t.Errorf("one sender's cell %v: want senders 1 and no per_sender", cells[0])
	}
	byKey := map[string]map[string]any{}
	for _, c := range cells {
		byKey[c["transport"].(string)+"/"+strconv.Itoa(int(c["qps"].(float64)))+"/"+strconv.FormatFloat(c["loss"].(float64), 'g', -1, 64)] = c
	}
	fasr, irn := byKey["fasr/5000/0.01"], byKey["irn/5000/0.01"]
	if fasr["sr_state_bytes"] != float64(5000*8+232) || irn["sr_state_bytes"] != float64(5000*80) ||
		fasr["sr_bdp_packets"] != float64(128) || irn["sr_bdp_packets"] != float64(128) {
		t.Errorf("SR state at 5,000 QPs: fasr %v, irn %v", fasr, irn)
	}
	if fasr["fast_path_ratio"] != 0.9 || fasr["goodput_ratio"] != 0.9 {
		t.Errorf("fasr cell %v", fasr)
	}
	if _, ok := irn["fast_path_ratio"]; ok {
		t.Errorf("irn has a fast-path ratio: %v", irn)
	}
	if len(res.Table.Rows) != 12 {
		t.Errorf("table %v", res.Table.Rows)
	}
	files, err := WritePlots(t.TempDir(), newSRConcurrency().Plots(), GroupRuns(res.Runs))
	if err != nil || len(files) != 3 {
		t.Errorf("plots %v: %v", files, err)
	}
}

func TestSRConcurrencyFlags(t *testing.T) {
	for _, args := range [][]string{{"--transports", "dcp"}, {"--qps", "0"}, {"--qps", "9000"}, {"--losses", "x"}, {"--per-qp", "0"}, {"--bdp", "-1"},
		{"--senders", "0"}, {"--senders", "17"}, {"--senders", "4", "--qps", "3,16"}, {"--senders", "2", "--topology", "chain"},
		{"--host-rate", "fast"}} {
		exp := newSRConcurrency()
		parseExperiment(t, exp, args...)
		if _, err := exp.Setup(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	e := newSRConcurrency()
	parseExperiment(t, e, "--per-qp", "3", "--min-count", "100", "--bdp", "500")
	if _, err := e.Setup(); err != nil || e.count(16) != 100 || e.count(5000) != 15000 {
		t.Errorf("counts %d %d: %v", e.count(16), e.count(5000), err)
	}
	if e.bdp != 500 {
		t.Errorf("--bdp 500 read as %d", e.bdp)
	}
}

// TestSRLossUncleanReference: a lossless run that retransmitted or timed
// out is no reference. Its cells say so (lossless_clean false, its
// retransmissions and timeouts) and carry no ratio (null), the table
// says why, and the ratio plot leaves the transport out; a clean
// transport's cells are untouched.
func TestSRLossUncleanReference(t *testing.T) {
	_, _, res := runFakeSRSpurious(t, newSRLoss(), map[string]int{"irn": -1}, "--transports", "irn,fasr", "--losses", "0,0.01",
		"--count", "5")
	cells := cellsOf(t, res)
	if len(cells) != 4 {
		t.Fatalf("%d cells", len(cells))
	}
	for i, c := range cells {
		irn := c["transport"] == "irn"
		if irn {
			if r, ok := c["goodput_ratio"]; !ok || r != nil || c["lossless_clean"] != false ||
				c["lossless_retx_packets"] != 5.0 || c["lossless_timeouts"] != 2.0 {
				t.Errorf("irn cell %v: want goodput_ratio null, lossless_clean false, 5 retx and 2 timeouts", c)
			}
			if got := res.Table.Rows[i][4]; got != "no reference (5 retx, 2 timeouts, 0 switch drops; 0 of 3 runs clean)" {
				t.Errorf("irn row %v: of lossless %q", res.Table.Rows[i], got)
			}
			continue
		}
		if c["goodput_ratio"] == nil || c["lossless_clean"] != true {
			t.Errorf("fasr cell %v: its reference is clean", c)
		}
	}
	var pts int
	for _, g := range GroupRuns(res.Runs) {
		e := newSRLoss()
		spec := e.Plots()[0]
		groups := GroupRuns(res.Runs)
		spec.Prepare(groups)
		if g.Point["loss"] != "0" && !math.IsNaN(spec.Y(&g)) {
			if g.Point["transport"] == "irn" {
				t.Errorf("irn at %s has a ratio point %v", g.Point["loss"], spec.Y(&g))
			}
			pts++
		}
	}
	if pts != 1 {
		t.Errorf("%d ratio points, want fasr's one", pts)
	}
}

// TestSRConcurrencyUncleanReference: as sr-loss's, per (transport, QPs).
func TestSRConcurrencyUncleanReference(t *testing.T) {
	_, _, res := runFakeSRSpurious(t, newSRConcurrency(), map[string]int{"gbn": -1}, "--senders", "1", "--qps", "16", "--losses", "0.01")
	cells := cellsOf(t, res)
	if len(cells) != 3 {
		t.Fatalf("%d cells", len(cells))
	}
	for i, c := range cells {
		if c["transport"] == "gbn" {
			if c["goodput_ratio"] != nil || c["lossless_clean"] != false || c["lossless_retx_packets"] != 5.0 {
				t.Errorf("gbn cell %v", c)
			}
			if !strings.HasPrefix(res.Table.Rows[i][4], "no reference") {
				t.Errorf("gbn row %v", res.Table.Rows[i])
			}
		} else if r, _ := c["goodput_ratio"].(float64); r != 0.9 && c["transport"] == "fasr" {
			t.Errorf("fasr cell %v", c)
		}
	}
}

// TestReferenceMeasuredAgain: a lossless run that a stall made
// retransmit is set aside and measured again; the clean one that follows
// is the reference, the one set aside is in the cell, and both runs are
// in the record. A transport whose every lossless run retransmits gets
// no ratio after --reference-retries more runs.
func TestReferenceMeasuredAgain(t *testing.T) {
	_, perf, res := runFakeSRSpurious(t, newSRConcurrency(), map[string]int{"irn": 1, "gbn": -1}, "--senders", "1", "--qps", "16",
		"--losses", "0.01", "--reference-runs", "1", "--reference-retries", "2")
	runs := map[string]int{}
	for _, tr := range perf.transfers {
		runs[tr.Transport]++
	}
	// One lossy run each, then the lossless: fasr's at once, irn's
	// again after the stall, gbn's three times in vain.
	if runs["fasr"] != 2 || runs["irn"] != 3 || runs["gbn"] != 4 {
		t.Errorf("runs per transport %v: want fasr 2, irn 3, gbn 4", runs)
	}
	if len(res.Runs) != 9 {
		t.Errorf("%d runs in the record, want every one of the 9", len(res.Runs))
	}
	for _, c := range cellsOf(t, res) {
		d, _ := c["lossless_discarded"].([]any)
		switch c["transport"] {
		case "irn":
			if c["lossless_clean"] != true || c["goodput_ratio"] == nil || len(d) != 1 || c["lossless_runs"] != 1.0 {
				t.Errorf("irn cell %v: want a clean reference after one run set aside", c)
			}
		case "gbn":
			if c["lossless_clean"] != false || c["goodput_ratio"] != nil || len(d) != 3 {
				t.Errorf("gbn cell %v: want no reference, three runs set aside", c)
			}
		case "fasr":
			if c["lossless_clean"] != true || len(d) != 0 {
				t.Errorf("fasr cell %v", c)
			}
		}
	}
}

// TestReferenceMedian: the reference is the median of the clean runs,
// their spread beside it, the runs set aside listed in order; too few
// clean runs within the retries make no reference.
func TestReferenceMedian(t *testing.T) {
	runs := []Summary{{GoodputGbps: 0.18}, {GoodputGbps: 0.10, RetxPackets: 40, Timeouts: 3}, {GoodputGbps: 0.19},
		{GoodputGbps: 0.17}, {GoodputGbps: 0.15, Timeouts: 1}}
	measure := func(s []Summary) func(int) (*Run, error) {
		return func(repeat int) (*Run, error) {
			return &Run{Repeat: repeat, Perf: &PerfResult{Client: s[repeat-1]}}, nil
		}
	}
	env := &Env{Out: io.Discard}
	ref, err := measureReference(env, "x", referenceOpts{Runs: 3, Retries: 2}, measure(runs))
	if err != nil || !ref.clean() || ref.Goodput != 0.18 || ref.Min != 0.17 || ref.Max != 0.19 || ref.Runs != 3 ||
		len(ref.Discarded) != 1 || ref.Discarded[0].Retx != 40 {
		t.Errorf("reference %+v, %v: want median 0.18 of 0.17–0.19 with one run set aside", ref, err)
	}
	if r := ref.ratio(0.09); r == nil || *r != 0.5 {
		t.Errorf("ratio %v", r)
	}
	ref, _ = measureReference(env, "x", referenceOpts{Runs: 3, Retries: 0}, measure(runs))
	if ref.clean() || ref.ratio(0.09) != nil || len(ref.Discarded) != 1 || ref.Runs != 2 {
		t.Errorf("reference %+v: two clean runs of three is none", ref)
	}
}

// TestSRConcurrencySenders: with --senders 3 each run is one round into
// the dumbbell's one receiver, the QPs, WRITEs and --host-rate split
// evenly among the senders; the cell is the round's — goodput every
// sender's verified bytes over the span from the first start to the
// last end, retransmissions and timeouts added up, the receiver's SR
// state for every QP, the senders' added up — with each sender's own
// figures beside it; the references are rounds of as many senders.
func TestSRConcurrencySenders(t *testing.T) {
	exp := newSRConcurrency()
	parseExperiment(t, exp, "--senders", "3", "--transports", "irn,fasr", "--qps", "16,1000", "--losses", "0.01",
		"--reference-runs", "1", "--host-rate", "300M")
	o, err := exp.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Topology != "dumbbell" || o.Senders != 3 || o.Receivers != 1 {
		t.Fatalf("Setup() = %s with %d senders and %d receivers, want the dumbbell with 3 and 1", o.Topology, o.Senders, o.Receivers)
	}
	fab := fabricOf(t, o)
	if s := fab.plan.Sites; len(s) != 1 || s[0] != (Site{Node: "tor1", Port: "tor2"}) {
		t.Errorf("impair sites %v, want tor1's port toward tor2, which every sender crosses", s)
	}
	// h2 starts half a second after the others and ends as late: the
	// round spans 1.5 s.
	perf := &srPerf{fakePerf: fakePerf{fab: fab}, late: map[string]time.Duration{"h2": 500 * time.Millisecond}}
	res := newResults(exp, fab.plan, "testbed run sr-concurrency")
	if err := exp.Run(context.Background(), &Env{Fabric: fab, Perf: perf}, res); err != nil {
		t.Fatal(err)
	}
	// Per (QPs, transport): the lossy round, then the lossless one.
	if n := len(perf.transfers); n != 2*2*2*3 {
		t.Fatalf("%d transfers, want 2 QP counts × 2 transports × 2 losses × 3 senders", n)
	}
	wantQPs := map[int][]int{16: {6, 5, 5}, 1000: {334, 333, 333}}
	wantCount := map[int][]int{16: {6667, 6667, 6666}, 1000: {6667, 6667, 6666}}
	for i := 0; i < len(perf.transfers); i += 3 {
		round := perf.transfers[i : i+3]
		n := round[0].QPs + round[1].QPs + round[2].QPs
		for j, tr := range round {
			if tr.From != "h"+strconv.Itoa(j+1) || tr.To != "h4" || tr.QPs != wantQPs[n][j] || tr.Count != wantCount[n][j] ||
				tr.Rate != "100000000" || tr.Transport != round[0].Transport {
				t.Errorf("round %d, transfer %d: %+v", i/3, j, tr)
			}
		}
	}
	for _, r := range res.Runs {
		if len(r.Flows) != 3 || r.Perf == nil || r.Point["senders"] != "3" {
			t.Fatalf("run %v: %d flows, merged %v", r.Point, len(r.Flows), r.Perf != nil)
		}
	}
	cells := cellsOf(t, res)
	if len(cells) != 4 {
		t.Fatalf("%d cells", len(cells))
	}
	var fasr map[string]any
	for _, c := range cells {
		if c["transport"] == "fasr" && c["qps"] == 16.0 {
			fasr = c
		}
	}
	const span = 1.5
	if g := fasr["goodput_gbps"].(float64); math.Abs(g-20000*4096*8/span/1e9) > 1e-9 {
		t.Errorf("goodput %v, want every verified byte over the 1.5 s span", g)
	}
	// The fake's lossless rounds span 1.5 s too: ratio 1.
	if fasr["lossless_goodput_gbps"] != fasr["goodput_gbps"] || fasr["goodput_ratio"] != 1.0 || fasr["lossless_clean"] != true {
		t.Errorf("reference of %v", fasr)
	}
	if fasr["retx_packets"] != 300.0 || fasr["timeouts"] != 3.0 || fasr["messages"] != 20000.0 || fasr["senders"] != 3.0 {
		t.Errorf("fasr at 16 QPs: retx %v, timeouts %v, messages %v, senders %v; want 3 × 100, 3 × 1, 20000, 3",
			fasr["retx_packets"], fasr["timeouts"], fasr["messages"], fasr["senders"])
	}
	if fasr["sr_state_bytes"] != float64(16*8+232) || fasr["client_sr_state_bytes"] != float64(16*8+3*232) {
		t.Errorf("SR state %v (want the receiver's for 16 QPs, %d), the senders' %v (want theirs added up, %d)",
			fasr["sr_state_bytes"], 16*8+232, fasr["client_sr_state_bytes"], 16*8+3*232)
	}
	each, _ := fasr["per_sender"].([]any)
	if len(each) != 3 {
		t.Fatalf("per_sender %v", fasr["per_sender"])
	}
	h2 := each[1].(map[string]any)
	if h2["host"] != "h2" || h2["qps"] != 5.0 || h2["count"] != 6667.0 || h2["rate"] != "100000000" || h2["goodput_gbps"] != 0.9 ||
		h2["retx_packets"] != 100.0 || h2["client_sr_state_bytes"] != float64(5*8+232) || h2["reported"] != true {
		t.Errorf("h2's part %v", h2)
	}
	if cols := res.Table.Columns; cols[len(cols)-1] != "per sender: goodput (Gbit/s), retx" ||
		!strings.HasPrefix(res.Table.Rows[0][len(cols)-1], "h1 ") {
		t.Errorf("table %v %v", cols, res.Table.Rows[0])
	}
	if files, err := WritePlots(t.TempDir(), newSRConcurrency().Plots(), GroupRuns(res.Runs)); err != nil || len(files) != 3 {
		t.Errorf("plots %v: %v", files, err)
	}
}

// TestMergeRound: a round read as one client — counts added up, goodput
// the verified bytes over the span from the first start to the last
// end, each FCT percentile the largest; a client without a report or
// without times leaves the others' span; no report at all is no merger.
func TestMergeRound(t *testing.T) {
	at := func(ms int) time.Time { return fakeEpoch.Add(time.Duration(ms) * time.Millisecond) }
	flows := []*PerfResult{
		{Client: Summary{Transport: "irn", Op: "write", Size: 4096, Count: 10, QPs: 2, Messages: 10, Bytes: 40960,
			VerifiedBytes: 40960, RetxPackets: 3, Timeouts: 1, Start: at(100), End: at(600), FCT: FCT{P50: 10, P99: 90}}},
		nil,
		{Client: Summary{Count: 10, QPs: 1, Messages: 9, Bytes: 36864, VerifiedBytes: 36864, RetxPackets: 4,
			Start: at(0), End: at(400), FCT: FCT{P50: 20, P99: 50}}},
		{Client: Summary{Count: 5, QPs: 1, Messages: 0}}, // nothing completed: no times
	}
	m := mergeRound(flows)
	c := m.Client
	if c.Transport != "irn" || c.Count != 25 || c.QPs != 4 || c.Messages != 19 || c.VerifiedBytes != 77824 ||
		c.RetxPackets != 7 || c.Timeouts != 1 || !c.Start.Equal(at(0)) || !c.End.Equal(at(600)) || c.DurationS != 0.6 {
		t.Errorf("merged %+v", c)
	}
	if want := 77824 * 8 / 0.6 / 1e9; math.Abs(c.GoodputGbps-want) > 1e-12 {
		t.Errorf("goodput %v, want %v", c.GoodputGbps, want)
	}
	if c.FCT.P50 != 20 || c.FCT.P99 != 90 {
		t.Errorf("FCT %+v, want each percentile's largest", c.FCT)
	}
	var back Summary
	if err := json.Unmarshal(m.ClientRaw, &back); err != nil || back.GoodputGbps != c.GoodputGbps {
		t.Errorf("raw %s: %v", m.ClientRaw, err)
	}
	if mergeRound([]*PerfResult{nil, nil}) != nil {
		t.Error("no reports merged into one")
	}
	one := mergeRound(flows[3:]) // no times: no span, no goodput
	if one.Client.GoodputGbps != 0 || one.Client.DurationS != 0 {
		t.Errorf("merged without times %+v", one.Client)
	}
}
