package lab

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/pipeline"
)

func TestTableMarkdown(t *testing.T) {
	tab := Table{
		Columns: []string{"transport", "loss", "FCT p99 (µs)"},
		Rows:    [][]string{{"gbn", "0", "153"}, {"irn", "0.01", "–"}},
	}
	var b strings.Builder
	tab.Markdown(&b)
	want := "" +
		"| transport | loss | FCT p99 (µs) |\n" +
		"| --------- | ---: | -----------: |\n" +
		"| gbn       |    0 |          153 |\n" +
		"| irn       | 0.01 |            – |\n"
	if b.String() != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestGroupRunsAndMedian(t *testing.T) {
	run := func(tr string, p99 float64, failed bool) Run {
		r := Run{Point: map[string]string{"transport": tr, "loss": "0.01"}}
		if failed {
			r.Error = "boom"
			return r
		}
		r.Perf = &PerfResult{Client: Summary{FCT: FCT{P99: p99}}}
		return r
	}
	runs := []Run{run("gbn", 30, false), run("irn", 5, false), run("gbn", 10, false), run("gbn", 20, false), run("irn", 0, true)}
	gs := GroupRuns(runs)
	if len(gs) != 2 || gs[0].Point["transport"] != "gbn" || len(gs[0].Runs) != 3 || len(gs[1].Runs) != 2 {
		t.Fatalf("groups %+v", gs)
	}
	p99 := func(r *Run) float64 { return r.Perf.Client.FCT.P99 }
	if m := gs[0].Median(p99); m != 20 {
		t.Errorf("median of 30, 10, 20 = %v", m)
	}
	if m := gs[1].Median(p99); m != 5 {
		t.Errorf("median over irn's one successful run = %v, want 5 (the failed run left out)", m)
	}
	if s := gs[0].Sum(p99); s != 60 {
		t.Errorf("sum = %v", s)
	}
	g := Group{Runs: []*Run{{Error: "x"}}}
	if m := g.Median(p99); !math.IsNaN(m) || fmtFloat(m, 1) != "–" || fmtInt(m) != "–" {
		t.Errorf("median with no successful run = %v, formatted %q", m, fmtFloat(m, 1))
	}
	even := Group{Runs: []*Run{&runs[0], &runs[2]}}
	if m := even.Median(p99); m != 20 {
		t.Errorf("median of 30 and 10 = %v, want 20", m)
	}
}

const metricsText = `# HELP rocetor_drops_total Frames dropped, by reason.
# TYPE rocetor_drops_total counter
rocetor_drops_total{reason="queue_full"} 2
rocetor_drops_total{reason="no_route"} 0
# HELP rocetor_impair_destroyed_total Frames the impairment destroyed on the wire.
# TYPE rocetor_impair_destroyed_total counter
rocetor_impair_destroyed_total{cause="loss",class="data",direction="egress",port="tor2"} 12
rocetor_impair_destroyed_total{cause="burst",class="control",direction="egress",port="tor2"} 3
rocetor_impair_destroyed_total{cause="loss",class="retransmission",direction="egress",port="tor2"} 0
# HELP rocetor_port_rx_packets_total Frames received on the port.
# TYPE rocetor_port_rx_packets_total counter
rocetor_port_rx_packets_total{port="tor1"} 1000
rocetor_port_rx_packets_total{port="tor2"} 40
# HELP rocetor_queue_depth_bytes Bytes waiting in the egress queue.
# TYPE rocetor_queue_depth_bytes gauge
rocetor_queue_depth_bytes{port="tor2",queue="data"} 1500
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestParseMetricsAndSample(t *testing.T) {
	s, err := ParseSample(strings.NewReader(metricsText))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s["go_goroutines"]; ok {
		t.Error("kept a non-rocetor_ family")
	}
	if v := s[`rocetor_queue_depth_bytes{port="tor2",queue="data"}`]; v != 1500 {
		t.Errorf("gauge with two labels = %v", v)
	}
	if v := s.ImpairDrops(); v != 15 {
		t.Errorf("ImpairDrops = %v, want 15", v)
	}
	if v := s.Destroyed("control"); v != 3 {
		t.Errorf("Destroyed(control) = %v, want 3", v)
	}
	if v := s.OtherDrops(); v != 2 {
		t.Errorf("OtherDrops = %v, want 2", v)
	}
	if v := s.Sum("rocetor_port_rx_packets_total"); v != 1040 {
		t.Errorf("Sum of rx = %v", v)
	}
	if v := s.Sum("rocetor_port_rx_packets_total", `port="tor2"`); v != 40 {
		t.Errorf("Sum of rx on tor2 = %v", v)
	}
	if lines := s.Nonzero("destroyed"); len(lines) != 2 || lines[0] != `rocetor_impair_destroyed_total{cause="burst",class="control",direction="egress",port="tor2"} 3` {
		t.Errorf("Nonzero(drops) = %q", lines)
	}

	after := Sample{}
	for k, v := range s {
		after[k] = v
	}
	after[`rocetor_drops_total{reason="queue_full"}`] = 10
	after[`rocetor_queue_depth_bytes{port="tor2",queue="data"}`] = 0
	after[`rocetor_port_rx_packets_total{port="tor2"}`] = 5 // restarted: counts from zero
	d := Delta(s, after)
	want := Sample{`rocetor_drops_total{reason="queue_full"}`: 8, `rocetor_port_rx_packets_total{port="tor2"}`: 5}
	if len(d) != len(want) {
		t.Errorf("Delta = %v, want %v", d, want)
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("Delta[%s] = %v, want %v", k, d[k], v)
		}
	}
}

// The records in docs/results read back, and the options each records
// still lay out a plan whose switches' configurations tord reads: a
// record keeps Options, from which the configurations derive, so what
// the switches ran can be written again. Files that hold cells alone
// (--json's output: a list) are no records; records whose options
// NewPlan refuses now (from before an option had its default) are
// skipped.
func TestRecordedResults(t *testing.T) {
	records, _ := filepath.Glob("../../docs/results/*.json")
	planned := 0
	for _, path := range records {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
			continue
		}
		r, err := ReadResults(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		o := r.Options
		if o.Prefix == "" {
			o.Prefix = DefaultPrefix(o.Topology)
		}
		p, err := NewPlan(o)
		if err != nil {
			t.Logf("%s: the recorded options lay out no plan now: %v", path, err)
			continue
		}
		planned++
		for node, c := range p.TordConfigs() {
			b, err := MarshalTordConfig(node, c)
			if err == nil {
				_, err = pipeline.ParseConfig(b, node)
			}
			if err != nil {
				t.Errorf("%s: %s: %v", path, node, err)
			}
		}
	}
	if planned < 40 {
		t.Errorf("%d records of %d give a plan, want at least 40", planned, len(records))
	}
}
