package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"rocetor/tor/fabric"
	"rocetor/tor/sweep"
	"rocetor/tor/workload"
)

// A sweep is independent cells, each a torsim command line (tor/sweep):
// one machine runs them one after another (--sweep FILE without
// --cell), a Kubernetes indexed Job runs one per pod (--cell, by
// default the pod's JOB_COMPLETION_INDEX; deploy/kubernetes/
// torsim-sweep.yaml) from the bundle "torsim sweep-pack" makes, and
// "torsim merge" gathers their result.json files into one.

// torsimFlags is torsim's flag set, for tor/sweep to find the flags
// that name files.
func torsimFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("torsim", flag.ContinueOnError)
	var f freeRun
	f.flags(fs)
	return fs
}

// readSweep reads the sweep file, its paths made usable from here.
func readSweep(path string) (*sweep.File, error) {
	s, err := sweep.Read(path)
	if err != nil {
		return nil, err
	}
	return s, s.Resolve(torsimFlags(), filepath.Dir(path))
}

// packFollow are the flags whose files name files in turn, and how
// sweep-pack bundles them: a workload file's CDF and traffic files go
// beside its copy, which names them there (workload.Pack).
var packFollow = map[string]sweep.Follow{
	"workload-file": func(path string, add func(what, path string) (string, error)) ([]byte, error) {
		return workload.Pack(path, add)
	},
}

// sweepPack is "torsim sweep-pack SWEEP OUT": a self-contained copy of
// the sweep for the cluster (sweep.Pack).
func sweepPack(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: torsim sweep-pack SWEEP OUT")
	}
	p, err := sweep.Pack(torsimFlags(), args[0], args[1], packFollow)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "torsim: %s and %d files, %d bytes; kubectl create configmap torsim-sweep --from-file=%s\n",
		p.Sweep, len(p.Files), p.Bytes, args[1])
	if p.Bytes > sweep.ConfigMapLimit {
		fmt.Fprintf(os.Stderr, "torsim: warning: more than a ConfigMap holds (%d bytes); mount %s from a volume instead\n",
			sweep.ConfigMapLimit, args[1])
	}
	return nil
}

// runSweep runs cell (or every cell when cell < 0) of the sweep, each
// into out/cell-N.
func runSweep(ctx context.Context, path string, cell int, out string, extra []string) error {
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
		args := slices.Concat(s.Args(i), extra, []string{"--out", filepath.Join(out, fmt.Sprintf("cell-%d", i))})
		fmt.Fprintf(os.Stderr, "torsim: cell %d: %s\n", i, strings.Join(args, " "))
		if err := run(ctx, args); err != nil {
			return fmt.Errorf("cell %d: %w", i, err)
		}
	}
	return nil
}

// merge reads the result.json of every cell under dirs and writes them
// as one JSON array and one Markdown file, in the cells' order (cell-10
// after cell-9), and draws the cross-cell plots.
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
	slices.SortFunc(paths, sweep.NaturalCompare)
	var all []json.RawMessage
	var cells []mergedCell
	var md strings.Builder
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := new(fabric.Result)
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, json.RawMessage(b))
		cells = append(cells, mergedCell{name: filepath.Base(filepath.Dir(p)), res: r})
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
	if err := os.WriteFile(filepath.Join(outDir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "torsim: merged %d cells into %s\n", len(all), outDir)
	return writeMergePlots(outDir, cells)
}
