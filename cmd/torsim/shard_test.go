package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rocetor/tor/lab"
)

// TestShardMerge: an experiment's cells run in three shards and merged
// give the record (but for times, command and machine), the Markdown
// (but for its command and machine lines) and the plots of one run;
// each shard simulates and writes only its own cells, and the merge
// simulates none (its runs are the shards', started before it).
func TestShardMerge(t *testing.T) {
	for _, exp := range []string{"fasr-scale", "llr-fabric"} {
		t.Run(exp, func(t *testing.T) {
			dir := t.TempDir()
			cells := filepath.Join(dir, "cells")
			out := func(name string) []string {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				return []string{"--record", p + ".json", "--md", p + ".md", "--plot", p}
			}
			runTorsim(t, cmdRun, append([]string{exp, "--scale", "ci"}, out("one")...)...)
			var all int
			for k, shard := range []string{"0/3", "1/3", "2/3"} {
				runTorsim(t, cmdRun, exp, "--scale", "ci", "--shard", shard, "--cells", cells, "--record", filepath.Join(dir, "shard.json"))
				rec := readRecord(t, filepath.Join(dir, "shard.json"))
				all = len(rec.Runs)
				for i, r := range rec.Runs {
					_, err := os.Stat(filepath.Join(cells, "cell-"+itoa(i)+".json"))
					if mine := i%3 == k; mine != (r.Fabric != nil) || (mine && err != nil) || (i%3 > k && err == nil) {
						t.Errorf("shard %s, cell %d: simulated %v, file %v: want only the shard's own", shard, i, r.Fabric != nil, err)
					}
				}
			}
			start := time.Now()
			runTorsim(t, cmdMergeRun, append([]string{exp, "--scale", "ci", "--cells", cells}, out("merged")...)...)
			one, merged := readRecord(t, filepath.Join(dir, "one.json")), readRecord(t, filepath.Join(dir, "merged.json"))
			if len(merged.Runs) != all || all < 4 {
				t.Fatalf("%d runs merged, the shards saw %d", len(merged.Runs), all)
			}
			for _, r := range merged.Runs {
				if !r.Started.Before(start) {
					t.Errorf("%v: started %v, after the merge did: simulated again, not replayed", r.Point, r.Started)
				}
			}
			if a, b := normalRecord(t, one), normalRecord(t, merged); !bytes.Equal(a, b) {
				t.Errorf("the merged record differs from one run's:\n%s\n----\n%s", a, b)
			}
			if a, b := normalMD(t, filepath.Join(dir, "one.md")), normalMD(t, filepath.Join(dir, "merged.md")); a != b {
				t.Errorf("the merged Markdown differs from one run's:\n%s\n----\n%s", a, b)
			}
			samePlots(t, filepath.Join(dir, "one"), filepath.Join(dir, "merged"))
		})
	}
}

// TestMergeRefuses: a merge refuses a missing cell, cells made with
// other flags, a cell file in another's place and a cell whose
// simulation had other inputs, and then writes no record.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	cells := filepath.Join(dir, "cells")
	args := []string{"fasr-scale", "--scale", "ci", "--qps", "16", "--transports", "gbn,fasr"}
	runTorsim(t, cmdRun, append(args, "--shard", "0/1", "--cells", cells)...)
	rec := filepath.Join(dir, "merged.json")
	refused := func(want string, extra ...string) {
		t.Helper()
		err := cmdMergeRun(context.Background(), append(append(slices.Clone(args), extra...), "--cells", cells, "--record", rec), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("merge %q: %v, want refused: %s", extra, err, want)
		}
		if _, err := os.Stat(rec); err == nil {
			t.Errorf("merge %q refused, but wrote a record", extra)
		}
	}
	runTorsim(t, cmdMergeRun, append(args, "--cells", cells)...) // the cells as made merge
	refused("other flags: the cell's --losses=0,0.01, this run's --losses=0,0.02", "--losses", "0,0.02")
	refused("other flags", "--rto", "1ms")
	refused("other flags", "--stall", "tor0:1ms/50ms") // the backend's flags decide cells too

	path := func(i int) string { return filepath.Join(cells, "cell-"+itoa(i)+".json") }
	b1, _ := os.ReadFile(path(1))
	b2, _ := os.ReadFile(path(2))
	os.WriteFile(path(1), b2, 0o644)
	refused("cell 1's file says it is cell 2")
	os.WriteFile(path(1), bytes.Replace(b1, []byte(`"inputs": "`), []byte(`"inputs": "0`), 1), 0o644)
	refused("inputs (topology, options, flows) differ")
	os.Remove(path(1))
	os.Remove(path(3))
	refused("2 of 4 cells missing from " + cells + ": 1, 3 (run shards 0 of 1 again)")
}

