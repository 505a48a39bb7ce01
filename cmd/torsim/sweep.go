package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"rocetor/tor/fabric"
)

// A sweep is independent cells, each a torsim command line: one machine
// runs them one after another (--sweep FILE without --cell), a
// Kubernetes indexed Job runs one per pod (--cell, by default the
// pod's JOB_COMPLETION_INDEX; deploy/kubernetes/torsim-sweep.yaml), and
// "torsim merge" gathers their result.json files into one.
//
// The sweep file is JSON: {"common": [flags every cell takes], "cells":
// [[flags of cell 0], [flags of cell 1], …]}.
type sweepFile struct {
	Common []string   `json:"common"`
	Cells  [][]string `json:"cells"`
}

func readSweep(path string) (*sweepFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s sweepFile
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", path, err)
	}
	if len(s.Cells) == 0 {
		return nil, fmt.Errorf("sweep %s: no cells", path)
	}
	return &s, nil
}

// runSweep runs cell (or every cell when cell < 0) of the sweep, each
// into out/cell-N.
func runSweep(path string, cell int, out string, extra []string) error {
	s, err := readSweep(path)
	if err != nil {
		return err
	}
	if cell < 0 {
		if v := os.Getenv("JOB_COMPLETION_INDEX"); v != "" {
			if cell, err = strconv.Atoi(v); err != nil {
				return fmt.Errorf("JOB_COMPLETION_INDEX %q: %w", v, err)
			}
		}
	}
	cells := []int{cell}
	if cell < 0 {
		cells = nil
		for i := range s.Cells {
			cells = append(cells, i)
		}
	}
	for _, i := range cells {
		if i >= len(s.Cells) {
			return fmt.Errorf("sweep %s: cell %d of %d", path, i, len(s.Cells))
		}
		args := slices.Concat(s.Common, s.Cells[i], extra, []string{"--out", filepath.Join(out, fmt.Sprintf("cell-%d", i))})
		fmt.Fprintf(os.Stderr, "torsim: cell %d: %s\n", i, strings.Join(args, " "))
		if err := run(args); err != nil {
			return fmt.Errorf("cell %d: %w", i, err)
		}
	}
	return nil
}

// merge reads the result.json of every cell under dirs and writes them
// as one JSON array (sorted by directory) and one Markdown file.
func merge(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: torsim merge OUT DIR...")
	}
	outDir, dirs := args[0], args[1:]
	var paths []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && e.Name() == "result.json" {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	slices.Sort(paths)
	var all []json.RawMessage
	var md strings.Builder
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r fabric.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, json.RawMessage(b))
		r.Markdown(&md)
		md.WriteString("\n")
	}
	if len(all) == 0 {
		return fmt.Errorf("no result.json under %v", dirs)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "torsim: merged %d cells into %s\n", len(all), outDir)
	return os.WriteFile(filepath.Join(outDir, "results.md"), []byte(md.String()), 0o644)
}
