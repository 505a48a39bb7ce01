package lab

import (
	"context"
	"io"
	"strings"
	"testing"

	"rocetor/tor/fabric"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
	"rocetor/tor/trim"
	"rocetor/tor/workload"
)

// optionsSim is a Simulator that keeps the options of every cell it is
// asked to simulate and simulates none.
type optionsSim struct {
	opts []fabric.Options
	ros  []fabric.RunOptions
}

func (s *optionsSim) Simulate(_ context.Context, _ topo.Topology, o fabric.Options, _ []workload.Flow, ro fabric.RunOptions) (*fabric.Result, error) {
	s.opts, s.ros = append(s.opts, o), append(s.ros, ro)
	return &fabric.Result{}, nil
}

// oneDCPCell sets up dcp-fabric at ci scale for one DCP incast cell
// without DCQCN, with args added, simulates it into an optionsSim and
// returns the cell's options and the switch configuration every switch
// is built from (pipeline.ParseConfig, as tor/fabric parses it).
func oneDCPCell(t *testing.T, args ...string) (fabric.Options, fabric.RunOptions, pipeline.Config) {
	t.Helper()
	e := newDCPFabric()
	parseExperiment(t, e, append([]string{"--scale", "ci", "--schemes", "dcp", "--workloads", "incast", "--cc", "none", "--seeds", "1"}, args...)...)
	if _, err := e.Setup(); err != nil {
		t.Fatal(err)
	}
	s := &optionsSim{}
	if err := e.Simulate(context.Background(), s, io.Discard, &Results{}); err != nil {
		t.Fatal(err)
	}
	if len(s.opts) != 1 {
		t.Fatalf("%v: %d cells simulated, want 1", args, len(s.opts))
	}
	cfg, err := pipeline.ParseConfig([]byte(s.opts[0].Switch), "switch template")
	if err != nil {
		t.Fatal(err)
	}
	return s.opts[0], s.ros[0], cfg
}

// TestDCPFabricControlLimitQPs: --trim-control-limit reaches the
// switches' trim section (and is absent without it, so the recorded
// cells' switch YAML stays as it was), and --qps the run's QPs per pair.
func TestDCPFabricControlLimitQPs(t *testing.T) {
	for _, c := range []struct {
		args  []string
		limit int
		qps   int
	}{{nil, 0, 0}, {[]string{"--trim-control-limit", "512KiB", "--qps", "30"}, 512 << 10, 30}} {
		o, ro, cfg := oneDCPCell(t, c.args...)
		if int(cfg.Trim.ControlLimit) != c.limit || (c.limit == 0) == strings.Contains(o.Switch, "control_limit") {
			t.Errorf("%v: control_limit %d in %q, want %d", c.args, cfg.Trim.ControlLimit, o.Switch, c.limit)
		}
		if ro.QPs != c.qps {
			t.Errorf("%v: %d QPs a pair, want %d", c.args, ro.QPs, c.qps)
		}
	}
}

// TestDCPFabricIncastDegree: dcp-fabric's --incast-degree (Table 5's N,
// seed 002 §6.3) reaches the switches: the YAML every switch of a DCP
// cell is built from (pipeline.ParseConfig, as tor/fabric parses it)
// carries N, and so the WRR's weight is N's. Table 5's two N give
// different weights at rocetor's r = 16.76: N = 16 the formula's 8.5,
// N = 22 (past r + 1) tor/trim's MinWeight.
func TestDCPFabricIncastDegree(t *testing.T) {
	for _, n := range []struct {
		arg    string
		degree int
		weight float64
	}{{"16", 16, 15 / (trim.DefaultRatio - 15)}, {"22", 22, trim.DefaultMinWeight}} {
		_, _, cfg := oneDCPCell(t, "--incast-degree", n.arg)
		if cfg.Trim == nil || cfg.Trim.IncastDegree != n.degree {
			t.Fatalf("--incast-degree %s: the switches' trim section %+v", n.arg, cfg.Trim)
		}
		if w := cfg.Trim.Weight(); w < n.weight*0.999 || w > n.weight*1.001 {
			t.Errorf("--incast-degree %s: WRR weight %.4f, want %.4f", n.arg, w, n.weight)
		}
	}
}

// TestDCPFabricTrimMinWeight: --trim-min-weight sets the control queue's
// weight where N is past r + 1 (N = 22), and without it the switches'
// YAML has no min_weight (the recorded cells' inputs stay as they were).
func TestDCPFabricTrimMinWeight(t *testing.T) {
	for _, c := range []struct {
		args   []string
		weight float64
	}{{nil, trim.DefaultMinWeight}, {[]string{"--trim-min-weight", "0.02"}, 0.02}} {
		o, _, cfg := oneDCPCell(t, c.args...)
		if w := cfg.Trim.Weight(); w != c.weight {
			t.Errorf("%v: WRR weight %v, want %v", c.args, w, c.weight)
		}
		if c.args == nil && strings.Contains(o.Switch, "min_weight") {
			t.Errorf("no --trim-min-weight: the YAML names min_weight:\n%s", o.Switch)
		}
	}
}
