package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"rocetor/tor/lab"
	"rocetor/tor/lab/netns"
)

const simUsage = `usage:
  testbed sim [--bin DIR] [--src DIR] EXPERIMENT [FLAGS...]
      run an experiment of the catalogue in the fabric simulator, the same
      as torsim run EXPERIMENT (--against RECORD sets a testbed record
      beside the simulator's cells): %s
  testbed sim [--bin DIR] [--src DIR] TORSIM-ARGS...
      any torsim run, sweep or merge (testbed sim --help lists its flags):
      testbed sim --topo fattree:k=4 --rate 100G --workload incast --out results/incast
  --bin DIR holds a built torsim; else it is built from the source tree
  (--src, or the one the working directory is in). No root is needed.
`

// cmdSim is the fabric simulator where a testbed user looks for it:
// torsim (cmd/torsim) with its arguments as they are, an experiment of
// the catalogue by its name as torsim run runs it.
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
		return lab.Usagef(simUsage, strings.Join(simNames(), ", "))
	}
	if e, ok := lab.Find(args[0]); ok {
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			return lab.Usagef("testbed sim %s OUT RECORD is now testbed sim %s --against RECORD --md OUT/%s.md (torsim run)", e.Name, e.Name, e.Name)
		}
		args = append([]string{"run"}, args...)
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

// simNames are the catalogue's experiments the simulator runs.
func simNames() []string {
	var out []string
	for _, e := range lab.Catalogue {
		if e.NoSim == "" {
			out = append(out, e.Name)
		}
	}
	return out
}
