package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"rocetor/tor/fabric"
)

// TestRunSweepMerge: a run writes its result, plots and Markdown; a sweep
// runs its cells; merge gathers them.
func TestRunSweepMerge(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"--topo", "chain", "--rate", "10G", "--size", "64KiB", "--quiet", "--out", filepath.Join(dir, "one")}); err != nil {
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
	if err := run([]string{"--sweep", sw, "--out", filepath.Join(dir, "sweep"), "--size", "32KiB"}); err != nil {
		t.Fatal(err)
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
}
