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

// TestDCPFabricControlLimitQPs: --trim-control-limit reaches the
// switches' trim section (and is absent without it, so the recorded
// cells' switch YAML stays as it was), and --qps the run's QPs per pair.
func TestDCPFabricControlLimitQPs(t *testing.T) {
	for _, c := range []struct {
		args  []string
		limit int
		qps   int
	}{{nil, 0, 0}, {[]string{"--trim-control-limit", "512KiB", "--qps", "30"}, 512 << 10, 30}} {
		e := newDCPFabric()
		parseExperiment(t, e, append([]string{"--scale", "ci", "--schemes", "dcp", "--workloads", "incast", "--cc", "none", "--seeds", "1"}, c.args...)...)
		if _, err := e.Setup(); err != nil {
			t.Fatal(err)
		}
		s := &optionsSim{}
		if err := e.Simulate(context.Background(), s, io.Discard, &Results{}); err != nil {
			t.Fatal(err)
		}
		if len(s.opts) != 1 {
			t.Fatalf("%v: %d cells simulated, want 1", c.args, len(s.opts))
		}
		cfg, err := pipeline.ParseConfig([]byte(s.opts[0].Switch), "switch template")
		if err != nil {
			t.Fatal(err)
		}
		if int(cfg.Trim.ControlLimit) != c.limit || (c.limit == 0) == strings.Contains(s.opts[0].Switch, "control_limit") {
			t.Errorf("%v: control_limit %d in %q, want %d", c.args, cfg.Trim.ControlLimit, s.opts[0].Switch, c.limit)
		}
		if s.ros[0].QPs != c.qps {
			t.Errorf("%v: %d QPs a pair, want %d", c.args, s.ros[0].QPs, c.qps)
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
		e := newDCPFabric()
		parseExperiment(t, e, "--scale", "ci", "--schemes", "dcp", "--workloads", "incast", "--cc", "none", "--seeds", "1", "--incast-degree", n.arg)
		if _, err := e.Setup(); err != nil {
			t.Fatal(err)
		}
		s := &optionsSim{}
		if err := e.Simulate(context.Background(), s, io.Discard, &Results{}); err != nil {
			t.Fatal(err)
		}
		if len(s.opts) != 1 {
			t.Fatalf("N %s: %d cells simulated, want 1", n.arg, len(s.opts))
		}
		cfg, err := pipeline.ParseConfig([]byte(s.opts[0].Switch), "switch template")
		if err != nil {
			t.Fatal(err)
		}
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
		e := newDCPFabric()
		parseExperiment(t, e, append([]string{"--scale", "ci", "--schemes", "dcp", "--workloads", "incast", "--cc", "none", "--seeds", "1"}, c.args...)...)
		if _, err := e.Setup(); err != nil {
			t.Fatal(err)
		}
		s := &optionsSim{}
		if err := e.Simulate(context.Background(), s, io.Discard, &Results{}); err != nil {
			t.Fatal(err)
		}
		cfg, err := pipeline.ParseConfig([]byte(s.opts[0].Switch), "switch template")
		if err != nil {
			t.Fatal(err)
		}
		if w := cfg.Trim.Weight(); w != c.weight {
			t.Errorf("%v: WRR weight %v, want %v", c.args, w, c.weight)
		}
		if c.args == nil && strings.Contains(s.opts[0].Switch, "min_weight") {
			t.Errorf("no --trim-min-weight: the YAML names min_weight:\n%s", s.opts[0].Switch)
		}
	}
}
