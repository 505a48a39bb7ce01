package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"rocetor/tor/fabric"
	"rocetor/tor/sweep"
)

// TestPathFlagsMarked: every torsim flag that speaks of a file says in
// its usage what its value is (tor/sweep's markers), so sweep-pack
// cannot forget a new one; and every flag that names an input file is
// found and carried by sweep-pack, whatever form its value takes.
func TestPathFlagsMarked(t *testing.T) {
	fs := torsimFlags()
	if u := sweep.Unmarked(fs); len(u) > 0 {
		t.Fatalf("flags %v speak of a file but their usage back-quotes no FILE, NAME|FILE, NAME=FILE, SHAPE|file:PATH, DIR, OUT or NAME: sweep-pack would not carry their files", u)
	}
	dir := t.TempDir()
	var cells [][]string
	var inputs []string
	fs.VisitAll(func(fl *flag.Flag) {
		k := sweep.KindOf(fl)
		if k == sweep.None {
			return
		}
		p := filepath.Join(dir, fl.Name+".in")
		text := fl.Name
		if packFollow[fl.Name] != nil { // read by sweep-pack: a workload file
			text = `{"workloads": [{"workload": "` + fl.Name + `"}]}`
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		v := map[sweep.Kind]string{sweep.Path: p, sweep.NameOrPath: p, sweep.KeyPath: "tor*=" + p, sweep.Prefixed: "file:" + p}[k]
		cells = append(cells, []string{"--" + fl.Name, v})
		inputs = append(inputs, fl.Name)
	})
	for _, want := range []string{"topo", "switch", "switch-for", "traffic", "cdf"} {
		if !slices.Contains(inputs, want) {
			t.Errorf("--%s is not found as naming a file (found %v)", want, inputs)
		}
	}
	b, _ := json.Marshal(map[string]any{"cells": cells})
	sw := filepath.Join(dir, "sweep.json")
	if err := os.WriteFile(sw, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if err := sweepPack([]string{sw, out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range inputs {
		got, err := os.ReadFile(filepath.Join(out, name+".in"))
		if err != nil || !strings.Contains(string(got), name) {
			t.Errorf("--%s: its file is not in the bundle: %v", name, err)
		}
	}
	packed, _ := os.ReadFile(filepath.Join(out, "sweep.json"))
	if strings.Contains(string(packed), dir) {
		t.Errorf("the packed sweep still names %s:\n%s", dir, packed)
	}
}

// TestSweepPackRuns: a sweep whose cells name a topology file, switch
// YAML and a traffic file, packed and moved away from its files, runs
// every cell (as a pod would, by cell number); merge orders the cells
// numerically and draws the cross-cell plots.
func TestSweepPackRuns(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"two.topo":  "node h1 host\nnode h2 host\nnode h3 host\nnode a switch\nnode b switch\nlink h1 a\nlink h2 b\nlink h3 b\nlink a b 10G 2us\n",
		"sw.yaml":   "ecn: {}\n",
		"tor.yaml":  "egress: {queue_limit: 256KiB}\n",
		"flows.txt": "2\n0 1 65536 0 -1\n2 0 32768 1000 -1\n",
		"small.cdf": "1000 0\n10000 50\n64000 100\n",
	}
	for n, text := range files {
		if err := os.WriteFile(filepath.Join(src, n), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := func(n string) string { return filepath.Join(src, n) }
	var cells []string
	for i := 0; i < 11; i++ {
		load := []string{"0.2", "0.4", "0.6"}[i%3]
		c := `["--load", "` + load + `", "--seed", "` + strconv.Itoa(1+i/3) + `"]`
		if i == 10 {
			c = `["--workload", "file", "--traffic", "` + p("flows.txt") + `", "--switch-for", "a=` + p("tor.yaml") + `"]`
		}
		cells = append(cells, c)
	}
	sweepText := `{"common": ["--topo", "file:` + p("two.topo") + `", "--switch", "` + p("sw.yaml") + `", "--rate", "10G",
	 "--workload", "poisson", "--cdf", "` + p("small.cdf") + `", "--duration", "300us", "--quiet"], "cells": [` + strings.Join(cells, ",") + `]}`
	if err := os.WriteFile(p("sweep.json"), []byte(sweepText), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if err := sweepPack([]string{p("sweep.json"), bundle}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(src)
	res := filepath.Join(t.TempDir(), "results")
	for cell := 0; cell < 11; cell++ {
		if err := run(t.Context(), []string{"--sweep", filepath.Join(bundle, "sweep.json"), "--cell", strconv.Itoa(cell), "--out", res}); err != nil {
			t.Fatalf("cell %d: %v", cell, err)
		}
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if err := merge([]string{merged, res}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(merged, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rs []fabric.Result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 11 {
		t.Fatalf("merged %d: %v", len(rs), err)
	}
	for i, r := range rs {
		if !strings.HasSuffix(r.Command, "/cell-"+strconv.Itoa(i)) {
			t.Errorf("merged result %d is %s", i, r.Command)
		}
	}
	if !strings.Contains(rs[10].Command, "--traffic") || rs[10].Completed != 2 {
		t.Errorf("cell 10: %s, %d flows completed", rs[10].Command, rs[10].Completed)
	}
	for _, f := range []string{"cells-slowdown.png", "p99-vs-load.png"} {
		if st, err := os.Stat(filepath.Join(merged, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSweepPackWorkloadFile: a sweep whose workload file names a CDF
// file and a traffic file by paths relative to where torsim runs is
// packed with both, the bundled workload file naming them beside it;
// the cell runs from the bundle elsewhere, the originals gone.
func TestSweepPackWorkloadFile(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"small.cdf": "1000 0\n10000 50\n64000 100\n",
		"flows.txt": "1\n0 1 65536 0 -1\n",
		"wl.json": `{"workloads": [{"workload": "poisson", "cdf": "small.cdf", "load": 0.3, "duration": "200us"},
		 {"workload": "file", "start": "50us", "traffic": "flows.txt"}]}`,
		"sweep.json": `{"common": ["--rate", "10G", "--workload-file", "wl.json", "--quiet"], "cells": [["--seed", "1"], ["--seed", "2"]]}`,
	}
	for n, text := range files {
		if err := os.WriteFile(filepath.Join(src, n), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src)
	bundle := filepath.Join(t.TempDir(), "bundle")
	if err := sweepPack([]string{"sweep.json", bundle}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"small.cdf", "flows.txt"} {
		if b, err := os.ReadFile(filepath.Join(bundle, n)); err != nil || string(b) != files[n] {
			t.Errorf("%s is not in the bundle: %v", n, err)
		}
	}
	wl, _ := os.ReadFile(filepath.Join(bundle, "wl.json"))
	if !strings.Contains(string(wl), `"relative_paths": true`) || strings.Contains(string(wl), src) {
		t.Errorf("the bundled workload file:\n%s", wl)
	}
	t.Chdir(t.TempDir())
	os.RemoveAll(src)
	res := filepath.Join(t.TempDir(), "results")
	if err := run(t.Context(), []string{"--sweep", filepath.Join(bundle, "sweep.json"), "--cell", "1", "--out", res}); err != nil {
		t.Fatalf("cell 1 from the bundle: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(res, "cell-1", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r fabric.Result
	if err := json.Unmarshal(b, &r); err != nil || r.Completed < 2 {
		t.Fatalf("cell 1: %d flows completed, %v", r.Completed, err)
	}
}