// TestShardsTolerated: every fabric-scale experiment, sharded so that
// it simulates none of its cells, runs to its end without a panic,
// records every cell as another shard's, says its table is not the
// experiment's, and has as many cells as --count-cells counts.
func TestShardsTolerated(t *testing.T) {
	for _, name := range lab.Names() {
		e, _ := lab.Find(name)
		if _, ok := e.New().(lab.FabricScale); !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "shard.json")
			runTorsim(t, cmdRun, name, "--scale", "ci", "--shard", "999/1000", "--cells", t.TempDir(), "--record", rec)
			r := readRecord(t, rec)
			for _, run := range r.Runs {
				if run.Fabric != nil || !strings.Contains(run.Error, "simulated by another shard") {
					t.Errorf("%v: %q, want another shard's", run.Point, run.Error)
				}
			}
			if len(r.Notes) == 0 || !strings.Contains(r.Notes[len(r.Notes)-1], "its table is not the experiment's") {
				t.Errorf("the shard's record does not say it is one: %q", r.Notes)
			}
			var count bytes.Buffer
			if err := cmdRun(context.Background(), []string{name, "--scale", "ci", "--count-cells"}, &count, io.Discard); err != nil {
				t.Fatal(err)
			}
			if want := name + ": " + itoa(len(r.Runs)) + " cells"; !strings.Contains(count.String(), want) {
				t.Errorf("--count-cells said %q, want %q", lastLine(count.String()), want)
			}
		})
	}
}

func runTorsim(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) error, args ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := cmd(context.Background(), args, &out, &out); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, out.String())
	}
}

func readRecord(t *testing.T, path string) *lab.Results {
	t.Helper()
	r, err := lab.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// normalRecord is r as JSON without what differs from run to run: the
// times, the command and the machine.
func normalRecord(t *testing.T, r *lab.Results) []byte {
	t.Helper()
	c := *r
	c.Started, c.Finished, c.Command, c.Machine = time.Time{}, time.Time{}, "", lab.Machine{}
	c.Runs = slices.Clone(r.Runs)
	for i := range c.Runs {
		c.Runs[i].Started = time.Time{}
		if f := c.Runs[i].Fabric; f != nil {
			g := *f
			g.WallNs = 0
			c.Runs[i].Fabric = &g
		}
	}
	b, err := json.MarshalIndent(&c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalMD is the Markdown without its command and machine lines.
func normalMD(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "`torsim ") && !strings.HasPrefix(l, "- machine: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// samePlots checks that b holds the PNGs a holds, byte for byte.
func samePlots(t *testing.T, a, b string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a, "*.png"))
	if len(files) == 0 {
		t.Errorf("no plots in %s", a)
	}
	for _, f := range files {
		x, _ := os.ReadFile(f)
		y, err := os.ReadFile(filepath.Join(b, filepath.Base(f)))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: the merged plot differs (%v)", filepath.Base(f), err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// TestMergeOlderCells: cells made by a binary without one of this
// binary's flags (the flag added since) merge when their inputs are
// this run's, and are refused when the new flag changes them.
func TestMergeOlderCells(t *testing.T) {
	dir := t.TempDir()
	cells := filepath.Join(dir, "cells")
	args := []string{"fasr-scale", "--scale", "ci", "--qps", "16", "--transports", "gbn,fasr"}
	runTorsim(t, cmdRun, append(args, "--shard", "0/1", "--cells", cells)...)
	files, _ := filepath.Glob(filepath.Join(cells, "cell-*.json"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		var cf map[string]any
		if err := json.Unmarshal(b, &cf); err != nil {
			t.Fatal(err)
		}
		var kept []any
		for _, f := range cf["flags"].([]any) {
			if !strings.HasPrefix(f.(string), "--rto=") {
				kept = append(kept, f)
			}
		}
		if len(kept) == len(cf["flags"].([]any)) {
			t.Fatalf("%s: no --rto among the flags %v", p, cf["flags"])
		}
		cf["flags"] = kept
		b, _ = json.Marshal(cf)
		os.WriteFile(p, b, 0o644)
	}
	rec := filepath.Join(dir, "merged.json")
	if err := cmdMergeRun(context.Background(), append(slices.Clone(args), "--cells", cells, "--record", rec), io.Discard, io.Discard); err != nil {
		t.Errorf("cells without --rto, merged at its default: %v", err)
	}
	err := cmdMergeRun(context.Background(), append(slices.Clone(args), "--rto", "1ms", "--cells", cells, "--record", rec), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "inputs") {
		t.Errorf("cells without --rto, merged with --rto 1ms: %v, want their inputs refused", err)
	}
}
