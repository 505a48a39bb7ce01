package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"rocetor/tor/lab"
	"rocetor/tor/lab/netns"
)

// simExperiments are the testbed's experiments that the fabric
// simulator runs at the testbed's own parameters, each by its script
// (scripts/sim-NAME.sh), which sets the testbed's record beside the
// simulator's cells (docs/simulator.md, "Validation against the
// testbed").
var simExperiments = []string{"netrt-loss", "dcp-loss", "llr-loss", "sr-loss"}

const simUsage = `usage:
  testbed sim [--bin DIR] [--src DIR] EXPERIMENT [OUT [RECORD...]]
      run a testbed experiment in the fabric simulator at the testbed's
      parameters, beside the testbed's record: %s
  testbed sim [--bin DIR] [--src DIR] TORSIM-ARGS...
      any torsim run, sweep or merge (testbed sim --help lists its flags):
      testbed sim --topo fattree:k=4 --rate 100G --workload incast --out results/incast
  --bin DIR holds a built torsim; else it is built from the source tree
  (--src, or the one the working directory is in). No root is needed.
`

// cmdSim is the fabric simulator where a testbed user looks for it:
// torsim (cmd/torsim) with its arguments as they are, or one of the
// validation scripts by its experiment's name.
func cmdSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var bin, src string
	for len(args) > 0 {
		name, val, eq := strings.Cut(args[0], "=")
		if name != "--bin" && name != "-bin" && name != "--src" && name != "-src" {
			break
		}
		if !eq {
			if len(args) < 2 {
				return lab.Usagef("%s needs a folder", name)
			}
			val, args = args[1], args[1:]
		}
		args = args[1:]
		if strings.HasSuffix(name, "bin") {
			bin = val
		} else {
			src = val
		}
	}
	if len(args) == 0 {
		return lab.Usagef(simUsage, strings.Join(simExperiments, ", "))
	}
	if slices.Contains(simExperiments, args[0]) {
		if bin != "" {
			return lab.Usagef("sim %s runs its script from the source tree: --src, not --bin", args[0])
		}
		if src == "" {
			var err error
			if src, err = netns.FindModuleRoot(); err != nil {
				return err
			}
		}
		cmd := exec.CommandContext(ctx, "sh", filepath.Join("scripts", "sim-"+args[0]+".sh"))
		cmd.Args = append(cmd.Args, args[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = src, stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("sim %s: %w", args[0], err)
		}
		return nil
	}
	dst := ""
	if bin == "" {
		// Built afresh each time (the build cache makes it quick), so
		// a run never takes a torsim older than the tree.
		tmp, err := os.MkdirTemp("", "testbed-sim-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dst = tmp
	}
	dir, err := netns.Binaries(ctx, bin, src, dst, nil, "torsim")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "torsim"), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("torsim: %w", err)
	}
	return nil
}
