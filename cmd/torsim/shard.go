package main

import (
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"

	"rocetor/tor/lab"
)

// A fabric-scale experiment's cells split over processes or pods
// (tor/lab Cells): "torsim run EXP … --shard K/N --cells DIR" simulates
// every N-th cell from the K-th and writes each to DIR/cell-I.json;
// "torsim merge-run EXP … --cells DIR[,DIR…]" replays them into the
// record, Markdown and plots one "torsim run EXP …" writes.
// deploy/kubernetes/torsim-experiment.yaml runs the shards as an
// indexed Job.

// cellFlags are --shard, --cells and --count-cells.
type cellFlags struct {
	shard, cells string
	count        bool
}

func (c *cellFlags) flags(fs *flag.FlagSet, merge bool) {
	if merge {
		fs.StringVar(&c.cells, "cells", "", "`DIR[,DIR…]` where the shards (torsim run --shard) wrote their cells: all of them, with the flags they ran with")
		return
	}
	fs.StringVar(&c.shard, "shard", "", "`K/N`: simulate only the cells whose index is K modulo N and write them to --cells (K may be $JOB_COMPLETION_INDEX, read by torsim: a Kubernetes indexed Job's pod)")
	fs.StringVar(&c.cells, "cells", "", "`DIR` a --shard run writes its cells to (cell-I.json), for torsim merge-run")
	fs.BoolVar(&c.count, "count-cells", false, "print how many cells (simulations) the experiment runs with these flags, simulating none")
}

// notCellFlags are the flags that do not decide what a cell simulates:
// the outputs and the sharding's own.
var notCellFlags = []string{"json", "record", "md", "plot", "against", "shard", "cells", "count-cells"}

// backend is b, or b wrapped to shard, merge or count exp's cells.
func (c *cellFlags) backend(b lab.Backend, exp lab.Experiment, fs *flag.FlagSet, merge bool) (lab.Backend, error) {
	if !merge && c.shard == "" && !c.count {
		if c.cells != "" {
			return nil, lab.Usagef("--cells without --shard: a shard writes cells (--shard K/N), torsim merge-run reads them")
		}
		return b, nil
	}
	if _, ok := exp.(lab.FabricScale); !ok {
		return nil, lab.Usagef("%s is not a fabric-scale experiment: only those split into cells", exp.Name())
	}
	// Every flag's value, defaults too: a default changed between the
	// shards and the merge is a change.
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(notCellFlags, f.Name) {
			flags = append(flags, "--"+f.Name+"="+f.Value.String())
		}
	})
	var dirs []string
	if c.cells != "" {
		dirs = strings.Split(c.cells, ",")
	}
	if merge {
		return lab.NewCells(b, lab.CellMerge, 0, 0, dirs, flags)
	}
	var k, n int
	if c.shard != "" {
		var err error
		if k, n, err = parseShard(c.shard); err != nil {
			return nil, err
		}
	}
	if c.count {
		return lab.NewCells(b, lab.CellCount, 0, 0, nil, flags)
	}
	return lab.NewCells(b, lab.CellShard, k, n, dirs, flags)
}

// parseShard reads --shard K/N, K expanded from the environment if it
// names a variable (an indexed Job's $JOB_COMPLETION_INDEX, given
// without a shell to expand it).
func parseShard(s string) (k, n int, err error) {
	ks, ns, ok := strings.Cut(os.ExpandEnv(s), "/")
	if !ok {
		return 0, 0, lab.Usagef("--shard %q: want K/N", s)
	}
	if ks == "" {
		return 0, 0, lab.Usagef("--shard %q: K is empty (an unset $JOB_COMPLETION_INDEX?)", s)
	}
	if k, err = strconv.Atoi(ks); err == nil {
		n, err = strconv.Atoi(ns)
	}
	if err != nil || n < 1 || k < 0 || k >= n {
		return 0, 0, lab.Usagef("--shard %q: want K/N, 0 ≤ K < N", s)
	}
	return k, n, nil
}
