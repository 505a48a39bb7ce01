package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rocetor/tor/fabric"
)

// TestRunSweepMerge: a run writes its result, plots and Markdown; a sweep
// runs its cells, each with the flags given beside it (its own flow file
// under its directory); merge gathers them.
func TestRunSweepMerge(t *testing.T) {
	dir := t.TempDir()
	if err := run(t.Context(), []string{"--topo", "chain", "--rate", "10G", "--size", "64KiB", "--quiet", "--out", filepath.Join(dir, "one")}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"result.json", "result.md", "slowdown.png"} {
		if _, err := os.Stat(filepath.Join(dir, "one", f)); err != nil {
			t.Error(err)
		}
	}
	sw := filepath.Join(dir, "sweep.json")
	if err := os.WriteFile(sw, []byte(`{"common": ["--topo", "chain", "--rate", "10G", "--quiet"], "cells": [["--transport", "irn"], ["--transport", "fasr"]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), []string{"--sweep", sw, "--out", filepath.Join(dir, "sweep"), "--size", "32KiB", "--bins", "20KB,1MB", "--flows", "f.txt"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cell-0", "cell-1"} {
		if _, err := os.Stat(filepath.Join(dir, "sweep", c, "f.txt")); err != nil {
			t.Error(err) // each cell writes its own flow file
		}
	}
	if err := merge([]string{filepath.Join(dir, "merged"), filepath.Join(dir, "sweep")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "merged", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rs []fabric.Result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 2 || rs[0].Transport != "irn" || rs[1].Transport != "fasr" || rs[0].Completed != 2 {
		t.Fatalf("merged %d results: %v", len(rs), err)
	}
	if !reflect.DeepEqual(rs[0].Bins, []int{20_000, 1_000_000}) {
		t.Errorf("the cells' bins %v, want --bins beside --sweep", rs[0].Bins)
	}
}

// TestFlows: the command writes the flow file, one line per
// completed flow with ns-3's eight columns first, and a result with
// p90, p95 and p99.9 per bin; the statistics recomputed from the flow
// file, with the run's measurement window (--warmup, --measure), are
// the result's. The file lists every completed flow, in the window or
// not. (tor/fabric's TestFlowFileStats runs twice and
// compares the files byte for byte: a second fat tree in one process
// costs seconds of zeroing the first one's frame memory.)
func TestFlows(t *testing.T) {
	d := t.TempDir()
	err := run(t.Context(), []string{"--topo", "fattree:k=4", "--rate", "100G", "--workload", "poisson", "--cdf", "websearch", "--load", "0.5",
		"--duration", "500us", "--flows", "f.txt", "--warmup", "100us", "--measure", "300us", "--out", d, "--quiet"})
	if err != nil {
		t.Fatal(err)
	}
	var out [2][]byte
	for j, name := range []string{"result.json", "f.txt"} {
		if out[j], err = os.ReadFile(filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	var res fabric.Result
	if err := json.Unmarshal(out[0], &res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out[1])), "\n")
	if len(lines) != res.Completed || res.WarmupNs != 100_000 || res.MeasureNs != 300_000 || res.Measured == 0 || res.Measured >= res.Completed {
		t.Fatalf("%d lines for %d completed flows; warm-up %d ns, window %d ns, %d measured", len(lines), res.Completed,
			res.WarmupNs, res.MeasureNs, res.Measured)
	}
	if f := strings.Fields(lines[0]); len(f) != 12 || len(f[0]) != 8 || f[3] != "4791" || f[11] != "gbn" {
		t.Errorf("line %q: want 12 columns, a hex address first, RoCEv2's port fourth and the transport last", lines[0])
	}
	recs, _, err := fabric.ReadFlows(bytes.NewReader(out[1]))
	if err != nil {
		t.Fatal(err)
	}
	late := 0 // posted after the window: listed, not measured
	for _, f := range recs {
		if f.StartNs >= 400_000 {
			late++
		}
	}
	again := fabric.Result{Records: recs}
	if err := again.Summarize(fabric.StatsOptions{Bins: res.Bins, ShortBelow: res.ShortBelow, WarmupNs: res.WarmupNs}); err != nil {
		t.Fatal(err)
	}
	if late == 0 || again.Measured != res.Measured+late {
		t.Errorf("%d flows posted after the window: %d measured without its end, %d with", late, again.Measured, res.Measured)
	}
	again = fabric.Result{Records: recs}
	if err := again.Summarize(fabric.StatsOptions{Bins: res.Bins, ShortBelow: res.ShortBelow, WarmupNs: res.WarmupNs, MeasureNs: res.MeasureNs}); err != nil {
		t.Fatal(err)
	}
	if len(res.FCT) != len(fabric.DefaultBins)+1 || res.All.P999FCTNs == 0 || res.All.P90Slowdown == 0 {
		t.Errorf("bins %v, all %+v: want every default bin and p90 to p99.9", res.FCT, res.All)
	}
	if !reflect.DeepEqual(again.FCT, res.FCT) || again.All != res.All || again.Short != res.Short || again.Long != res.Long ||
		again.Measured != res.Measured || again.GoodputGbps != res.GoodputGbps {
		t.Errorf("recomputed from the flow file: %+v %+v, the result: %+v %+v", again.FCT, again.All, res.FCT, res.All)
	}
}

// TestMergeOld: merge reads a result.json written before the statistics
// had bins, and shows the figures it lacks as –.
func TestMergeOld(t *testing.T) {
	dir := t.TempDir()
	old := `{"seed": 1, "topology": "chain", "hosts": 2, "transport": "gbn", "cc": "none", "flows": 1, "completed": 1,
 "fct": [{"range": "<10KiB", "flows": 1, "p50_fct_ns": 9000, "p99_fct_ns": 9000, "mean_slowdown": 1.2, "p50_slowdown": 1.2, "p99_slowdown": 1.2}],
 "fct_all": {"range": "all", "flows": 1, "p50_fct_ns": 9000, "p99_fct_ns": 9000, "mean_slowdown": 1.2, "p50_slowdown": 1.2, "p99_slowdown": 1.2}}`
	if err := os.MkdirAll(filepath.Join(dir, "in", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "old", "result.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := merge([]string{filepath.Join(dir, "out"), filepath.Join(dir, "in")}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "out", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| <10KiB | 1 | – | 9.0 | – | – | 9.0 | – |") {
		t.Errorf("the old result's FCT table:\n%s", md)
	}
}

// TestTimely: --cc timely runs the hosts with TIMELY (a 4-to-1 incast
// through IRN completes, and the result names it), and is refused with
// dcp, whose per-message ACKs give it no per-segment RTT.
func TestTimely(t *testing.T) {
	res := freeResult(t, t.TempDir(), "--topo", "leafspine", "--rate", "10G", "--transport", "irn", "--cc", "timely",
		"--workload", "incast", "--incast", "4", "--size", "256KB")
	if res.CC != "timely" || res.Completed != 4 {
		t.Errorf("cc %q, %d of 4 flows completed", res.CC, res.Completed)
	}
	err := run(t.Context(), []string{"--topo", "leafspine", "--transport", "dcp", "--cc", "timely", "--quiet"})
	if err == nil || !strings.Contains(err.Error(), "dcp acknowledges whole messages") {
		t.Errorf("dcp with timely: %v", err)
	}
}
